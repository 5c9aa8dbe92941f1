"""The assembly of a distributed build's file (see :mod:`ribbon.distributed`): the driver
frames the file (header, descriptors, finished layers); tasks compute the distributed
sections' checksums and put the sections in place.

A section's checksum is XXH64 over the whole section, which cannot be combined from its
ranges' pieces (its lanes carry a state from one 32-byte stripe to the next through
rotations and multiplications): one task reads the sections once, in order, where the
parts are. On a local (shared) file system the other tasks write the parts' windows
straight to their offsets in the file meanwhile; elsewhere one task streams the file.
"""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING, Any, Iterator, List, Sequence, Tuple

import numpy as np
import pyarrow.fs as pafs

from .._ribbon import SectionChecksum, frame_file
from .destination import Destination

if TYPE_CHECKING:
    from .driver import BuildStats
    from .engine import Engine

#: Bytes a task reads from a part at once (checksums, placement, streaming).
COPY_CHUNK_BYTES = 4 << 20

Window = Tuple[str, int, int, int]  # part path, offset in the part, bytes, the part's size


def section_windows(params, destination: Destination, layers) -> dict:
    """(layer, section) -> the parts' windows that make that section, in range order."""
    windows = {}
    for plan, _ in layers:
        thresholds, solutions = [], []
        for r in range(plan.num_ranges):
            path, size = destination.part_path(plan, r), plan.part_bytes(params, r)
            split = plan.threshold_bytes(params, r)
            thresholds.append((path, 0, split, size))
            solutions.append((path, split, size - split, size))
        windows[(plan.layer, 0)], windows[(plan.layer, 1)] = thresholds, solutions
    return windows


def _read_windows(fs: pafs.FileSystem, windows: Sequence[Window]) -> Iterator[np.ndarray]:
    """The windows' bytes in pieces of at most COPY_CHUNK_BYTES; a part of the wrong size
    (damaged, cut short, or of another build) is an error."""
    for path, offset, size, part_bytes in windows:
        with fs.open_input_file(path) as f:
            if f.size() != part_bytes:
                raise OSError(
                    f"part {path} has {f.size()} bytes, not {part_bytes} (damaged or cut short)"
                )
            f.seek(offset)
            while size > 0:
                chunk = f.read_buffer(min(size, COPY_CHUNK_BYTES))
                if chunk.size == 0:
                    raise OSError(f"part {path} ended early")
                size -= chunk.size
                yield np.frombuffer(chunk, dtype=np.uint8)


def checksum_task(destination: Destination, sections: Sequence[Sequence[Window]]) -> np.ndarray:
    """The sections' checksums, each over its windows in order."""
    sums = []
    for windows in sections:
        checksum = SectionChecksum()
        for chunk in _read_windows(destination.fs, windows):
            checksum.update(chunk)
        sums.append(checksum.digest())
    return np.array(sums, dtype=np.uint64)


def _pwrite_all(fd: int, data, offset: int) -> None:
    """pwrite until every byte is written (a short write is no error: NFS, FUSE, signals)."""
    view = memoryview(data).cast("B")
    while len(view):
        written = os.pwrite(fd, view, offset)
        view, offset = view[written:], offset + written


def place_task(file_path: str, placements: Sequence[Tuple[Window, int]]) -> int:
    """Writes windows of parts at their offsets in a local file (positioned writes)."""
    fs = pafs.LocalFileSystem()
    fd = os.open(file_path, os.O_WRONLY)
    try:
        for window, offset in placements:
            for chunk in _read_windows(fs, [window]):
                _pwrite_all(fd, chunk, offset)
                offset += len(chunk)
    finally:
        os.close(fd)
    return 0


def stream_task(destination: Destination, file_path: str, items: Sequence[Any]) -> int:
    """Writes the whole file in order: bytes (the frame's pieces) and windows of parts."""
    written = 0
    with destination.fs.open_output_stream(file_path) as out:
        for item in items:
            chunks = [item] if isinstance(item, bytes) else _read_windows(destination.fs, item)
            for chunk in chunks:
                written += out.write(chunk)
    return written


def _placements(windows: dict, holes) -> List[List[Tuple[Window, int]]]:
    """Per part: its windows and their offsets in the file (one task each)."""
    by_part = {}
    for offset, _, layer, which in holes:
        for window in windows[(layer, which)]:
            by_part.setdefault(window[0], []).append((window, offset))
            offset += window[2]
    return list(by_part.values())


def assemble_file(engine: Engine, params, destination: Destination, key_count: int,
                  layers, rest, stats: "BuildStats", group_names=None, metadata=None) -> None:
    """Writes the file from the solved layers' parts and the finished layers: complete under
    its name (a rename, or a move once whole) or not at all. ``group_names``: a filter set's
    groups, ``metadata``: bytes to store with it (None: none written)."""
    windows = section_windows(params, destination, layers)
    sections = [windows[key] for plan, _ in layers for key in ((plan.layer, 0), (plan.layer, 1))]

    def described(sums):
        return [(plan, bumped, int(sums[2 * i]), int(sums[2 * i + 1]))
                for i, (plan, bumped) in enumerate(layers)]

    def frame(sums):
        return frame_file(params, key_count, described(sums), rest, group_count=stats.groups,
                          group_names=group_names, metadata=metadata)

    file_bytes, _, holes = frame([0] * len(sections))
    temp = destination.temp_path()
    checksums = functools.partial(checksum_task, destination, sections)
    if destination.local:
        with open(temp, "wb") as f:
            # The whole file's blocks now, so a full disk fails here and not as a short write;
            # the tasks fill the sections.
            if file_bytes:
                os.posix_fallocate(f.fileno(), 0, file_bytes)
        places = [functools.partial(place_task, temp, p) for p in _placements(windows, holes)]
        sums = engine.run_tasks([checksums] + places)[0]
    else:
        sums = engine.run_tasks([checksums])[0]
    _, pieces, holes = frame(sums)
    stats.driver_bytes_written = sum(len(data) for _, data in pieces)
    if destination.local:
        with open(temp, "r+b") as f:
            for offset, data in pieces:
                _pwrite_all(f.fileno(), data, offset)
            os.fsync(f.fileno())
    else:
        items = sorted([(o, data) for o, data in pieces] +
                       [(o, windows[(layer, which)]) for o, _, layer, which in holes],
                       key=lambda item: item[0])
        engine.run_tasks([functools.partial(stream_task, destination, temp,
                                            [item for _, item in items])])
    if destination.file_bytes(temp) != file_bytes:
        raise OSError(f"the assembled file has {destination.file_bytes(temp)} bytes, "
                      f"not {file_bytes}")
    destination.fs.move(temp, destination.path)  # a rename; on S3 a copy of the whole object
    if destination.local:
        _fsync_directory(destination.directory)  # the rename itself survives a crash, as in C++


def _fsync_directory(path: str) -> None:
    """Makes a rename in `path` durable (what cpu/src/output_file.cpp does after its own)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
