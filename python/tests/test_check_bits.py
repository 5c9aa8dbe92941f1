"""Retrieval with check bits (check_bits=C, format version 4): members keep their values and
are found; a non-member is found with probability 2^-C, within statistical bounds; the
options and queries that make no sense are refused."""

import math

import numpy as np
import pytest

import ribbon

ABSENT = 2**32 - 1


def found_rate_bounds(probes, check_bits, sigmas=5):
    """Bounds on how many of `probes` non-members pass the check (binomial, p = 2^-C)."""
    p = 2.0**-check_bits
    mean, sd = probes * p, math.sqrt(probes * p * (1 - p))
    return mean - sigmas * sd, mean + sigmas * sd


@pytest.mark.parametrize("check_bits,value_bits", [(1, 3), (8, 8), (12, 20), (16, 16)])
def test_members_found_non_members_at_two_to_the_minus_c(random_u64, check_bits, value_bits):
    keys = random_u64(100000)
    values = (np.arange(len(keys)) * 7919 % (1 << value_bits)).astype(np.uint32)
    f = ribbon.build(keys, values=values, check_bits=check_bits, bits=value_bits)
    assert np.array_equal(f.lookup(keys), values)
    assert np.array_equal(f.lookup(keys, absent=ABSENT), values)
    assert f.contains(keys).all()
    others = random_u64(400000, seed=21)
    looked_up = f.lookup(others, absent=ABSENT)
    found = looked_up != ABSENT
    assert np.array_equal(found, f.contains(others))
    low, high = found_rate_bounds(len(others), check_bits)
    assert low <= found.sum() <= high, (found.sum(), low, high)
    assert (looked_up[found] < (1 << value_bits)).all()  # values of the found: value bits only
    info = f.info()
    assert (info["format_version"], info["check_bits"], info["result_bits"]) == (
        5 if info["layout"] == "compact" else 4, check_bits, value_bits + check_bits)
    assert int(others[0]) in f or int(others[0]) not in f  # __contains__ answers


def test_byte_string_keys_and_arrow(random_words):
    import pyarrow as pa

    words = list(dict.fromkeys(random_words(5000)))
    values = np.arange(len(words)) % 300
    f = ribbon.build(words, values=values, check_bits=10)
    for column in (words, pa.array(words, pa.binary()), pa.chunked_array([words[:100], words[100:]], pa.binary())):
        assert np.array_equal(f.lookup(column, absent=ABSENT), values)
        assert f.contains(column).all()
    others = [w + b"#" for w in words]
    assert f.lookup(others, absent=ABSENT).tolist().count(ABSENT) > len(others) * 0.99


def test_files_round_trip(tmp_path, random_u64):
    keys = random_u64(3000)
    f = ribbon.build(keys, values=np.arange(3000) % 50, check_bits=5)
    f.save(tmp_path / "kv.ribbon")
    g = ribbon.load(tmp_path / "kv.ribbon")
    assert bytes(g) == bytes(f) and g.info()["check_bits"] == 5
    assert np.array_equal(g.lookup(keys, absent=ABSENT), np.arange(3000) % 50)


def test_refused(random_u64):
    keys = random_u64(1000)
    with pytest.raises(ribbon.OptionsError, match="check"):
        ribbon.build(keys, check_bits=8)  # a filter has no values to check
    with pytest.raises(ribbon.OptionsError, match="32"):
        ribbon.build(keys, values=np.arange(1000), bits=20, check_bits=13)
    with pytest.raises(ribbon.OptionsError):
        ribbon.build(keys, values=np.arange(1000), check_bits=-1)
    plain = ribbon.build(keys, values=np.arange(1000))
    with pytest.raises(ribbon.QueryError, match="check bits"):
        plain.lookup(keys, absent=0)
    with pytest.raises(ribbon.QueryError, match="lookup"):
        plain.contains(keys)
    checked = ribbon.build(keys, values=np.arange(1000), check_bits=4)
    with pytest.raises(ribbon.QueryError, match="absent"):
        checked.lookup(keys, absent=-1)


def test_same_bytes_as_the_cli(cli, tmp_path, random_u64):
    keys = np.unique(random_u64(20000))
    values = (keys % np.uint64(5000)).astype(np.uint32)
    src, value_file, out = tmp_path / "keys.u64", tmp_path / "values.u64", tmp_path / "kv.ribbon"
    src.write_bytes(keys.astype("<u8").tobytes())
    value_file.write_bytes(values.astype("<u8").tobytes())
    cli("build", "-i", src, "--format", "u64", "--value-file", value_file, "--check-bits", 7,
        "-o", out, "--quiet")
    f = ribbon.build(keys, values=values, check_bits=7)
    assert (f.bits, f.check_bits) == (13, 7)
    assert f.to_bytes() == out.read_bytes()
