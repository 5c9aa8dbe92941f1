"""Many standalone filters in one call: :func:`build_many`."""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import numpy as np

from . import _ribbon


def group_positions(groups) -> Tuple[list, np.ndarray, Optional[np.ndarray]]:
    """(labels, offsets, order) of a group column: group ``labels[g]`` holds the rows
    ``order[offsets[g]:offsets[g + 1]]`` (in row order; order is None where the labels are
    sorted integers, whose rows are runs: ``offsets[g]:offsets[g + 1]``). ``groups``: a numpy array, a pyarrow
    Array or ChunkedArray, or a sequence of ints, str or bytes; labels come out sorted for
    numpy and sequences, in order of first appearance for Arrow. Nulls are refused."""
    if hasattr(groups, "dictionary_encode") or hasattr(groups, "combine_chunks"):  # Arrow
        column = groups.combine_chunks() if hasattr(groups, "combine_chunks") else groups
        if column.null_count:
            raise _ribbon.KeysError("groups holds %d nulls: every key needs a group" % column.null_count)
        encoded = column.dictionary_encode()
        labels = encoded.dictionary.to_pylist()
        inverse = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    else:
        column = groups if isinstance(groups, np.ndarray) else _as_array(groups)
        if column.ndim != 1:
            raise _ribbon.KeysError("groups must be one-dimensional, not of shape %s" % (column.shape,))
        if column.dtype == object and any(g is None for g in column):
            raise _ribbon.KeysError("groups holds None: every key needs a group")
        if column.dtype.kind in "iu" and bool(np.all(column[1:] >= column[:-1])):
            return _runs(column)
        unique, inverse = np.unique(column, return_inverse=True)
        labels = unique.tolist()
        inverse = inverse.reshape(-1)
    counts = np.bincount(inverse, minlength=len(labels))
    offsets = np.zeros(len(labels) + 1, dtype=np.uint64)
    np.cumsum(counts, out=offsets[1:])
    order = np.argsort(inverse, kind="stable").astype(np.uint64)
    return labels, offsets, order


def _runs(column: np.ndarray) -> Tuple[list, np.ndarray, None]:
    """group_positions() of sorted integer labels: each label's rows are one run, in place."""
    starts = np.flatnonzero(column[1:] != column[:-1]) + 1
    offsets = np.concatenate(([0], starts, [len(column)])).astype(np.uint64)
    labels = column[offsets[:-1].astype(np.int64)].tolist() if len(column) else []
    return labels, (offsets if len(column) else np.zeros(1, dtype=np.uint64)), None


def _as_array(groups) -> np.ndarray:
    """A sequence of labels as a numpy array: str and bytes labels as objects (a bytes dtype
    would drop trailing NULs and merge labels that differ only there)."""
    labels = list(groups)
    if any(isinstance(g, (str, bytes)) for g in labels):
        return np.array(labels, dtype=object)
    return np.asarray(labels)


def build_many(groups, keys, **options: Any) -> Dict[Any, "_ribbon.Filter"]:
    """One filter per group: ``{group: Filter}`` for the (group, key) pairs ``zip(groups,
    keys)``, built in one call across the cores (many small groups to a task, a large group
    sharded as :func:`ribbon.build` shards it). Each filter is byte for byte
    ``ribbon.build(keys of that group, **options)``, so ``ribbon build`` writes it too.

    groups: a column as long as ``keys`` naming each key's group (numpy array, pyarrow array,
    or a sequence of int, str or bytes); the mapping's order is that of the sorted labels
    (numpy, sequences) or of their first appearance (Arrow). keys: as :func:`ribbon.build`
    takes them (numpy, Arrow, sequences), read in place. options: those of
    :func:`ribbon.build` for filters (fpr, bits, width, variant, seed, threads, shard_size,
    slack, success_probability, backend, key_kind, threshold_codes); ``backend="gpu"`` builds
    every group on the GPU in the same launches, the same bytes."""
    labels, offsets, order = group_positions(groups)
    filters = _ribbon._build_many(keys, offsets, order, **options)
    return dict(zip(labels, filters))
