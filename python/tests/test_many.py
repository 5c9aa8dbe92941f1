"""ribbon.build_many: a filter per group, each byte for byte ribbon.build of that group's keys
alone and the file `ribbon build --groups` writes; groups from numpy, Arrow and sequences."""

import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

import ribbon

SIZES = [0, 1, 2, 64, 3000, 5, 20000]  # group g: SIZES[g] keys (0: the group has none)


def pairs(random_u64):
    """(groups, keys) of SIZES, shuffled; an empty group is absent from the pairs."""
    keys = random_u64(sum(SIZES), seed=3)
    groups = np.repeat(np.arange(len(SIZES)), SIZES)
    order = np.random.default_rng(4).permutation(len(keys))
    return groups[order], keys[order]


def test_each_group_is_its_own_build(random_u64):
    groups, keys = pairs(random_u64)
    filters = ribbon.build_many(groups, keys, bits=7, threads=2)
    assert list(filters) == [g for g, n in enumerate(SIZES) if n]  # sorted labels
    for g, f in filters.items():
        mine = keys[groups == g]
        assert bytes(f) == bytes(ribbon.build(mine, bits=7, threads=1)), g
        assert f.contains(mine).all() and len(f) == len(mine)


def test_threads_do_not_matter(random_u64):
    groups, keys = pairs(random_u64)
    one = ribbon.build_many(groups, keys, threads=1)
    two = ribbon.build_many(groups, keys, threads=2)
    assert {g: bytes(f) for g, f in one.items()} == {g: bytes(f) for g, f in two.items()}


def test_arrow_and_sequence_groups_and_string_keys(random_words):
    words = random_words(3000)
    labels = [("part=%d" % (i % 7)) for i in range(len(words))]
    by_list = ribbon.build_many(labels, words)
    by_arrow = ribbon.build_many(pa.array(labels), pa.array(words, pa.binary()))
    assert sorted(by_arrow) == sorted(by_list) == sorted(set(labels))
    for label, f in by_list.items():
        mine = [w for w, g in zip(words, labels) if g == label]
        assert bytes(f) == bytes(ribbon.build(mine)) == bytes(by_arrow[label]), label
    # Labels that differ only in trailing NUL bytes stay apart.
    apart = ribbon.build_many([b"a", b"a\0"], [1, 2])
    assert sorted(apart) == [b"a", b"a\0"] and len(apart[b"a"]) == 1


def test_equals_the_cli_groups_files(cli, tmp_path, random_words):
    words = [w.replace(b"\t", b" ") for w in random_words(4000)]
    labels = [b"g%d" % (i % 5) for i in range(len(words))]
    (tmp_path / "pairs.tsv").write_bytes(b"".join(g + b"\t" + w + b"\n" for g, w in zip(labels, words)))
    cli("build", "--groups", "-i", tmp_path / "pairs.tsv", "--out-dir", tmp_path / "out", "-q", "-r", "10")
    filters = ribbon.build_many(labels, words, bits=10)
    for label, f in filters.items():
        assert bytes(f) == (tmp_path / "out" / (label.decode() + ".ribbon")).read_bytes(), label


def test_gpu_backend_writes_the_cpu_filters_or_says_why(random_u64, random_words):
    groups, keys = pairs(random_u64)
    words = np.array(random_words(len(keys), seed=5), dtype=object)
    for column in (keys, words):
        try:
            gpu = ribbon.build_many(groups, column, backend="gpu")
        except ribbon.OptionsError as e:  # no CUDA in this module, or no device
            assert "GPU" in str(e)
            continue
        cpu = ribbon.build_many(groups, column, backend="cpu")
        assert {g: bytes(f) for g, f in gpu.items()} == {g: bytes(f) for g, f in cpu.items()}
    with pytest.raises(ribbon.OptionsError, match="backend"):
        ribbon.build_many(groups, keys, backend="tpu")


def test_bad_groups_are_refused():
    with pytest.raises(ribbon.KeysError, match="entries for"):
        ribbon.build_many([1, 2], [1, 2, 3])
    with pytest.raises(ribbon.KeysError, match="null"):
        ribbon.build_many(pa.array([1, None]), [1, 2])
    with pytest.raises(ribbon.KeysError, match="None"):
        ribbon.build_many(["a", None], [1, 2])
    with pytest.raises(ribbon.OptionsError):
        ribbon.build_many([1], [1], width=48)
    assert ribbon.build_many([], np.array([], dtype=np.uint64)) == {}


def test_sorted_integer_groups_are_read_in_place(random_u64):
    groups, keys = pairs(random_u64)
    by_group = np.argsort(groups, kind="stable")
    labels, offsets, order = ribbon.many.group_positions(groups[by_group])
    assert order is None and offsets[-1] == len(keys)  # runs: no order array
    in_place = ribbon.build_many(groups[by_group], keys[by_group])
    shuffled = ribbon.build_many(groups, keys)
    assert {g: bytes(f) for g, f in in_place.items()} == {g: bytes(f) for g, f in shuffled.items()}


def test_package_imports_without_numpy():
    # nanobind's stub generator imports the package where numpy is not installed (pip's
    # isolated build environment): build_many, which needs numpy, must load on first use.
    code = "import sys; sys.modules['numpy'] = None; import ribbon; print(ribbon.Filter.__name__)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert callable(ribbon.build_many) and "build_many" in dir(ribbon)
