"""After ribbon.lake.iceberg's upsert and delete: the snapshot planned once per write (the
candidates, their pruning and the index update share the plan), and the index exactly what
a fresh update_index over a planned snapshot gives (the same blobs, the same files planned
for needles)."""

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyiceberg")

from pyiceberg.table import DataScan  # noqa: E402

from ribbon.lake import _iceberg_commit, _iceberg_plan, iceberg  # noqa: E402
from ribbon.lake import _iceberg_rewrite as rewrite  # noqa: E402
from ribbon.lake._iceberg_table import BLOB_TYPE, live_files  # noqa: E402
from test_iceberg import catalog  # noqa: E402,F401  (a SQLite catalog in tmp_path)
from test_iceberg_upsert import PARTITIONS, ROWS, changed_batch, twin_tables  # noqa: E402


def write(kind, table, rows, rng):
    """An upsert or a delete of keys of ``rows`` (one append's: a few of the table's files)."""
    if kind == "upsert":
        iceberg.upsert(table, changed_batch(rows, rng, changed=20, unchanged=5, new=20), ["id"])
    else:
        keys = rows.column("id").take(pa.array(rng.choice(rows.num_rows, 30, replace=False)))
        iceberg.delete(table, "id", keys)


def ribbon_blobs(table):
    """The payloads of the ribbon blobs in the current snapshot's statistics file."""
    statistics = _iceberg_commit.statistics_of(table.metadata,
                                               table.current_snapshot().snapshot_id)
    if statistics is None:
        return []
    blobs = _iceberg_commit.read_statistics(table, statistics, lambda b: b.type == BLOB_TYPE)
    return [b.payload(statistics.statistics_path) for b in blobs]


@pytest.mark.parametrize("kind", ["upsert", "delete"])
def test_one_plan_a_write(catalog, kind, monkeypatch):
    ours, _, existing = twin_tables(catalog)
    _iceberg_plan._PLANS.clear()
    planned = []
    plan_files = DataScan.plan_files
    monkeypatch.setattr(DataScan, "plan_files",
                        lambda scan: planned.append(scan.snapshot_id) or plan_files(scan))
    write(kind, ours, existing, np.random.default_rng(3))
    assert len(planned) == 1, planned


@pytest.mark.parametrize("partition", sorted(PARTITIONS))
@pytest.mark.parametrize("kind", ["upsert", "delete"])
def test_the_index_after_a_write_is_a_fresh_update_indexs(catalog, kind, partition):
    ours, _, existing = twin_tables(catalog, PARTITIONS[partition], files=12)
    rng = np.random.default_rng(4)
    for append in (11, 10):  # the second write's delta carries the first's
        write(kind, ours, existing.slice(append * ROWS, ROWS), rng)
    written = ribbon_blobs(ours)
    needles = existing.column("id").to_pylist()[::37] + [1, 2, 3]
    planned = [sorted(t.file.file_path for t in iceberg.plan_files(ours, "id", [k]))
               for k in needles]
    snapshot_id = ours.current_snapshot().snapshot_id
    with ours.update_statistics() as update:
        update.remove_statistics(snapshot_id)
    _iceberg_plan._PLANS.clear()
    assert iceberg.update_index(ours, "id").action == "delta"
    assert len(written) == 3 and written == ribbon_blobs(ours)
    assert planned == [sorted(t.file.file_path for t in iceberg.plan_files(ours, "id", [k]))
                       for k in needles]


def test_the_live_files_are_derived_only_from_the_commits_own_snapshot(catalog, monkeypatch):
    ours, _, existing = twin_tables(catalog, files=12)
    seen = []
    monkeypatch.setattr(rewrite, "refresh_index", lambda table, columns, threads, changes:
                        seen.append(changes))
    write("delete", ours, existing.slice(11 * ROWS, ROWS), np.random.default_rng(5))
    (changes,) = seen
    derived = rewrite.live_after(ours, changes)
    planned = live_files(ours, ours.current_snapshot())
    assert sorted(derived) == sorted(planned)
    assert all(derived[p].spec_id == planned[p].spec_id for p in planned)
    ours.append(existing.slice(0, 10))  # another commit: the write's is no longer current
    assert rewrite.live_after(ours, changes) is None
