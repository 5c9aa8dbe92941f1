"""Corrupted copies of ribbon files: single bit flips, truncations, an appended byte, and bit
flips with every checksum recomputed (so that the structural checks, not the checksums, must
catch them). Usage: [RIBBON_CLI=ribbon] mutate.py OUT_DIR FILE... (writes
OUT_DIR/<name>.<mutation>.rbn; compact files need the ribbon tool to find their sections)."""
import json
import os
import random
import struct
import subprocess
import sys

M = (1 << 64) - 1
P1, P2, P3, P4, P5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
                      0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5)


def rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M


def round_(acc, lane):
    return (rotl((acc + lane * P2) & M, 31) * P1) & M


def xxh64(data, seed=0):
    """XXH64 as specified (the checksums of the format, seed 0)."""
    n, i = len(data), 0
    if n >= 32:
        v = [(seed + P1 + P2) & M, (seed + P2) & M, seed, (seed - P1) & M]
        while i + 32 <= n:
            for k in range(4):
                v[k] = round_(v[k], struct.unpack_from("<Q", data, i + 8 * k)[0])
            i += 32
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & M
        for k in range(4):
            h = ((h ^ round_(0, v[k])) * P1 + P4) & M
    else:
        h = (seed + P5) & M
    h = (h + n) & M
    while i + 8 <= n:
        h = (rotl(h ^ round_(0, struct.unpack_from("<Q", data, i)[0]), 27) * P1 + P4) & M
        i += 8
    if i + 4 <= n:
        h = (rotl(h ^ (struct.unpack_from("<I", data, i)[0] * P1 & M), 23) * P2 + P3) & M
        i += 4
    while i < n:
        h = (rotl(h ^ (data[i] * P5 & M), 11) * P1) & M
        i += 1
    h ^= h >> 33
    h = h * P2 & M
    h ^= h >> 29
    h = h * P3 & M
    return h ^ (h >> 32)


def compact_frame(data):
    """(header bytes, checksum offset, num_layers offset) of a compact file: version 5's
    56-byte header, or version 7's 72-byte one (docs/format.md, sections 10 and 12); None for
    the standard layout."""
    version = struct.unpack_from("<I", data, 8)[0] if len(data) >= 12 else 0
    if version == 5:
        return 56, 32, 54
    if version == 7 and len(data) >= 16 and struct.unpack_from("<I", data, 12)[0] & 1:
        return 72, 40, 58
    return None


def compact_sections(ribbon, path, frame):
    """(offset, bytes) of every section of a compact file (docs/format.md, section 10), from the
    layers' section sizes that `ribbon info --json` reports."""
    info = json.loads(subprocess.run([ribbon, "info", "--json", path], check=True,
                                     capture_output=True, text=True).stdout)
    def align(x):
        return (x + 15) // 16 * 16

    offset, sections = frame[0] + 24 * len(info["layers"]), []
    for layer in info["layers"]:
        thresholds, solution = layer["threshold_bytes"], layer["solution_bytes"]
        at = align(offset) if thresholds else 0
        offset = at + thresholds if thresholds else offset
        sections += [(at, thresholds), (align(offset), solution)]
        offset = align(offset) + solution
    return sections


def recompact_checksum(b, sections, frame):
    """A compact file's one checksum: XXH64 of its header (checksum field 0) and descriptors,
    then the sections' checksums, taken where the unchanged file has its sections."""
    header, checksum_at, layers_at = frame
    layers = b[layers_at]
    if header + 24 * layers > len(b):
        return
    covered = bytearray(b[:header + 24 * layers])
    covered[checksum_at:checksum_at + 8] = bytes(8)
    for offset, size in sections[:2 * layers]:
        covered += struct.pack("<Q", xxh64(bytes(b[offset:offset + size])))
    struct.pack_into("<Q", b, checksum_at, xxh64(bytes(covered)))


def rechecksum(b, sections=None, frame=None):
    """Recomputes every checksum a file records (as far as its descriptors make sense);
    `sections` and `frame` for a compact file. (Version 7's trailing sections keep theirs.)"""
    if sections is not None:
        return recompact_checksum(b, sections, frame)
    if len(b) < 128:
        return
    layers = struct.unpack_from("<I", b, 80)[0]
    if layers <= 16 and 128 + 128 * layers <= len(b):
        for l in range(layers):
            d = 128 + 128 * l
            for off_at, size_at, sum_at in ((40, 48, 56), (64, 72, 80)):
                off, size = struct.unpack_from("<QQ", b, d + off_at)
                if off + size <= len(b):
                    struct.pack_into("<Q", b, d + sum_at, xxh64(bytes(b[off:off + size])))
        struct.pack_into("<Q", b, 88, xxh64(bytes(b[128:128 + 128 * layers])))
    struct.pack_into("<Q", b, 120, xxh64(bytes(b[:120])))


def main():
    out = sys.argv[1]
    rng = random.Random(2024)
    ribbon = os.environ.get("RIBBON_CLI")
    for path in sys.argv[2:]:
        data = open(path, "rb").read()
        name = os.path.basename(path)
        frame = compact_frame(data)
        if frame and not ribbon:
            sys.exit("mutate.py: compact files need RIBBON_CLI (the ribbon tool) to find sections")
        sections = compact_sections(ribbon, path, frame) if frame else None
        mutants = {}
        for k in range(24):
            b = bytearray(data)
            bit = rng.randrange(len(b) * 8) if k % 2 else rng.randrange(min(len(b), 128 * 3) * 8)
            b[bit // 8] ^= 1 << (bit % 8)
            mutants["flip%d" % k] = b
        for k in range(48):  # the structural checks: flips in the header, descriptors, codes
            b = bytearray(data)
            limit = len(b) if k % 3 == 0 else min(len(b), 128 * 4)
            bit = rng.randrange(limit * 8)
            b[bit // 8] ^= 1 << (bit % 8)
            rechecksum(b, sections, frame)
            mutants["resum%d" % k] = b
        for k, size in enumerate(sorted({0, 7, 127, 128, len(data) - 1, len(data) // 2,
                                         rng.randrange(len(data))})):
            mutants["cut%d" % k] = bytearray(data[:size])
        mutants["append"] = bytearray(data + b"\0")
        for what, b in mutants.items():
            open(os.path.join(out, "%s.%s.rbn" % (name, what)), "wb").write(b)


main()
