#!/usr/bin/env python3
"""Runs `ribbon bench ... --json` with two binaries alternately (A B, then B A, ...) and prints
the median [min..max] of the build and query figures of each and their ratio B/A.

Usage: bench/ab_bench.py PAIRS path/to/ribbon-A path/to/ribbon-B -- [ribbon bench options...]
Alternating in one session is how two versions are compared on the shared, noisy machines.
"""
import json
import statistics
import subprocess
import sys

FIELDS = ["build_ns_per_key", "query_ns_per_key.scalar_positive",
          "query_ns_per_key.scalar_negative", "query_ns_per_key.batched_negative_per_thread",
          "query_ns_per_key.batched_negative_one_thread", "false_positives"]


def field(result, name):
    for part in name.split("."):
        result = result[part]
    return result


def main():
    if len(sys.argv) < 5 or sys.argv[4] != "--":
        sys.exit(__doc__)
    pairs, a, b, options = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[5:]
    results = {a: [], b: []}
    for pair in range(pairs):
        for binary in (a, b) if pair % 2 == 0 else (b, a):
            out = subprocess.run([binary, "bench", *options, "--json"], check=True,
                                 capture_output=True, text=True).stdout
            results[binary].append(json.loads(out))
            print(binary, " ".join(f"{name.split('.')[-1]}={field(results[binary][-1], name):.2f}"
                                   for name in FIELDS), flush=True)
    for name in FIELDS:
        va = [field(r, name) for r in results[a]]
        vb = [field(r, name) for r in results[b]]
        ma, mb = statistics.median(va), statistics.median(vb)
        print(f"{name}: A {ma:.2f} [{min(va):.1f}..{max(va):.1f}]  "
              f"B {mb:.2f} [{min(vb):.1f}..{max(vb):.1f}]  B/A {mb / ma if ma else float('nan'):.3f}")


if __name__ == "__main__":
    main()
