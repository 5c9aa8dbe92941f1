#!/usr/bin/env python3
"""Filter sets against one filter of the same total size (issue #34's targets), in one run:

    PYTHONPATH=build/python python bench/set_bench.py [--groups 10000] [--per-group 10000]
        [--zipf-groups 1000000] [--rounds 3] [--threads 2]

1. A set of G groups x K keys (random u64) against one filter of the G*K keys: build seconds
   (A B A B, medians), bits per key (overhead over r), and batched queries of 10^7 members
   and 10^7 non-members ((group, key) against key).
2. A set of Z groups of 1-1000 keys drawn from a Zipf law on 1..1000 (P(k) ~ k^-1.1): bits
   per key, and
   the non-member rate over 10^7 probes of (known group, fresh key), overall and in the 20
   largest groups (10^5 probes each).
Prints one JSON object per measurement.
"""

import argparse
import json
import statistics
import time

import numpy as np

import ribbon


def timed(run):
    start = time.perf_counter()
    result = run()
    return time.perf_counter() - start, result


def same_size(args):
    rng = np.random.default_rng(1)
    n = args.groups * args.per_group
    keys = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    groups = np.repeat(np.arange(args.groups, dtype=np.uint64), args.per_group)
    set_seconds, filter_seconds = [], []
    fs = f = None
    for _ in range(args.rounds):
        s, fs = timed(lambda: ribbon.build_set(groups, keys, threads=args.threads))
        set_seconds.append(s)
        s, f = timed(lambda: ribbon.build(keys, threads=args.threads))
        filter_seconds.append(s)
    probes = 10_000_000
    pick = rng.integers(0, n, size=probes)
    member_groups, member_keys = groups[pick], keys[pick]
    fresh = rng.integers(0, 2**64, size=probes, dtype=np.uint64)
    fs.filter.query_threads = f.query_threads = 1
    runs = {
        "set_members": lambda: fs.contains(member_groups, member_keys),
        "filter_members": lambda: f.contains(member_keys),
        "set_non_members": lambda: fs.contains(member_groups, fresh),
        "filter_non_members": lambda: f.contains(fresh),
    }
    times = {name: [] for name in runs}
    query = {}
    for _ in range(args.rounds):  # A B A B: each round runs all four
        for name, run in runs.items():
            s, answers = timed(run)
            times[name].append(s)
            if "non_members" in name:
                query[name + "_fpr"] = float(answers.mean())
            else:
                assert answers.all(), name
    for name in runs:
        query[name + "_ns"] = 1e9 * statistics.median(times[name]) / probes
    print(json.dumps({
        "measurement": "set vs one filter", "groups": args.groups, "per_group": args.per_group,
        "threads": args.threads,
        "set_build_s": statistics.median(set_seconds), "filter_build_s": statistics.median(filter_seconds),
        "set_build_s_all": set_seconds, "filter_build_s_all": filter_seconds,
        "build_ratio": statistics.median(set_seconds) / statistics.median(filter_seconds),
        "set_bits_per_key": fs.bits_per_key, "filter_bits_per_key": f.bits_per_key,
        "set_overhead_pct": 100 * (fs.bits_per_key / 8 - 1), **query}))


def zipf_groups(args):
    rng = np.random.default_rng(2)
    support = np.arange(1, 1001)
    weights = support ** -1.1
    sizes = rng.choice(support, size=args.zipf_groups, p=weights / weights.sum())
    n = int(sizes.sum())
    groups = np.repeat(np.arange(args.zipf_groups, dtype=np.uint64), sizes)
    keys = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    seconds, fs = timed(lambda: ribbon.build_set(groups, keys, threads=args.threads))
    probes = 10_000_000
    probe_groups = rng.integers(0, args.zipf_groups, size=probes).astype(np.uint64)
    fpr = float(fs.contains(probe_groups, rng.integers(0, 2**64, size=probes, dtype=np.uint64)).mean())
    largest = np.argsort(sizes)[-20:]
    per_group = [float(fs[int(g)].contains(rng.integers(0, 2**64, size=100_000, dtype=np.uint64)).mean())
                 for g in largest]
    print(json.dumps({
        "measurement": "zipf groups", "groups": args.zipf_groups, "pairs": n,
        "sizes_min_median_max": [int(sizes.min()), float(np.median(sizes)), int(sizes.max())],
        "build_s": seconds, "bits_per_key": fs.bits_per_key,
        "overhead_pct": 100 * (fs.bits_per_key / 8 - 1), "fpr_all_groups": fpr,
        "fpr_largest_20_max": max(per_group), "fpr_largest_20_min": min(per_group),
        "expected_fpr": 2.0 ** -8}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--per-group", type=int, default=10_000)
    parser.add_argument("--zipf-groups", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    same_size(args)
    zipf_groups(args)


if __name__ == "__main__":
    main()
