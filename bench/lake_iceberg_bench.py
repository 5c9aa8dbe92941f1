"""ribbon.lake.iceberg against PyIceberg's own scan on one Iceberg table (issue 55).

Makes an Iceberg table in a local SQLite catalog: FILES appends of ROWS rows each (an int64 id
column of random distinct ids, a string id column, a payload column), so FILES data files;
then measures, medians over LOOKUPS keys, THREADS threads for the builds:

  needle:  iceberg.read(t, "id", [k]) against t.scan(row_filter=EqualTo("id", k)).to_arrow()
           (k in one file), and the data files each plans; a miss (k in no file) the same;
  duckdb:  ribbon.lake.iceberg.duckdb_relation over the candidate files against DuckDB's
           read_parquet of every data file, WHERE id = k;
  upsert:  the rows matching UPSERT keys (half in the table, half new ids in its range),
           iceberg.read against
           t.scan(row_filter=In("id", keys)).to_arrow(), the matching scan of PyIceberg's
           upsert; and files_for_each's time for those keys;
  bytes:   the index's blob bytes against Parquet bloom filters (fpp 1/256, ndv = rows) of the
           same columns, written beside the table once for their size;
  build:   iceberg.build_index against ribbon.lake.build_index of the table's data directory
           as a Parquet directory (the issue-48 index) and against one read of the id column.

  python bench/lake_iceberg_bench.py --files 200 --rows 100000 --lookups 20 --dir /tmp/icebench
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import shutil
import statistics
import time
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import ribbon.lake as lake
from ribbon.lake import iceberg

from lake_bench import bloom_bytes  # bench/lake_bench.py, beside this script


def make_table(directory, files, rows, seed=1):
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("bench", uri=f"sqlite:///{directory}/catalog.db",
                         warehouse=f"file://{directory}/warehouse")
    catalog.create_namespace("db")
    schema = pa.schema([("id", pa.int64()), ("sid", pa.string()), ("payload", pa.float64())])
    table = catalog.create_table("db.events", schema=schema)
    rng = np.random.default_rng(seed)
    ids = rng.choice(np.iinfo(np.int64).max, size=files * rows, replace=False)
    blooms = os.path.join(directory, "bloom")
    os.makedirs(blooms)
    for i in range(files):
        part = ids[i * rows:(i + 1) * rows]
        data = pa.table({"id": part, "sid": pa.compute.cast(part, pa.string()),
                         "payload": rng.random(rows)}, schema=schema)
        table.append(data)
        if i < 20:  # the bloom filters' size: 20 files are enough to scale from
            pq.write_table(data, os.path.join(blooms, f"{i}.parquet"), row_group_size=rows,
                           bloom_filter_options={"id": {"ndv": rows, "fpp": 1 / 256},
                                                 "sid": {"ndv": rows, "fpp": 1 / 256}})
    return catalog.load_table("db.events"), ids


def timed(function, *args, **kw):
    clock = time.perf_counter()
    result = function(*args, **kw)
    return time.perf_counter() - clock, result


def median_ms(samples):
    return 1e3 * statistics.median(samples)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--rows", type=int, default=100000)
    parser.add_argument("--lookups", type=int, default=20)
    parser.add_argument("--upsert", type=int, default=100000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--dir", default="/tmp/icebench")
    parser.add_argument("--figure", help="draw the times as a PNG here (matplotlib)")
    args = parser.parse_args()
    shutil.rmtree(args.dir, ignore_errors=True)
    os.makedirs(args.dir)

    results = []

    def emit(record):
        results.append(record)
        print(json.dumps(record), flush=True)

    seconds, (table, ids) = timed(make_table, args.dir, args.files, args.rows)
    emit({"what": "table", "files": args.files, "rows": len(ids), "seconds": seconds})
    rng = np.random.default_rng(2)

    # Build: twice each (the first warms the page cache), the second timed.
    data_dir = os.path.join(args.dir, "warehouse", "db", "events", "data")
    names = sorted(os.listdir(data_dir))
    builds = {}
    for column in ("id", "sid"):
        for _ in range(2):
            builds[f"iceberg {column}"], stats = timed(iceberg.build_index, table, column,
                                                       threads=args.threads)
            builds[f"directory {column}"], _ = timed(
                lake.build_index, data_dir, column, os.path.join(args.dir, f"{column}.ribbon"),
                threads=args.threads)
        with concurrent.futures.ThreadPoolExecutor(args.threads) as pool:
            builds[f"read {column}"], _ = timed(lambda: list(pool.map(
                lambda n: pq.read_table(os.path.join(data_dir, n), columns=[column],
                                        use_threads=False), names)))
        bloom_dir = os.path.join(args.dir, "bloom")
        blooms, counted = bloom_bytes(bloom_dir, column), len(os.listdir(bloom_dir))
        index = iceberg.load_index(table, column)
        emit({"what": f"build {column}", "iceberg_s": builds[f"iceberg {column}"],
              "directory_index_s": builds[f"directory {column}"],
              "read_column_s": builds[f"read {column}"],
              "iceberg_per_row_ns": 1e9 * builds[f"iceberg {column}"] / len(ids),
              "iceberg_over_directory": builds[f"iceberg {column}"] / builds[f"directory {column}"],
              "iceberg_over_read": builds[f"iceberg {column}"] / builds[f"read {column}"],
              "index_bytes": index.nbytes,
              "bloom_bytes_scaled": blooms * args.files / counted,
              "index_over_bloom": index.nbytes / (blooms * args.files / counted)})

    present_ids = set(ids.tolist())

    def absent(n):
        """n ids in the table's range (so min/max statistics cannot prune them) that it lacks."""
        out = []
        while len(out) < n:
            out += [int(k) for k in rng.integers(0, np.iinfo(np.int64).max, n)
                    if int(k) not in present_ids]
        return out[:n]

    def needle_keys(present):
        if present:
            return [int(k) for k in rng.choice(ids, args.lookups, replace=False)]
        return absent(args.lookups)

    from pyiceberg.expressions import EqualTo, In

    for present in (True, False):
        keys = needle_keys(present)
        ours, theirs, planned = [], [], []
        for k in keys:
            t, rows = timed(iceberg.read, table, "id", [k])
            ours.append(t)
            planned.append(len(iceberg.plan_files(table, "id", [k])))
            t, expected = timed(lambda: table.scan(row_filter=EqualTo("id", k)).to_arrow())
            theirs.append(t)
            assert rows.num_rows == expected.num_rows == int(present)
        # The files a read opens, over many more keys: the index's answer (plan_files equals
        # it here, the min/max statistics of random ids pruning nothing; checked on the keys
        # above).
        index = iceberg.load_index(table, "id")
        assert all(len(index.files_for([k])) == n for k, n in zip(keys, planned))
        many = needle_keys(present) if args.lookups >= 1000 else (
            [int(k) for k in rng.choice(ids, 2000)] if present else absent(2000))
        emit({"what": "needle" if present else "miss", "lookups": len(keys),
              "ribbon_ms": median_ms(ours), "pyiceberg_ms": median_ms(theirs),
              "ratio": statistics.median(ours) / statistics.median(theirs),
              "mean_files_planned": float(np.mean(planned)),
              "mean_files_of_2000_keys": float(np.mean([len(index.files_for([k])) for k in many])),
              "pyiceberg_files_planned": len(table.scan().plan_files())})

    try:
        import duckdb
    except ImportError:
        duckdb = None
    if duckdb is not None:
        con = duckdb.connect()
        con.execute(f"SET threads = {args.threads}")
        every = [os.path.join(data_dir, n) for n in names]
        ours, theirs = [], []
        for k in needle_keys(True):
            t, got = timed(lambda: iceberg.duckdb_relation(con, table, "id", [k]).fetchall())
            ours.append(t)
            t, expected = timed(lambda: con.execute(
                "SELECT * FROM read_parquet(?) WHERE id = ?", [every, k]).fetchall())
            theirs.append(t)
            assert len(got) == len(expected) == 1
        emit({"what": "duckdb needle", "ribbon_ms": median_ms(ours),
              "duckdb_ms": median_ms(theirs),
              "ratio": statistics.median(ours) / statistics.median(theirs)})

    half = args.upsert // 2
    keys = [int(k) for k in rng.choice(ids, half, replace=False)] + absent(args.upsert - half)
    t_each, each = timed(iceberg.files_for_each, table, "id", keys)
    t_ours, rows = timed(iceberg.read, table, "id", keys)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_theirs, expected = timed(lambda: table.scan(row_filter=In("id", keys)).to_arrow())
    assert rows.num_rows == expected.num_rows == half
    emit({"what": "upsert matching", "keys": len(keys), "matching_rows": half,
          "ribbon_s": t_ours, "pyiceberg_s": t_theirs, "ratio": t_ours / t_theirs,
          "files_for_each_s": t_each, "files_opened": len(each.files),
          "key_file_pairs": int(len(each.indices))})
    if args.figure:
        draw(results, args)


def draw(results, args):
    """One bar pair per lookup kind: ribbon against the engine's own scan, log scale."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by = {r["what"]: r for r in results}
    rows = [("needle (PyIceberg)", by["needle"]["ribbon_ms"], by["needle"]["pyiceberg_ms"]),
            ("miss (PyIceberg)", by["miss"]["ribbon_ms"], by["miss"]["pyiceberg_ms"]),
            (f"upsert match, {args.upsert} keys (PyIceberg)", 1e3 * by["upsert matching"]["ribbon_s"],
             1e3 * by["upsert matching"]["pyiceberg_s"])]
    if "duckdb needle" in by:
        rows.insert(2, ("needle (DuckDB)", by["duckdb needle"]["ribbon_ms"],
                        by["duckdb needle"]["duckdb_ms"]))
    fig, ax = plt.subplots(figsize=(7, 3.2))
    y = np.arange(len(rows))
    ax.barh(y - 0.2, [r[2] for r in rows], 0.4, label="the engine's own scan")
    ax.barh(y + 0.2, [r[1] for r in rows], 0.4, label="through ribbon's index")
    ax.set_yticks(y, [r[0] for r in rows])
    ax.set_xscale("log")
    ax.set_xlabel("milliseconds (median)")
    ax.invert_yaxis()
    ax.legend(loc="upper right", fontsize=8)
    ax.set_title(f"An Iceberg table of {args.files} data files, {args.files * args.rows:.0e} rows",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(args.figure, dpi=110)


if __name__ == "__main__":
    main()
