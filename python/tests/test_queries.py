"""Batched queries of pyarrow string and binary arrays, read in their buffers (no view per
key): the same answers as one key at a time (`key in f`) and as a list of the keys (views),
for every Arrow string type, sliced arrays, chunked arrays and nulls."""

import numpy as np
import pyarrow as pa
import pytest

import ribbon

TYPES = (pa.string(), pa.large_string(), pa.binary(), pa.large_binary())


def words(n, start=0):
    return [f"key-{i:x}-{'z' * (i % 7)}" for i in range(start, start + n)]


@pytest.fixture(scope="module")
def string_filter():
    return ribbon.build(words(5000), shard_size=4096)


@pytest.fixture(scope="module")
def string_retrieval():
    return ribbon.build(words(5000), values=np.arange(5000) % 251, shard_size=4096)


def probes():
    return words(4000, start=3000)  # members and non-members


def as_array(keys, type_):
    if type_ in (pa.binary(), pa.large_binary()):
        return pa.array([k.encode() for k in keys], type_)
    return pa.array(keys, type_)


@pytest.mark.parametrize("type_", TYPES, ids=str)
def test_arrow_contains_equals_scalar_path(string_filter, type_):
    keys = probes()
    batched = string_filter.contains(as_array(keys, type_))
    assert batched.dtype == bool and len(batched) == len(keys)
    assert list(batched) == [k in string_filter for k in keys]  # one key at a time
    assert np.array_equal(batched, string_filter.contains(keys))  # a list: views
    assert batched[:2000].all()  # members


@pytest.mark.parametrize("type_", TYPES, ids=str)
def test_sliced_arrow_arrays_read_from_their_offset(string_filter, type_):
    keys = probes()
    array = as_array(keys, type_)
    for begin, length in ((0, 0), (1, 1), (7, 300), (1999, 2001), (3999, 1)):
        sliced = array.slice(begin, length)
        assert sliced.offset == begin
        expected = [k in string_filter for k in keys[begin:begin + length]]
        assert list(string_filter.contains(sliced)) == expected


@pytest.mark.parametrize("type_", TYPES, ids=str)
def test_arrow_lookup_equals_scalar_path(string_retrieval, type_):
    keys = probes()
    looked_up = string_retrieval.lookup(as_array(keys, type_))
    assert np.array_equal(looked_up, string_retrieval.lookup(keys))
    assert np.array_equal(looked_up[:2000], np.arange(3000, 5000) % 251)
    sliced = as_array(keys, type_).slice(5, 1000)
    assert np.array_equal(string_retrieval.lookup(sliced), looked_up[5:1005])


def test_chunked_arrays_answer_as_one_array(string_filter):
    keys = probes()
    chunked = pa.chunked_array([pa.array(keys[:1234]), pa.array(keys[1234:]).slice(0)])
    assert np.array_equal(string_filter.contains(chunked), string_filter.contains(keys))


def chunked(keys, type_):
    """Keys in chunks of uneven sizes, empty and sliced ones among them."""
    array = as_array(keys, type_)
    return pa.chunked_array(
        [array.slice(0, 1), array.slice(1, 0), array.slice(1, 999), array.slice(1000, 2500),
         array.slice(3500, 0), array.slice(3500)], type_)


@pytest.mark.parametrize("type_", TYPES, ids=str)
def test_every_chunk_answers_into_its_place(string_filter, string_retrieval, type_):
    keys = probes()
    assert np.array_equal(string_filter.contains(chunked(keys, type_)),
                          string_filter.contains(keys))
    assert np.array_equal(string_retrieval.lookup(chunked(keys, type_)),
                          string_retrieval.lookup(keys))


@pytest.mark.parametrize("type_", TYPES, ids=str)
def test_builds_from_arrow_buffers_equal_builds_from_lists(type_):
    keys = words(3000)
    values = np.arange(3000) % 97
    as_list = ribbon.build(keys, shard_size=4096).to_bytes()
    assert ribbon.build(as_array(keys, type_), shard_size=4096).to_bytes() == as_list
    assert ribbon.build(chunked(keys, type_), shard_size=4096).to_bytes() == as_list
    retrieval = ribbon.build(keys, values=values, shard_size=4096).to_bytes()
    assert ribbon.build(as_array(keys, type_), values=values,
                        shard_size=4096).to_bytes() == retrieval
    assert ribbon.build(chunked(keys, type_), values=values, shard_size=4096).to_bytes() == retrieval
    assert np.array_equal(ribbon.hash_keys(chunked(keys, type_), seed=5),
                          ribbon.hash_keys(keys, seed=5))


@pytest.mark.parametrize("type_", TYPES, ids=str)
def test_nulls_are_refused_as_before(string_filter, type_):
    keys = probes()[:10]
    with_null = pa.array([k if i != 3 else None for i, k in enumerate(keys)], type_)
    with pytest.raises(ribbon.KeysError, match="null"):
        string_filter.contains(with_null)
    # A slice that leaves the null out has none.
    assert list(string_filter.contains(with_null.slice(4))) == [k in string_filter for k in keys[4:]]


def test_integer_filters_refuse_string_arrays(string_filter):
    f = ribbon.build(np.arange(100, dtype=np.uint64))
    with pytest.raises(ribbon.QueryError):
        f.contains(pa.array(["a", "b"]))


def test_query_threads_read_back_and_give_the_same_answers():
    """Batches above the parallel threshold (2^16 keys), on one thread and on all."""
    keys = np.arange(0, 400_000, 2, dtype=np.uint64)
    f = ribbon.build(keys)
    probes = np.arange(0, 300_000, dtype=np.uint64)
    assert f.query_threads == 0
    everywhere = f.contains(probes)
    f.query_threads = 1
    assert f.query_threads == 1
    one = f.contains(probes)
    assert np.array_equal(one, everywhere)
    assert one[keys[keys < 300_000]].all()  # index = key: every member below 300,000
    with pytest.raises((TypeError, ValueError, OverflowError)):
        f.query_threads = -1
