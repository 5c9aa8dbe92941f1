"""Filter sets that know their groups (format version 7): FilterSet.groups() and groups_of()
against contains() over every group, groups without keys (all_groups), metadata, version 6
on request (group_names=False), and the CLI's --groups-of and --no-group-names giving the
same answers and bytes."""

import numpy as np
import pytest

import ribbon


def grouped(n_groups=40, per_group=50, seed=3):
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, 2**63, size=n_groups * per_group, dtype=np.uint64)
    groups = np.repeat(np.arange(n_groups, dtype=np.uint64) * 3 + 7, per_group)
    return groups, keys


def test_groups_are_the_distinct_groups_sorted():
    groups, keys = grouped()
    fs = ribbon.build_set(groups, keys)
    assert fs.has_group_names and fs.info()["format_version"] == 7
    assert fs.groups().dtype == np.uint64
    assert np.array_equal(fs.groups(), np.unique(groups))
    assert fs.info()["group_names"] == len(np.unique(groups))
    words = ribbon.build_set(["b", "a", "b", "c"], ["k1", "k2", "k3", "k4"])
    assert words.groups() == [b"a", b"b", b"c"]


def test_groups_of_is_contains_over_every_group():
    groups, keys = grouped()
    fs = ribbon.build_set(groups, keys, bits=4)  # false positives at 1/16 to compare too
    probes = np.concatenate([keys, np.arange(1, 400, dtype=np.uint64)])
    offsets, indices = fs.groups_of(probes)
    assert offsets.dtype == np.uint64 and len(offsets) == len(probes) + 1
    names = fs.groups()
    # The oracle: one contains() per group over every probe.
    oracle = np.stack([fs.contains(int(g), probes) for g in names], axis=1)
    for i in range(len(probes)):
        mine = indices[offsets[i]:offsets[i + 1]]
        assert np.array_equal(mine, np.flatnonzero(oracle[i])), i
    own = np.searchsorted(names, groups)
    assert all(own[i] in indices[offsets[i]:offsets[i + 1]] for i in range(len(keys)))
    assert oracle[len(keys):].any()  # non-members do meet false positives at r = 4
    assert fs.groups_of_key(int(keys[0])) == [int(g) for g in names[indices[offsets[0]:offsets[1]]]]


def test_groups_without_keys_and_metadata_round_trip(tmp_path):
    groups, keys = grouped(n_groups=5)
    fs = ribbon.build_set(groups, keys, all_groups=[1000, 7, 2000], metadata=b'{"table": "t"}')
    assert np.array_equal(fs.groups(), np.unique(np.concatenate([groups, [1000, 2000]])))
    assert len(fs) == 5 and fs.metadata == b'{"table": "t"}'
    fs.save(tmp_path / "s.ribbon")
    loaded = ribbon.load_set(tmp_path / "s.ribbon")
    assert np.array_equal(loaded.groups(), fs.groups()) and loaded.metadata == fs.metadata
    assert loaded.info()["metadata_bytes"] == len(fs.metadata)
    offsets, indices = loaded.groups_of(keys[:1])
    assert 1000 not in [int(loaded.groups()[i]) for i in indices]  # not named by any key of it
    with pytest.raises(ribbon.QueryError, match="group names of the wrong kind"):
        ribbon.build_set(groups, keys, all_groups=["a string"])  # integer groups
    plain = ribbon.build(keys)
    assert plain.metadata is None and plain.with_metadata(b"m").metadata == b"m"


def test_version_6_on_request():
    groups, keys = grouped(n_groups=3)
    fs = ribbon.build_set(groups, keys, group_names=False)
    assert not fs.has_group_names and fs.info()["format_version"] == 6
    assert fs.info()["group_names"] is None
    with pytest.raises(ribbon.QueryError, match="no group names"):
        fs.groups()
    with pytest.raises(ribbon.QueryError, match="no group names"):
        fs.groups_of(keys)
    with pytest.raises(ribbon.OptionsError, match="group_names=True"):
        ribbon.build_set(groups, keys, group_names=False, all_groups=[1])


def test_the_cli_writes_and_answers_the_same(cli, tmp_path):
    labels = [b"part-%d" % (i % 6) for i in range(3000)]
    words = [b"key-%d" % i for i in range(3000)]
    (tmp_path / "pairs.tsv").write_bytes(b"".join(g + b"\t" + w + b"\n" for g, w in zip(labels, words)))
    for flags, names in (([], True), (["--no-group-names"], False)):
        cli("build", "--groups", "-i", tmp_path / "pairs.tsv", "-o", tmp_path / "set.ribbon", "-q",
            *flags)
        built = ribbon.build_set(labels, words, group_names=names)
        assert (tmp_path / "set.ribbon").read_bytes() == built.to_bytes(), flags
    cli("build", "--groups", "-i", tmp_path / "pairs.tsv", "-o", tmp_path / "set.ribbon", "-q")
    fs = ribbon.load_set(tmp_path / "set.ribbon")
    asked = [b"key-1", b"key-5", b"nope"]
    out = cli("query", tmp_path / "set.ribbon", "--groups-of", *[k.decode() for k in asked]).stdout
    offsets, indices = fs.groups_of(asked)
    expected = b"".join(
        b"\t".join([k] + [fs.groups()[int(j)] for j in indices[offsets[i]:offsets[i + 1]]]) + b"\n"
        for i, k in enumerate(asked))
    assert out == expected
    assert b"key-1\tpart-1" in out
    unnamed = tmp_path / "v6.ribbon"
    cli("build", "--groups", "-i", tmp_path / "pairs.tsv", "-o", unnamed, "-q", "--no-group-names")
    run = cli("query", unnamed, "--groups-of", "key-1", check=False)
    assert run.returncode == 2 and b"no group names" in run.stderr and run.stdout == b""
