#!/usr/bin/env python3
"""Draws the README's figures and its table of current figures from the JSON that
bench/current_figures.py measures.

    bench/figures.py [bench/figures.json] [--out-dir docs/figures] [--table]

Writes OUT_DIR/space.png (bits per key against the false-positive rate: ribbon and RocksDB
measured, Bloom filters' 1.44 log2(1/f) and the lower bound log2(1/f) as formulas, binary
fuse filters' 1.125 r as a formula) and OUT_DIR/speed.png (build and query time per key
against the keys per filter). With --table, prints the measured rows as a Markdown table.
Needs matplotlib (a benchmark-only dependency: pip install matplotlib).
"""

import argparse
import json
import math
import os
import sys


def load(path):
    try:
        with open(path) as f:
            figures = json.load(f)
    except (OSError, ValueError) as e:
        raise SystemExit(f"{path}: cannot read the figures: {e}")
    for key in ("meta", "space", "speed"):
        if key not in figures:
            raise SystemExit(f"{path}: no '{key}' in the figures")
    return figures


def by_series(rows):
    series = {}
    for row in rows:
        series.setdefault(row["series"], []).append(row)
    return series


def caption(meta):
    return f"{meta['date']}, {meta['machine']}, commit {meta['commit']}"


def draw_space(figures, path, plt):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    fprs = [2.0 ** -(k / 4) for k in range(2, 4 * 17)]
    ax.plot(fprs, [math.log2(1 / f) for f in fprs], "k--", lw=1, label="lower bound log2(1/f)")
    ax.plot(fprs, [1.44 * math.log2(1 / f) for f in fprs], color="0.6", lw=1,
            label="Bloom filter, 1.44 log2(1/f) (formula)")
    fuse = [(2.0 ** -r, 1.125 * r) for r in range(1, 17)]
    ax.plot(*zip(*fuse), ":", color="tab:green", lw=1,
            label="binary fuse filter, 1.125 r (formula, large n)")
    markers = iter(["o", "s", "^", "D"])
    for name, rows in by_series(figures["space"]).items():
        rows = sorted((r for r in rows if r["fpr"] > 0), key=lambda r: r["fpr"])
        ax.plot([r["fpr"] for r in rows], [r["bits_per_key"] for r in rows],
                next(markers, "x"), label=f"{name} (measured)")
    ax.set_xscale("log")
    ax.invert_xaxis()
    ax.set_xlabel("false-positive rate f")
    ax.set_ylabel("bits per key")
    ax.set_title("Space against accuracy", fontsize=11)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    fig.text(0.01, 0.01, caption(figures["meta"]), fontsize=6, color="0.4")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def draw_speed(figures, path, plt):
    fig, (build, query) = plt.subplots(1, 2, figsize=(9, 4))
    markers = iter(["o", "s", "^", "D"])
    for name, rows in by_series(figures["speed"]).items():
        rows = sorted(rows, key=lambda r: r["keys"])
        marker = next(markers, "x")
        keys = [r["keys"] for r in rows]
        build.plot(keys, [r["build_ns"] for r in rows], marker + "-", label=name)
        query.plot(keys, [r["query_ns"] for r in rows], marker + "-", label=name)
    for ax, what in ((build, "build, ns per key (one thread)"),
                     (query, "query of a non-member, ns (one at a time)")):
        ax.set_xscale("log")
        ax.set_xlabel("keys per filter")
        ax.set_title(what, fontsize=10)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
    build.legend(fontsize=7)
    fig.text(0.01, 0.01, caption(figures["meta"]), fontsize=6, color="0.4")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def table(figures):
    """The measured rows as Markdown, keys ascending, ribbon first."""
    lines = ["| keys per filter | what | bits/key | FPR | build ns/key | query ns | batched ns/key |",
             "|---|---|---|---|---|---|---|"]
    for row in sorted(figures["speed"], key=lambda r: (r["keys"], not r["series"].startswith("ribbon"))):
        batched = f"{row['batched_ns']:.1f}" if "batched_ns" in row else "-"
        lines.append(f"| {row['keys']:.0e} | {row['series']} | {row['bits_per_key']:.3f} | "
                     f"{row['fpr']:.5f} | {row['build_ns']:.1f} | {row['query_ns']:.1f} | "
                     f"{batched} |".replace("e+0", "e"))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("input", nargs="?", default="bench/figures.json")
    parser.add_argument("--out-dir", default="docs/figures")
    parser.add_argument("--table", action="store_true", help="print the Markdown table")
    args = parser.parse_args()
    figures = load(args.input)
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    os.makedirs(args.out_dir, exist_ok=True)
    draw_space(figures, os.path.join(args.out_dir, "space.png"), plt)
    draw_speed(figures, os.path.join(args.out_dir, "speed.png"), plt)
    if args.table:
        print(table(figures))
    print(f"wrote {args.out_dir}/space.png, {args.out_dir}/speed.png", file=sys.stderr)


if __name__ == "__main__":
    main()
