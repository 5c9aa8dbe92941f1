"""LakeIndex.files_for_each: many keys at once (an upsert's batch). Each key's answer must hold
every file that really has it (brute force over the table), equal files_for([key]) on a fresh
index, and follow the advisory rule on a stale one: files added or changed after the build are
there for every key, deleted ones for none. Deltas count (the newest record of a file wins).

Run alone: pytest python/tests/test_lake_many_keys.py"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ribbon
import ribbon.lake as lake

FILES = 12
ROWS = 300


def write(path, ids):
    ids = np.asarray(ids, dtype=np.int64)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(pa.table({"id": ids, "sid": pa.array([f"u{i}" for i in ids])}), path)


@pytest.fixture
def table(tmp_path):
    """A table where some ids are in several files (an id's rows spread over files)."""
    root = tmp_path / "t"
    rng = np.random.default_rng(3)
    shared = rng.integers(-2**62, 2**62, size=40)
    where = {}
    for f in range(FILES):
        name = f"d{f % 3}/part-{f:02d}.parquet"
        ids = np.concatenate([rng.integers(-2**62, 2**62, size=ROWS), shared[f % 4::4]])
        write(str(root / name), ids)
        for i in ids:
            where.setdefault(int(i), set()).add(name)
    return root, where


def keys_for(where, rng, misses=200):
    present = np.array(sorted(where), dtype=np.int64)
    keys = np.concatenate([rng.choice(present, size=len(present) // 2, replace=False),
                           rng.integers(-2**62, 2**62, size=misses)])
    rng.shuffle(keys)
    return np.concatenate([keys, keys[:5]])  # repeated keys answer twice


def answers(found):
    return [found.files_of(i) for i in range(len(found))]


def true_files(root):
    """{id: its files}, read back from the table as it is now."""
    where = {}
    for relative in lake.list_files(lake.open_table(root)):
        for i in pq.read_table(os.path.join(root, relative), columns=["id"])["id"].to_pylist():
            where.setdefault(i, set()).add(relative)
    return where


def test_each_keys_files_hold_it_and_equal_files_for(table, tmp_path):
    root, where = table
    lake.build_index(root, "id", tmp_path / "i.ribbon")
    index = lake.load_index(tmp_path / "i.ribbon")
    keys = keys_for(where, np.random.default_rng(1))
    found = index.files_for_each(keys)
    assert len(found) == len(keys) and found.offsets.dtype == found.indices.dtype == np.int64
    assert found.offsets[0] == 0 and found.offsets[-1] == len(found.indices)
    assert found.files == sorted(found.files) and found.always == {}
    got = answers(found)
    for key, files in zip(keys.tolist(), got):
        assert where.get(key, set()) <= set(files)
        assert files == index.files_for([key])
    # The whole batch opens the union; the Arrow form is the same lists.
    assert found.files == sorted(set().union(*map(set, got)))
    assert found.to_arrow().to_pylist() == got
    # Arrow keys and lists give the same answer.
    again = index.files_for_each(pa.array(keys))
    assert np.array_equal(again.offsets, found.offsets)
    assert np.array_equal(again.indices, found.indices)
    assert answers(index.files_for_each(keys.tolist())) == got


def test_keys_of_files_is_the_transpose(table, tmp_path):
    root, where = table
    lake.build_index(root, "id", tmp_path / "i.ribbon")
    keys = keys_for(where, np.random.default_rng(2))
    found = lake.load_index(tmp_path / "i.ribbon").files_for_each(keys)
    offsets, positions = found.keys_of_files()
    assert offsets[-1] == len(positions) == len(found.indices)
    for j, name in enumerate(found.files):
        mine = positions[offsets[j]:offsets[j + 1]]
        assert np.all(np.diff(mine) > 0)
        assert mine.tolist() == [i for i in range(len(keys)) if name in found.files_of(i)]


def test_string_keys(table, tmp_path):
    root, where = table
    lake.build_index(root, "sid", tmp_path / "s.ribbon")
    index = lake.load_index(tmp_path / "s.ribbon")
    ints = keys_for(where, np.random.default_rng(4), misses=20)
    keys = [f"u{i}" for i in ints.tolist()]
    got = answers(index.files_for_each(keys))
    for i, files in zip(ints.tolist(), got):
        assert where.get(i, set()) <= set(files)
    assert got == answers(index.files_for_each(pa.array(keys)))
    assert got == answers(index.files_for_each([k.encode() for k in keys]))
    with pytest.raises(ribbon.KeyTypeError):
        index.files_for_each([1, 2])


def test_a_stale_index_reads_new_and_changed_files_for_every_key(table, tmp_path):
    root, where = table
    lake.build_index(root, "id", tmp_path / "i.ribbon")
    write(str(root / "d1" / "late.parquet"), [777, 778])           # unindexed
    write(str(root / "d0" / "part-00.parquet"), [4242, 4343])      # changed
    os.unlink(root / "d2" / "part-02.parquet")                     # deleted
    index = lake.load_index(tmp_path / "i.ribbon")
    keys = np.concatenate([keys_for(where, np.random.default_rng(5)), [777, 4242]])
    found = index.files_for_each(keys)
    assert found.always == {"d1/late.parquet": "unindexed", "d0/part-00.parquet": "changed"}
    now = true_files(root)
    _, _, plan_reasons = index.plan([])
    for key, files in zip(keys.tolist(), answers(found)):
        assert now.get(key, set()) <= set(files)
        assert set(found.always) <= set(files) and "d2/part-02.parquet" not in files
        _, expected, _ = index.plan([key])
        assert files == expected
    assert set(plan_reasons) == set(found.always)


def test_deltas_are_consulted(table, tmp_path):
    root, where = table
    lake.build_index(root, "id", tmp_path / "i.ribbon")
    write(str(root / "d1" / "late.parquet"), [777, 778])
    lake.update_index(root, "id", tmp_path / "i.ribbon")
    index = lake.load_index(tmp_path / "i.ribbon")
    assert len(index.parts) == 2
    keys = np.concatenate([keys_for(where, np.random.default_rng(6)), [777]])
    found = index.files_for_each(keys)
    assert found.always == {}
    got = answers(found)
    assert "d1/late.parquet" in got[-1]
    for key, files in zip(keys.tolist(), got):
        assert files == index.files_for([key])


def test_no_keys(table, tmp_path):
    root, _ = table
    lake.build_index(root, "id", tmp_path / "i.ribbon")
    write(str(root / "late.parquet"), [1])
    found = lake.load_index(tmp_path / "i.ribbon").files_for_each(np.array([], np.int64))
    assert len(found) == 0 and found.offsets.tolist() == [0] and found.files == []
    assert found.to_arrow().to_pylist() == []
