"""What a distributed build needs from an engine (:class:`Engine`), and the reference engine
that runs every step in this process (:class:`LocalEngine`; see :mod:`ribbon.distributed`)."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._ribbon import DistributedParams, LayerPlan
from .steps import RangeResult, as_group_names, hash_batch, route_batch


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
