"""The assembly of a distributed build's file (see :mod:`ribbon.distributed`), by the C++
assembler (ribbon/distributed.hpp): the driver frames the file (header, descriptors, finished
layers, and the parts' windows that make the distributed sections); tasks compute the
sections' checksums and put the sections in place. This module only says which step runs
where, and moves the file into place.

A section's checksum is XXH64 over the whole section, which cannot be combined from its
ranges' pieces (its lanes carry a state from one 32-byte stripe to the next through
rotations and multiplications): one task reads the sections once, in order, where the
parts are. On a local (shared) file system the other tasks write each part's windows
straight to their offsets in the file meanwhile; elsewhere (an object store, written through
its pyarrow file system) one task streams the file.
"""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING, Optional, Sequence, Tuple

import pyarrow.fs as pafs

from .._ribbon import (
    FileFrame,
    assembly_frame,
    checksum_sections,
    copy_windows,
    create_assembled_file,
    write_file,
    write_pieces,
)
from .destination import Destination

if TYPE_CHECKING:
    from .stats import BuildStats
    from .engine import Engine

#: A part's window: (part path, part bytes, offset in the part, bytes, offset in the file).
Window = Tuple[str, int, int, int, int]


def _parts_on(destination: Destination) -> Optional[pafs.FileSystem]:
    """The file system the C++ assembler reads the parts through: None for local files
    (read by C++ itself), else the destination's (an object store)."""
    return None if destination.local else destination.fs


def checksum_task(destination: Destination, frame: FileFrame) -> list:
    """The (thresholds, solution) checksums of each distributed layer: one pass over the
    parts, each section's windows in order."""
    return checksum_sections(frame, _parts_on(destination))


def place_task(file_path: str, windows: Sequence[Window]) -> int:
    """Writes one part's windows at their offsets in a local file (positioned writes)."""
    copy_windows(list(windows), file_path)
    return 0


def stream_task(destination: Destination, file_path: str, frame: FileFrame) -> int:
    """Writes the whole file in order to an object of the destination's file system."""
    with destination.fs.open_output_stream(file_path) as out:
        write_file(frame, out.write, _parts_on(destination))
    return frame.file_bytes


def assemble_file(engine: Engine, params, destination: Destination, key_count: int,
                  layers, rest, stats: "BuildStats", group_names=None, metadata=None) -> None:
    """Writes the file from the solved layers' parts and the finished layers: complete under
    its name (a rename, or a move once whole) or not at all. ``group_names``: a filter set's
    groups, ``metadata``: bytes to store with it (None: none written)."""
    solved = [(plan, bumped, [destination.part_path(plan, r) for r in range(plan.num_ranges)])
              for plan, bumped in layers]

    def frame(checksums=None) -> FileFrame:
        return assembly_frame(params, key_count, solved, rest, checksums,
                              group_count=stats.groups, group_names=group_names,
                              metadata=metadata)

    unsummed = frame()  # the windows' places; the descriptors wait for the checksums
    temp = destination.temp_path()
    checksums = functools.partial(checksum_task, destination, unsummed)
    if destination.local:
        create_assembled_file(temp, unsummed.file_bytes)  # every block now: a full disk fails here
        places = [functools.partial(place_task, temp, windows)
                  for windows in unsummed.windows_by_part()]
        sums = engine.run_tasks([checksums] + places)[0]
    else:
        sums = engine.run_tasks([checksums])[0]
    framed = frame(sums)
    stats.driver_bytes_written = framed.piece_bytes
    if destination.local:
        write_pieces(framed, temp)  # and the file flushed to disk
    else:
        engine.run_tasks([functools.partial(stream_task, destination, temp, framed)])
    if destination.file_bytes(temp) != framed.file_bytes:
        raise OSError(f"the assembled file has {destination.file_bytes(temp)} bytes, "
                      f"not {framed.file_bytes}")
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
