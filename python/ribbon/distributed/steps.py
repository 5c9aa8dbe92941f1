"""The steps of a distributed build that run where the keys are: the build's parameters, the
hashes of a batch, their routing to shard ranges and the range task (see
:mod:`ribbon.distributed`)."""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Any, Iterator, Optional, Sequence, Tuple

import numpy as np

from .. import _ribbon
from .._ribbon import (
    DistributedParams,
    LayerPlan,
    group_by_range,
    solve_range,
    to_layer_hashes,
    to_stored_values,
)
from .destination import Destination

#: Keys per shard range (a task's share of a layer): about 40 bytes per key at the task's
#: peak (the received arrays, their copy, the partitioned copy, the solution window).
DEFAULT_RANGE_KEYS = 1 << 24
#: Layers with at most this many keys are finished on the driver (8 bytes per key there, and
#: about 40 while it builds them: 40 MB at this default).
DEFAULT_ONE_PLACE_KEYS = 1 << 20
#: The options of :func:`build_params` after the key kind, by name (see :func:`options_of`).
PARAM_OPTIONS = ("fpr", "bits", "width", "seed", "shard_size", "threshold_codes", "group_kind",
                 "values", "check_bits")


#: The keyword options every distributed build takes (ribbon.distributed.build,
#: ribbon.spark.build and build_set), with their defaults and types: their one definition.
BUILD_OPTIONS = {
    "fpr": (None, "Optional[float]"),
    "bits": (None, "Optional[int]"),
    "width": (64, "int"),
    "seed": (0, "int"),
    "shard_size": (None, "Optional[int]"),
    "threshold_codes": (None, "Optional[str]"),
    "range_keys": (DEFAULT_RANGE_KEYS, "int"),
    "one_place_keys": (DEFAULT_ONE_PLACE_KEYS, "int"),
    "filesystem": (None, "Optional[pyarrow.fs.FileSystem]"),
}


def takes_build_options(function):
    """Gives ``function``, which takes ``**options``, the keyword-only parameters of
    BUILD_OPTIONS in its signature (``help()`` and editors show them, an unknown keyword is
    a TypeError as for any function) and calls it with every option, defaults filled in."""
    own = inspect.signature(function)
    kept = [p for p in own.parameters.values() if p.kind is not p.VAR_KEYWORD]
    private = [p for p in kept if p.name.startswith("_")]
    shared = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                annotation=annotation)
              for name, (default, annotation) in BUILD_OPTIONS.items()]
    signature = own.replace(parameters=[p for p in kept if p not in private] + shared + private)

    @functools.wraps(function)
    def call(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return function(*bound.args, **bound.kwargs)

    call.__signature__ = signature
    return call


def options_of(arguments: dict, names: Sequence[str] = PARAM_OPTIONS) -> dict:
    """The items of ``arguments`` (a caller's ``locals()``) named in ``names``: the options a
    function hands on as it was given them."""
    return {name: arguments[name] for name in names if name in arguments}


def build_params(
    key_kind: str, *, fpr=None, bits=None, width=64, seed=0, shard_size=None, threshold_codes=None,
    group_kind: Optional[str] = None, values: bool = False, check_bits: int = 0,
):
    """The parameters ``ribbon build`` uses for these options (the bumped variant only);
    ``group_kind`` ("u64" or "bytes"): those of a filter set (``ribbon build --groups -o``);
    ``values``: those of a retrieval structure (``ribbon build --values --bits B
    --check-bits C``, ``bits`` the value bits)."""
    return DistributedParams(key_kind, **options_of(locals()))


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


def as_group_names(names) -> Any:
    """Distinct groups as the file names them: integers as their 64-bit patterns (a negative
    long is the u64 the pairs were hashed with), byte strings as they are (str: UTF-8)."""
    if isinstance(names, np.ndarray) and names.dtype.kind in "iu":
        return names.astype(np.int64 if names.dtype.kind == "i" else np.uint64).view(np.uint64)
    names = list(names)
    if names and isinstance(names[0], (int, np.integer)):
        return np.array([int(n) & 0xFFFFFFFFFFFFFFFF for n in names], dtype=np.uint64)
    return [n.encode() if isinstance(n, str) else bytes(n) for n in names]

