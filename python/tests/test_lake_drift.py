"""ribbon.lake on a Parquet directory that drifted (issue 66): a file without the key column
(written before it was added), integer widths that differ (int32 then int64), an all-null
file (its column of type null), Hive partition directories. The oracle: pyarrow.dataset over
the whole directory with the unified schema (promote_options="permissive"), the key column
compared as 64-bit integers; for Spark, the same bytes as the local engine.

Run alone: pytest python/tests/test_lake_drift.py (the Spark ones: -m spark)."""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import warnings

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import ribbon.lake as lake
from spark_fixtures import spark  # noqa: F401

WIDE = 2**40  # beyond int32


def write(path, **columns):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(pa.table(columns), path)


@pytest.fixture
def drifted(tmp_path):
    """The issue's four files: int32, int64 (one key beyond int32), no id, id all null."""
    root = tmp_path / "t"
    write(str(root / "day=1" / "a.parquet"), id=pa.array([1, 2, 3], pa.int32()),
          v=pa.array(["a1", "a2", "a3"]))
    write(str(root / "day=2" / "b.parquet"), id=pa.array([4, 5, WIDE], pa.int64()),
          v=pa.array(["b4", "b5", "bw"]))
    write(str(root / "day=2" / "c.parquet"), v=pa.array(["c1", "c2"]))
    write(str(root / "day=1" / "d.parquet"), id=pa.array([None, None], pa.null()),
          v=pa.array(["d1", "d2"]))
    return root


def oracle(root, column, keys, partitioning=None):
    """pyarrow.dataset's rows of the whole directory whose column is one of ``keys``."""
    paths = sorted(glob.glob(os.path.join(root, "**", "*.parquet"), recursive=True))
    schema = pa.unify_schemas([pq.read_schema(p) for p in paths], promote_options="permissive")
    if partitioning:
        found = ds.dataset(root, partitioning=partitioning).partitioning.schema
        schema = pa.unify_schemas([schema, found])
    everything = ds.dataset(root, schema=schema, partitioning=partitioning).to_table()
    values = everything[column]
    if pa.types.is_integer(values.type):
        values = values.cast(pa.int64())
    return everything.filter(pc.is_in(values, pa.array(keys, values.type)))


def same(got, want):
    order = [(c, "ascending") for c in want.column_names]
    assert got.schema == want.schema
    assert got.sort_by(order).equals(want.sort_by(order))


KEY_SETS = [[2, 4, WIDE], [WIDE], [3], [99, -1], []]


def test_a_drifted_directory_is_indexed_and_read_as_pyarrow_dataset_reads_it(drifted, tmp_path):
    index = tmp_path / "i.ribbon"
    stats = lake.build_index(drifted, "id", index)
    assert (stats.files, stats.files_without_column, stats.rows) == (4, 1, 10)
    assert stats.nulls == 4  # c.parquet's two rows (no column) and d.parquet's two
    loaded = lake.load_index(index)
    assert loaded.type == "int64"  # unified over the files, not the first file's int32
    assert loaded.files["day=2/c.parquet"][0]["nulls"] == 2
    assert sorted(loaded.parts[0][1].groups()) == sorted(
        f.encode() for f in lake.list_files(lake.open_table(drifted)))  # every file named
    assert loaded.files_for([1, 2, 3, 4, 5, WIDE]) == ["day=1/a.parquet", "day=2/b.parquet"]
    for keys in KEY_SETS:
        for partitioning in (None, "hive"):
            for through in (index, None):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # no index: a full scan, with its warning
                    got = lake.read(drifted, "id", keys, through, partitioning=partitioning,
                                    verify_footers=True)
                same(got, oracle(drifted, "id", keys, partitioning))


def test_int32_only_files_miss_a_key_beyond_int32(tmp_path):
    root = tmp_path / "narrow"
    write(str(root / "a.parquet"), id=pa.array([1, 2], pa.int32()), v=pa.array(["x", "y"]))
    write(str(root / "b.parquet"), id=pa.array([-3, 2], pa.int16()), v=pa.array(["z", "w"]))
    lake.build_index(root, "id", tmp_path / "i.ribbon")
    for keys in ([WIDE, 2], [WIDE], [-WIDE, -3], [2**63 + 1, 1]):
        got = lake.read(root, "id", keys, tmp_path / "i.ribbon")
        assert got.schema.field("id").type == pa.int32()
        same(got, oracle(root, "id", [k for k in keys if k < 2**63]))


def test_files_added_later_wider_or_without_the_column_are_read_and_indexed(drifted, tmp_path):
    os.remove(drifted / "day=2" / "b.parquet")
    index = tmp_path / "i.ribbon"
    lake.build_index(drifted, "id", index)
    assert lake.load_index(index).type == "int32"
    write(str(drifted / "day=3" / "e.parquet"), id=pa.array([WIDE + 1], pa.uint64()),
          v=pa.array(["e"]))
    same(lake.read(drifted, "id", [WIDE + 1, 2], index), oracle(drifted, "id", [WIDE + 1, 2]))
    assert lake.update_index(drifted, "id", index).action == "delta"  # 1 file of 4
    assert lake.load_index(index).type == "int64"  # int32 and the delta's uint64 unified
    for keys in ([2], [WIDE + 1], [7]):  # [2]: a.parquet's int32 rows as the table's int64
        same(lake.read(drifted, "id", keys, index), oracle(drifted, "id", keys))
    write(str(drifted / "day=4" / "f.parquet"), v=pa.array(["f"]))  # a delta without the column
    stats = lake.update_index(drifted, "id", index)
    assert (stats.action, stats.files_without_column) == ("delta", 1)
    assert lake.load_index(index).files_for([1, 2, 3, WIDE + 1]) == [
        "day=1/a.parquet", "day=3/e.parquet"]
    same(lake.read(drifted, "id", [WIDE + 1, 2], index), oracle(drifted, "id", [WIDE + 1, 2]))


def test_types_that_cannot_be_unified_are_an_error_naming_both_files(tmp_path):
    root = tmp_path / "mixed"
    write(str(root / "a.parquet"), id=pa.array([1, 2], pa.int64()))
    write(str(root / "b.parquet"), id=pa.array(["x"]))
    both = r"column 'id' is string in .*b\.parquet but int64 in .*a\.parquet"
    with pytest.raises(lake.LakeError, match=both):
        lake.build_index(root, "id", tmp_path / "i.ribbon")
    assert not os.path.exists(tmp_path / "i.ribbon")
    with pytest.raises(lake.LakeError, match=both + ": types that cannot be unified"):
        lake.read(root, "id", [1])
    with pytest.raises(lake.LakeError, match="column 'nope' is not in any file of"):
        lake.build_index(root, "nope", tmp_path / "i.ribbon")
    run = subprocess.run([sys.executable, "-m", "ribbon.lake", "build", str(root), "-c", "id",
                          "-o", str(tmp_path / "i.ribbon")], capture_output=True, text=True)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert "a.parquet" in run.stderr and "b.parquet" in run.stderr


def test_the_duckdb_relation_reads_by_name(drifted, tmp_path):
    duckdb = pytest.importorskip("duckdb")
    index = tmp_path / "i.ribbon"
    lake.build_index(drifted, "id", index)
    con = duckdb.connect()
    for keys in KEY_SETS:
        for partitioning in (None, "hive"):
            got = lake.duckdb_relation(con, drifted, "id", keys, index,
                                       partitioning=partitioning).arrow()
            if isinstance(got, pa.RecordBatchReader):
                got = got.read_all()
            want = oracle(drifted, "id", keys, partitioning)
            got = got.select(want.column_names)
            assert got.num_rows == want.num_rows
            same(got.cast(want.schema), want)


def test_a_miss_when_the_first_file_lacks_the_column(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    root = tmp_path / "late"
    write(str(root / "0.parquet"), v=pa.array(["old"]))  # before the id column was added
    write(str(root / "1.parquet"), id=pa.array([1, 2], pa.int32()), v=pa.array(["x", "y"]))
    lake.build_index(root, "id", tmp_path / "i.ribbon")
    want = oracle(root, "id", [99])
    same(lake.read(root, "id", [99], tmp_path / "i.ribbon"), want)
    relation = lake.duckdb_relation(duckdb.connect(), root, "id", [99], tmp_path / "i.ribbon")
    assert relation.fetchall() == [] and relation.columns == want.column_names


@pytest.mark.spark
def test_the_spark_engine_writes_the_local_engines_bytes(drifted, tmp_path, spark):
    pytest.importorskip("pandas")
    lake.build_index(drifted, "id", tmp_path / "local.ribbon")
    lake.build_index(drifted, "id", tmp_path / "spark.ribbon", engine="spark", spark=spark)
    assert (tmp_path / "spark.ribbon").read_bytes() == (tmp_path / "local.ribbon").read_bytes()


@pytest.mark.spark
def test_read_indexed_agrees_with_pyarrow_dataset(drifted, tmp_path, spark):
    import ribbon.spark

    lake.build_index(drifted, "id", tmp_path / "i.ribbon")
    for keys in ([2, 4, WIDE], [99]):
        df = ribbon.spark.read_indexed(spark, drifted, "id", keys, tmp_path / "i.ribbon")
        want = oracle(drifted, "id", keys, "hive")
        got = pa.Table.from_pylist([r.asDict() for r in df.collect()], schema=want.schema)
        assert df.columns == want.column_names
        same(got, want)


@pytest.mark.spark
def test_read_indexed_reads_columns_arrow_cannot_convert_to_spark(tmp_path, spark):
    import ribbon.spark

    root = tmp_path / "odd"
    write(str(root / "a.parquet"), id=pa.array([1, 2], pa.int32()), u8=pa.array([7, 8], pa.uint8()),
          n=pa.array([None, None], pa.null()))
    write(str(root / "b.parquet"), id=pa.array([WIDE], pa.int64()), u8=pa.array([9], pa.uint8()),
          n=pa.array([None], pa.null()))
    lake.build_index(root, "id", tmp_path / "i.ribbon")
    df = ribbon.spark.read_indexed(spark, root, "id", [2, WIDE], tmp_path / "i.ribbon")
    want = oracle(root, "id", [2, WIDE])
    got = pa.Table.from_pylist([r.asDict() for r in df.collect()], schema=want.schema)
    same(got, want)
