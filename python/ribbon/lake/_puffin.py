"""Puffin files (Apache Iceberg's format for statistics and indexes): a writer, which PyIceberg
lacks, and a reader that checks every part of the layout, so that a corrupt or truncated file
is a clear error and not a misread index.

The layout, all integers little-endian::

    Magic  Blob_1 ... Blob_n  Magic  FooterPayload  FooterPayloadSize (int32)  Flags (4)  Magic

Magic is ``PFA1``; the payload is UTF-8 JSON, ``{"blobs": [{"type", "fields", "snapshot-id",
"sequence-number", "offset", "length", "compression-codec", "properties"}], "properties":
{...}}``, LZ4-frame compressed where flag bit 0 is set. A blob may be compressed (``lz4``:
LZ4 frame, ``zstd``): another engine's blob is carried into a new file as its stored bytes
and codec, untouched; :meth:`Blob.payload` decompresses one ribbon must read. ribbon writes
its own blobs and the footer uncompressed.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import pyarrow as pa

from .._lakecore.table import LakeError

MAGIC = b"PFA1"
# Magic, payload size and flags after the payload, the magic that opens the footer before it.
_TRAILER = struct.Struct("<iI4s")
FOOTER_OVERHEAD = len(MAGIC) + _TRAILER.size
_FOOTER_COMPRESSED = 1
_CODECS = {"lz4": "lz4", "zstd": "zstd"}  # Puffin's codec names: pyarrow's (lz4 is the frame)


@dataclass
class Blob:
    """One blob: its stored bytes (compressed where ``compression_codec`` says so) and the
    metadata the footer records of it."""

    type: str
    fields: List[int]
    snapshot_id: int
    sequence_number: int
    data: bytes
    properties: Dict[str, str] = field(default_factory=dict)
    compression_codec: Optional[str] = None

    def payload(self, where: str = "the Puffin file") -> bytes:
        """The blob's bytes, decompressed."""
        return _decompress(self.data, self.compression_codec, f"a {self.type} blob of {where}")


@dataclass
class BlobEntry:
    """A blob as the footer describes it, before its bytes are read."""

    blob: Blob  # data is b"" until read
    offset: int
    length: int


@dataclass
class PuffinLayout:
    """What :func:`write` produced: the file's bytes and the sizes a statistics file records."""

    data: bytes
    footer_size: int


def _decompress(data: bytes, codec: Optional[str], what: str) -> bytes:
    if not codec:
        return bytes(data)
    if codec not in _CODECS:
        raise LakeError(f"{what} is compressed with {codec!r}, which ribbon does not read")
    try:  # a stream: neither codec needs the decompressed size told
        return pa.CompressedInputStream(pa.BufferReader(data), _CODECS[codec]).read()
    except (OSError, pa.ArrowException) as e:
        raise LakeError(f"{what} does not decompress with {codec}: {e}") from None


def write(blobs: Sequence[Blob], properties: Dict[str, str]) -> PuffinLayout:
    """The bytes of a Puffin file holding ``blobs`` in order, each as stored (its codec
    recorded), the footer uncompressed."""
    parts, offset, described = [MAGIC], len(MAGIC), []
    for blob in blobs:
        entry = {
            "type": blob.type,
            "fields": [int(f) for f in blob.fields],
            "snapshot-id": int(blob.snapshot_id),
            "sequence-number": int(blob.sequence_number),
            "offset": offset,
            "length": len(blob.data),
            "properties": {str(k): str(v) for k, v in blob.properties.items()},
        }
        if blob.compression_codec:
            entry["compression-codec"] = blob.compression_codec
        described.append(entry)
        parts.append(bytes(blob.data))
        offset += len(blob.data)
    payload = json.dumps({"blobs": described, "properties": dict(properties)},
                         sort_keys=True, separators=(",", ":")).encode()
    footer = MAGIC + payload + _TRAILER.pack(len(payload), 0, MAGIC)
    return PuffinLayout(data=b"".join(parts) + footer, footer_size=len(footer))


def read_footer(tail: bytes, file_size: int,
                where: str = "the Puffin file") -> Tuple[List[BlobEntry], int]:
    """(the blobs the footer describes, the footer's size) from ``tail``, the file's last
    bytes (the whole footer at least: else LakeError, as for anything the layout does not
    allow); ``file_size`` the whole file's."""
    def corrupt(why):
        return LakeError(f"{where} is not a readable Puffin file: {why}")

    if file_size < len(MAGIC) + FOOTER_OVERHEAD or len(tail) < FOOTER_OVERHEAD:
        raise corrupt(f"{file_size} bytes is too short")
    size, flags, closing = _TRAILER.unpack_from(tail, len(tail) - _TRAILER.size)
    if closing != MAGIC:
        raise corrupt("it does not end with the magic PFA1 (truncated?)")
    if flags & ~_FOOTER_COMPRESSED:
        raise corrupt(f"footer flags {flags:#x} (unknown bits)")
    footer_start = file_size - _TRAILER.size - size - len(MAGIC)
    start_in_tail = len(tail) - (file_size - footer_start)
    if size < 0 or footer_start < len(MAGIC) or start_in_tail < 0 or (
            tail[start_in_tail:start_in_tail + 4] != MAGIC):
        raise corrupt(f"footer payload size {size} does not fit the file")
    payload = tail[start_in_tail + 4:start_in_tail + 4 + size]
    if flags & _FOOTER_COMPRESSED:
        try:
            payload = _decompress(payload, "lz4", "its footer")
        except LakeError as e:
            raise corrupt(str(e)) from None
    try:
        described = json.loads(payload.decode())
        entries = []
        for entry in described["blobs"]:
            offset, length = int(entry["offset"]), int(entry["length"])
            if offset < len(MAGIC) or length < 0 or offset + length > footer_start:
                raise corrupt(f"blob at {offset} of {length} bytes lies outside the blobs")
            blob = Blob(type=str(entry["type"]), fields=[int(f) for f in entry["fields"]],
                        snapshot_id=int(entry["snapshot-id"]),
                        sequence_number=int(entry["sequence-number"]), data=b"",
                        properties=dict(entry.get("properties") or {}),
                        compression_codec=entry.get("compression-codec") or None)
            entries.append(BlobEntry(blob, offset, length))
    except LakeError:
        raise
    except (UnicodeDecodeError, ValueError, KeyError, TypeError) as e:
        raise corrupt(f"its footer is not the JSON of a Puffin footer ({e})") from None
    return entries, file_size - footer_start


def read(data: bytes, where: str = "the Puffin file",
         wanted: Optional[Callable[[Blob], bool]] = None) -> List[Blob]:
    """The blobs of a Puffin file (those ``wanted`` says, all by default), their stored bytes
    sliced from ``data``; LakeError, naming ``where``, for anything the layout does not allow."""
    if data[:4] != MAGIC:
        raise LakeError(f"{where} is not a readable Puffin file: it does not start with the "
                        "magic PFA1")
    entries, _ = read_footer(data, len(data), where)
    blobs = []
    for entry in entries:
        if wanted is None or wanted(entry.blob):
            entry.blob.data = data[entry.offset:entry.offset + entry.length]
            blobs.append(entry.blob)
    return blobs
