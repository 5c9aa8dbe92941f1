"""ribbon.lake.iceberg against PyIceberg's own scan as the oracle: the rows of
``table.scan(row_filter=In(column, keys)).to_arrow()`` in every case (appends, overwrites and
deletes after the build, schema evolution, partitions, time travel), the index stored as a
Puffin statistics file PyIceberg parses, and bad input refused or answered by a full plan."""

import json
import subprocess
import sys
import warnings

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyiceberg")

from pyiceberg.catalog.sql import SqlCatalog  # noqa: E402
from pyiceberg.expressions import EqualTo, In  # noqa: E402
from pyiceberg.table.puffin import PuffinFile  # noqa: E402

import ribbon  # noqa: E402
import ribbon.lake  # noqa: E402
from ribbon.lake import IndexUnusable, LakeError  # noqa: E402
from ribbon.lake import _puffin as puffin  # noqa: E402
from ribbon.lake import iceberg  # noqa: E402
from spark_fixtures import s3, spark  # noqa: E402,F401

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string()),
                    pa.field("region", pa.string()), pa.field("score", pa.float64())])
ROWS = 400
FILES = 8


@pytest.fixture
def catalog(tmp_path):
    catalog = SqlCatalog("test", uri=f"sqlite:///{tmp_path}/catalog.db",
                         warehouse=f"file://{tmp_path}/warehouse")
    catalog.create_namespace("db")
    return catalog


def batch(rng, n=ROWS, nulls=False):
    ids = rng.integers(-(1 << 62), 1 << 62, n)
    names = [f"user-{i}" for i in ids]
    id_mask = rng.random(n) < 0.1 if nulls else None
    return pa.table({"id": pa.array(ids, mask=id_mask), "name": names,
                     "region": rng.choice(["eu", "us", "ap"], n),
                     "score": rng.random(n)}, schema=SCHEMA)


def make_table(catalog, name="events", files=FILES, seed=1, partitioned=False, nulls=False):
    rng = np.random.default_rng(seed)
    table = catalog.create_table(f"db.{name}", schema=SCHEMA)
    if partitioned:
        with table.update_spec() as spec:
            spec.add_identity("region")
    for _ in range(files):
        table.append(batch(rng, nulls=nulls))
    return table


def oracle(table, column, keys, **options):
    return table.scan(row_filter=In(column, keys), **options).to_arrow()


def without_large_types(t):
    """PyIceberg itself returns string or large_string (binary or large_binary) by which file
    a batch came from: the rows are what must agree."""
    narrow = {pa.large_string(): pa.string(), pa.large_binary(): pa.binary()}
    return t.cast(pa.schema([f.with_type(narrow.get(f.type, f.type)) for f in t.schema]))


def same_rows(a, b):
    a, b = without_large_types(a), without_large_types(b)
    assert a.schema == b.schema
    keys = [(c, "ascending") for c in a.column_names if not pa.types.is_floating(a.schema.field(c).type)]
    assert a.sort_by(keys).equals(b.sort_by(keys)), (a.num_rows, b.num_rows)


def some_keys(table, column, n, seed=3):
    values = table.scan(selected_fields=(column,)).to_arrow().column(column).drop_null()
    picked = np.random.default_rng(seed).choice(len(values), n, replace=False)
    return values.take(pa.array(picked)).to_pylist()


def check_reads(table, column, keys, **options):
    """read == the oracle for the keys together and for each alone, with no warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        same_rows(iceberg.read(table, column, keys, **options), oracle(table, column, keys, **options))
        for key in keys:
            same_rows(iceberg.read(table, column, [key], **options),
                      oracle(table, column, [key], **options))


def data_files(table):
    return {t.file.file_path for t in table.scan().plan_files()}


# ---------------------------------------------------------------------------------------


def test_index_is_a_puffin_statistics_file(catalog):
    table = make_table(catalog)
    stats = iceberg.build_index(table, "id")
    assert stats.files == stats.files_indexed == FILES and stats.rows == FILES * ROWS
    snapshot = table.current_snapshot()
    registered = [s for s in table.metadata.statistics if s.snapshot_id == snapshot.snapshot_id]
    assert len(registered) == 1 and registered[0].statistics_path == stats.path
    assert stats.path.startswith(table.metadata.location + "/metadata/")
    with table.io.new_input(stats.path).open() as f:
        data = f.read()
    assert registered[0].file_size_in_bytes == len(data)
    parsed = PuffinFile(data)  # PyIceberg's own reader
    (blob,) = parsed.footer.blobs
    assert registered[0].file_footer_size_in_bytes == len(data) - blob.offset - blob.length
    assert blob.type == "ribbon-filter-set-v1" and blob.fields == [1]
    assert blob.snapshot_id == snapshot.snapshot_id
    assert blob.properties["ribbon.format-version"] == "7"
    assert blob.properties["ribbon.files"] == str(FILES)
    assert blob.properties["ribbon.rows"] == str(FILES * ROWS)
    index = ribbon.FilterSet.from_bytes(parsed.get_blob_payload(blob))
    assert sorted(g.decode() for g in index.groups()) == sorted(data_files(table))
    meta = json.loads(index.metadata)
    assert meta["field_id"] == 1 and meta["snapshot_id"] == snapshot.snapshot_id
    # PyIceberg reloads the table with the statistics file registered (it lists no ribbon
    # blob in blob-metadata, whose types PyIceberg 0.12 restricts).
    reloaded = catalog.load_table("db.events")
    assert [s.statistics_path for s in reloaded.metadata.statistics] == [stats.path]
    assert reloaded.metadata.statistics[0].blob_metadata == []


def test_every_key_of_every_file_is_found_and_misses_prune(catalog):
    table = make_table(catalog)
    iceberg.build_index(table, "id")
    ids = table.scan(selected_fields=("id",)).to_arrow().column("id").to_pylist()
    index = iceberg.load_index(table, "id")
    by_file = {}
    for task in table.scan().plan_files():
        path = task.file.file_path
        from pyarrow import parquet as pq
        with table.io.new_input(path).open() as f:
            by_file[path] = pq.read_table(f).column("id").to_pylist()
    for path, keys in by_file.items():
        for key in keys[:50]:
            assert path in index.files_for([key])
    # A needle plans its file and, at 2^-8 a file, rarely another; misses plan about none.
    planned = [len(iceberg.plan_files(table, "id", [k])) for k in ids[:200]]
    assert min(planned) >= 1 and np.mean(planned) < 1.2
    misses = [len(iceberg.plan_files(table, "id", [k])) for k in range(-100, 100)]
    assert np.mean(misses) < 0.2
    full = [len(table.scan(row_filter=EqualTo("id", k)).plan_files()) for k in ids[:20]]
    assert np.mean(full) > 4  # min/max statistics cannot prune a random id


@pytest.mark.parametrize("column", ["id", "name"])
def test_reads_equal_pyiceberg(catalog, column):
    table = make_table(catalog, nulls=True)
    iceberg.build_index(table, column)
    keys = some_keys(table, column, 12)
    absent = [12345, -1] if column == "id" else ["nobody", ""]
    check_reads(table, column, keys + absent)
    check_reads(table, column, [])
    many = some_keys(table, column, 300, seed=4) + absent  # per-file keys
    same_rows(iceberg.read(table, column, many), oracle(table, column, many))
    same_rows(iceberg.read(table, column, keys[:3], columns=["name", "score"]),
              oracle(table, column, keys[:3], selected_fields=("name", "score")))


def test_appends_overwrites_and_deletes_after_the_build(catalog):
    table = make_table(catalog)
    iceberg.build_index(table, "id")
    keys = some_keys(table, "id", 10)
    rng = np.random.default_rng(9)
    extra = batch(rng)
    extra = extra.set_column(0, "id", pa.array([keys[0]] * 5 + extra.column("id").to_pylist()[5:]))
    table.append(extra)  # a file the index does not know, holding an indexed key
    check_reads(table, "id", keys)
    table.delete(EqualTo("id", keys[1]))  # rewrites the file that held it
    check_reads(table, "id", keys)
    table.overwrite(batch(rng), overwrite_filter=EqualTo("id", keys[2]))
    check_reads(table, "id", keys)
    many = some_keys(table, "id", 300, seed=8) + keys
    same_rows(iceberg.read(table, "id", many), oracle(table, "id", many))
    # Nothing of the old index is trusted for a rewritten file: new paths, unknown to it.
    assert data_files(table) - set(iceberg.load_index(table, "id").files)


def test_positional_delete_files_stay_attached(catalog):
    table = make_table(catalog)
    with table.transaction() as tx:
        tx.set_properties({"write.delete.mode": "merge-on-read"})
    iceberg.build_index(table, "id")
    keys = some_keys(table, "id", 6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyIceberg's own, where it falls back to a rewrite
        table.delete(EqualTo("id", keys[0]))
    if not any(t.delete_files for t in table.scan().plan_files()):
        pytest.skip("this PyIceberg writes no delete files (it rewrote the data file), and "
                    "has no public API to add one")
    check_reads(table, "id", keys)
    full = {t.file.file_path: t for t in table.scan().plan_files()}
    for task in iceberg.plan_files(table, "id", keys):
        assert task.delete_files == full[task.file.file_path].delete_files


def test_schema_evolution(catalog):
    table = make_table(catalog)
    iceberg.build_index(table, "id")
    keys = some_keys(table, "id", 6)
    with table.update_schema() as update:
        update.rename_column("id", "user_id")
    check_reads(table, "user_id", keys)  # the index is the field's, whatever its name
    assert iceberg.load_index(table, "user_id").field_id == 1
    # Built after the rename: the files still call the column "id"; matched by field id.
    stats = iceberg.build_index(table, "user_id")
    assert stats.nulls == 0 and stats.pairs == FILES * ROWS
    check_reads(table, "user_id", keys)
    with table.update_schema() as update:
        update.add_column("email", pa_to_iceberg_string())
    rng = np.random.default_rng(5)
    new = batch(rng).rename_columns(["user_id", "name", "region", "score"])
    new = new.append_column("email", pa.array([f"e{i}" for i in range(ROWS)]))
    table.append(new)
    # A column added later: old files hold no key of it (nulls), and are not planned.
    stats = iceberg.build_index(table, "email")
    assert stats.nulls == FILES * ROWS
    assert len(iceberg.plan_files(table, "email", ["e7"])) == 1
    check_reads(table, "email", ["e7", "e8", "nobody"])
    check_reads(table, "user_id", keys + new.column("user_id").to_pylist()[:3])


def pa_to_iceberg_string():
    from pyiceberg.types import StringType
    return StringType()


def test_partitioned_table(catalog):
    table = make_table(catalog, partitioned=True)
    assert len(data_files(table)) == 3 * FILES  # a file per region per append
    iceberg.build_index(table, "id")
    check_reads(table, "id", some_keys(table, "id", 8) + [7])


def test_time_travel(catalog):
    table = make_table(catalog, files=4)
    old = table.current_snapshot().snapshot_id
    old_keys = some_keys(table, "id", 4)
    iceberg.build_index(table, "id")
    table.append(batch(np.random.default_rng(11)))
    table.delete(EqualTo("id", old_keys[0]))
    check_reads(table, "id", old_keys, snapshot_id=old)
    check_reads(table, "id", old_keys)


def test_update_index_builds_only_the_new_files(catalog):
    table = make_table(catalog)
    iceberg.build_index(table, "id")
    assert iceberg.update_index(table, "id").action == "none"
    rng = np.random.default_rng(21)
    table.append(batch(rng))
    stats = iceberg.update_index(table, "id")
    assert stats.action == "delta" and stats.files_indexed == 1 and stats.files == FILES + 1
    snapshot = table.current_snapshot().snapshot_id
    index = iceberg.load_index(table, "id")
    assert index.snapshot_id == snapshot and len(index.parts) == 2
    assert set(index.files) == data_files(table)
    blobs = PuffinFile(read_bytes(table, stats.path)).footer.blobs
    assert [b.properties["ribbon.delta"] for b in blobs] == ["0", "1"]
    # No file unknown any more: a needle of the new file plans it alone (or nearly).
    new_keys = table.scan(snapshot_id=snapshot).to_arrow().column("id").to_pylist()[-5:]
    check_reads(table, "id", new_keys)
    # Many new files: a rebuild.
    for _ in range(FILES):
        table.append(batch(rng))
    assert iceberg.update_index(table, "id").action == "rebuild"
    assert len(iceberg.load_index(table, "id").parts) == 1


def test_files_for_each_against_each_key_alone(catalog):
    table = make_table(catalog)
    iceberg.build_index(table, "id")
    table.append(batch(np.random.default_rng(13)))  # a file the index does not know
    unknown = data_files(table) - set(iceberg.load_index(table, "id").files)
    holder = {}
    for task in table.scan().plan_files():
        for key in ArrowScan_keys(table, task):
            holder[key] = task.file.file_path
    keys = list(holder)[::7] + [3, -3, 11]
    each = iceberg.files_for_each(table, "id", keys)
    assert len(each) == len(keys) and each.always == {p: "unindexed" for p in unknown}
    index = iceberg.load_index(table, "id")
    for i, key in enumerate(keys):
        files = set(each.files_of(i))
        assert files == set(index.files_for([key])) | unknown
        if key in holder:
            assert holder[key] in files
    assert np.mean(np.diff(each.offsets)) < 1 + len(unknown) + 0.2


def ArrowScan_keys(table, task):
    from pyarrow import parquet as pq
    with table.io.new_input(task.file.file_path).open() as f:
        return pq.read_table(f, columns=["id"]).column("id").to_pylist()


def test_two_columns_share_the_statistics_file(catalog):
    table = make_table(catalog)
    iceberg.build_index(table, "id")
    stats = iceberg.build_index(table, "name")
    blobs = PuffinFile(read_bytes(table, stats.path)).footer.blobs
    assert sorted(b.fields[0] for b in blobs) == [1, 2]
    check_reads(table, "id", some_keys(table, "id", 3))
    check_reads(table, "name", some_keys(table, "name", 3))


def read_bytes(table, path):
    with table.io.new_input(path).open() as f:
        return f.read()


@pytest.mark.spark
@pytest.mark.parametrize("column", ["id", "name"])
def test_the_spark_engine_writes_the_local_engines_bytes(catalog, spark, column):
    table = make_table(catalog, nulls=True)
    with table.update_schema() as update:  # Spark matches the files' columns by field id
        update.rename_column(column, "renamed")
    local = iceberg.build_index(table, "renamed")
    on_spark = iceberg.build_index(table, "renamed", engine="spark", spark=spark)
    assert (local.rows, local.nulls, local.pairs) == (on_spark.rows, on_spark.nulls, on_spark.pairs)

    def blob_of(stats):
        return [b.data for b in puffin.read(read_bytes(table, stats.path))]
    assert blob_of(on_spark) == blob_of(local)
    check_reads(table, "renamed", some_keys(table, "renamed", 3))


def duckdb_full_scan(con, table, column, keys):
    """DuckDB's own answer: read_parquet of every live data file, WHERE column IN keys."""
    paths = [p[len("file://"):] for p in data_files(table)]
    rows = con.read_parquet(paths).set_alias("r")
    wanted = con.from_arrow(pa.table({"key": keys})).set_alias("k")
    return sorted(rows.join(wanted, f'r."{column}" = k.key', how="semi").fetchall())


@pytest.mark.parametrize("column", ["id", "name"])
def test_duckdb_relation_equals_duckdbs_full_scan(catalog, column):
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    table = make_table(catalog)
    iceberg.build_index(table, column)
    keys = some_keys(table, column, 5) + ([7, -7] if column == "id" else ["nobody"])
    got = iceberg.duckdb_relation(con, table, column, keys)
    assert sorted(got.fetchall()) == duckdb_full_scan(con, table, column, keys)
    # ribbon.lake.duckdb_relation takes an Iceberg table too.
    assert sorted(ribbon.lake.duckdb_relation(con, table, column, keys).fetchall()) == sorted(
        got.fetchall())
    assert got.columns == SCHEMA.names
    assert iceberg.duckdb_relation(con, table, column, keys[-1:]).fetchall() == []
    projected = iceberg.duckdb_relation(con, table, column, keys, columns=["score", column])
    assert projected.columns == oracle(table, column, keys, selected_fields=("score", column)).column_names
    without_key = iceberg.duckdb_relation(con, table, column, keys, columns=["score"])
    expected = oracle(table, column, keys, selected_fields=("score",))
    assert sorted(without_key.fetchall()) == sorted((v,) for v in expected.column("score").to_pylist())
    # After a rename, the old files hold the column under its old name: read by PyIceberg.
    with table.update_schema() as update:
        update.rename_column(column, "renamed")
    got = iceberg.duckdb_relation(con, table, "renamed", keys)
    expected = oracle(table, "renamed", keys)
    assert sorted(got.fetchall()) == sorted(zip(*[expected.column(c).to_pylist()
                                                  for c in expected.column_names]))


@pytest.mark.s3
def test_on_an_s3_warehouse(s3, tmp_path):
    catalog = SqlCatalog("s3test", uri=f"sqlite:///{tmp_path}/catalog.db",
                         warehouse=f"s3://{s3.bucket}/warehouse",
                         **{"s3.endpoint": f"http://{s3.endpoint}", "s3.region": "us-east-1",
                            "s3.access-key-id": s3.access_key,
                            "s3.secret-access-key": s3.secret_key})
    catalog.create_namespace("db")
    table = make_table(catalog, files=4)
    stats = iceberg.build_index(table, "id")
    assert stats.path.startswith(f"s3://{s3.bucket}/warehouse/")
    assert any(o.endswith("-ribbon.stats") for o in s3.objects())
    keys = some_keys(table, "id", 4)
    check_reads(table, "id", keys + [5])
    assert len(iceberg.plan_files(table, "id", keys[:1])) == 1
    table.append(batch(np.random.default_rng(8)))
    assert iceberg.update_index(table, "id").action == "delta"
    check_reads(table, "id", keys)
    each = iceberg.files_for_each(table, "id", keys)
    assert all(len(each.files_of(i)) >= 1 for i in range(len(keys)))
    duckdb = pytest.importorskip("duckdb")
    rows = iceberg.duckdb_relation(duckdb.connect(), table, "id", keys).fetchall()  # via PyIceberg
    expected = oracle(table, "id", keys)
    assert sorted(rows) == sorted(zip(*[expected.column(c).to_pylist()
                                        for c in expected.column_names]))
    names = some_keys(table, "name", 2)
    with pytest.warns(UserWarning, match="full plan"):  # no index of name
        same_rows(iceberg.read(table, "name", names), oracle(table, "name", names))



def test_bad_columns(catalog):
    table = make_table(catalog, files=2)
    with pytest.raises(LakeError, match="no column 'nope'"):
        iceberg.build_index(table, "nope")
    with pytest.raises(LakeError, match="type double"):
        iceberg.build_index(table, "score")
    with pytest.raises(IndexUnusable, match="no statistics file"):
        iceberg.load_index(table, "id")
    with pytest.raises(ValueError, match="engine"):
        iceberg.build_index(table, "id", engine="gpu")


def test_no_index_is_a_full_plan_with_one_warning(catalog):
    table = make_table(catalog, files=3)
    keys = some_keys(table, "id", 2)
    with pytest.warns(UserWarning, match="full plan") as caught:
        rows = iceberg.read(table, "id", keys)
    assert len(caught) == 1
    same_rows(rows, oracle(table, "id", keys))


def rewrite_statistics(table, change):
    """Replaces the registered statistics file's bytes by ``change(bytes)`` (a new file)."""
    from pyiceberg.table.statistics import StatisticsFile

    (old,) = table.metadata.statistics
    data = change(read_bytes(table, old.statistics_path))
    path = old.statistics_path + ".changed"
    with table.io.new_output(path).create() as out:
        out.write(data)
    with table.update_statistics() as update:
        update.set_statistics(StatisticsFile(**{
            "snapshot-id": old.snapshot_id, "statistics-path": path,
            "file-size-in-bytes": len(data), "file-footer-size-in-bytes": 0,
            "blob-metadata": []}))


def blob_changed(edit):
    def change(data):
        (blob,) = puffin.read(data)
        edit(blob)
        return puffin.write([blob], {}).data
    return change


@pytest.mark.parametrize("case", ["truncated", "not puffin", "other version", "corrupt blob",
                                  "other table", "missing file"])
def test_unusable_statistics_mean_a_full_plan(catalog, case, tmp_path):
    table = make_table(catalog, files=3)
    iceberg.build_index(table, "id")
    keys = some_keys(table, "id", 2)
    changes = {
        "truncated": lambda d: d[:-7],
        "not puffin": lambda d: b"not a puffin file at all",
        "other version": blob_changed(lambda b: setattr(b, "type", "ribbon-filter-set-v2")),
        "corrupt blob": blob_changed(lambda b: setattr(b, "data", b.data[:-30] + bytes(30))),
        "other table": blob_changed(lambda b: setattr(b, "data", other_table_blob(catalog))),
    }
    if case == "missing file":
        (old,) = table.metadata.statistics
        import os
        os.remove(old.statistics_path[len("file://"):])
    else:
        rewrite_statistics(table, changes[case])
    with pytest.raises(LakeError):
        iceberg.load_index(table, "id")
    with pytest.warns(UserWarning, match="full plan") as caught:
        rows = iceberg.read(table, "id", keys)
    assert len(caught) == 1
    same_rows(rows, oracle(table, "id", keys))
    with pytest.warns(UserWarning, match="full plan"):
        planned = iceberg.plan_files(table, "id", keys)
    assert ({t.file.file_path for t in planned}
            == {t.file.file_path for t in table.scan(row_filter=In("id", keys)).plan_files()})


def other_table_blob(catalog):
    other = make_table(catalog, name="other", files=1, seed=4)
    iceberg.build_index(other, "id")
    (stats,) = other.metadata.statistics
    (blob,) = puffin.read(read_bytes(other, stats.statistics_path))
    return blob.data


def test_expired_snapshot_index_is_not_used(catalog):
    table = make_table(catalog, files=3)
    iceberg.build_index(table, "id")
    indexed = table.current_snapshot().snapshot_id
    table.append(batch(np.random.default_rng(2)))
    maintenance = getattr(table, "maintenance", None)
    if maintenance is None or not hasattr(maintenance, "expire_snapshots"):
        pytest.skip("this PyIceberg cannot expire snapshots")
    maintenance.expire_snapshots().by_id(indexed).commit()
    assert table.snapshot_by_id(indexed) is None
    keys = table.scan().to_arrow().column("id").to_pylist()[:2]
    with pytest.warns(UserWarning, match="full plan"):
        rows = iceberg.read(table, "id", keys)
    same_rows(rows, oracle(table, "id", keys))


# ---------------------------------------------------------------------------------------
# The command line.


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "ribbon.lake", "iceberg", *args],
                          capture_output=True, text=True, timeout=300)


def test_command_line(catalog, tmp_path):
    table = make_table(catalog, files=3)
    key = some_keys(table, "id", 1)[0]
    common = ["--catalog", "test", "--catalog-property", f"uri=sqlite:///{tmp_path}/catalog.db",
              "--catalog-property", f"warehouse=file://{tmp_path}/warehouse",
              "--catalog-property", "type=sql", "--table", "db.events", "--column", "id"]
    built = run_cli("build", *common)
    assert built.returncode == 0, built.stderr
    assert json.loads(built.stdout)["files_indexed"] == 3
    queried = run_cli("query", *common, str(key))
    assert queried.returncode == 0, queried.stderr
    table = catalog.load_table("db.events")
    expected = [t.file.file_path for t in iceberg.plan_files(table, "id", [key])]
    assert queried.stdout.split() == expected
    info = run_cli("info", *common)
    assert info.returncode == 0 and json.loads(info.stdout.splitlines()[0])["field_id"] == 1
    assert json.loads(run_cli("update", *common).stdout)["action"] == "none"
    missing = run_cli("build", *common[:-1], "nope")
    assert missing.returncode == 2 and "no column 'nope'" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_the_readmes_example_runs_as_written(tmp_path):
    import pathlib
    import re

    readme = (pathlib.Path(__file__).resolve().parents[2] / "README.md").read_text()
    (example,) = [b for b in re.findall(r"```python\n(.*?)```", readme, re.S)
                  if "from ribbon.lake import iceberg" in b]
    import os

    # The ribbon imported here (the build tree's or the installed one), from another directory.
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(ribbon.__file__)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [package_parent] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    for run in range(2):  # twice: the example is safe to rerun in the same directory
        result = subprocess.run([sys.executable, "-c", example], cwd=tmp_path, env=env,
                                capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        planned, files = re.fullmatch(r"(\d+) of (\d+) files\n", result.stdout).groups()
        # Every run appends the same 20 days again, so the needle lies in run + 1 files; each
        # other file is planned with probability 1/256 (new file names, new groups, so not the
        # same ones each time): more than 3 of them fewer than 1 time in 10^4.
        assert run + 1 <= int(planned) <= run + 4 and int(files) == 20 * (run + 1)
