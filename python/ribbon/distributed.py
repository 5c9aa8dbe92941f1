"""The steps of a distributed build, for any engine (Spark, Dask, Ray, a process pool).

A bumped layer's shard ranges are independent, so a cluster can solve them the way the
out-of-core builder solves them one after another. The file is a pure function of the distinct
key hashes and the options: byte-identical to ``ribbon build`` over the same keys, whatever
the partitioning, the order of rows, the order in which ranges are solved or task retries.

An engine provides three things (see :class:`Engine`; :class:`LocalEngine` is the reference,
``ribbon.spark`` the Spark one, ``python/examples/process_pool_engine.py`` a page of a process
pool):

* ``count()``: the number of keys (rows), before any heavy work; for a filter set also
  ``count_groups()``, its distinct groups (the file states them);
* ``solve_layer(plan, source, task)``: route every hash of ``source`` to its range
  (:func:`route_batch`), run ``task(range, hash_arrays, value_arrays)`` once per range
  (anywhere, in any order, retried at will; it returns its :class:`RangeResult`, its bumped
  hashes and their values), and return the results and a handle on the bumped hashes, the
  next layer's source;
* ``collect(source)``: the bumped hashes of a small last layer as one array, and their values;
* ``run_tasks(tasks)``: run small independent callables where the data is (the assembly's
  checksum and placement tasks); the default runs them here, on the driver.

Retrieval structures (``build_params(..., values=True)``, as ``ribbon build --values``) carry
a value beside each hash: layer 0 the keys' values, as given (the range task stores them under
their keys' check bits: :func:`to_stored_values`), later layers the stored values the tasks
return with their bumped hashes. For filters every values argument and result is None.

:func:`run_build` is the driver's loop over them. The output and the parts can be on any file
system that ``pyarrow.fs`` resolves from a URI (``file://``, ``s3://``, ``hdfs://``...) or on
the one given as ``filesystem=`` (see :class:`Destination`).
"""

from __future__ import annotations

import fcntl
import functools
import os
import posixpath
import re
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from . import _ribbon
from ._ribbon import (  # noqa: F401  (the steps, re-exported)
    DistributedParams,
    FinishedLayers,
    LayerPlan,
    LayerStep,
    RangedLayers,
    SectionChecksum,
    assemble,
    frame_file,
    finish_layers,
    group_by_range,
    plan_layer,
    solve_range,
    to_layer_hashes,
    to_stored_values,
)

#: Keys per shard range (a task's share of a layer): about 40 bytes per key at the task's
#: peak (the received arrays, their copy, the partitioned copy, the solution window).
DEFAULT_RANGE_KEYS = 1 << 24
#: Layers with at most this many keys are finished on the driver (8 bytes per key there, and
#: about 40 while it builds them: 40 MB at this default).
DEFAULT_ONE_PLACE_KEYS = 1 << 20
#: Bytes a task reads from a part at once (checksums, placement, streaming).
COPY_CHUNK_BYTES = 4 << 20


def build_params(
    key_kind: str, *, fpr=None, bits=None, width=64, seed=0, shard_size=None, threshold_codes=None,
    group_kind: Optional[str] = None, values: bool = False, check_bits: int = 0,
):
    """The parameters ``ribbon build`` uses for these options (the bumped variant only);
    ``group_kind`` ("u64" or "bytes"): those of a filter set (``ribbon build --groups -o``);
    ``values``: those of a retrieval structure (``ribbon build --values --bits B
    --check-bits C``, ``bits`` the value bits)."""
    return DistributedParams(
        key_kind,
        fpr=fpr,
        bits=bits,
        width=width,
        seed=seed,
        shard_size=shard_size,
        threshold_codes=threshold_codes,
        group_kind=group_kind,
        values=values,
        check_bits=check_bits,
    )


def hash_batch(params: DistributedParams, keys, groups=None) -> np.ndarray:
    """The hashes of a batch (numpy or pyarrow arrays) as ``ribbon build`` computes them: key
    hashes, or for a filter set (``params.group_kind``) the hashes of the pairs (groups[i],
    keys[i])."""
    if params.group_kind is None:
        if groups is not None:
            raise ValueError("groups given to a build that is no filter set")
        return _ribbon.hash_keys(keys, seed=params.seed, key_kind=params.key_kind)
    if groups is None:
        raise ValueError("a filter set's batch needs the groups of its keys")
    return _ribbon.hash_pairs(groups, keys, seed=params.seed, group_kind=params.group_kind,
                              key_kind=params.key_kind)


def route_batch(
    plan: LayerPlan, previous_hashes: np.ndarray, previous_values: Optional[np.ndarray] = None
) -> Iterator[Tuple[int, np.ndarray, Optional[np.ndarray]]]:
    """(range, layer hashes, their values) for each range that a batch of hashes reaches:
    layer 0 takes the key hashes, layer l the bumped hashes of layer l - 1 (remixed here);
    values (retrieval; else None) move with their hashes."""
    layer_hashes = to_layer_hashes(plan, previous_hashes)
    if previous_values is None:
        grouped, offsets = group_by_range(plan, layer_hashes)
        grouped_values = None
    else:
        grouped, offsets, grouped_values = group_by_range(
            plan, layer_hashes, np.ascontiguousarray(previous_values, dtype=np.uint32))
    for r in np.flatnonzero(np.diff(offsets)):
        piece = slice(offsets[r], offsets[r + 1])
        yield int(r), grouped[piece], None if grouped_values is None else grouped_values[piece]


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
        self._lock_fd: Optional[int] = None  # the driver's lock on its local parts directory

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_lock_fd"] = None  # a descriptor of the driver's process only
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
        return f".{self.name}.ribbon-parts-"

    # An empty parts directory younger than this may be a live build's that it has not locked
    # yet (created, then locked: microseconds apart), as the C++ temporaries' rule has it.
    UNLOCKED_GRACE_SECONDS = 60

    def make_parts_directory(self) -> str:
        """A fresh parts directory (where the file is assembled too); those of earlier builds
        that died (a lost driver) go. On a local file system the driver holds an exclusive
        lock on its directory until the build ends, as the C++ writer does on its temporary
        file, and a directory whose lock is held (a build of the same output still running),
        or that is empty and younger than a minute (one created but not yet locked), is left
        alone; object stores have no locks, so there one output takes one build at a time."""
        prefix = self.parts_prefix()
        listing = self.fs.get_file_info(pafs.FileSelector(self.directory or "/", allow_not_found=True))
        for info in listing:
            if info.base_name.startswith(prefix):
                self._remove_if_dead(info.path)
        self.parts_dir = posixpath.join(self.directory, prefix + uuid.uuid4().hex)
        self.fs.create_dir(self.parts_dir)
        if self.local:
            self._lock_fd = os.open(self.parts_dir, os.O_RDONLY | os.O_DIRECTORY)
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        return self.parts_dir

    def _remove_if_dead(self, directory: str) -> None:
        """Removes a parts directory whose build is dead: its lock can be taken (the lock goes
        with the process) and it holds parts, or is empty and older than the grace period.
        The lock is held while it is removed."""
        if not self.local:
            return self.remove(directory)
        try:
            fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return None  # gone, or not a directory: nothing to protect
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return None  # a live build's
            young = time.time() - os.fstat(fd).st_mtime <= self.UNLOCKED_GRACE_SECONDS
            if young and not os.listdir(fd):
                return None  # perhaps a live build's, between creating and locking it
            self.remove(directory)
        finally:
            os.close(fd)
        return None

    def remove(self, directory: str) -> None:
        try:
            self.fs.delete_dir(directory)
        except (OSError, FileNotFoundError):
            pass  # already gone

    def remove_parts(self) -> None:
        if self.parts_dir is not None:
            self.remove(self.parts_dir)
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

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


@dataclass
class RangeResult:
    """What a range task reports (its bumped hashes stay with the engine)."""

    range: int
    received: int
    distinct: int
    solved: bool
    bumped: int
    #: Retrieval: the smallest key hash the range found given twice with two values (then
    #: nothing is solved), and the library's message about it.
    conflict_hash: Optional[int] = None
    conflict: Optional[str] = None


def solve_task(
    params: DistributedParams,
    plan: LayerPlan,
    destination: Destination,
    range_index: int,
    hash_arrays: Sequence[np.ndarray],
    value_arrays: Optional[Sequence[np.ndarray]] = None,
    *,
    skip_if_repeats: bool = False,
    threads: int = 0,
) -> Tuple[RangeResult, np.ndarray, Optional[np.ndarray]]:
    """One range task: sorts, drops repeats, solves, writes the part (a local one through a
    temporary name and a rename); returns its report, its bumped hashes and (retrieval) their
    stored values. Layer 0's values are the keys' own, stored here under their check bits."""
    arrays = [np.ascontiguousarray(a, dtype=np.uint64) for a in hash_arrays]
    values = None
    if params.values:
        if value_arrays is None or len(value_arrays) != len(arrays):
            raise ValueError("a retrieval range task needs a value array per hash array")
        values = [np.ascontiguousarray(v, dtype=np.uint32) for v in value_arrays]
        if plan.layer == 0:
            values = [to_stored_values(params, h, v) for h, v in zip(arrays, values)]
    path = destination.part_path(plan, range_index)
    try:
        received, distinct, solved, bumped, part, bumped_values = solve_range(
            params,
            plan,
            range_index,
            arrays,
            path if destination.local else "",
            skip_if_repeats=skip_if_repeats,
            threads=threads,
            value_arrays=values,
        )
    except _ribbon.ConflictingValuesError as e:  # reported, for the driver to raise
        received = sum(len(a) for a in arrays)
        empty = np.empty(0, dtype=np.uint64)
        return (RangeResult(range_index, received, 0, False, 0, e.key_hash, str(e)), empty,
                np.empty(0, dtype=np.uint32))
    if solved and not destination.local:
        destination.write_part(path, part)
    return RangeResult(range_index, received, distinct, solved, len(bumped)), bumped, bumped_values


def check_output_path(path: str) -> None:
    """A clear error, before any heavy work, if local ``path`` cannot be written."""
    directory = os.path.dirname(os.path.abspath(path)) or "."
    if os.path.isdir(path):
        raise OSError(f"cannot write {path}: it is a directory")
    if not os.path.isdir(directory):
        raise OSError(f"cannot write {path}: directory {directory} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise OSError(f"cannot write {path}: directory {directory} is not writable")


class Engine:
    """What :func:`run_build` needs from an engine (see the module's documentation)."""

    #: How many range tasks run at once: a layer's ranges are cut so that its last wave of
    #: tasks fills them (plan_layer's task_slots). The file does not depend on it.
    task_slots: int = 1

    def count(self) -> int:
        raise NotImplementedError

    def count_groups(self) -> int:
        """A filter set's distinct groups (asked after count(); only of set builds)."""
        raise NotImplementedError

    def group_names(self):
        """A filter set's distinct groups themselves (integers or bytes, any order; numpy,
        pyarrow or a list), which the file names (format version 7); asked after
        count_groups() of set builds that keep names."""
        raise NotImplementedError(
            f"{type(self).__name__} cannot list a filter set's groups: build with "
            "group_names=False (format version 6), or give the engine a group_names()")

    def solve_layer(self, plan: LayerPlan, source: Any, task) -> Tuple[List[RangeResult], Any]:
        raise NotImplementedError

    def collect(self, source: Any) -> Tuple[np.ndarray, Optional[np.ndarray]]:
        """The bumped hashes of ``source`` as one array, and (retrieval) their values."""
        raise NotImplementedError

    def release(self, source: Any) -> None:
        """Frees a layer's bumped hashes once the next layer no longer needs them."""

    def find_key(self, key_hash: int) -> Any:
        """A key of the input whose hash is ``key_hash`` (to name a byte-string key given
        twice with two values), or None; the default finds none."""
        return None

    def run_tasks(self, tasks: Sequence[Callable[[], Any]]) -> List[Any]:
        """Runs each task (a picklable callable, small result) once, anywhere; returns the
        results in order. The default runs them here."""
        return [task() for task in tasks]


# ---------------------------------------------------------------------------------------
# Assembly: the driver frames the file (header, descriptors, finished layers); tasks compute
# the distributed sections' checksums and put the sections in place.
#
# A section's checksum is XXH64 over the whole section, which cannot be combined from its
# ranges' pieces (its lanes carry a state from one 32-byte stripe to the next through
# rotations and multiplications): one task reads the sections once, in order, where the
# parts are. On a local (shared) file system the other tasks write the parts' windows
# straight to their offsets in the file meanwhile; elsewhere one task streams the file.

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


@dataclass
class BuildStats:
    """What a distributed build did: counts, the seconds of each stage, and the bytes of the
    file that the driver wrote itself (header, descriptors, padding, finished layers)."""

    rows: int = 0
    keys: int = 0  # distinct key hashes: the file's key count
    groups: int = 0  # a filter set's distinct groups (0 for a filter)
    file_bytes: int = 0
    driver_bytes_written: int = 0
    layers: List[dict] = field(default_factory=list)  # per distributed layer
    one_place_layers: int = 0
    seconds: dict = field(default_factory=dict)
    layer0_route: str = ""  # where an engine that can choose hashed layer 0 ("jvm", "python")

    @property
    def bits_per_key(self) -> float:
        return 8.0 * self.file_bytes / self.keys if self.keys else 0.0


def _solve_layers(engine: Engine, params, destination: Destination, rows: int, range_keys: int,
                  one_place_keys: int, threads: int, stats: BuildStats):
    """The layers in ranges, as the out-of-core builder walks them (RangedLayers): returns
    their (plan, bumped keys), the last layer's bumped hashes (the engine's handle) and the
    first layer left to finish in one place (None when no key is left)."""
    layers: List[Tuple[LayerPlan, int]] = []
    source = None
    walk = RangedLayers(params, one_place_keys, rows)
    while (step := walk.current) is not None:
        clock = time.monotonic()
        plan = plan_layer(params, step.index, step.keys, range_keys, engine.task_slots)
        # A partial of a module function: engines pickle it to their workers.
        task = functools.partial(solve_task, params, plan, destination,
                                 skip_if_repeats=walk.counting, threads=threads)
        results, bumped_source = engine.solve_layer(plan, source, task)
        results = sorted(results, key=lambda r: r.range)
        if [r.range for r in results] != list(range(plan.num_ranges)):
            raise RuntimeError(f"layer {step.index}: the engine did not solve every range once")
        _raise_conflicts(engine, params, results)
        distinct = sum(r.distinct for r in results)
        bumped = sum(r.bumped for r in results)
        stats.layers.append({
            "layer": step.index, "keys": step.keys, "ranges": plan.num_ranges,
            "received": sum(r.received for r in results), "bumped": bumped,
            "seconds": time.monotonic() - clock, "replanned": distinct != step.keys,
        })
        if not walk.solved(distinct, bumped):  # repeats: layer 0 planned for the distinct count
            engine.release(bumped_source)
            continue
        layers.append((plan, bumped))
        if source is not None:
            engine.release(source)
        source = bumped_source
    return layers, source, walk.rest


def _raise_conflicts(engine: Engine, params, results: Sequence[RangeResult]) -> None:
    """ConflictingValuesError for the smallest key hash given twice with two values, if any
    range found one (byte-string keys named by the engine where it can find them)."""
    conflicts = [r for r in results if r.conflict is not None]
    if not conflicts:
        return
    first = min(conflicts, key=lambda r: r.conflict_hash)
    message = first.conflict
    if params.key_kind == "bytes":
        key = engine.find_key(first.conflict_hash)
        if key is not None:
            message = f"duplicate key with different values: key {key!r} is given twice with two values"
    error = _ribbon.ConflictingValuesError(message)
    error.key_hash = first.conflict_hash
    raise error


def as_group_names(names) -> Any:
    """Distinct groups as the file names them: integers as their 64-bit patterns (a negative
    long is the u64 the pairs were hashed with), byte strings as they are (str: UTF-8)."""
    if isinstance(names, np.ndarray) and names.dtype.kind in "iu":
        return names.astype(np.int64 if names.dtype.kind == "i" else np.uint64).view(np.uint64)
    names = list(names)
    if names and isinstance(names[0], (int, np.integer)):
        return np.array([int(n) & 0xFFFFFFFFFFFFFFFF for n in names], dtype=np.uint64)
    return [n.encode() if isinstance(n, str) else bytes(n) for n in names]


def run_build(
    engine: Engine,
    params: DistributedParams,
    path,
    *,
    range_keys: int = DEFAULT_RANGE_KEYS,
    one_place_keys: int = DEFAULT_ONE_PLACE_KEYS,
    threads: int = 0,
    filesystem: Optional[pafs.FileSystem] = None,
    group_names: Union[bool, Any] = True,
    metadata: Optional[bytes] = None,
) -> BuildStats:
    """The driver's loop: plan each layer, let the engine solve its ranges, finish the small
    last layers here, assemble the file. Layer 0 is planned for the row count; if the ranges
    find repeated keys, it is planned again for the distinct count. ``path``: a local path or
    a URI (``filesystem``: the file system it is on). The parts directory is removed whatever
    happens. A filter set names its groups (``engine.group_names()``, format version 7)
    unless ``group_names`` is False (version 6); ``group_names`` may also be the names
    themselves (every group, those without keys too: a table's empty files), which the engine
    is then not asked for. ``metadata`` (bytes) is stored with the file as it is (version 7)."""
    if range_keys < 1 or one_place_keys < 0:
        raise ValueError("range_keys must be at least 1 and one_place_keys at least 0")
    destination = path if isinstance(path, Destination) else Destination(path, filesystem)
    destination.check()
    stats = BuildStats()
    clock = time.monotonic()
    stats.rows = engine.count()
    names = None
    if params.group_kind is not None:
        stats.groups = engine.count_groups()
        if group_names is True:
            names = engine.group_names()
        elif group_names is not False:
            names = as_group_names(group_names)
    stats.seconds["count"] = time.monotonic() - clock
    destination.check_size(stats.rows * params.result_bits // 8)
    destination.make_parts_directory()
    try:
        layers, source, step = _solve_layers(
            engine, params, destination, stats.rows, range_keys, one_place_keys, threads, stats
        )
        stats.keys = layers[0][0].input_keys if layers else 0
        clock = time.monotonic()
        rest = None
        if layers and step is not None:
            hashes, values = engine.collect(source)
            rest = finish_layers(params, step.index, hashes, threads=threads, values=values)
            stats.one_place_layers = rest.num_layers
        if source is not None:
            engine.release(source)
        stats.seconds["one_place_layers"] = time.monotonic() - clock
        clock = time.monotonic()
        assemble_file(engine, params, destination, stats.keys, layers, rest, stats, names,
                      metadata)
        stats.seconds["assemble"] = time.monotonic() - clock
    finally:
        destination.remove_parts()
    stats.file_bytes = destination.file_bytes(destination.path)
    return stats


class LocalEngine(Engine):
    """The reference engine: every step in this process, ranges solved one after another
    (in a shuffled order, to show that the order does not matter). ``batches``: an iterable
    (re-iterable) of key arrays (numpy or pyarrow); for a filter set (``params.group_kind``),
    of (groups, keys) pairs of arrays; for a retrieval structure (``params.values``), of
    (keys, values) pairs."""

    def __init__(self, params: DistributedParams, batches: Iterable, *, order_seed: int = 0):
        self.params = params
        self.batches = [self._columns(b) for b in batches]
        self.order = np.random.default_rng(order_seed)

    def _columns(self, batch) -> Tuple[Any, Any, Any]:
        """(groups or None, keys, values or None)."""
        if self.params.group_kind is not None:
            groups, keys = batch
            return groups, keys, None
        if self.params.values:
            keys, values = batch
            return None, keys, np.asarray(values, dtype=np.uint32)
        return None, batch, None

    def count(self) -> int:
        return sum(len(keys) for _, keys, _ in self.batches)

    def group_names(self) -> list:
        seen = set()
        for groups, _, _ in self.batches:  # each batch's distinct groups, as the file names them
            if isinstance(groups, (pa.Array, pa.ChunkedArray)):
                if not pa.types.is_integer(groups.type):
                    groups = groups.cast(pa.binary())  # a string group is its UTF-8 bytes
                seen.update(pc.unique(groups).to_pylist())
            else:
                seen.update(g.encode() if isinstance(g, str) else g
                            for g in np.unique(np.asarray(groups)).tolist())
        return as_group_names(seen)

    def count_groups(self) -> int:
        return len(self.group_names())

    def _previous(self, source) -> Iterator[Tuple[np.ndarray, Optional[np.ndarray]]]:
        if source is None:  # layer 0: hash the keys (or pairs), the values as given
            for groups, keys, values in self.batches:
                yield hash_batch(self.params, keys, groups), values
        else:
            yield from source

    def solve_layer(self, plan, source, task):
        by_range = {}
        for hashes, values in self._previous(source):
            for r, range_hashes, range_values in route_batch(plan, hashes, values):
                arrays = by_range.setdefault(r, ([], []))
                arrays[0].append(range_hashes)
                arrays[1].append(range_values)
        results, bumped = [], []
        for r in self.order.permutation(plan.num_ranges):
            hash_arrays, value_arrays = by_range.get(int(r), ([], []))
            result, range_bumped, bumped_values = task(
                int(r), hash_arrays, value_arrays if self.params.values else None)
            results.append(result)
            bumped.append((range_bumped, bumped_values))
        return results, bumped

    def find_key(self, key_hash: int):
        for groups, keys, _ in self.batches:
            found = np.flatnonzero(hash_batch(self.params, keys, groups) == np.uint64(key_hash))
            if len(found):
                k = keys[int(found[0])]
                return k.as_py() if hasattr(k, "as_py") else k
        return None

    def collect(self, source):
        if not source:
            return np.empty(0, dtype=np.uint64), (np.empty(0, np.uint32) if self.params.values else None)
        hashes = np.concatenate([h for h, _ in source])
        values = np.concatenate([v for _, v in source]) if self.params.values else None
        return hashes, values


def build(
    batches: Iterable,
    path: str,
    *,
    key_kind: str,
    group_kind: Optional[str] = None,
    values: bool = False,
    check_bits: int = 0,
    fpr: Optional[float] = None,
    bits: Optional[int] = None,
    width: int = 64,
    seed: int = 0,
    shard_size: Optional[int] = None,
    threshold_codes: Optional[str] = None,
    range_keys: int = DEFAULT_RANGE_KEYS,
    one_place_keys: int = DEFAULT_ONE_PLACE_KEYS,
    order_seed: int = 0,
    filesystem: Optional[pafs.FileSystem] = None,
    group_names: bool = True,
    metadata: Optional[bytes] = None,
) -> BuildStats:
    """A distributed build run in this process (:class:`LocalEngine`): the same file as
    ``ribbon build`` over the distinct keys of ``batches``; with ``group_kind``, the filter
    set of the (groups, keys) batches, as ``ribbon build --groups -o`` builds it (with the
    groups' names unless ``group_names`` is False); with ``values``, the retrieval structure
    of the (keys, values) batches (``bits`` value bits, ``check_bits``), as ``ribbon build
    --values`` builds it. ``metadata``: bytes stored with the file (format version 7)."""
    params = build_params(
        key_kind,
        fpr=fpr,
        bits=bits,
        width=width,
        seed=seed,
        shard_size=shard_size,
        threshold_codes=threshold_codes,
        group_kind=group_kind,
        values=values,
        check_bits=check_bits,
    )
    engine = LocalEngine(params, batches, order_seed=order_seed)
    return run_build(
        engine,
        params,
        path,
        range_keys=range_keys,
        one_place_keys=one_place_keys,
        filesystem=filesystem,
        group_names=group_names,
        metadata=metadata,
    )
