#!/usr/bin/env bash
# Bits per key of one small filter in both layouts (compact, format version 5, and standard),
# medians over seeds 1-5 of random u64 keys, w = 64, r = 8, one thread.
# Usage: bench/small_space.sh [BUILD_DIR]   (default build/; needs bench/ribbon_space_report)
set -euo pipefail
report="${1:-build}/bench/ribbon_space_report"
printf 'keys\tlayers\tcompact bits/key\tstandard bits/key\n'
for n in 1000 3000 10000 30000 100000 1000000; do
  for seed in 1 2 3 4 5; do
    "${report}" "${n}" "${seed}" 64 8 0 1 | tr -d '\n'
    echo
  done | python3 -c '
import json, statistics, sys
rows = [json.loads(line) for line in sys.stdin if line.strip()]
n = rows[0]["n"]
def median_bits(field):
    return statistics.median(8 * r[field] / n for r in rows)
c, s = median_bits("file_bytes"), median_bits("standard_layout_bytes")
layers = statistics.median(len(r["layers"]) for r in rows)
print(f"{n}\t{layers:g}\t{c:.3f} (+{100 * (c / 8 - 1):.2f} %)\t{s:.3f} (+{100 * (s / 8 - 1):.2f} %)")
'
done
