"""The steps of a distributed build, for any engine (Spark, Dask, Ray, a process pool).

A bumped layer's shard ranges are independent, so a cluster can solve them the way the
out-of-core builder solves them one after another. The file is a pure function of the distinct
key hashes and the options: byte-identical to ``ribbon build`` over the same keys, whatever
the partitioning, the order of rows, the order in which ranges are solved or task retries.

An engine provides three things (see :class:`Engine`; :class:`LocalEngine` is the reference,
``ribbon.spark`` the Spark one, ``python/examples/dask_build.py`` a page of Dask):

* ``count()``: the number of keys (rows), before any heavy work;
* ``solve_layer(plan, source, task)``: route every hash of ``source`` to its range
  (:func:`route_batch`), run ``task(range, hash_arrays)`` once per range (anywhere, in any
  order, retried at will), and return the tasks' :class:`RangeResult` (without their bumped
  hashes) and a handle on the bumped hashes, the next layer's source;
* ``collect(source)``: the bumped hashes of a small last layer as one array.

:func:`run_build` is the driver's loop over them.
"""

from __future__ import annotations

import functools
import glob
import os
import shutil
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from . import _ribbon
from ._ribbon import (  # noqa: F401  (the steps, re-exported)
    DistributedParams,
    FinishedLayers,
    LayerPlan,
    assemble,
    finish_in_one_place,
    finish_layers,
    group_by_range,
    plan_layer,
    solve_range,
    to_layer_hashes,
)

#: Keys per shard range (a task's share of a layer): about 40 bytes per key at the task's
#: peak (the received arrays, their copy, the partitioned copy, the solution window).
DEFAULT_RANGE_KEYS = 1 << 24
#: Layers with at most this many keys are finished on the driver (8 bytes per key there).
DEFAULT_ONE_PLACE_KEYS = 1 << 24


def build_params(
    key_kind: str, *, fpr=None, bits=None, width=64, seed=0, shard_size=None, threshold_codes=None
):
    """The parameters ``ribbon build`` uses for these options (bumped filters only)."""
    return DistributedParams(
        key_kind,
        fpr=fpr,
        bits=bits,
        width=width,
        seed=seed,
        shard_size=shard_size,
        threshold_codes=threshold_codes,
    )


def hash_batch(params: DistributedParams, keys) -> np.ndarray:
    """Key hashes of a batch (numpy or pyarrow array) as ``ribbon build`` computes them."""
    return _ribbon.hash_keys(keys, seed=params.seed, key_kind=params.key_kind)


def route_batch(
    plan: LayerPlan, previous_hashes: np.ndarray
) -> Iterator[Tuple[int, np.ndarray]]:
    """(range, layer hashes) for each range that a batch of hashes reaches: layer 0 takes
    the key hashes, layer l the bumped hashes of layer l - 1 (remixed here)."""
    layer_hashes = to_layer_hashes(plan, previous_hashes)
    grouped, offsets = group_by_range(plan, layer_hashes)
    for r in np.flatnonzero(np.diff(offsets)):
        yield int(r), grouped[offsets[r] : offsets[r + 1]]


def part_path(parts_dir: str, plan: LayerPlan, range_index: int) -> str:
    """Where range ``range_index`` of a layer puts its part. The layer's key count is in the
    name: layer 0 planned again (for the distinct count) never reuses a part of the first."""
    return os.path.join(
        parts_dir, f"L{plan.layer:02d}-{plan.input_keys}-R{range_index:09d}.part"
    )


@dataclass
class RangeResult:
    """What a range task reports (its bumped hashes stay with the engine)."""

    range: int
    received: int
    distinct: int
    solved: bool
    bumped: int


def solve_task(
    params: DistributedParams,
    plan: LayerPlan,
    parts_dir: str,
    range_index: int,
    hash_arrays: Sequence[np.ndarray],
    *,
    skip_if_repeats: bool = False,
    threads: int = 0,
) -> Tuple[RangeResult, np.ndarray]:
    """One range task: sorts, drops repeats, solves, writes the part (temporary name and
    rename); returns its report and its bumped hashes."""
    arrays = [np.asarray(a, dtype=np.uint64) for a in hash_arrays]
    hashes = np.concatenate(arrays) if arrays else np.empty(0, dtype=np.uint64)
    received, distinct, solved, bumped = solve_range(
        params,
        plan,
        range_index,
        hashes,
        part_path(parts_dir, plan, range_index),
        skip_if_repeats=skip_if_repeats,
        threads=threads,
    )
    return RangeResult(range_index, received, distinct, solved, len(bumped)), bumped


def parts_directory_prefix(path: str) -> str:
    """Parts of builds of ``path`` live in directories named with this prefix, beside it."""
    head, tail = os.path.split(os.path.abspath(path))
    return os.path.join(head, f".{tail}.ribbon-parts-")


def check_output_path(path: str) -> None:
    """A clear error, before any heavy work, if ``path`` cannot be written."""
    directory = os.path.dirname(os.path.abspath(path)) or "."
    if os.path.isdir(path):
        raise OSError(f"cannot write {path}: it is a directory")
    if not os.path.isdir(directory):
        raise OSError(f"cannot write {path}: directory {directory} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise OSError(f"cannot write {path}: directory {directory} is not writable")


def make_parts_directory(path: str) -> str:
    """A fresh parts directory for a build of ``path``; parts directories of earlier builds
    of ``path`` that died (a lost driver) are removed first."""
    prefix = parts_directory_prefix(path)
    for stale in glob.glob(glob.escape(prefix) + "*"):
        shutil.rmtree(stale, ignore_errors=True)
    parts_dir = prefix + uuid.uuid4().hex
    os.mkdir(parts_dir)
    return parts_dir


class Engine:
    """What :func:`run_build` needs from an engine (see the module's documentation)."""

    def count(self) -> int:
        raise NotImplementedError

    def solve_layer(self, plan: LayerPlan, source: Any, task) -> Tuple[List[RangeResult], Any]:
        raise NotImplementedError

    def collect(self, source: Any) -> np.ndarray:
        raise NotImplementedError

    def release(self, source: Any) -> None:
        """Frees a layer's bumped hashes once the next layer no longer needs them."""


@dataclass
class BuildStats:
    """What a distributed build did: counts and the seconds of each stage."""

    rows: int = 0
    keys: int = 0  # distinct key hashes: the file's key count
    file_bytes: int = 0
    layers: List[dict] = field(default_factory=list)  # per distributed layer
    one_place_layers: int = 0
    seconds: dict = field(default_factory=dict)

    @property
    def bits_per_key(self) -> float:
        return 8.0 * self.file_bytes / self.keys if self.keys else 0.0


def run_build(
    engine: Engine,
    params: DistributedParams,
    path: str,
    *,
    range_keys: int = DEFAULT_RANGE_KEYS,
    one_place_keys: int = DEFAULT_ONE_PLACE_KEYS,
    threads: int = 0,
) -> BuildStats:
    """The driver's loop: plan each layer, let the engine solve its ranges, finish the small
    last layers here, assemble the file (temporary name, rename). Layer 0 is planned for the
    row count; if the ranges find repeated keys, it is planned again for the distinct count.
    The parts directory is removed whatever happens."""
    if range_keys < 1 or one_place_keys < 0:
        raise ValueError("range_keys must be at least 1 and one_place_keys at least 0")
    check_output_path(path)
    stats = BuildStats()
    clock = time.monotonic()
    stats.rows = n = engine.count()
    stats.seconds["count"] = time.monotonic() - clock
    parts_dir = make_parts_directory(path)
    try:
        layers: List[Tuple[LayerPlan, int, List[str]]] = []
        source, layer = None, 0
        distinct_known = False  # layer 0 is first planned for the rows, repeats included
        while n > 0 and not finish_in_one_place(params, layer, n, one_place_keys):
            clock = time.monotonic()
            plan = plan_layer(params, layer, n, range_keys)

            # A partial of a module function: engines pickle it to their workers.
            task = functools.partial(
                solve_task,
                params,
                plan,
                parts_dir,
                skip_if_repeats=not distinct_known,
                threads=threads,
            )
            results, bumped_source = engine.solve_layer(plan, source, task)
            results = sorted(results, key=lambda r: r.range)
            if [r.range for r in results] != list(range(plan.num_ranges)):
                raise RuntimeError(f"layer {layer}: the engine did not solve every range once")
            distinct = sum(r.distinct for r in results)
            distinct_known = True
            stats.layers.append(
                {
                    "layer": layer,
                    "keys": n,
                    "ranges": plan.num_ranges,
                    "received": sum(r.received for r in results),
                    "bumped": sum(r.bumped for r in results),
                    "seconds": time.monotonic() - clock,
                    "replanned": distinct != n,
                }
            )
            if distinct != n and layer > 0:
                raise RuntimeError(f"layer {layer}: {n} bumped keys arrived as {distinct}")
            if distinct != n:  # repeated keys: layer 0's geometry needs the distinct count
                engine.release(bumped_source)
                n = distinct
                continue
            parts = [part_path(parts_dir, plan, r) for r in range(plan.num_ranges)]
            layers.append((plan, stats.layers[-1]["bumped"], parts))
            if source is not None:
                engine.release(source)
            source, n, layer = bumped_source, stats.layers[-1]["bumped"], layer + 1
        stats.keys = layers[0][0].input_keys if layers else 0
        clock = time.monotonic()
        rest = None
        if layers and n > 0:
            rest = finish_layers(params, layer, engine.collect(source), threads=threads)
            stats.one_place_layers = rest.num_layers
        if source is not None:
            engine.release(source)
        stats.seconds["one_place_layers"] = time.monotonic() - clock
        clock = time.monotonic()
        assemble(path, params, stats.keys, layers, rest)
        stats.seconds["assemble"] = time.monotonic() - clock
    finally:
        shutil.rmtree(parts_dir, ignore_errors=True)
    stats.file_bytes = os.path.getsize(path)
    return stats


class LocalEngine(Engine):
    """The reference engine: every step in this process, ranges solved one after another
    (in a shuffled order, to show that the order does not matter). ``batches``: an iterable
    (re-iterable) of key arrays (numpy or pyarrow)."""

    def __init__(self, params: DistributedParams, batches: Iterable, *, order_seed: int = 0):
        self.params = params
        self.batches = list(batches)
        self.order = np.random.default_rng(order_seed)

    def count(self) -> int:
        return sum(len(b) for b in self.batches)

    def _previous_hashes(self, source) -> Iterator[np.ndarray]:
        if source is None:  # layer 0: hash the keys
            for batch in self.batches:
                yield hash_batch(self.params, batch)
        else:
            yield from source

    def solve_layer(self, plan, source, task):
        by_range = {}
        for previous in self._previous_hashes(source):
            for r, hashes in route_batch(plan, previous):
                by_range.setdefault(r, []).append(hashes)
        results, bumped = [], []
        for r in self.order.permutation(plan.num_ranges):
            result, range_bumped = task(int(r), by_range.get(int(r), []))
            results.append(result)
            bumped.append(range_bumped)
        return results, bumped

    def collect(self, source) -> np.ndarray:
        return np.concatenate(source) if source else np.empty(0, dtype=np.uint64)


def build(
    batches: Iterable,
    path: str,
    *,
    key_kind: str,
    fpr: Optional[float] = None,
    bits: Optional[int] = None,
    width: int = 64,
    seed: int = 0,
    shard_size: Optional[int] = None,
    threshold_codes: Optional[str] = None,
    range_keys: int = DEFAULT_RANGE_KEYS,
    one_place_keys: int = DEFAULT_ONE_PLACE_KEYS,
    order_seed: int = 0,
) -> BuildStats:
    """A distributed build run in this process (:class:`LocalEngine`): the same file as
    ``ribbon build`` over the distinct keys of ``batches``."""
    params = build_params(
        key_kind,
        fpr=fpr,
        bits=bits,
        width=width,
        seed=seed,
        shard_size=shard_size,
        threshold_codes=threshold_codes,
    )
    engine = LocalEngine(params, batches, order_seed=order_seed)
    return run_build(
        engine, params, path, range_keys=range_keys, one_place_keys=one_place_keys
    )
