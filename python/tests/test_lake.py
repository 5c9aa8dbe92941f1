"""ribbon.lake: the data-skipping index of Parquet tables. The index is ribbon.build_set's
bytes over the (file, key) pairs (every file named, nulls skipped and counted), spilled or
not, on either engine; reads through it always equal a full scan's (files added, rewritten,
deleted after indexing; truncated, missing and foreign indexes); bad input is a clear error
that writes nothing; updates add deltas; the command line builds and answers.

Run alone: pytest python/tests -k lake (the Spark ones: -m spark -k lake)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import ribbon
import ribbon.lake as lake
from spark_fixtures import spark  # noqa: F401

# Names Spark percent-encodes (a space, a percent sign), in a subdirectory; an empty file, an
# all-null file and a file no index may list (_SUCCESS).
NAMES = ["part-0.parquet", "part-1.parquet", "sub dir/part 2%.parquet", "sub dir/part-3.parquet",
         "empty.parquet", "nulls.parquet", "part-6.parquet"]
ROWS = 400


def write_file(path, ids, *, row_group_size=150, nulls=None):
    ids = np.asarray(ids, dtype=np.int64)
    mask = nulls if nulls is not None else None
    table = pa.table({
        "id": pa.array(ids, mask=mask),
        "sid": pa.array([f"user-{i}" for i in ids], type=pa.string(), mask=mask),
        "bid": pa.array([b"\x00b%d" % i for i in ids], type=pa.binary(), mask=mask),
        "score": pa.array(ids.astype(np.float64) / 3),
    })
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(table, path, row_group_size=row_group_size)


def make_table(root, seed=5):
    rng = np.random.default_rng(seed)
    ids = {}
    for name in NAMES:
        n = 0 if name == "empty.parquet" else ROWS
        values = rng.integers(-2**62, 2**62, size=n)
        nulls = np.ones(n, bool) if name == "nulls.parquet" else (np.arange(n) % 11 == 3)
        write_file(os.path.join(root, name), values, nulls=nulls)
        ids[name] = [int(v) for v, null in zip(values, nulls) if not null]
    (root / "_SUCCESS").write_bytes(b"")
    return ids


@pytest.fixture
def table(tmp_path):
    root = tmp_path / "table"
    ids = make_table(root)
    return root, ids


def key_of(column, i):
    return {"id": i, "sid": f"user-{i}", "bid": b"\x00b%d" % i}[column]


def full_scan(root, column, keys):
    files = sorted(lake.list_files(lake.open_table(root)))
    dataset = ds.dataset([os.path.join(root, f) for f in files], format="parquet")
    arrow_type = dataset.schema.field(column).type
    return dataset.to_table(filter=ds.field(column).isin(pa.array(keys, type=arrow_type)))


def same_rows(a, b):
    order = [("score", "ascending")]
    return a.sort_by(order).equals(b.sort_by(order))


@pytest.mark.parametrize("column", ["id", "sid", "bid"])
def test_the_index_is_build_set_over_the_files_pairs(table, tmp_path, column):
    root, ids = table
    stats = lake.build_index(root, column, tmp_path / "i.ribbon", threads=2)
    groups = [name.encode() for name in NAMES for _ in ids[name]]
    keys = [key_of(column, i) for name in NAMES for i in ids[name]]
    expected = ribbon.build_set(groups, keys, all_groups=[n.encode() for n in NAMES])
    index = ribbon.load_set(tmp_path / "i.ribbon")
    assert index.filter.with_metadata(None).to_bytes() == expected.to_bytes()
    assert index.groups() == sorted(n.encode() for n in NAMES)  # empty and all-null files too
    meta = json.loads(index.metadata)
    assert meta["format"] == lake.INDEX_FORMAT and meta["table"] == str(root)
    assert meta["column"] == column and meta["key_kind"] == ("u64" if column == "id" else "bytes")
    assert meta["type"] == {"id": "int64", "sid": "string", "bid": "binary"}[column]
    assert meta["nulls"] == stats.nulls == sum(ROWS - len(ids[n]) for n in NAMES if n != "empty.parquet")
    facts = meta["files"]["sub dir/part 2%.parquet"]
    path = root / "sub dir" / "part 2%.parquet"
    assert facts["size"] == path.stat().st_size and facts["mtime_ns"] == path.stat().st_mtime_ns
    assert facts["rows"] == ROWS and facts["footer_bytes"] > 0 and len(facts["footer_hash"]) == 32
    assert meta["files"]["empty.parquet"]["rows"] == 0
    assert meta["files"]["nulls.parquet"]["nulls"] == ROWS


def test_a_spilled_build_writes_the_same_bytes(table, tmp_path):
    root, _ = table
    lake.build_index(root, "id", tmp_path / "memory.ribbon")
    stats = lake.build_index(root, "id", tmp_path / "spilled.ribbon", memory_limit=8192, threads=1)
    assert stats.spilled
    assert (tmp_path / "spilled.ribbon").read_bytes() == (tmp_path / "memory.ribbon").read_bytes()


def test_files_for_names_every_file_of_a_key(table, tmp_path):
    root, ids = table
    lake.build_index(root, "sid", tmp_path / "i.ribbon")
    index = lake.load_index(tmp_path / "i.ribbon")
    for name in NAMES:
        for i in ids[name][:20]:
            assert name in index.files_for([f"user-{i}"]), (name, i)
    misses = [f"nobody-{i}" for i in range(300)]
    wrong = sum(len(index.files_for([m])) for m in misses)
    assert wrong < 300 * len(NAMES) * 4 / 256  # about 2^-8 a file
    keys = [f"user-{ids['part-0.parquet'][0]}", f"user-{ids['part-6.parquet'][0]}".encode()]
    assert {"part-0.parquet", "part-6.parquet"} <= set(index.files_for(pa.array(keys, pa.binary())))
    assert index.files_for([]) == []


def read_quietly(*args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = lake.read(*args, **kwargs)
    return result, [str(w.message) for w in caught]


def test_a_needle_opens_its_file_and_reads_a_full_scans_rows(table, tmp_path):
    root, ids = table
    lake.build_index(root, "id", tmp_path / "i.ribbon")
    needle = ids["sub dir/part 2%.parquet"][7]
    _, files = lake.candidate_files(root, "id", [needle], tmp_path / "i.ribbon")
    assert "sub dir/part 2%.parquet" in files and len(files) <= 2
    rows, caught = read_quietly(root, "id", [needle, 12345], index=tmp_path / "i.ribbon")
    assert caught == [] and rows.num_rows == 1
    assert same_rows(rows, full_scan(root, "id", [needle, 12345]))


def test_a_file_added_after_indexing_is_read(table, tmp_path):
    root, ids = table
    lake.build_index(root, "id", tmp_path / "i.ribbon")
    write_file(str(root / "sub dir" / "late.parquet"), [777, 778])
    rows, caught = read_quietly(root, "id", [777], index=tmp_path / "i.ribbon")
    assert rows.num_rows == 1 and same_rows(rows, full_scan(root, "id", [777])) and not caught
    _, _, reasons = lake.load_index(tmp_path / "i.ribbon").plan([777])
    assert reasons["sub dir/late.parquet"] == "unindexed"


def test_a_rewritten_file_is_read(table, tmp_path):
    root, ids = table
    lake.build_index(root, "id", tmp_path / "i.ribbon")
    path = root / "part-1.parquet"
    write_file(str(path), [4242] + ids["part-1.parquet"][1:])  # another size or footer
    rows, _ = read_quietly(root, "id", [4242], index=tmp_path / "i.ribbon")
    assert rows.num_rows == 1 and same_rows(rows, full_scan(root, "id", [4242]))
    # The same size and another modification time: read too.
    (tmp_path / "i.ribbon").unlink()
    lake.build_index(root, "id", tmp_path / "i.ribbon")
    data = bytearray(path.read_bytes())
    before = pq.read_table(path)
    write_file(str(path), [4343] + ids["part-1.parquet"][1:])
    assert pq.read_table(path).num_rows == before.num_rows
    rows, _ = read_quietly(root, "id", [4343], index=tmp_path / "i.ribbon")
    assert same_rows(rows, full_scan(root, "id", [4343])) and rows.num_rows == 1
    # The same size and modification time (a copy that kept them): only verify_footers sees it.
    stat = path.stat()
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    lake.build_index(root, "id", tmp_path / "i.ribbon")
    write_file(str(path), [4444] + ids["part-1.parquet"][1:])
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    if path.stat().st_size == len(data):
        rows, _ = read_quietly(root, "id", [4444], index=tmp_path / "i.ribbon", verify_footers=True)
        assert same_rows(rows, full_scan(root, "id", [4444])) and rows.num_rows == 1


def test_a_deleted_file_is_not_read(table, tmp_path):
    root, ids = table
    lake.build_index(root, "id", tmp_path / "i.ribbon")
    gone = ids["part-0.parquet"][0]
    (root / "part-0.parquet").unlink()
    rows, caught = read_quietly(root, "id", [gone, ids["part-6.parquet"][0]],
                                index=tmp_path / "i.ribbon")
    assert not caught and rows.num_rows == 1
    assert same_rows(rows, full_scan(root, "id", [gone, ids["part-6.parquet"][0]]))


@pytest.mark.parametrize("damage", ["truncated", "missing", "garbage", "other column",
                                    "other table", "a plain filter"])
def test_an_unusable_index_means_a_full_scan_and_one_warning(table, tmp_path, damage):
    root, ids = table
    index = tmp_path / "i.ribbon"
    if damage == "other column":
        lake.build_index(root, "sid", index)
    elif damage == "other table":
        other = tmp_path / "other"
        shutil.copytree(root, other)
        lake.build_index(other, "id", index)
    elif damage == "a plain filter":
        ribbon.build([1, 2, 3]).save(index)
    else:
        lake.build_index(root, "id", index)
        if damage == "truncated":
            index.write_bytes(index.read_bytes()[:-100])
        elif damage == "garbage":
            index.write_bytes(b"RIBBONFL" + bytes(200))
        else:
            index.unlink()
    keys = [ids["part-0.parquet"][0], ids["sub dir/part-3.parquet"][1]]
    rows, caught = read_quietly(root, "id", keys, index=index)
    assert len(caught) == 1 and "full scan" in caught[0], caught
    reason = {"truncated": "corrupt", "missing": "does not exist", "garbage": "corrupt",
              "other column": "'sid'", "other table": "other", "a plain filter": "not a"}[damage]
    assert reason in caught[0]
    assert rows.num_rows == 2 and same_rows(rows, full_scan(root, "id", keys))
    if damage == "missing":
        with pytest.warns(UserWarning, match="full scan"):
            _, files = lake.candidate_files(root, "id", keys, index)
        assert files == sorted(NAMES)


def test_bad_input_is_a_clear_error_and_writes_nothing(table, tmp_path):
    root, _ = table
    index = tmp_path / "i.ribbon"
    lake.build_index(root, "id", index)
    before = index.read_bytes()
    with pytest.raises(lake.LakeError, match=r"column 'nope' is not in .*\.parquet \(its columns: id, sid, bid"):
        lake.build_index(root, "nope", index)
    with pytest.raises(lake.LakeError, match="column 'score' is of type double"):
        lake.build_index(root, "score", index)
    (tmp_path / "bare").mkdir()
    (tmp_path / "bare" / "_SUCCESS").write_bytes(b"")
    with pytest.raises(lake.LakeError, match="has no Parquet files"):
        lake.build_index(tmp_path / "bare", "id", index)
    with pytest.raises(lake.LakeError, match="not a directory"):
        lake.build_index(tmp_path / "absent", "id", index)
    assert index.read_bytes() == before  # the old index intact
    assert sorted(os.listdir(tmp_path)) == ["bare", "i.ribbon", "table"]  # no temporary left
    loaded = lake.load_index(index)
    with pytest.raises(ribbon.KeyTypeError, match="takes integers, not bytes"):
        loaded.files_for(["user-1"])
    with pytest.raises(ribbon.KeyTypeError, match="takes integers"):
        lake.read(root, "id", ["user-1"], index=index)
    with pytest.raises(ribbon.KeyTypeError, match="takes integers, not float"):
        loaded.files_for([1.5])
    lake.build_index(root, "sid", tmp_path / "s.ribbon")
    with pytest.raises(ribbon.KeyTypeError, match="takes strings or bytes, not int64"):
        lake.load_index(tmp_path / "s.ribbon").files_for(np.arange(3))


def test_update_adds_a_delta_that_queries_consult(table, tmp_path):
    root, ids = table
    index = tmp_path / "i.ribbon"
    lake.build_index(root, "id", index)
    assert lake.update_index(root, "id", index).action == "none"
    write_file(str(root / "new.parquet"), [9001, 9002])
    stats = lake.update_index(root, "id", index)
    assert stats.action == "delta" and stats.files_indexed == 1
    assert os.path.exists(f"{index}.delta-1")
    loaded = lake.load_index(index)
    assert len(loaded.parts) == 2 and loaded.files_for([9001]) == ["new.parquet"]
    _, _, reasons = loaded.plan([9001])
    assert reasons == {"new.parquet": "candidate"}
    rows, caught = read_quietly(root, "id", [9001], index=index)
    assert rows.num_rows == 1 and not caught
    # A rewrite of most of the table: a rebuild, which removes the deltas.
    for name in NAMES[:3]:
        write_file(str(root / name), [5, 6, 7])
    assert lake.update_index(root, "id", index).action == "rebuild"
    assert not os.path.exists(f"{index}.delta-1")
    assert same_rows(read_quietly(root, "id", [6], index=index)[0], full_scan(root, "id", [6]))


def test_the_command_line(table, tmp_path):
    root, ids = table
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}

    def run(*args):
        return subprocess.run([sys.executable, "-m", "ribbon.lake", *map(str, args)],
                              capture_output=True, env=env, text=True)

    built = run("build", root, "--column", "id", "-o", tmp_path / "i.ribbon")
    assert built.returncode == 0, built.stderr
    lake.build_index(root, "id", tmp_path / "j.ribbon")
    assert (tmp_path / "i.ribbon").read_bytes() == (tmp_path / "j.ribbon").read_bytes()
    needle = ids["sub dir/part-3.parquet"][0]
    out = run("query", tmp_path / "i.ribbon", str(needle))
    assert out.returncode == 0 and "sub dir/part-3.parquet" in out.stdout.splitlines()
    assert run("query", tmp_path / "i.ribbon", "abc").returncode == 2
    info = json.loads(run("info", tmp_path / "i.ribbon").stdout)
    assert info["column"] == "id" and info["files"] == len(NAMES)
    bad = run("build", root, "--column", "nope", "-o", tmp_path / "k.ribbon")
    assert bad.returncode == 2 and "column 'nope'" in bad.stderr
    assert not (tmp_path / "k.ribbon").exists()


def test_ribbon_lake_runs_the_python_command_line(table, tmp_path, cli):
    """`ribbon lake ARGS` is `python -m ribbon.lake ARGS` in the Python of RIBBON_PYTHON (the
    installed wheel's `ribbon` finds the python3 beside it, which CI's installed run tests)."""
    root, ids = table
    python = {} if os.environ.get("RIBBON_TEST_INSTALLED_WHEEL") else {
        "RIBBON_PYTHON": sys.executable, "PYTHONPATH": os.pathsep.join(sys.path)}
    built = cli("lake", "build", root, "--column", "id", "-o", tmp_path / "i.ribbon", env=python)
    lake.build_index(root, "id", tmp_path / "j.ribbon")
    assert (tmp_path / "i.ribbon").read_bytes() == (tmp_path / "j.ribbon").read_bytes(), built
    needle = ids["sub dir/part-3.parquet"][0]
    out = cli("lake", "query", tmp_path / "i.ribbon", str(needle), env=python)
    assert b"sub dir/part-3.parquet" in out.stdout.splitlines()
    assert b"usage: ribbon lake" in cli("lake", "--help", env=python).stdout
    bad = cli("lake", "query", tmp_path / "i.ribbon", "abc", env=python, check=False)
    assert bad.returncode == 2
    missing = cli("lake", "info", tmp_path / "i.ribbon", check=False,
                  env={**python, "RIBBON_PYTHON": str(tmp_path / "no-python")})
    assert missing.returncode == 2 and b"RIBBON_PYTHON" in missing.stderr


@pytest.mark.spark
@pytest.mark.parametrize("column", ["id", "sid"])
def test_the_spark_engine_writes_the_local_engines_bytes(table, tmp_path, spark, column):
    pytest.importorskip("pandas")
    root, ids = table
    lake.build_index(root, column, tmp_path / "local.ribbon")
    lake.build_index(root, column, tmp_path / "spark.ribbon", engine="spark", spark=spark)
    assert (tmp_path / "spark.ribbon").read_bytes() == (tmp_path / "local.ribbon").read_bytes()


@pytest.mark.spark
def test_read_indexed_scans_the_candidates_only(table, tmp_path, spark):
    import ribbon.spark

    root, ids = table
    lake.build_index(root, "id", tmp_path / "i.ribbon")
    write_file(str(root / "late.parquet"), [31337])
    keys = [ids["sub dir/part 2%.parquet"][3], 31337, 99]
    df = ribbon.spark.read_indexed(spark, root, "id", keys, tmp_path / "i.ribbon")
    scanned = {lake.relative_of_uri(lake.open_table(root), f) for f in df.inputFiles()}
    assert {"sub dir/part 2%.parquet", "late.parquet"} <= scanned and len(scanned) <= 4
    got = pa.Table.from_pylist([r.asDict() for r in df.collect()]).select(["id", "score"])
    assert same_rows(got, full_scan(root, "id", keys).select(["id", "score"]))
    with pytest.warns(UserWarning, match="full scan"):
        df = ribbon.spark.read_indexed(spark, root, "id", keys, tmp_path / "missing.ribbon")
    assert df.count() == 2
