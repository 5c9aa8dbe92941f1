"""Puffin files (Apache Iceberg's format for statistics and indexes): a writer, which PyIceberg
lacks, and a reader that checks every part of the layout, so that a corrupt or truncated file
is a clear error and not a misread index.

The layout, all integers little-endian::

    Magic  Blob_1 ... Blob_n  Magic  FooterPayload  FooterPayloadSize (int32)  Flags (4)  Magic

Magic is ``PFA1``; the payload is UTF-8 JSON, ``{"blobs": [{"type", "fields", "snapshot-id",
"sequence-number", "offset", "length", "properties"}], "properties": {...}}``, uncompressed
(flag bit 0 clear); blobs are stored uncompressed too (no ``compression-codec``).
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from typing import Dict, List, Sequence

from .._lakecore.table import LakeError

MAGIC = b"PFA1"
# Magic, payload size and flags after the payload, the magic that opens the footer before it.
_TRAILER = struct.Struct("<iI4s")
FOOTER_OVERHEAD = len(MAGIC) + _TRAILER.size


@dataclass
class Blob:
    """One blob: its bytes and the metadata the footer records of it."""

    type: str
    fields: List[int]
    snapshot_id: int
    sequence_number: int
    data: bytes
    properties: Dict[str, str] = field(default_factory=dict)


@dataclass
class PuffinLayout:
    """What :func:`write` produced: the file's bytes and the sizes a statistics file records."""

    data: bytes
    footer_size: int


def write(blobs: Sequence[Blob], properties: Dict[str, str]) -> PuffinLayout:
    """The bytes of a Puffin file holding ``blobs`` in order, uncompressed."""
    parts, offset, described = [MAGIC], len(MAGIC), []
    for blob in blobs:
        described.append({
            "type": blob.type,
            "fields": [int(f) for f in blob.fields],
            "snapshot-id": int(blob.snapshot_id),
            "sequence-number": int(blob.sequence_number),
            "offset": offset,
            "length": len(blob.data),
            "properties": {str(k): str(v) for k, v in blob.properties.items()},
        })
        parts.append(bytes(blob.data))
        offset += len(blob.data)
    payload = json.dumps({"blobs": described, "properties": dict(properties)},
                         sort_keys=True, separators=(",", ":")).encode()
    footer = MAGIC + payload + _TRAILER.pack(len(payload), 0, MAGIC)
    return PuffinLayout(data=b"".join(parts) + footer, footer_size=len(footer))


def read(data: bytes, where: str = "the Puffin file") -> List[Blob]:
    """The blobs of a Puffin file, their bytes sliced from ``data``; LakeError, naming
    ``where``, for anything the layout does not allow (a compressed footer or blob, which
    ribbon never writes, included)."""
    def corrupt(why):
        return LakeError(f"{where} is not a readable Puffin file: {why}")

    if len(data) < len(MAGIC) + FOOTER_OVERHEAD:
        raise corrupt(f"{len(data)} bytes is too short")
    if data[:4] != MAGIC:
        raise corrupt("it does not start with the magic PFA1")
    size, flags, closing = _TRAILER.unpack_from(data, len(data) - _TRAILER.size)
    if closing != MAGIC:
        raise corrupt("it does not end with the magic PFA1 (truncated?)")
    if flags != 0:
        raise corrupt(f"footer flags {flags:#x} (a compressed footer is not supported)")
    footer_start = len(data) - _TRAILER.size - size - len(MAGIC)
    if size < 0 or footer_start < len(MAGIC) or data[footer_start:footer_start + 4] != MAGIC:
        raise corrupt(f"footer payload size {size} does not fit the file")
    try:
        payload = json.loads(data[footer_start + 4:footer_start + 4 + size].decode())
        blobs = []
        for entry in payload["blobs"]:
            offset, length = int(entry["offset"]), int(entry["length"])
            if offset < len(MAGIC) or length < 0 or offset + length > footer_start:
                raise corrupt(f"blob at {offset} of {length} bytes lies outside the blobs")
            if entry.get("compression-codec"):
                raise corrupt(f"blob compressed with {entry['compression-codec']!r}")
            blobs.append(Blob(type=str(entry["type"]), fields=[int(f) for f in entry["fields"]],
                              snapshot_id=int(entry["snapshot-id"]),
                              sequence_number=int(entry["sequence-number"]),
                              data=data[offset:offset + length],
                              properties=dict(entry.get("properties") or {})))
    except LakeError:
        raise
    except (UnicodeDecodeError, ValueError, KeyError, TypeError) as e:
        raise corrupt(f"its footer is not the JSON of a Puffin footer ({e})") from None
    return blobs
