"""ribbon.BulkBuilder: the out-of-core builder, batch by batch (e.g. Parquet row groups)."""

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ribbon


@pytest.mark.parametrize("codes", [None, "2-bit"])
def test_bulk_equals_build_in_memory_and_out_of_core(tmp_path, random_u64, codes):
    keys = random_u64(300000)
    options = dict(bits=7, seed=3, threshold_codes=codes)
    expected = ribbon.build(keys, **options).to_bytes()
    for limit, out_of_core in ((None, False), (1 << 20, True)):
        spill = tmp_path / f"spill-{out_of_core}"
        spill.mkdir()
        path = tmp_path / f"bulk-{out_of_core}.ribbon"
        with ribbon.BulkBuilder("u64", memory_limit=limit, tmp_dir=str(spill), **options) as b:
            for chunk in np.array_split(keys, 7):
                b.add(chunk)
            assert b.key_count == len(keys)
            stats = b.finish(path)
        assert stats["out_of_core"] is out_of_core and stats["key_count"] == len(keys)
        assert path.read_bytes() == expected
        assert os.listdir(spill) == []  # temporary files removed


def test_parquet_row_groups(tmp_path, random_words):
    words = random_words(20000)
    table = pa.table({"id": pa.array(words, pa.binary()), "n": np.arange(len(words))})
    pq.write_table(table, tmp_path / "keys.parquet", row_group_size=3000)
    parquet = pq.ParquetFile(tmp_path / "keys.parquet")
    assert parquet.num_row_groups > 1
    with ribbon.BulkBuilder("bytes", fpr=0.001) as builder:
        for i in range(parquet.num_row_groups):
            builder.add(parquet.read_row_group(i, columns=["id"]).column("id"))
        builder.finish(tmp_path / "ids.ribbon")
    f = ribbon.load(tmp_path / "ids.ribbon")
    assert f.to_bytes() == ribbon.build(words, fpr=0.001).to_bytes()
    assert f.contains(table.column("id")).all()


def test_bulk_errors(tmp_path):
    with pytest.raises(ValueError):
        ribbon.BulkBuilder("float")
    with pytest.raises(ValueError):
        ribbon.BulkBuilder("u64", width=5)
    b = ribbon.BulkBuilder("u64")
    with pytest.raises(ribbon.QueryError):
        b.add(["text"])
    b.add([1, 2, 3])
    b.finish(tmp_path / "a.ribbon")
    with pytest.raises(ribbon.Error, match="finished"):
        b.add([4])
    with ribbon.BulkBuilder("u64", tmp_dir=str(tmp_path / "missing"), memory_limit=1) as b:
        with pytest.raises(ribbon.Error, match="missing"):
            b.add(np.arange(100000, dtype=np.uint64))
            b.finish(tmp_path / "b.ribbon")
    assert sorted(os.listdir(tmp_path)) == ["a.ribbon"]


@pytest.mark.parametrize("group_kind", ["u64", "bytes"])
def test_bulk_sets_equal_build_set_in_memory_and_out_of_core(tmp_path, random_u64, group_kind):
    keys = random_u64(200000)
    rng = np.random.default_rng(5)
    ids = rng.integers(0, 40, len(keys))
    groups = ids if group_kind == "u64" else [b"part-%d" % i for i in ids]
    empty = [1000, 1001] if group_kind == "u64" else [b"empty-a", b"empty-b"]
    options = dict(bits=6, seed=9)
    expected = ribbon.build_set(groups, keys, all_groups=empty, metadata=b"{}", **options)
    hashes = ribbon.hash_pairs(groups, keys, seed=9)
    for limit, out_of_core in ((None, False), (1 << 20, True)):
        path = tmp_path / f"set-{out_of_core}.ribbon"
        with ribbon.BulkBuilder("u64", memory_limit=limit, tmp_dir=str(tmp_path),
                                groups=group_kind, metadata=b"{}", **options) as b:
            for chunk in np.array_split(np.concatenate([hashes, hashes[:1000]]), 5):
                b.add_hashes(chunk)  # a repeated pair is stored once
            b.set_group_count(len(set(ids.tolist())))
            b.set_group_names(sorted(set(groups if group_kind == "bytes" else ids.tolist()))
                              + empty)
            stats = b.finish(path)
        assert stats["out_of_core"] is out_of_core
        assert path.read_bytes() == expected.to_bytes()


def test_bulk_metadata_set_late_is_written_in_memory_and_out_of_core(tmp_path, random_u64):
    keys = random_u64(150000)
    late = b'{"counted while the keys streamed past": 150000}'
    expected = ribbon.build(keys, bits=6, seed=3).with_metadata(late).to_bytes()
    for limit, out_of_core in ((None, False), (1 << 20, True)):
        path = tmp_path / f"late-{out_of_core}.ribbon"
        with ribbon.BulkBuilder("u64", memory_limit=limit, tmp_dir=str(tmp_path), bits=6, seed=3,
                                metadata=b"replaced") as b:
            b.add(keys)
            b.set_metadata(late)
            assert b.finish(path)["out_of_core"] is out_of_core
        assert path.read_bytes() == expected
        assert ribbon.load(path).metadata == late


def _proc_status_bytes(field):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise LookupError(field)


def test_one_large_add_of_hashes_stays_within_the_memory_limit(tmp_path, random_u64):
    # The limit holds per chunk of an add, not per call: 160 MB of hashes added at once under
    # a 32 MiB limit spill as they come (the plan's 16 MiB reserve aside).
    if os.environ.get("RIBBON_TEST_NO_RSS"):
        pytest.skip("sanitizer build: RSS is not the program's")
    hashes = random_u64(2 * 10**7)
    limit = 32 << 20
    try:
        with open("/proc/self/clear_refs", "w") as clear:  # resets the peak RSS (VmHWM)
            clear.write("5")
    except OSError:
        pytest.skip("no /proc/self/clear_refs: the peak RSS cannot be reset")
    before = _proc_status_bytes("VmRSS")
    with ribbon.BulkBuilder("u64", memory_limit=limit, tmp_dir=str(tmp_path)) as b:
        b.add_hashes(hashes)
        stats = b.finish(tmp_path / "large.ribbon")
    grown = _proc_status_bytes("VmHWM") - before
    assert stats["out_of_core"] and stats["key_count"] == len(hashes)
    assert grown <= limit + (16 << 20), f"the build grew the RSS by {grown >> 20} MiB"


def test_bulk_set_errors(tmp_path):
    with ribbon.BulkBuilder("u64") as b:
        with pytest.raises(ValueError, match="groups="):
            b.set_group_names([b"a"])
    with ribbon.BulkBuilder("u64", groups="bytes") as b:
        with pytest.raises(TypeError, match="byte strings"):
            b.set_group_names([1, 2])
        b.add_hashes(ribbon.hash_pairs([b"a"], [1]))
        with pytest.raises(ribbon.OptionsError, match="set_group_count"):
            b.finish(tmp_path / "set.ribbon")
    assert not (tmp_path / "set.ribbon").exists()


@pytest.mark.parametrize("check_bits", [0, 6])
def test_bulk_values_equal_build_in_memory_and_out_of_core(tmp_path, random_u64, check_bits):
    keys = random_u64(200000, seed=5)
    values = np.random.default_rng(5).integers(0, 2**10, size=len(keys), dtype=np.uint32)
    options = dict(bits=10, seed=4, check_bits=check_bits)
    expected = ribbon.build(keys, values=values, **options).to_bytes()
    for limit, out_of_core in ((None, False), (1 << 20, True)):
        spill = tmp_path / f"spill-{check_bits}-{out_of_core}"
        spill.mkdir()
        path = tmp_path / f"kv-{check_bits}-{out_of_core}.ribbon"
        with ribbon.BulkBuilder(
            "u64", memory_limit=limit, tmp_dir=str(spill), with_values=True, **options
        ) as b:
            # Every key twice, with its one value: counted once.
            for part in range(2):
                for k, v in zip(np.array_split(keys, 5), np.array_split(values, 5)):
                    b.add(k, values=v)
            stats = b.finish(path)
        assert stats["out_of_core"] is out_of_core and stats["key_count"] == len(keys)
        assert path.read_bytes() == expected
        assert (ribbon.load(path).lookup(keys) == values).all()
        assert os.listdir(spill) == []


def test_bulk_values_errors(tmp_path, random_u64):
    keys = random_u64(50000, seed=6)
    with pytest.raises(ribbon.OptionsError, match="bits"):
        ribbon.BulkBuilder("u64", with_values=True)
    with ribbon.BulkBuilder("u64", bits=8, with_values=True, memory_limit=1) as b:
        with pytest.raises(ribbon.KeysError, match="with_values"):
            b.add(keys)
        with pytest.raises(ribbon.KeysError, match="entries"):
            b.add(keys, values=[1, 2])
        with pytest.raises(ribbon.Error, match="does not fit in 8"):
            b.add(keys[:3], values=[1, 256, 2])
    with ribbon.BulkBuilder("u64") as b:
        with pytest.raises(ribbon.KeysError, match="with_values=True"):
            b.add(keys, values=np.zeros(len(keys), dtype=np.uint32))
    # Two values of one key, in different batches: no file, no temporaries.
    spill = tmp_path / "spill"
    spill.mkdir()
    with ribbon.BulkBuilder(
        "bytes", bits=4, with_values=True, memory_limit=1, tmp_dir=str(spill)
    ) as b:
        b.add([b"a", b"b", b"c"], values=[1, 2, 3])
        b.add([b"b"], values=[5])
        with pytest.raises(ribbon.ConflictingValuesError):
            b.finish(tmp_path / "kv.ribbon")
    assert os.listdir(tmp_path) == ["spill"] and os.listdir(spill) == []


def test_hash_pairs_of_one_group_is_every_keys_group(random_u64):
    keys = random_u64(1000)
    for group in (b"part-00007.parquet", 7):
        assert (ribbon.hash_pairs([group], keys, seed=3)
                == ribbon.hash_pairs([group] * len(keys), keys, seed=3)).all()
    with pytest.raises(ribbon.KeysError, match="entries for"):
        ribbon.hash_pairs([b"a", b"b"], keys)
