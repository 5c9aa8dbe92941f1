#!/usr/bin/env python3
"""The Python package against the C++ library over the same keys (bench/RESULTS.md).

    bench/python_bench.py BUILD_DIR [--keys 10000000] [--repeats 5] [--threads 2] [--cpp-strings arrow|lines]

BUILD_DIR: a CMake build with the Python extension and bench/ (RIBBON_BUILD_BENCHMARKS=ON):
its python/ is put on sys.path and bench/ribbon_build_timer times the C++ side. For each key
kind (u64: random 64-bit integers; strings: 16-character hex lines) it writes the keys and as
many non-member probes to files, then alternates C++ and Python runs, each in a fresh process:
build (filter::build from a uint64 array, and for strings build_offsets over the same Arrow
layout, or string_views with --cpp-strings lines, vs ribbon.build from a numpy uint64 array /
a pyarrow large_string array made from the same bytes without per-key objects),
batched contains of the probes (numpy uint64 / pyarrow array vs the C++ batched path), and the
build's peak RSS beyond the keys (VmHWM after the first build minus VmRSS before it, with
clear_refs resetting the peak). The Python runs also save their first filter, open it through
the C ABI (BUILD_DIR/libribbon_reader.so, ctypes) and time one batched call over the same probes
on as many threads (`ribbon_contains_*_batch_threads`; strings as the Arrow array's own
offsets and bytes), checking its answers against Python's. Prints the medians and the
Python/C++ and C ABI/C++ ratios.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

PYTHON_SIDE = r"""
import json, sys, time
import numpy as np, pyarrow as pa
sys.path.insert(0, sys.argv[1])
import ribbon

def load(path, fmt):
    if fmt == "u64":
        return np.fromfile(path, dtype="<u8")
    data = np.fromfile(path, dtype=np.uint8)
    ends = np.flatnonzero(data == 10)
    lengths = np.diff(np.concatenate([[-1], ends])) - 1
    body = np.delete(data, ends)  # the keys' bytes without the newlines
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return pa.LargeStringArray.from_buffers(len(ends), pa.py_buffer(offsets), pa.py_buffer(body))

def status_kb(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1])

keys_path, probes_path, fmt, reader_library = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[7]
threads, repeats = int(sys.argv[5]), int(sys.argv[6])
keys, probes = load(keys_path, fmt), load(probes_path, fmt)
rss_before = status_kb("VmRSS:")
open("/proc/self/clear_refs", "w").write("5")
def c_abi_contains_seconds(f, probes, threads, answers):
    # The same filter saved, opened through the C ABI (libribbon_reader) and queried in one
    # batched call on as many threads.
    import ctypes, tempfile
    c, u64p = ctypes.CDLL(reader_library), ctypes.POINTER(ctypes.c_uint64)
    with tempfile.TemporaryDirectory() as tmp:
        f.save(tmp + "/f.ribbon")
        reader = ctypes.c_void_p()
        c.ribbon_open_file.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)]
        assert c.ribbon_open_file((tmp + "/f.ribbon").encode(), 1, ctypes.byref(reader)) == 0
    out = np.empty(len(probes), np.uint8)
    out_p = out.ctypes.data_as(ctypes.POINTER(ctypes.c_uint8))
    if fmt == "u64":
        c.ribbon_contains_u64_batch_threads.argtypes = [ctypes.c_void_p, u64p, ctypes.c_uint64,
                                                        ctypes.POINTER(ctypes.c_uint8), ctypes.c_uint32]
        t = time.perf_counter()
        rc = c.ribbon_contains_u64_batch_threads(reader, probes.ctypes.data_as(u64p), len(probes), out_p, threads)
    else:  # the Arrow array's own 64-bit offsets and bytes
        offsets_buffer, data_buffer = probes.buffers()[1:3]
        c.ribbon_contains_bytes_batch_threads.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                                          ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint8),
                                                          ctypes.c_uint32]
        t = time.perf_counter()
        rc = c.ribbon_contains_bytes_batch_threads(reader, data_buffer.address, offsets_buffer.address,
                                                   len(probes), out_p, threads)
    seconds = time.perf_counter() - t
    c.ribbon_close.argtypes = [ctypes.c_void_p]
    c.ribbon_close(reader)
    assert rc == 0 and np.array_equal(out.astype(bool), answers), "the C ABI answered differently"
    return seconds

build, query, peak = [], [], 0
for i in range(repeats):
    t = time.perf_counter(); f = ribbon.build(keys, threads=threads); build.append(time.perf_counter() - t)
    f.query_threads = threads
    if i == 0:
        peak = status_kb("VmHWM:")
    t = time.perf_counter(); answers = f.contains(probes); query.append(time.perf_counter() - t)
    if i == 0:
        c_abi = c_abi_contains_seconds(f, probes, threads, answers)
    del f
print(json.dumps({"build_seconds": build, "contains_seconds": query, "c_abi_contains_seconds": c_abi,
                  "rss_before_kb": rss_before, "peak_rss_kb": peak, "positives": int(answers.sum())}))
"""


def write_keys(directory, n, fmt, seed):
    rng = np.random.default_rng(seed)
    path = os.path.join(directory, f"{fmt}-{seed}.keys")
    values = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    if fmt == "u64":
        values.astype("<u8").tofile(path)
    else:  # 16 hex digits and a newline per key, made by numpy (no per-key Python objects)
        digits = np.frombuffer(b"0123456789abcdef", np.uint8)
        nibbles = (values[:, None] >> (np.arange(60, -4, -4, dtype=np.uint64)[None, :])) & np.uint64(15)
        text = np.empty((n, 17), np.uint8)
        text[:, :16] = digits[nibbles.astype(np.int64)]
        text[:, 16] = 10
        text.tofile(path)
    return path


def median_run(command):
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("build_dir")
    parser.add_argument("--keys", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--formats", default="u64,lines")
    parser.add_argument("--cpp-strings", choices=["arrow", "lines"], default="arrow",
                        help="the C++ side's string keys: Arrow offsets as Python's (build_offsets, "
                             "contains_offsets), or string_views")
    args = parser.parse_args()
    timer = os.path.join(args.build_dir, "bench", "ribbon_build_timer")
    python_dir = os.path.join(args.build_dir, "python")
    reader_library = os.path.join(args.build_dir, "libribbon_reader.so")
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in args.formats.split(","):
            keys, probes = write_keys(tmp, args.keys, fmt, 1), write_keys(tmp, args.keys, fmt, 2)
            runs = {"C++": [], "Python": []}
            for _ in range(args.repeats):  # alternate, one build + query per process run
                cpp_fmt = args.cpp_strings if fmt == "lines" else fmt
                runs["C++"].append(median_run([timer, keys, probes, cpp_fmt, str(args.threads), "1"]))
                runs["Python"].append(median_run([sys.executable, "-c", PYTHON_SIDE, python_dir, keys, probes, fmt,
                                                  str(args.threads), "1", reader_library]))
            summary = {}
            for side, results in runs.items():
                summary[side] = {
                    "build_s": statistics.median(r["build_seconds"][0] for r in results),
                    "contains_s": statistics.median(r["contains_seconds"][0] for r in results),
                    "peak_beyond_keys_B_per_key": statistics.median(
                        (r["peak_rss_kb"] - r["rss_before_kb"]) * 1024 / args.keys for r in results),
                    "positives": results[0]["positives"],
                }
            summary["C ABI"] = {"contains_s": statistics.median(r["c_abi_contains_seconds"] for r in runs["Python"])}
            c, p, a = summary["C++"], summary["Python"], summary["C ABI"]
            assert c["positives"] == p["positives"], "the two sides answered differently"
            print(f"{fmt}: {args.keys} keys, {args.threads} threads, medians of {args.repeats} alternating runs")
            for side in ("C++", "Python"):
                s = summary[side]
                print(f"  {side:6}  build {s['build_s']:.3f} s ({1e9 * s['build_s'] / args.keys:.1f} ns/key), "
                      f"contains {s['contains_s']:.3f} s ({1e9 * s['contains_s'] / args.keys:.1f} ns/key), "
                      f"peak RSS beyond keys {s['peak_beyond_keys_B_per_key']:.2f} B/key")
            print(f"  C ABI   contains {a['contains_s']:.3f} s ({1e9 * a['contains_s'] / args.keys:.1f} ns/key), "
                  "in the Python runs")
            print(f"  Python/C++: build {p['build_s'] / c['build_s']:.3f}, contains {p['contains_s'] / c['contains_s']:.3f}, "
                  f"peak RSS {p['peak_beyond_keys_B_per_key'] - c['peak_beyond_keys_B_per_key']:+.2f} B/key")
            print(f"  C ABI/C++: contains {a['contains_s'] / c['contains_s']:.3f}")


if __name__ == "__main__":
    main()
