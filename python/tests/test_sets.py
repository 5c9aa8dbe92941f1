"""ribbon.build_set and ribbon.FilterSet: every pair found, other pairs at about 2^-bits, one
group at a time (fs[g]), numpy, Arrow and sequences of either kind, the CLI's bytes
(`ribbon build --groups -o`), files, pickling and refusals."""

import pickle

import numpy as np
import pyarrow as pa
import pytest

import ribbon

SIZES = [1, 2, 64, 3000, 20000]  # group g: SIZES[g] keys


def pairs(random_u64):
    keys = random_u64(sum(SIZES), seed=5)
    groups = np.repeat(np.arange(len(SIZES), dtype=np.uint64) * 7 + 100, SIZES)
    order = np.random.default_rng(6).permutation(len(keys))
    return groups[order], keys[order]


def at_most_five_sigma(positives, trials, bits=8):
    p = 2.0 ** -bits
    return positives <= p * trials + 5 * np.sqrt(p * (1 - p) * trials) + 1


def test_every_pair_is_found_and_other_pairs_are_not(random_u64):
    groups, keys = pairs(random_u64)
    fs = ribbon.build_set(groups, keys, threads=2)
    assert len(fs) == fs.group_count == len(SIZES) and fs.key_count == len(keys)
    assert fs.contains(groups, keys).all()
    for g in np.unique(groups):
        mine = keys[groups == g]
        assert fs[int(g)].contains(mine).all()
        assert fs.contains(g, mine).all()  # a numpy scalar group stands for every key
        assert int(mine[0]) in fs[int(g)]
    # Every key asked under the next group, and under a group never given.
    others = fs.contains(np.roll(groups, 1), keys)
    same = np.roll(groups, 1) == groups
    assert at_most_five_sigma(int(others[~same].sum()), int((~same).sum()))
    assert at_most_five_sigma(int(fs[12345].contains(keys).sum()), len(keys))


def test_threads_and_order_do_not_matter(random_u64):
    groups, keys = pairs(random_u64)
    one = ribbon.build_set(groups, keys, threads=1)
    order = np.random.default_rng(8).permutation(len(keys))
    two = ribbon.build_set(groups[order], keys[order], threads=2)
    assert bytes(one) == bytes(two)


def test_groups_and_keys_of_either_kind_from_arrow_and_sequences(random_words):
    words = random_words(3000)
    labels = ["part-%d.parquet" % (i % 7) for i in range(len(words))]
    by_list = ribbon.build_set(labels, words)
    by_arrow = ribbon.build_set(pa.array(labels), pa.array(words, pa.binary()))
    assert bytes(by_list) == bytes(by_arrow)
    assert by_list.group_kind == "bytes" and by_list.key_kind == "bytes" and len(by_list) == 7
    assert by_list.contains(labels, words).all()
    assert by_list["part-3.parquet"].contains([w for w, g in zip(words, labels) if g.endswith("3.parquet")]).all()
    ids = ribbon.build_set(np.arange(len(words), dtype=np.uint64) % 3, words)
    assert ids.group_kind == "u64" and ids.contains(np.arange(len(words)) % 3, words).all()


def test_equals_the_cli_set(cli, tmp_path, random_words, random_u64):
    words = [w.replace(b"\t", b" ") for w in random_words(4000)]
    labels = [b"g%d" % (i % 5) for i in range(len(words))]
    (tmp_path / "pairs.tsv").write_bytes(b"".join(g + b"\t" + w + b"\n" for g, w in zip(labels, words)))
    cli("build", "--groups", "-i", tmp_path / "pairs.tsv", "-o", tmp_path / "set.ribbon", "-q", "-r", "10")
    assert ribbon.build_set(labels, words, bits=10).to_bytes() == (tmp_path / "set.ribbon").read_bytes()
    groups, keys = pairs(random_u64)
    interleaved = np.empty(2 * len(keys), dtype="<u8")
    interleaved[0::2], interleaved[1::2] = groups, keys
    interleaved.tofile(tmp_path / "pairs.u64")
    cli("build", "--groups", "--format", "u64", "-i", tmp_path / "pairs.u64", "-o", tmp_path / "ints.ribbon", "-q")
    expected = ribbon.build_set(groups, keys).to_bytes()
    assert expected == (tmp_path / "ints.ribbon").read_bytes()
    assert ribbon.load_set(tmp_path / "ints.ribbon").contains(groups, keys).all()
    # The pairs hashed in the reader's parallel stage, cut between chunks (24 bytes: every
    # other chunk starts with a key and ends with a group) and between two inputs.
    interleaved[:2002].tofile(tmp_path / "first.u64")
    interleaved[2002:].tofile(tmp_path / "rest.u64")
    for inputs in (["pairs.u64"], ["first.u64", "rest.u64"]):
        args = [a for name in inputs for a in ("-i", tmp_path / name)]
        cli("build", "--groups", "--format", "u64", *args, "-o", tmp_path / "cut.ribbon", "-q",
            "-t", "2", env={"RIBBON_CLI_CHUNK_BYTES": "24"})
        assert (tmp_path / "cut.ribbon").read_bytes() == expected, inputs
    # An input ending inside a pair is refused, though the next would complete it.
    interleaved[:2001].tofile(tmp_path / "first.u64")
    interleaved[2001:].tofile(tmp_path / "rest.u64")
    run = cli("build", "--groups", "--format", "u64", "-i", tmp_path / "first.u64", "-i",
              tmp_path / "rest.u64", "-o", tmp_path / "odd.ribbon", check=False)
    assert run.returncode == 2 and b"first.u64 ends with a group and no key" in run.stderr
    assert not (tmp_path / "odd.ribbon").exists()


def test_files_and_pickling(tmp_path, random_u64):
    groups, keys = pairs(random_u64)
    fs = ribbon.build_set(groups, keys)
    fs.save(tmp_path / "s.ribbon")
    loaded = ribbon.load_set(tmp_path / "s.ribbon")
    assert bytes(loaded) == bytes(fs) and loaded.info()["format_version"] == 7
    assert loaded.info()["group_count"] == len(SIZES)
    again = pickle.loads(pickle.dumps(fs))
    assert isinstance(again, ribbon.FilterSet) and bytes(again) == bytes(fs)
    assert again.contains(groups, keys).all()
    empty = ribbon.build_set(np.zeros(0, np.uint64), np.zeros(0, np.uint64))
    assert len(empty) == 0 and not empty.contains(1, [1, 2]).any()


def test_refusals(tmp_path, random_u64):
    groups, keys = pairs(random_u64)
    fs = ribbon.build_set(groups, keys)
    with pytest.raises(ribbon.KeysError, match="entries for"):
        ribbon.build_set(groups[:-1], keys)
    with pytest.raises(ribbon.KeysError, match="entries for"):
        fs.contains(groups[:-1], keys)
    with pytest.raises(ribbon.QueryError):
        fs.contains("a string group", keys)  # the set names its groups by integers
    with pytest.raises(ribbon.QueryError, match="filter set"):
        fs.filter.contains(keys)  # a set is not queried as a filter
    plain = ribbon.build(keys)
    plain.save(tmp_path / "plain.ribbon")
    with pytest.raises(ribbon.QueryError, match="not a filter set"):
        ribbon.load_set(tmp_path / "plain.ribbon")
    with pytest.raises(ribbon.QueryError, match="not a filter set"):
        plain.contains_in(1, keys)
    with pytest.raises(ribbon.OptionsError):
        ribbon.build_set(groups, keys, variant="retrieval")
