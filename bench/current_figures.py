#!/usr/bin/env python3
"""Measures the figures the README shows, on this machine, at this commit, into one JSON file
that bench/figures.py draws (docs/figures/*.png) and tabulates (the README's table).

    bench/current_figures.py [--ribbon build/tools/ribbon] [--rocksdb BINARY] [--rounds 3]
                             [-o bench/figures.json]

--rocksdb is bench/compare_rocksdb.cpp's binary, built against a RocksDB checkout outside the
repository (bench/CMakeLists.txt, RIBBON_ROCKSDB_DIR); without it the small-filter rows and
RocksDB's points are left out. Every figure is a median of --rounds runs of the command
recorded beside it.
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys

SPACE_BITS = [1, 2, 3, 4, 6, 8, 10, 12, 14, 16]
SPACE_FPRS = [0.01, 0.001]
ONE_FILTER_KEYS = [10**5, 10**6, 10**7]
SMALL_FILTER_KEYS = [10**3, 10**4, 10**5]


def run_json(command):
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def median_of(rounds, command, pick):
    """Runs `command` `rounds` times; the median of each figure `pick` takes from its JSON."""
    runs = [pick(run_json(command)) for _ in range(rounds)]
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def machine():
    model = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    flags = ""
    try:
        with open("/proc/cpuinfo") as f:
            flags = " AVX-512" if " avx512f" in f.read() else ""
    except OSError:
        pass
    return f"{os.cpu_count()} x {model}{flags}, {platform.system()} {platform.release()}"


def commit():
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return head + (" (with uncommitted changes)" if dirty else "")


def space_points(ribbon, rounds):
    """bits/key against the measured FPR, 10^6 keys, w = 64: integer r and fractional FPRs."""
    points = []
    options = [["-r", str(r)] for r in SPACE_BITS] + [["--fpr", str(f)] for f in SPACE_FPRS]
    for option in options:
        command = [ribbon, "bench", "-n", "1000000", "--negatives", "4000000", "--seed", "1",
                   "--json"] + option
        m = median_of(rounds, command, lambda d: {"bits_per_key": d["bits_per_key"],
                                                  "fpr": d["fpr_measured"]})
        points.append({"series": "ribbon", "label": " ".join(option), **m,
                       "command": " ".join(command)})
    return points


def one_filter_rows(ribbon, rounds):
    rows = []
    for n in ONE_FILTER_KEYS:
        command = [ribbon, "bench", "-n", str(n), "-t", "1", "--json"]
        m = median_of(rounds, command, lambda d: {
            "build_ns": d["build_ns_per_key"],
            "query_ns": d["query_ns_per_key"]["scalar_negative"],
            "batched_ns": d["query_ns_per_key"]["batched_negative_one_thread"],
            "bits_per_key": d["bits_per_key"],
            "fpr": d["fpr_measured"]})
        rows.append({"series": "ribbon, one filter", "keys": n, **m,
                     "command": " ".join(command)})
    return rows


def small_filter_rows(rocksdb, rounds):
    rows = []
    for n in SMALL_FILTER_KEYS:
        command = [rocksdb, str(n), str(rounds)]
        d = run_json(command)  # its last line: medians over its rounds
        for side, series in (("ribbon", "ribbon, filters of n keys"),
                             ("rocksdb", "RocksDB Standard128Ribbon, filters of n keys")):
            s = d[side]
            rows.append({"series": series, "keys": n, "build_ns": s["build_ns"],
                         "query_ns": s["query_ns"], "bits_per_key": s["bits_per_key"],
                         "fpr": s["fpr"], "command": " ".join(command)})
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ribbon", default="build/tools/ribbon")
    parser.add_argument("--rocksdb", help="bench/compare_rocksdb.cpp's binary")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("-o", "--output", default="bench/figures.json")
    args = parser.parse_args()
    figures = {
        "meta": {
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": machine(),
            "commit": commit(),
            "command": " ".join([os.path.relpath(sys.argv[0])] + sys.argv[1:]),
            "rounds": args.rounds,
        },
        "space": space_points(args.ribbon, args.rounds),
        "speed": one_filter_rows(args.ribbon, args.rounds),
    }
    if args.rocksdb:
        small = small_filter_rows(args.rocksdb, args.rounds)
        figures["speed"] += small
        figures["space"] += [{"series": "RocksDB Standard128Ribbon", "label": f"{r['keys']} keys",
                              "bits_per_key": r["bits_per_key"], "fpr": r["fpr"],
                              "command": r["command"]}
                             for r in small if r["series"].startswith("RocksDB")]
    with open(args.output, "w") as f:
        json.dump(figures, f, indent=1)
        f.write("\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
