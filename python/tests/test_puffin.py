"""ribbon.lake's Puffin writer against the spec's layout and PyIceberg's own reader, and its
reader against corrupt and truncated files."""

import json
import struct

import pyarrow as pa
import pytest

from ribbon.lake import LakeError
from ribbon.lake import _puffin as puffin


def blobs():
    return [puffin.Blob("ribbon-filter-set-v1", [1], 7, 3, b"first blob", {"a": "1"}),
            puffin.Blob("other-v1", [2, 3], 7, 3, b"", {}),
            puffin.Blob("ribbon-filter-set-v1", [4], 8, 4, bytes(range(256)))]


def test_layout_is_the_specs():
    layout = puffin.write(blobs(), {"created-by": "test"})
    data = layout.data
    # Magic, the blobs back to back, then the footer: magic, payload, its size, flags, magic.
    assert data[:4] == b"PFA1" and data[-4:] == b"PFA1"
    size, flags = struct.unpack("<iI", data[-12:-4])
    assert flags == 0
    footer_start = len(data) - 12 - size - 4
    assert data[footer_start:footer_start + 4] == b"PFA1"
    assert layout.footer_size == len(data) - footer_start == size + 16
    footer = json.loads(data[footer_start + 4:footer_start + 4 + size])
    assert footer["properties"] == {"created-by": "test"}
    offsets = [b["offset"] for b in footer["blobs"]]
    assert offsets == [4, 4 + len(b"first blob"), 4 + len(b"first blob")]
    for entry, blob in zip(footer["blobs"], blobs()):
        assert data[entry["offset"]:entry["offset"] + entry["length"]] == blob.data
        assert entry["type"] == blob.type and entry["fields"] == blob.fields
        assert entry["snapshot-id"] == blob.snapshot_id
        assert entry["sequence-number"] == blob.sequence_number
        assert "compression-codec" not in entry
    assert offsets[-1] + 256 == footer_start


def test_pyiceberg_reads_it():
    reader = pytest.importorskip("pyiceberg.table.puffin")
    written = blobs()
    parsed = reader.PuffinFile(puffin.write(written, {"created-by": "test"}).data)
    assert [b.type for b in parsed.footer.blobs] == [b.type for b in written]
    assert parsed.footer.properties == {"created-by": "test"}
    for meta, blob in zip(parsed.footer.blobs, written):
        assert parsed.get_blob_payload(meta) == blob.data
        assert meta.fields == blob.fields and meta.snapshot_id == blob.snapshot_id
        assert meta.properties == blob.properties


def test_round_trip():
    got = puffin.read(puffin.write(blobs(), {}).data)
    assert [(b.type, b.fields, b.snapshot_id, b.sequence_number, b.data, b.properties)
            for b in got] == [(b.type, b.fields, b.snapshot_id, b.sequence_number, b.data,
                               b.properties) for b in blobs()]
    assert puffin.read(puffin.write([], {}).data) == []


def corruptions(data):
    size = struct.unpack("<i", data[-12:-8])[0]
    footer_start = len(data) - 12 - size - 4
    payload = data[footer_start + 4:footer_start + 4 + size]
    footer = json.loads(payload)
    yield "truncated by one byte", data[:-1]
    yield "cut in the blobs", data[:20]
    yield "empty", b""
    yield "no leading magic", b"XXXX" + data[4:]
    yield "compressed footer flag", data[:-8] + b"\x01\x00\x00\x00" + data[-4:]
    yield "payload size too large", data[:-12] + struct.pack("<i", len(data)) + data[-8:]
    yield "negative payload size", data[:-12] + struct.pack("<i", -5) + data[-8:]
    yield "footer not JSON", data[:footer_start + 4] + b"{" * size + data[-12:]

    def with_footer(f):
        p = json.dumps(f).encode()
        return data[:footer_start + 4] + p + struct.pack("<iI", len(p), 0) + b"PFA1"

    outside = json.loads(payload)
    outside["blobs"][2]["length"] += 1  # runs into the footer
    yield "blob past the blobs", with_footer(outside)
    missing = json.loads(payload)
    del missing["blobs"][1]["fields"]
    yield "blob without fields", with_footer(missing)
    assert footer  # the footer parsed, so each case above breaks one thing


@pytest.mark.parametrize("case", [c for c, _ in corruptions(puffin.write(blobs(), {}).data)])
def test_corrupt_files_are_refused(case):
    data = dict(corruptions(puffin.write(blobs(), {}).data))[case]
    with pytest.raises(LakeError, match="not a readable Puffin file"):
        puffin.read(data, "the test file")


def lz4_footer(data):
    """The file with its footer payload LZ4-frame compressed and flag bit 0 set, as Puffin
    writers may store it."""
    size = struct.unpack("<i", data[-12:-8])[0]
    footer_start = len(data) - 12 - size - 4
    payload = pa.Codec("lz4").compress(data[footer_start + 4:footer_start + 4 + size],
                                       asbytes=True)
    return data[:footer_start + 4] + payload + struct.pack("<iI", len(payload), 1) + b"PFA1"


def test_compressed_footers_and_blobs_are_read():
    theta = bytes(range(200)) * 5
    stored = pa.Codec("zstd").compress(theta, asbytes=True)
    written = blobs() + [puffin.Blob("apache-datasketches-theta-v1", [1], 7, 3, stored,
                                     {"ndv": "1000"}, compression_codec="zstd")]
    data = lz4_footer(puffin.write(written, {"created-by": "spark"}).data)
    got = puffin.read(data)
    assert [(b.type, b.data, b.compression_codec) for b in got] == [
        (b.type, b.data, b.compression_codec) for b in written]  # stored bytes as they were
    assert got[-1].payload() == theta and got[0].payload() == b"first blob"
    # Written again, the compressed blob keeps its bytes and codec, which PyIceberg reads.
    again = puffin.write(got, {}).data
    reader = pytest.importorskip("pyiceberg.table.puffin")
    entry = reader.PuffinFile(again).footer.blobs[-1]
    assert entry.compression_codec == "zstd" and entry.properties == {"ndv": "1000"}
    assert puffin.read(again)[-1].payload() == theta


def test_footer_alone_from_the_tail():
    data = puffin.write(blobs(), {}).data
    size = struct.unpack("<i", data[-12:-8])[0]
    entries, footer_size = puffin.read_footer(data[-(size + 16):], len(data))
    assert footer_size == size + 16
    assert [(data[e.offset:e.offset + e.length]) for e in entries] == [b.data for b in blobs()]
    with pytest.raises(LakeError, match="not a readable Puffin file"):
        puffin.read_footer(data[-(size + 10):], len(data))  # too little of the tail


def test_unknown_codec_is_carried_but_not_read():
    blob = puffin.Blob("x-v1", [1], 1, 1, b"opaque", compression_codec="brotli")
    (got,) = puffin.read(puffin.write([blob], {}).data)
    assert got.data == b"opaque" and got.compression_codec == "brotli"
    with pytest.raises(LakeError, match="brotli"):
        got.payload()
