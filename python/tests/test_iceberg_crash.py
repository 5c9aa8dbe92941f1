"""ribbon.lake.iceberg.upsert killed (SIGKILL) at random moments, 20 times: the table is
always at its old or its new state (full scan, sorted), reads through the index agree with
PyIceberg's scan, and the orphan data files of a killed attempt are listed and deleted by
orphan_files without touching a referenced one. The upserts run in children forked from a
fork server that imported PyIceberg and ribbon once (no thread pools to inherit)."""

import multiprocessing
import os
import signal
import time

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyiceberg")

from pyiceberg.catalog.sql import SqlCatalog  # noqa: E402
from pyiceberg.expressions import In  # noqa: E402

from ribbon.lake import _iceberg_rewrite as rewrite  # noqa: E402
from ribbon.lake import iceberg  # noqa: E402

RUNS = 20
SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string()),
                    pa.field("score", pa.float64())])


def catalog_of(directory):
    return SqlCatalog("crash", uri=f"sqlite:///{directory}/catalog.db",
                      warehouse=f"file://{directory}/warehouse")


def child_upsert(directory, batch_path):
    import pyarrow.parquet as pq

    table = catalog_of(directory).load_table("db.t")
    iceberg.upsert(table, pq.read_table(batch_path), ["id"])
    os._exit(0)


def sorted_rows(t):
    t = t.cast(pa.schema([f.with_type(pa.string()) if pa.types.is_large_string(f.type) else f
                          for f in t.schema]))
    return t.sort_by([("id", "ascending")])


def next_batch(rng, current, n=60):
    """Half existing ids with new values, half new ids; and the state it leads to."""
    picked = current.take(pa.array(rng.choice(current.num_rows, n // 2, replace=False)))
    picked = picked.set_column(2, "score", pa.array(rng.random(n // 2)))
    ids = rng.integers(0, 1 << 62, n // 2)
    new = pa.table({"id": ids, "name": [f"n{i}" for i in ids], "score": rng.random(n // 2)},
                   schema=SCHEMA)
    batch = pa.concat_tables([picked.cast(SCHEMA), new])
    kept = current.filter(pa.compute.invert(pa.compute.is_in(current.column("id"),
                                                             value_set=batch.column("id"))))
    return batch, sorted_rows(pa.concat_tables([kept.cast(SCHEMA), batch]))


@pytest.fixture(scope="module")
def fork_server():
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["ribbon.lake.iceberg", "pyiceberg.catalog.sql",
                                    "pyarrow.parquet", __name__])
    warm = context.Process(target=time.sleep, args=(0,))  # the server starts (imports) here
    warm.start()
    warm.join()
    return context


def test_kill_at_random_moments(tmp_path, fork_server):
    rng = np.random.default_rng(63)
    catalog = catalog_of(tmp_path)
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", schema=SCHEMA)
    for _ in range(4):
        ids = rng.integers(0, 1 << 62, 100)
        table.append(pa.table({"id": ids, "name": [f"r{i}" for i in ids],
                               "score": rng.random(100)}, schema=SCHEMA))
    iceberg.build_index(table, "id")
    states = {"old": 0, "new": 0}
    duration = None
    for run in range(RUNS + 1):
        table = catalog.load_table("db.t")
        old = sorted_rows(table.scan().to_arrow())
        batch, new = next_batch(rng, old)
        batch_path = tmp_path / f"batch{run}.parquet"
        pa.parquet.write_table(batch, batch_path)
        child = fork_server.Process(target=child_upsert, args=(str(tmp_path), str(batch_path)))
        start = time.monotonic()
        child.start()
        if duration is None:  # the first run is not killed: how long one takes
            child.join(60)
            duration = time.monotonic() - start
            print(f"an upsert in a forked child: {duration:.2f} s")
            assert child.exitcode == 0
        else:
            # Spread over the run and a little past it (a slower run on a shared machine):
            # the i-th kill in the i-th of RUNS slices of 1.3 times the unkilled run's time.
            time.sleep(1.3 * duration * (run - 1 + rng.uniform()) / RUNS)
            try:
                os.kill(child.pid, signal.SIGKILL)
            except ProcessLookupError:  # it had finished (and the fork server reaped it)
                pass
            child.join(10)
        table = catalog.load_table("db.t")
        now = sorted_rows(table.scan().to_arrow())
        state = "new" if now.equals(new) else "old"
        assert now.equals(new) or now.equals(old), f"run {run}: neither old nor new state"
        if run:
            states[state] += 1
        else:
            assert state == "new"  # the run not killed lands
        keys = batch.column("id").to_pylist()[::7]
        assert sorted_rows(iceberg.read(table, "id", keys)).equals(
            sorted_rows(table.scan(row_filter=In("id", keys)).to_arrow()))
        referenced = {t.file.file_path for t in table.scan().plan_files()}
        orphans = rewrite.orphan_files(table, older_than_s=0)
        assert not set(orphans) & referenced
        assert rewrite.orphan_files(table, delete=True, older_than_s=0) == orphans
        assert rewrite.orphan_files(table, older_than_s=0) == []
        assert sorted_rows(catalog.load_table("db.t").scan().to_arrow()).equals(now)
    print(f"killed runs: {states}")
    assert states["old"] and states["new"], states  # the kills landed on both sides
