"""DuckDB over a ribbon.lake index, and many keys at once (issue 55, items 3 and 4).

Writes a table like bench/lake_bench.py's (FILES Parquet files of ROWS rows, one row group a
file, random distinct int64 ids, each id in one file, and a float payload; no string column),
builds its index (local engine, THREADS threads), then measures, medians:

  needles and misses, LOOKUPS of each, the two readers alternating:
    (A) DuckDB, read_parquet of every file WHERE id = k (the key a query parameter);
    (B) ribbon.lake.duckdb_relation over the index's candidates (the index loaded once; the
        table listed per lookup, as the advisory rule asks), fetched as Arrow;
  many keys (KEYS keys: ids of the table drawn at random, plus as many absent ids):
    files_for_each, and finding the rows of the keys by
    (a) scanning every file for id IN keys (pyarrow.dataset; DuckDB, the keys as an Arrow
        table semi-joined), and
    (b) reading each file the index names for its candidate keys only (files_for_each +
        keys_of_files; pyarrow per file; DuckDB per file), the time of files_for_each included.

Each reader's rows are counted and must agree. Writes one JSON line per result.

  python bench/lake_duckdb_bench.py --files 200 --rows 100000 --lookups 25 --keys 100000 --dir /tmp/lakeduck
  python bench/lake_duckdb_bench.py --quick --dir /tmp/lakeduck_quick     # 20 files x 10^4 rows
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

import ribbon.lake as lake


def write_table(directory, files, rows, seed=1):
    """The table (once: --reuse keeps it); returns every id, file by file."""
    rng = np.random.default_rng(seed)
    ids = rng.choice(np.iinfo(np.int64).max, size=files * rows, replace=False).astype(np.int64)
    os.makedirs(directory, exist_ok=True)
    for i in range(files):
        part = ids[i * rows:(i + 1) * rows]
        pq.write_table(pa.table({"id": part, "payload": rng.random(rows)}),
                       os.path.join(directory, f"part-{i:05d}.parquet"), row_group_size=rows)
    return ids


def absent(ids, rng, count):
    """Ids in the table's range (so min/max statistics cannot exclude them) but not in it."""
    drawn = rng.integers(0, np.iinfo(np.int64).max, size=count + 100)
    return np.setdiff1d(drawn, ids)[:count]


def timed(function):
    start = time.perf_counter()
    result = function()
    return time.perf_counter() - start, result


def emit(**fields):
    print(json.dumps(fields), flush=True)


def lookups(con, root, paths, index, keys):
    """(A) and (B) per key, alternating; their medians (ms) and rows found."""
    full, indexed, found = [], [], 0
    for k in keys.tolist():
        t, a = timed(lambda: con.sql("SELECT * FROM read_parquet($files) WHERE id = $k",
                                     params={"files": paths, "k": k}).to_arrow_table())
        full.append(t)
        t, b = timed(lambda: lake.duckdb_relation(con, root, "id", [k], index).to_arrow_table())
        indexed.append(t)
        assert a.num_rows == b.num_rows, (k, a.num_rows, b.num_rows)
        found += b.num_rows
    return statistics.median(full) * 1e3, statistics.median(indexed) * 1e3, found


def scan_all_pyarrow(paths, keys):
    return ds.dataset(paths, format="parquet").to_table(filter=ds.field("id").isin(keys)).num_rows


def scan_all_duckdb(con, paths, keys):
    rows = con.read_parquet(paths).set_alias("r")
    wanted = con.from_arrow(pa.table({"key": keys})).set_alias("k")
    return len(rows.join(wanted, "r.id = k.key", how="semi").to_arrow_table())


def per_file(index, root, keys, read_one):
    """files_for_each, then each named file read for its candidate keys only."""
    found = index.files_for_each(keys)
    offsets, positions = found.keys_of_files()
    total = 0
    for j, relative in enumerate(found.files):
        mine = keys.take(pa.array(positions[offsets[j]:offsets[j + 1]]))
        total += read_one(os.path.join(root, relative), mine)
    return total


def read_one_pyarrow(path, keys):
    return ds.dataset(path, format="parquet").to_table(filter=ds.field("id").isin(keys)).num_rows


def many_keys(con, root, paths, index, keys, repeats):
    results = {}
    t = [timed(lambda: index.files_for_each(keys))[0] for _ in range(repeats)]
    found = index.files_for_each(keys)
    results["files_for_each"] = statistics.median(t) * 1e3
    emit(result="files_for_each", keys=len(keys), ms=results["files_for_each"],
         files=len(found.files), pairs=int(len(found.indices)))

    def read_one_duckdb(path, mine):
        return scan_all_duckdb(con, [path], mine)

    readers = {
        "(a) pyarrow, every file, id IN keys": lambda: scan_all_pyarrow(paths, keys),
        "(a) DuckDB, every file, semi join": lambda: scan_all_duckdb(con, paths, keys),
        "(b) pyarrow, per file, its candidate keys": lambda: per_file(index, root, keys,
                                                                     read_one_pyarrow),
        "(b) DuckDB, per file, its candidate keys": lambda: per_file(index, root, keys,
                                                                    read_one_duckdb),
    }
    rows = {}
    times = {name: [] for name in readers}
    for _ in range(repeats):  # round robin, so that the machine's load falls on all alike
        for name, reader in readers.items():
            t, rows[name] = timed(reader)
            times[name].append(t)
    assert len(set(rows.values())) == 1, rows
    for name in readers:
        results[name] = statistics.median(times[name]) * 1e3
        emit(result=name, keys=len(keys), ms=results[name], rows=rows[name])
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--lookups", type=int, default=25)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--dir", default="/tmp/lakeduck")
    parser.add_argument("--reuse", action="store_true", help="keep a table already written")
    parser.add_argument("--quick", action="store_true", help="20 files x 10^4 rows, 10^4 keys")
    args = parser.parse_args()
    if args.quick:
        args.files, args.rows, args.keys, args.lookups = 20, 10_000, 10_000, 10
    root = os.path.join(args.dir, "table")
    index_path = os.path.join(args.dir, "table.id.ribbon")
    if args.reuse and os.path.exists(index_path):
        ids = pa.concat_arrays([pq.read_table(os.path.join(root, f), columns=["id"])["id"]
                                .combine_chunks() for f in sorted(os.listdir(root))])
        ids = ids.to_numpy()
    else:
        ids = write_table(root, args.files, args.rows)
        t, _ = timed(lambda: lake.build_index(root, "id", index_path, threads=args.threads))
        emit(result="build_index", files=args.files, rows=args.files * args.rows, s=t)
    index = lake.load_index(index_path)
    paths = [os.path.join(root, f) for f in sorted(os.listdir(root))]
    con = duckdb.connect()
    con.execute(f"SET threads = {int(args.threads)}")
    pa.set_cpu_count(args.threads)
    pa.set_io_thread_count(args.threads)

    rng = np.random.default_rng(2)
    needles = rng.choice(ids, size=args.lookups, replace=False)
    full, indexed, found = lookups(con, root, paths, index, needles)
    assert found == args.lookups
    emit(result="needle", lookups=args.lookups, full_ms=full, indexed_ms=indexed,
         ratio=indexed / full)
    misses = absent(ids, rng, args.lookups)
    full, indexed, found = lookups(con, root, paths, index, misses)
    assert found == 0
    emit(result="miss", lookups=args.lookups, full_ms=full, indexed_ms=indexed,
         ratio=indexed / full)

    half = args.keys // 2
    keys = np.concatenate([rng.choice(ids, size=args.keys - half, replace=False),
                           absent(ids, rng, half)])
    rng.shuffle(keys)
    many_keys(con, root, paths, index, pa.array(keys), args.repeats)


if __name__ == "__main__":
    main()
