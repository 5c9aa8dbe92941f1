"""ribbon.lake.iceberg.upsert / delete against PyIceberg's table.upsert / table.delete(In(...))
(issue 63) on two identical copies of one Iceberg table per case.

The table (FILES appends of ROWS random int64 ids, bench/lake_iceberg_bench.py's make_table,
a local SQLite catalog) is made and indexed once; each case registers two new tables on its
current metadata file (catalog.register_table: the same data files, diverging only by what
each writes), runs ribbon on one and PyIceberg on the other, each in its own process (timed
inside it; PyIceberg's killed at --cap seconds), then checks the two tables' full scans
(sorted) and results are identical, that ribbon's snapshot deletes no more data files than
hold a changed row, and the data files a needle read plans after ribbon's upsert.

Cases: upserts of each --sizes (half existing ids with changed values, half new ids), the
matches spread over all files or concentrated in the 10 newest; deletes of --delete keys,
concentrated and spread.

  python bench/lake_upsert_bench.py --files 200 --rows 100000 --dir /tmp/upsertbench --reuse \\
      --make-only    # the table alone, once (CPU heavy)
  python bench/lake_upsert_bench.py --files 200 --rows 100000 --sizes 10000,100000 \\
      --ribbon-only 1000000 --dir /tmp/upsertbench --reuse --cap 240 \\
      --figure docs/figures/iceberg_upsert.png
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))


def catalog_of(directory):
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog("bench", uri=f"sqlite:///{directory}/catalog.db",
                      warehouse=f"file://{directory}/warehouse")


def run_one(args):
    """--run ribbon|pyiceberg: one upsert or delete in this process; a JSON line."""
    from pyiceberg.expressions import In

    from ribbon.lake import iceberg

    table = catalog_of(args.dir).load_table(args.table)
    batch = pq.read_table(args.batch)
    clock = time.perf_counter()
    if args.op == "upsert":
        fn = iceberg.upsert if args.run == "ribbon" else type(table).upsert
        result = fn(table, batch, ["id"])
        result = {"rows_updated": result.rows_updated, "rows_inserted": result.rows_inserted}
    elif args.run == "ribbon":
        result = {"rows_deleted": iceberg.delete(table, "id", batch.column("id"))}
    else:
        table.delete(In("id", batch.column("id").to_pylist()))
        result = {}
    seconds = time.perf_counter() - clock
    table.refresh()
    print(json.dumps({"seconds": seconds, "result": result,
                      "summary": dict(table.current_snapshot().summary.additional_properties)}))


def timed_child(args, who, table, batch_path, op, cap):
    command = [sys.executable, os.path.abspath(__file__), "--run", who, "--table", table,
               "--batch", batch_path, "--op", op, "--dir", args.dir]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=cap)
    except subprocess.TimeoutExpired:
        return {"seconds": None, "capped_at_s": cap}
    if done.returncode != 0:
        raise RuntimeError(f"{who} {op} failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def sorted_scan(table):
    t = table.scan().to_arrow()
    t = t.cast(pa.schema([f.with_type(pa.string()) if pa.types.is_large_string(f.type) else f
                          for f in t.schema]))
    return t.sort_by([("id", "ascending")])


def case_batch(rng, ids, files, rows, n, where, op, present):
    """(batch, the number of data files holding one of its existing ids)."""
    pool = ids if where == "spread" else ids[(files - 10) * rows:]
    existing = rng.choice(pool, n if op == "delete" else n // 2, replace=False)
    holders = len(np.unique(np.searchsorted(np.arange(files) * rows,
                                            np.nonzero(np.isin(ids, existing))[0], "right")))
    if op == "delete":
        return pa.table({"id": existing}), holders
    new = rng.integers(0, np.iinfo(np.int64).max, n - len(existing))
    new = new[~np.isin(new, ids)]
    keys = np.concatenate([existing, new])
    batch = pa.table({"id": keys, "sid": pa.compute.cast(pa.array(keys), pa.string()),
                      "payload": rng.random(len(keys)) + 2.0})  # every value changed
    return batch, holders


def indexed_table(args, make_table, iceberg):
    """(the indexed base table, its ids in file order): made in --dir, or with --reuse the
    one a run with the same --files and --rows made there before (its ids saved beside it)."""
    ids_path = os.path.join(args.dir, f"ids-{args.files}x{args.rows}.npy")
    if args.reuse and os.path.exists(ids_path):
        return catalog_of(args.dir).load_table("db.events"), np.load(ids_path)
    shutil.rmtree(args.dir, ignore_errors=True)
    os.makedirs(args.dir)
    clock = time.perf_counter()
    base, ids = make_table(args.dir, args.files, args.rows)
    iceberg.build_index(base, "id", threads=2)
    np.save(ids_path, ids)
    print(json.dumps({"what": "table", "files": args.files, "rows": len(ids),
                      "seconds": time.perf_counter() - clock}), flush=True)
    return base, ids


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--rows", type=int, default=100000)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--ribbon-only", default="", help="sizes run by ribbon alone")
    parser.add_argument("--delete", type=int, default=10000)
    parser.add_argument("--cap", type=float, default=1200, help="PyIceberg's limit, seconds")
    parser.add_argument("--dir", default="/tmp/upsertbench")
    parser.add_argument("--reuse", action="store_true",
                        help="use the table a run with the same --files/--rows left in --dir")
    parser.add_argument("--make-only", action="store_true", help="make the table, run no case")
    parser.add_argument("--no-check", action="store_true")
    parser.add_argument("--figure")
    parser.add_argument("--run", choices=["ribbon", "pyiceberg"], help=argparse.SUPPRESS)
    parser.add_argument("--table", help=argparse.SUPPRESS)
    parser.add_argument("--batch", help=argparse.SUPPRESS)
    parser.add_argument("--op", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        return run_one(args)
    sys.path.insert(0, HERE)
    from lake_iceberg_bench import make_table

    from ribbon.lake import iceberg

    base, ids = indexed_table(args, make_table, iceberg)
    if args.make_only:
        return
    catalog = catalog_of(args.dir)
    rng = np.random.default_rng(63)
    def fits(n, where):  # the 10 newest files hold enough ids for half the batch
        return where == "spread" or n // 2 <= 10 * args.rows

    cases = [("upsert", int(n), where, False) for n in args.sizes.split(",") if n
             for where in ("spread", "concentrated") if fits(int(n), where)]
    cases += [("upsert", int(n), where, True) for n in args.ribbon_only.split(",") if n
              for where in ("spread", "concentrated") if fits(int(n), where)]
    cases += [("delete", args.delete, where, False) for where in ("concentrated", "spread")]
    results = []
    for number, (op, n, where, ribbon_only) in enumerate(cases):
        batch, holders = case_batch(rng, ids, args.files, args.rows, n, where, op, True)
        batch_path = os.path.join(args.dir, f"batch{number}.parquet")
        pq.write_table(batch, batch_path)
        names = {}
        for who in ("ribbon", "pyiceberg"):
            names[who] = f"db.{who}{number}"
            catalog.register_table(names[who], base.metadata_location)
        record = {"what": op, "n": n, "where": where, "holders": holders}
        record["ribbon"] = timed_child(args, "ribbon", names["ribbon"], batch_path, op, None)
        if not ribbon_only:
            record["pyiceberg"] = timed_child(args, "pyiceberg", names["pyiceberg"], batch_path,
                                              op, args.cap)
        ours = catalog.load_table(names["ribbon"])
        record["deleted_data_files"] = int(record["ribbon"]["summary"].get("deleted-data-files", 0))
        assert record["deleted_data_files"] <= holders, record
        if op == "upsert":
            needles = rng.choice(ids, 20, replace=False).tolist()
            record["needle_files_mean"] = float(np.mean(
                [len(iceberg.plan_files(ours, "id", [k])) for k in needles]))
        theirs_done = not ribbon_only and record["pyiceberg"]["seconds"] is not None
        if theirs_done:
            record["ratio"] = record["ribbon"]["seconds"] / record["pyiceberg"]["seconds"]
            if op == "upsert":
                assert record["ribbon"]["result"] == record["pyiceberg"]["result"], record
            if not args.no_check:
                assert sorted_scan(ours).equals(sorted_scan(catalog.load_table(names["pyiceberg"])))
                record["scans_identical"] = True
        for who in names:
            catalog.drop_table(names[who])  # the metadata rows only: the files stay
        results.append(record)
        print(json.dumps(record), flush=True)
    if args.figure:
        draw(results, args)


def draw(results, args):
    """One bar pair per case: ribbon against PyIceberg (hatched where PyIceberg was capped)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 0.45 * len(results) + 1.2))
    y = np.arange(len(results))
    theirs = [r.get("pyiceberg", {}).get("seconds") or r.get("pyiceberg", {}).get("capped_at_s")
              or np.nan for r in results]
    capped = [r.get("pyiceberg", {}).get("seconds") is None for r in results]
    ax.barh(y - 0.2, theirs, 0.4, label="PyIceberg", color="tab:blue")
    for i, c in enumerate(capped):
        if c and "pyiceberg" in results[i]:
            ax.barh(y[i] - 0.2, theirs[i], 0.4, hatch="//", color="none", edgecolor="k")
    ax.barh(y + 0.2, [r["ribbon"]["seconds"] for r in results], 0.4, label="ribbon.lake",
            color="tab:orange")
    ax.set_yticks(y, [f"{r['what']} {r['n']:.0e} {r['where']}" for r in results])
    ax.set_xscale("log")
    ax.set_xlabel("seconds (one run each; hatched: PyIceberg stopped at the cap)")
    ax.invert_yaxis()
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title(f"Upserts and deletes by key, {args.files} data files, "
                 f"{args.files * args.rows:.0e} rows, 2-vCPU VM (shared)", fontsize=9)
    fig.tight_layout()
    fig.savefig(args.figure, dpi=110)


if __name__ == "__main__":
    main()
