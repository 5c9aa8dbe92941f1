#!/usr/bin/env bash
# Side by side with BuRR (bumped ribbon retrieval, github.com/lorenzhs/BuRR, branch `parallel`)
# and, optionally, binary fuse8 (github.com/FastFilter/xor_singleheader): runs `ribbon bench`
# and the peers' benchmarks alternately (the order flips each pair) and prints medians and
# ratios.
#
# Usage: bench/compare_burr.sh BURR_BENCH [RIBBON]
#   BURR_BENCH  BuRR's benchmark binary for r = 8, built outside this repository:
#                 git clone -b parallel https://github.com/lorenzhs/BuRR && cd BuRR
#                 git submodule update --init --recursive
#                 make bench RIBBON_BITS=8          # -> ./bench8 (all configurations: a long compile)
#               (or any build of its ribbon.cpp that takes -L 64 -d 3 -2 -I; RESULTS.md)
#   RIBBON      the ribbon CLI (default build/tools/ribbon)
# Environment: KEYS (default 10000000), PAIRS (default 3), THREADS (default "1 2"), NEGATIVES
# (ribbon's non-member queries, default KEYS; BuRR always queries KEYS per thread),
# RIBBON_OPTIONS (more `ribbon bench` options, e.g. "--threshold-codes 2-bit"), FUSE8 (a binary
# fuse8 benchmark, built outside this repository, with this contract: `FUSE8 N` builds a
# binary_fuse8 filter of the keys 0..N-1, queries them and then N..2N-1 one key at a time on
# one thread, and prints a line `RESULT n=N build_ns=B pos_ns=P neg_ns=Q bits_per_key=S`, the
# times in ns per key; it runs once per pair, beside the 1-thread rows).
#
# Both build w = 64, r = 8 filters of KEYS keys (BuRR with 2-bit thresholds, ribbon with its
# default 1+-bit ones unless RIBBON_OPTIONS says otherwise) and interleaved storage
# at eps = -4/w (BuRR: -L 64 -2 -I -e -0.0625 -d 3, the configuration of its paper; ribbon:
# its defaults) and query KEYS non-members per thread. BuRR's benchmark queries one key at a
# time (no batched path): its "scalar" figures are the ones to hold ribbon's scalar ones
# against; ribbon's batched column has no BuRR counterpart. Per-thread query times: with 2
# threads both run one query loop per thread at once.
set -euo pipefail

if [[ $# -lt 1 || ! -x "$1" ]]; then
  sed -n '2,23p' "$0" >&2
  exit 2
fi
burr=$1
ribbon=${2:-build/tools/ribbon}
keys=${KEYS:-10000000}
pairs=${PAIRS:-5}
fuse8=${FUSE8:-}
threads=${THREADS:-"1 2"}
negatives=${NEGATIVES:-$keys}
results=$(mktemp)
trap 'rm -f "$results"' EXIT

run_ribbon() {  # threads
  local json
  # shellcheck disable=SC2086  # RIBBON_OPTIONS is a list of words
  json=$("$ribbon" bench -n "$keys" --negatives "$negatives" -t "$1" --json ${RIBBON_OPTIONS:-})
  python3 - "$1" "$json" >>"$results" <<'EOF'
import json, sys
t, r = sys.argv[1], json.loads(sys.argv[2])
q = r["query_ns_per_key"]
print(f"ribbon {t} build {r['build_ns_per_key']}")
print(f"ribbon {t} overhead {r['overhead_pct']}")
print(f"ribbon {t} scalar_pos {q['scalar_positive']}")
print(f"ribbon {t} scalar_neg {q['scalar_negative']}")
print(f"ribbon {t} batched_neg {q['batched_negative_per_thread']}")
if t == "1":
    print(f"ribbon {t} batched_pos {q['batched_positive_one_thread']}")
EOF
}

run_fuse8() {
  local line
  line=$("$fuse8" "$keys" | grep '^RESULT ')
  python3 - "$line" >>"$results" <<'EOF'
import sys
f = dict(kv.split("=", 1) for kv in sys.argv[1].split()[1:] if "=" in kv)
print(f"fuse8 1 build {f['build_ns']}")
print(f"fuse8 1 overhead {100 * (float(f['bits_per_key']) / 8 - 1)}")
print(f"fuse8 1 scalar_pos {f['pos_ns']}")
print(f"fuse8 1 scalar_neg {f['neg_ns']}")
EOF
}

run_peers() {  # threads: BuRR, and binary fuse8 beside the 1-thread rows
  run_burr "$1"
  if [[ -n $fuse8 && $1 == 1 ]]; then run_fuse8; fi
}

run_burr() {  # threads
  local line
  line=$("$burr" -n "$keys" -L 64 -d 3 -2 -I -e -0.0625 -t "$1" 2>/dev/null | grep '^RESULT ')
  python3 - "$1" "$line" >>"$results" <<'EOF'
import sys
t = sys.argv[1]
f = dict(kv.split("=", 1) for kv in sys.argv[2].split()[1:] if "=" in kv)
if f["ok"] != "1":
    sys.exit("BuRR: its positive check failed")
n = int(f["n"])  # its build: insertion (hash, sort, banding) + back-substitution
print(f"burr {t} build {(int(f['insertionns']) + int(f['backsubstns'])) / n}")
print(f"burr {t} overhead {f['overhead']}")
print(f"burr {t} scalar_pos {f['tpospq']}")
print(f"burr {t} scalar_neg {f['tnegpq']}")
EOF
}

echo "ribbon vs BuRR${fuse8:+ and binary fuse8}: $keys keys, $pairs pairs, threads: $threads; $(uptime)" >&2
for ((pair = 1; pair <= pairs; ++pair)); do
  for t in $threads; do
    if ((pair % 2)); then  # alternate which one runs first
      run_ribbon "$t"
      run_peers "$t"
    else
      run_peers "$t"
      run_ribbon "$t"
    fi
    echo "pair $pair, $t threads done" >&2
  done
done
echo "after: $(uptime)" >&2

python3 - "$results" "$keys" "$pairs" <<'EOF'
import statistics, sys
series = {}
for line in open(sys.argv[1]):
    who, threads, metric, value = line.split()
    series.setdefault((metric, threads, who), []).append(float(value))
names = {"build": "build ns/key", "overhead": "space overhead %",
         "scalar_pos": "scalar positive query ns/key per thread",
         "scalar_neg": "scalar negative query ns/key per thread",
         "batched_neg": "batched negative query ns/key per thread",
         "batched_pos": "batched positive query ns/key per thread"}
print(f"keys = {sys.argv[2]}, w = 64, r = 8, medians of {sys.argv[3]} alternating pairs")
print("| figure | threads | ribbon | BuRR | fuse8 | ribbon / BuRR | ribbon / fuse8 |")
print("|---|---|---|---|---|---|---|")
def med(key):
    return statistics.median(series[key]) if key in series else None
def cell(v):
    return f"{v:.3f}" if v is not None else "-"
def ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b else "-"
for metric in names:
    for threads in sorted({k[1] for k in series if k[0] == metric}):
        a, b, c = (med((metric, threads, who)) for who in ("ribbon", "burr", "fuse8"))
        print(f"| {names[metric]} | {threads} | {cell(a)} | {cell(b)} | {cell(c)} | "
              f"{ratio(a, b)} | {ratio(a, c)} |")
EOF
