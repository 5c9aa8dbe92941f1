"""bench/figures.py, the README's figures and table: it runs on a small result file, draws
both PNGs, tabulates every measured row, and refuses a file that lacks a part."""

import json
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "figures.py"

FIGURES = {
    "meta": {"date": "2026-12-03 17:00 UTC", "machine": "2 x test CPU", "commit": "abc1234",
             "command": "bench/current_figures.py", "rounds": 1},
    "space": [
        {"series": "ribbon", "label": "-r 8", "bits_per_key": 8.02, "fpr": 0.0039},
        {"series": "ribbon", "label": "-r 4", "bits_per_key": 4.01, "fpr": 0.0624},
        {"series": "RocksDB Standard128Ribbon", "label": "10000 keys", "bits_per_key": 8.31,
         "fpr": 0.0038},
    ],
    "speed": [
        {"series": "RocksDB Standard128Ribbon, filters of n keys", "keys": 1000,
         "build_ns": 97.3, "query_ns": 27.8, "bits_per_key": 8.36, "fpr": 0.00383},
        {"series": "ribbon, filters of n keys", "keys": 1000, "build_ns": 51.6,
         "query_ns": 5.7, "bits_per_key": 9.601, "fpr": 0.00393},
        {"series": "ribbon, one filter", "keys": 10000000, "build_ns": 90.0, "query_ns": 20.1,
         "batched_ns": 9.4, "bits_per_key": 8.016, "fpr": 0.0039},
    ],
}


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True,
                          text=True)


def test_draws_both_figures_and_tabulates_every_row(tmp_path):
    pytest.importorskip("matplotlib")
    source = tmp_path / "figures.json"
    source.write_text(json.dumps(FIGURES))
    out = tmp_path / "out"
    done = run(source, "--out-dir", out, "--table")
    assert done.returncode == 0, done.stderr
    for name in ("space.png", "speed.png"):
        image = (out / name).read_bytes()
        assert image.startswith(b"\x89PNG\r\n\x1a\n") and len(image) > 10_000, name
    rows = [line for line in done.stdout.splitlines() if line.startswith("| 1e")]
    assert [r.split(" | ")[1] for r in rows] == [
        "ribbon, filters of n keys", "RocksDB Standard128Ribbon, filters of n keys",
        "ribbon, one filter"]  # by keys, ribbon first
    assert "| 9.601 | 0.00393 | 51.6 | 5.7 | - |" in rows[0]
    assert "| 8.016 | 0.00390 | 90.0 | 20.1 | 9.4 |" in rows[2]


def test_a_file_without_a_part_is_refused(tmp_path):
    source = tmp_path / "figures.json"
    source.write_text(json.dumps({k: v for k, v in FIGURES.items() if k != "speed"}))
    done = run(source, "--out-dir", tmp_path / "out")
    assert done.returncode != 0
    assert "no 'speed'" in done.stderr
    assert not (tmp_path / "out").exists()
