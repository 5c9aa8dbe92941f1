"""The driver's loop of a distributed build: each layer planned, solved by the engine or
finished here, then the file assembled (see :mod:`ribbon.distributed`)."""

from __future__ import annotations

import functools
import time
from typing import Any, Iterable, List, Optional, Sequence, Tuple, Union

import pyarrow.fs as pafs

from .. import _ribbon
from .._ribbon import DistributedParams, LayerPlan, RangedLayers, finish_layers, plan_layer
from .assembly import assemble_file
from .destination import Destination
from .engine import Engine, LocalEngine
from .stats import BuildStats  # noqa: F401  (ribbon.distributed.driver.BuildStats, as before)
from .steps import (
    DEFAULT_ONE_PLACE_KEYS,
    DEFAULT_RANGE_KEYS,
    RangeResult,
    as_group_names,
    build_params,
    options_of,
    solve_task,
    takes_build_options,
)

#: The options of :func:`run_build` after the path, by name (see :func:`options_of`).
RUN_OPTIONS = ("range_keys", "one_place_keys", "threads", "filesystem", "group_names", "metadata")


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


@takes_build_options
def build(
    batches: Iterable,
    path: str,
    *,
    key_kind: str,
    group_kind: Optional[str] = None,
    values: bool = False,
    check_bits: int = 0,
    order_seed: int = 0,
    group_names: bool = True,
    metadata: Optional[bytes] = None,
    **options,
) -> BuildStats:
    """A distributed build run in this process (:class:`LocalEngine`): the same file as
    ``ribbon build`` over the distinct keys of ``batches``; with ``group_kind``, the filter
    set of the (groups, keys) batches, as ``ribbon build --groups -o`` builds it (with the
    groups' names unless ``group_names`` is False); with ``values``, the retrieval structure
    of the (keys, values) batches (``bits`` value bits, ``check_bits``), as ``ribbon build
    --values`` builds it. ``metadata``: bytes stored with the file (format version 7)."""
    arguments = {**locals(), **options}
    params = build_params(key_kind, **options_of(arguments))
    engine = LocalEngine(params, batches, order_seed=order_seed)
    return run_build(engine, params, path, **options_of(arguments, RUN_OPTIONS))
