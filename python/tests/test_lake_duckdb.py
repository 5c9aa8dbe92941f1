"""ribbon.lake.duckdb_relation: DuckDB over a ribbon.lake index. Its rows must be DuckDB's own
full scan's (read_parquet of the whole directory, the keys as a query parameter): int64,
string and binary keys, present and absent, a stale index (a file added after the build), a
column name that needs quoting, no candidate file at all (an empty relation of the table's
columns), and names DuckDB would read as globs refused.

Run alone: pytest python/tests/test_lake_duckdb.py"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ribbon
import ribbon.lake as lake

duckdb = pytest.importorskip("duckdb")

FILES = 8
ROWS = 500
ID = "user id"  # a column name with a space (and a quote in another test)


def write(path, ids):
    ids = np.asarray(ids, dtype=np.int64)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(pa.table({ID: ids, "sid": pa.array([f"u'{i}" for i in ids]),
                             "bid": pa.array([b"\x00%d" % i for i in ids], type=pa.binary()),
                             "score": ids.astype(np.float64) / 7}), path, row_group_size=100)


@pytest.fixture
def table(tmp_path):
    root = tmp_path / "t"
    rng = np.random.default_rng(9)
    ids = rng.choice(2**62, size=FILES * ROWS, replace=False) - 2**61
    for f in range(FILES):
        write(str(root / f"d{f % 2}" / f"part {f}.parquet"), ids[f * ROWS:(f + 1) * ROWS])
    lake.build_index(root, ID, tmp_path / "id.ribbon")
    return root, ids, tmp_path / "id.ribbon"


@pytest.fixture
def con():
    connection = duckdb.connect()
    yield connection
    connection.close()


def full_scan(con, root, column, keys):
    """DuckDB's own answer: every file of the directory, the keys as a parameter."""
    quoted = '"' + column.replace('"', '""') + '"'
    return sorted(con.execute(
        f"SELECT * FROM read_parquet($files) WHERE {quoted} IN (SELECT unnest($keys))",
        {"files": os.path.join(root, "**", "*.parquet"), "keys": list(keys)}).fetchall())


def rows_of(relation):
    return sorted(relation.fetchall())


def test_int_keys_present_and_absent(table, con):
    root, ids, index = table
    keys = [int(ids[3]), int(ids[ROWS * 5 + 7]), int(ids[-1]), 12345, -9, int(ids[3])]
    relation = lake.duckdb_relation(con, root, ID, keys, index)
    expected = full_scan(con, root, ID, keys)
    assert len(expected) == 3 and rows_of(relation) == expected
    assert relation.columns == [ID, "sid", "bid", "score"]
    # numpy and Arrow keys give the same rows; one key too.
    assert rows_of(lake.duckdb_relation(con, root, ID, np.array(keys), index)) == expected
    assert rows_of(lake.duckdb_relation(con, root, ID, pa.array(keys), index)) == expected
    assert rows_of(lake.duckdb_relation(con, root, ID, int(ids[3]), index)) == \
        full_scan(con, root, ID, [int(ids[3])])


def test_only_candidate_files_are_scanned(table, con):
    root, ids, index = table
    needle = int(ids[ROWS * 2 + 1])
    relation = lake.duckdb_relation(con, root, ID, [needle], index)
    _, files = lake.candidate_files(root, ID, [needle], index)
    assert "d0/part 2.parquet" in files and len(files) < FILES
    analyzed = con.sql("EXPLAIN ANALYZE " + relation.sql_query()).fetchall()[0][1]
    assert f"Total Files Read: {len(files)}" in analyzed
    assert [f for f in range(FILES) if f"part {f}.parquet" in analyzed] == \
        [f for f in range(FILES) if f"d{f % 2}/part {f}.parquet" in files]
    assert rows_of(relation) == full_scan(con, root, ID, [needle])


@pytest.mark.parametrize("column", ["sid", "bid"])
def test_string_and_binary_keys(table, con, tmp_path, column):
    root, ids, _ = table
    lake.build_index(root, column, tmp_path / f"{column}.ribbon")
    as_key = (lambda i: f"u'{i}") if column == "sid" else (lambda i: b"\x00%d" % i)
    keys = [as_key(int(ids[10])), as_key(int(ids[ROWS * 6])), as_key(5),
            "x' OR 1=1 --" if column == "sid" else b"x' OR 1=1 --"]
    expected = full_scan(con, root, column, keys)
    assert len(expected) == 2
    assert rows_of(lake.duckdb_relation(con, root, column, keys,
                                        tmp_path / f"{column}.ribbon")) == expected


def test_a_file_added_after_the_build_is_read(table, con):
    root, ids, index = table
    write(str(root / "d1" / "late.parquet"), [777, int(ids[0])])
    keys = [777, int(ids[0]), int(ids[ROWS])]
    expected = full_scan(con, root, ID, keys)
    assert len(expected) == 4
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert rows_of(lake.duckdb_relation(con, root, ID, keys, index)) == expected


def test_columns_and_a_name_with_a_quote(tmp_path, con):
    root = tmp_path / "q"
    column = 'the "id"'
    root.mkdir()
    for f in range(3):
        pq.write_table(pa.table({column: pa.array([f * 10 + i for i in range(10)], pa.int32()),
                                 "v": [f"{f}-{i}" for i in range(10)]}),
                       str(root / f"p{f}.parquet"))
    lake.build_index(root, column, tmp_path / "q.ribbon")
    relation = lake.duckdb_relation(con, root, column, [3, 25, 99], tmp_path / "q.ribbon",
                                    columns=["v"])
    assert relation.columns == ["v"] and rows_of(relation) == [("0-3",), ("2-5",)]
    assert rows_of(lake.duckdb_relation(con, root, column, [3, 25, 99], tmp_path / "q.ribbon")) \
        == full_scan(con, root, column, [3, 25, 99])


def test_no_candidate_gives_an_empty_relation_of_the_tables_columns(table, con):
    root, ids, index = table
    misses = [1, 2, 3]
    _, files = lake.candidate_files(root, ID, misses, index)
    assert files == []  # 3 misses over 8 files at 2^-8: a false positive would be a new seed
    relation = lake.duckdb_relation(con, root, ID, misses, index)
    full = con.read_parquet(os.path.join(root, "**", "*.parquet"))
    assert relation.fetchall() == [] and relation.columns == full.columns
    assert relation.types == full.types
    empty = lake.duckdb_relation(con, root, ID, [], index, columns=["score", ID])
    assert empty.fetchall() == [] and empty.columns == ["score", ID]


def test_bad_input_is_a_clear_error(table, con, tmp_path):
    root, ids, index = table
    with pytest.raises(ribbon.KeyTypeError):
        lake.duckdb_relation(con, root, ID, ["a string"], index)
    with pytest.raises(lake.LakeError, match="nope"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # no index: a full scan, with its warning
            lake.duckdb_relation(con, root, "nope", [1])
    # A name DuckDB would read as a glob (and so read "part 1.parquet" with it) is refused.
    write(str(root / "d1" / "part *.parquet"), [5])
    with pytest.raises(lake.LakeError, match="glob"):
        lake.duckdb_relation(con, root, ID, [5], index)
    os.unlink(root / "d1" / "part *.parquet")
    (tmp_path / "empty").mkdir()
    with pytest.raises(lake.LakeError):
        lake.duckdb_relation(con, tmp_path / "empty", ID, [5])
