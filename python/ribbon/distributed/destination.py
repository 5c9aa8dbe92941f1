"""Where a distributed build writes: the output on a ``pyarrow.fs`` file system, the parts
directory of a build and the lock that keeps a live build's parts from other builds of the
same output (see :mod:`ribbon.distributed`)."""

from __future__ import annotations

import os
import posixpath
import re
import uuid
from typing import Callable, Optional

import numpy as np
import pyarrow.fs as pafs

from .._ribbon import LayerPlan, PartsDirectory, parts_prefix


class Destination:
    """Where a build writes: the output file and its parts directory, on a ``pyarrow.fs``
    file system. Local files get positioned writes and a rename; other file systems (object
    stores) one writer per file and a move (S3: a server-side copy) once the file is whole.
    Picklable: tasks on executors write their parts through it."""

    def __init__(self, path, filesystem: Optional[pafs.FileSystem] = None):
        path = os.fspath(path)
        if filesystem is None and "://" in path:
            try:
                filesystem, path = pafs.FileSystem.from_uri(path)
            except Exception as e:  # unknown scheme, malformed URI...
                shown = re.sub(r"^(\w+://)[^@/]*:[^@]*@", r"\1", path)  # no credentials in messages
                raise ValueError(f"cannot write {shown!r}: {str(e).replace(path, shown)}") from e
        self.fs = filesystem or pafs.LocalFileSystem()
        self.local = isinstance(self.fs, pafs.LocalFileSystem)
        # A local link is followed: its target is replaced, as `ribbon build` does.
        self.path = os.path.realpath(path) if self.local else path.rstrip("/")
        self.directory, self.name = posixpath.split(self.path)
        self.parts_dir: Optional[str] = None
        self._parts: Optional[PartsDirectory] = None  # the driver's locked local parts directory

    #: Called with a local parts directory's path between creating and locking it (tests).
    _before_locking: Optional[Callable[[str], None]] = None

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_parts"] = None  # the driver's lock, of its process only
        return state

    def __repr__(self) -> str:
        return f"Destination({self.fs.type_name}:{self.path})"

    def check(self) -> None:
        """A clear error, before any heavy work, if the output cannot be written: a missing
        or unwritable directory, bad credentials (a small probe object is written and removed
        on remote file systems)."""
        if self.local:
            return check_output_path(self.path)
        where = f"{self.fs.type_name}://{self.path}"
        try:
            if self.fs.get_file_info(self.path).type == pafs.FileType.Directory:
                raise OSError(f"cannot write {where}: it is a directory")
            probe = posixpath.join(self.directory, f".{self.name}.ribbon-probe-{uuid.uuid4().hex}")
            with self.fs.open_output_stream(probe) as out:
                out.write(b"")
            self.fs.delete_file(probe)
        except OSError as e:
            if "cannot write" in str(e):
                raise
            raise OSError(f"cannot write {where}: {e}") from e

    def check_size(self, estimated_bytes: int) -> None:
        """Refuses, before any solving, an S3 file past 5 GiB: the final move is one
        server-side copy (CopyObject), which S3 limits to 5 GiB. ``estimated_bytes``: about
        the file's size (rows x bits / 8: repeated keys make the file smaller)."""
        limit = 5 * 2**30
        if self.fs.type_name == "s3" and estimated_bytes > limit:
            raise ValueError(
                f"cannot write s3://{self.path}: about {estimated_bytes} bytes, over the 5 GiB "
                "that S3 copies in one request; write to a shared file system or HDFS")

    def parts_prefix(self) -> str:
        """Parts of builds of this output live in directories named with this prefix."""
        return parts_prefix(self.path)

    def make_parts_directory(self) -> str:
        """A fresh parts directory (where the file is assembled too); those of earlier builds
        that died (a lost driver) go. On a local file system the C++ temporaries' protocol
        makes it (PartsDirectory): the driver holds its lock until the build ends, and a
        directory whose lock is held (a build of the same output still running), or that is
        empty and younger than a minute (one created but not yet locked), or that holds other
        files than a build's, is left alone. Object stores have no locks, so there one output
        takes one build at a time."""
        if self.local:
            self._parts = PartsDirectory(self.path, before_locking=self._before_locking)
            self.parts_dir = self._parts.path
            return self.parts_dir
        prefix = self.parts_prefix()
        listing = self.fs.get_file_info(pafs.FileSelector(self.directory or "/", allow_not_found=True))
        for info in listing:
            if info.base_name.startswith(prefix):
                self.remove(info.path)
        self.parts_dir = posixpath.join(self.directory, prefix + uuid.uuid4().hex)
        self.fs.create_dir(self.parts_dir)
        return self.parts_dir

    def remove(self, directory: str) -> None:
        try:
            self.fs.delete_dir(directory)
        except (OSError, FileNotFoundError):
            pass  # already gone

    def remove_parts(self) -> None:
        if self._parts is not None:
            self._parts.remove()  # its files, itself, then the lock
            self._parts = None
        elif self.parts_dir is not None:
            self.remove(self.parts_dir)

    def part_path(self, plan: LayerPlan, range_index: int) -> str:
        """Where range ``range_index`` of a layer puts its part. The layer's key count is in
        the name: layer 0 planned again (for the distinct count) never reuses a part."""
        name = f"L{plan.layer:02d}-{plan.input_keys}-R{range_index:09d}.part"
        return posixpath.join(self.parts_dir, name)

    def temp_path(self) -> str:
        """The file while it is assembled (in the parts directory: removed with it)."""
        return posixpath.join(self.parts_dir, "assembled.ribbon")

    def write_part(self, path: str, part: np.ndarray) -> None:
        """A part on a remote file system. An object appears whole when its upload completes;
        one cut short is caught by the size check of the tasks that read it."""
        with self.fs.open_output_stream(path) as out:
            out.write(part)

    def file_bytes(self, path: str) -> int:
        return self.fs.get_file_info(path).size


def check_output_path(path: str) -> None:
    """A clear error, before any heavy work, if local ``path`` cannot be written."""
    directory = os.path.dirname(os.path.abspath(path)) or "."
    if os.path.isdir(path):
        raise OSError(f"cannot write {path}: it is a directory")
    if not os.path.isdir(directory):
        raise OSError(f"cannot write {path}: directory {directory} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise OSError(f"cannot write {path}: directory {directory} is not writable")
