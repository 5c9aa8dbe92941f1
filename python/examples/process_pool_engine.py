"""Wiring another engine to ribbon.distributed in a page: a process pool.

Dask and Ray map the same way: ``solve_layer`` becomes one task per input batch (hash and
route, returning {range: hashes}) and one task per range (``task(range, hash_arrays, None)``:
no values, as this engine builds filters), with the engine's futures or object store holding
the bumped hashes between layers; ``collect`` gathers the last small layer. The file is the
same bytes as ``ribbon build`` over the same distinct keys, however the engine splits and
orders the work.

    python process_pool_engine.py keys.u64 out.ribbon   # keys: little-endian u64 file
"""

from __future__ import annotations

import sys
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from ribbon import distributed as dist


def _route(plan, previous_hashes):
    return {r: hashes.copy() for r, hashes, _ in dist.route_batch(plan, previous_hashes)}


def _layer0_route(params, plan, keys):
    return _route(plan, dist.hash_batch(params, keys))


def _solve(task, range_index, arrays):
    result, bumped, _ = task(range_index, arrays, None)
    return result, bumped


class ProcessPoolEngine(dist.Engine):
    """Batches of keys (numpy arrays) hashed, routed and solved in worker processes."""

    def __init__(self, params, batches, pool: ProcessPoolExecutor, workers: int):
        self.params, self.batches, self.pool = params, list(batches), pool
        self.task_slots = workers  # a layer's ranges are cut to fill the last wave of tasks

    def count(self) -> int:
        return sum(len(b) for b in self.batches)

    def solve_layer(self, plan, source, task):
        if source is None:
            routed = self.pool.map(_layer0_route, *zip(*[(self.params, plan, b) for b in self.batches]))
        else:
            routed = self.pool.map(_route, [plan] * len(source), source)
        by_range = {}
        for piece in routed:  # the "shuffle": gather each range's arrays
            for r, hashes in piece.items():
                by_range.setdefault(r, []).append(hashes)
        ranges = range(plan.num_ranges)
        solved = list(self.pool.map(_solve, [task] * len(ranges), ranges,
                                    [by_range.get(r, []) for r in ranges]))
        return [result for result, _ in solved], [bumped for _, bumped in solved]

    def collect(self, source):
        return (np.concatenate(source) if source else np.empty(0, dtype=np.uint64)), None


def build(batches, path, *, key_kind="u64", workers=2, **options):
    """ribbon.distributed.run_build on a pool of `workers` processes."""
    params = dist.build_params(key_kind, **{k: options.pop(k) for k in list(options)
                                            if k in ("fpr", "bits", "width", "seed", "shard_size")})
    with ProcessPoolExecutor(workers) as pool:
        return dist.run_build(ProcessPoolEngine(params, batches, pool, workers), params, path,
                              **options)


if __name__ == "__main__":
    keys = np.fromfile(sys.argv[1], dtype="<u8")
    stats = build(np.array_split(keys, 16), sys.argv[2])
    print(f"{stats.keys} keys, {stats.bits_per_key:.3f} bits/key, layers {stats.layers}")
