#!/usr/bin/env python3
"""The variants table of bench/RESULTS.md: `ribbon bench` for every variant and width, at
r = 8 and (filters) --fpr 0.01, a few runs each, as a Markdown table of medians.

Usage: bench/variants_table.py RUNS path/to/ribbon [KEYS]   (KEYS default 10^7)
Each cell is the median of RUNS runs (runs interleave the configurations, A B A B, so that a
slow period of a shared machine does not land on one row).
"""
import json
import statistics
import subprocess
import sys

VARIANTS = ["bumped", "standard", "homogeneous", "retrieval", "standard-retrieval"]
WIDTHS = [32, 64, 128]


def configurations():
    for variant in VARIANTS:
        for width in WIDTHS:
            yield (variant, width, ["-r", "8"])
            if "retrieval" not in variant:
                yield (variant, width, ["--fpr", "0.01"])


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    runs, ribbon = int(sys.argv[1]), sys.argv[2]
    keys = sys.argv[3] if len(sys.argv) > 3 else "10000000"
    configs = list(configurations())
    results = {i: [] for i in range(len(configs))}
    for _ in range(runs):
        for i, (variant, width, extra) in enumerate(configs):
            command = [ribbon, "bench", "-n", keys, "--negatives", "1000000", "--variant",
                       variant, "-w", str(width), "--json"] + extra
            out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
            results[i].append(json.loads(out))
    print(f"{runs} runs each of: {ribbon} bench -n {keys} --negatives 1000000 "
          "--variant V -w W (-r 8 | --fpr 0.01) --json")
    print()
    print("| variant | w | r | bits/key | ideal bits | overhead % | FPR measured (expected) "
          "| tries | build ns/key | query ns/key (scalar / batched 2 thr) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for i, (variant, width, extra) in enumerate(configs):
        rs = results[i]
        med = lambda f: statistics.median(f(r) for r in rs)
        first = rs[0]
        r_text = "--fpr 0.01" if "--fpr" in extra else "8"
        fpr = ("-" if "retrieval" in variant else
               f"{med(lambda r: r['fpr_measured']):.5f} ({first['fpr_expected']:.5f})")
        print(f"| {variant} | {width} | {r_text} | {med(lambda r: r['bits_per_key']):.4f} "
              f"| {first['ideal_bits']:.4f} | {med(lambda r: r['overhead_pct']):.3f} | {fpr} "
              f"| {max(r['standard_attempts'] for r in rs) or 1} "
              f"| {med(lambda r: r['build_ns_per_key']):.1f} "
              f"| {med(lambda r: r['query_ns_per_key']['scalar_negative']):.1f} / "
              f"{med(lambda r: r['query_ns_per_key']['batched_negative']):.1f} |")


if __name__ == "__main__":
    main()
