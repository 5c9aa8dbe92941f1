"""The golden corpus (tests/data/corpus, its README.md): the Python package and the C ABI
answer every probe of every file as recorded; ribbon.build / build_set re-create some of the
files byte for byte from the recorded inputs; and, marked spark, the Spark SQL functions answer
one file as recorded and the Spark build re-creates one."""

from __future__ import annotations

import ctypes
import os

import numpy as np
import pytest

import ribbon
from spark_fixtures import jar, spark  # noqa: F401
from test_c_abi import lib, ptr  # noqa: F401

CORPUS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                      "tests", "data", "corpus")
COLUMNS = ("file", "version", "kind", "keys", "inputs", "probes", "answers", "command")
ABSENT = 2**32 - 1  # no value of the corpus is this large


def read_manifest():
    entries = []
    with open(os.path.join(CORPUS, "MANIFEST.tsv"), encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            columns = line.split("\t")
            assert len(columns) == len(COLUMNS), line
            entries.append(dict(zip(COLUMNS, columns)))
    return entries


ENTRIES = read_manifest()
BY_FILE = {e["file"]: e for e in ENTRIES}


def lines(path):
    """The lines of a file as bytes (a trailing \\r dropped, as `ribbon build` drops it)."""
    with open(os.path.join(CORPUS, path), "rb") as f:
        return [line[:-1] if line.endswith(b"\r") else line for line in f.read().split(b"\n")[:-1]]


def hex_keys(texts):
    return np.array([int(t[2:] if t[:2] in (b"0x", b"0X") else t, 16) for t in texts], dtype=np.uint64)


def probes_of(entry):
    """(groups, keys): keys as a numpy uint64 array or a list of bytes; groups (sets) as a
    numpy uint64 array or a list of bytes, else None."""
    groups = None
    texts = lines(entry["probes"])
    if entry["kind"].startswith("set-"):
        pairs = [t.split(b"\t", 1) for t in texts]
        texts = [key for _, key in pairs]
        groups = [group for group, _ in pairs]
        if entry["kind"] == "set-u64":
            groups = np.array([int(g) for g in groups], dtype=np.uint64)
    keys = hex_keys(texts) if entry["keys"] == "u64" else texts
    return groups, keys


def recorded(entry):
    with open(os.path.join(CORPUS, entry["answers"]), encoding="ascii") as f:
        return f.read().split("\n")[:-1]


def python_answers(f, entry, groups, keys):
    if entry["kind"] == "filter":
        return ["1" if x else "0" for x in f.contains(keys)]
    if entry["kind"] == "values":
        if f.check_bits:
            values = f.lookup(keys, absent=ABSENT)
            assert np.array_equal(f.contains(keys), values != ABSENT)
            return ["absent" if v == ABSENT else str(v) for v in values]
        return [str(v) for v in f.lookup(keys)]
    return ["1" if x else "0" for x in f.contains_in(groups, keys)]


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"] for e in ENTRIES])
def test_python_reader_answers_as_recorded(entry):
    path = os.path.join(CORPUS, entry["file"])
    groups, keys = probes_of(entry)
    want = recorded(entry)
    assert len(want) == len(keys)
    with open(path, "rb") as f:
        image = f.read()
    for f in (ribbon.load(path), ribbon.load(path, mmap=False), ribbon.Filter.from_bytes(image)):
        assert f.info()["format_version"] == int(entry["version"])
        assert python_answers(f, entry, groups, keys) == want
    if entry["kind"].startswith("set-"):
        fs = ribbon.load_set(path)
        assert ["1" if x else "0" for x in fs.contains(groups, keys)] == want


def offsets_of(keys):
    data = b"".join(keys)
    offsets = np.concatenate([[0], np.cumsum([len(k) for k in keys])]).astype(np.uint64)
    return data, offsets


def c_answers(lib, handle, entry, groups, keys):  # noqa: F811
    n = len(keys)
    u64 = entry["keys"] == "u64"
    if not u64:
        data, offsets = offsets_of(keys)
    if entry["kind"] == "filter":
        out = np.zeros(n, np.uint8)
        if u64:
            assert lib.ribbon_contains_u64_batch(handle, ptr(keys, ctypes.c_uint64), n, ptr(out, ctypes.c_uint8)) == 0
            scalar = [lib.ribbon_contains_u64(handle, int(k)) for k in keys]
        else:
            assert lib.ribbon_contains_bytes_batch(handle, data, ptr(offsets, ctypes.c_uint64), n,
                                                   ptr(out, ctypes.c_uint8)) == 0
            scalar = [lib.ribbon_contains_bytes(handle, k, len(k)) for k in keys]
        assert scalar == out.tolist()
        return [str(x) for x in scalar]
    if entry["kind"] == "values":
        values, found = np.zeros(n, np.uint32), np.zeros(n, np.uint8)
        if u64:
            assert lib.ribbon_find_u64_batch_threads(handle, ptr(keys, ctypes.c_uint64), n, ptr(values, ctypes.c_uint32),
                                                     ptr(found, ctypes.c_uint8), 0) == 0
        else:
            assert lib.ribbon_find_bytes_batch_threads(handle, data, ptr(offsets, ctypes.c_uint64), n,
                                                       ptr(values, ctypes.c_uint32), ptr(found, ctypes.c_uint8), 0) == 0
        value = ctypes.c_uint32()
        for i in range(0, n, 97):  # scalar calls for some of the probes
            if u64:
                assert lib.ribbon_find_u64(handle, int(keys[i]), ctypes.byref(value)) == found[i]
            else:
                assert lib.ribbon_find_bytes(handle, keys[i], len(keys[i]), ctypes.byref(value)) == found[i]
            if found[i]:
                assert value.value == values[i]
        return [str(v) if ok else "absent" for v, ok in zip(values.tolist(), found.tolist())]
    if entry["kind"] == "set-u64":
        if u64:
            return [str(lib.ribbon_contains_in_u64(handle, int(g), int(k))) for g, k in zip(groups, keys)]
        return [str(lib.ribbon_contains_in_u64_bytes(handle, int(g), k, len(k))) for g, k in zip(groups, keys)]
    if u64:
        return [str(lib.ribbon_contains_in_bytes_u64(handle, g, len(g), int(k))) for g, k in zip(groups, keys)]
    return [str(lib.ribbon_contains_in_bytes(handle, g, len(g), k, len(k))) for g, k in zip(groups, keys)]


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"] for e in ENTRIES])
def test_c_abi_answers_as_recorded(lib, entry):  # noqa: F811
    groups, keys = probes_of(entry)
    handle = ctypes.c_void_p()
    path = os.path.join(CORPUS, entry["file"]).encode()
    assert lib.ribbon_open_file(path, 1, ctypes.byref(handle)) == 0, lib.ribbon_last_error()
    try:
        assert c_answers(lib, handle, entry, groups, keys) == recorded(entry)
    finally:
        lib.ribbon_close(handle)


# --- Writers: ribbon.build and build_set re-create corpus files from the recorded inputs ---


def corpus_bytes(file):
    with open(os.path.join(CORPUS, file), "rb") as f:
        return f.read()


def input_lines(file):
    return lines(BY_FILE[file]["inputs"])


def input_u64(file, width=1):
    keys = np.fromfile(os.path.join(CORPUS, BY_FILE[file]["inputs"]), dtype="<u8")
    return keys.reshape(-1, width) if width > 1 else keys


def expect_written(built, file, tmp_path, layout="auto"):
    """The built filter's bytes, in memory and saved, are the corpus file's."""
    golden = corpus_bytes(file)
    assert built.to_bytes(layout=layout) == golden, file
    built.save(tmp_path / file, layout=layout)
    assert (tmp_path / file).read_bytes() == golden, file


def test_build_recreates_filters(tmp_path):
    # ribbon build -i inputs/words_3000.txt (every default; the compact layout)
    expect_written(ribbon.build(input_lines("v5_words_bumped_w64.rbn")), "v5_words_bumped_w64.rbn", tmp_path)
    # --format u64 --threshold-codes 2-bit --fpr 0.01 --layout standard
    file = "v2_ints_bumped_w64_2bit_fpr.rbn"
    expect_written(ribbon.build(input_u64(file), fpr=0.01, threshold_codes="2-bit"), file, tmp_path, "standard")
    # --format hex64 --variant standard -w 128 -r 10 --threshold-codes 2-bit --seed 99 --layout standard
    file = "v2_hex_standard_w128_r10.rbn"
    built = ribbon.build(hex_keys(input_lines(file)), variant="standard", width=128, bits=10,
                         threshold_codes="2-bit", seed=99)
    expect_written(built, file, tmp_path, "standard")


def key_values(file):
    pairs = [line.rsplit(b"\t", 1) for line in input_lines(file)]
    return [k for k, _ in pairs], np.array([int(v) for _, v in pairs], dtype=np.uint32)


def test_build_recreates_retrieval(tmp_path):
    # --values --check-bits 6 --shard-size 4096 --layout standard
    file = "v4_values_check_w64_c6.rbn"
    keys, values = key_values(file)
    expect_written(ribbon.build(keys, values=values, check_bits=6, shard_size=4096), file, tmp_path, "standard")
    # --values --variant standard-retrieval -w 128 --seed 5 --layout standard
    file = "v3_values_stdretrieval_w128.rbn"
    keys, values = key_values(file)
    expect_written(ribbon.build(keys, values=values, variant="standard", width=128, seed=5), file, tmp_path,
                   "standard")


def test_build_set_recreates_sets(tmp_path):
    # --groups --no-group-names -i inputs/pairs_4000.tsv
    file = "v6_set_bytes_w64.rbn"
    pairs = [line.split(b"\t", 1) for line in input_lines(file)]
    built = ribbon.build_set([g for g, _ in pairs], [k for _, k in pairs], group_names=False)
    assert built.to_bytes() == corpus_bytes(file)
    built.save(tmp_path / file)
    assert (tmp_path / file).read_bytes() == corpus_bytes(file)
    # --groups --no-group-names --format u64 -w 128 -r 6 --seed 42 (pairs of 8-byte integers)
    file = "v6_set_u64_w128_r6.rbn"
    pairs = input_u64(file, width=2)
    built = ribbon.build_set(pairs[:, 0].copy(), pairs[:, 1].copy(), width=128, bits=6, seed=42,
                             group_names=False)
    assert built.to_bytes() == corpus_bytes(file)


# --- Spark: the SQL functions answer as recorded, the distributed build re-creates a file ---


@pytest.mark.spark
def test_spark_sql_functions_answer_as_recorded(spark, jar):  # noqa: F811
    pd = pytest.importorskip("pandas")
    jar.register(spark)
    # ribbon_lookup: the value, null where the check bits fail ("absent").
    entry = BY_FILE["v4_values_check_w64_c6.rbn"]
    _, keys = probes_of(entry)
    frame = pd.DataFrame({"i": np.arange(len(keys)), "k": [k.decode() for k in keys]})
    spark.createDataFrame(frame).repartition(3).createOrReplaceTempView("ribbon_corpus_values")
    path = os.path.join(CORPUS, entry["file"])
    rows = spark.sql("select i, ribbon_lookup('%s', k) as a from ribbon_corpus_values" % path).collect()
    got = {row.i: "absent" if row.a is None else str(row.a) for row in rows}
    assert [got[i] for i in range(len(keys))] == recorded(entry)
    # ribbon_contains on a long column (the keys' 64 bits).
    entry = BY_FILE["v2_ints_bumped_w64_2bit_fpr.rbn"]
    _, keys = probes_of(entry)
    frame = pd.DataFrame({"i": np.arange(len(keys)), "k": keys.view(np.int64)})
    spark.createDataFrame(frame).repartition(3).createOrReplaceTempView("ribbon_corpus_ints")
    path = os.path.join(CORPUS, entry["file"])
    rows = spark.sql("select i, ribbon_contains('%s', k) as a from ribbon_corpus_ints" % path).collect()
    got = {row.i: "1" if row.a else "0" for row in rows}
    assert [got[i] for i in range(len(keys))] == recorded(entry)


@pytest.mark.spark
def test_spark_build_recreates_a_file(spark, tmp_path):  # noqa: F811
    import ribbon.spark

    pd = pytest.importorskip("pandas")
    # --format u64 -w 32 -r 1 --shard-size 1024: layer 0 of 4 shards.
    file = "v5_ints_bumped_w32_r1.rbn"
    keys = input_u64(file)
    df = spark.createDataFrame(pd.DataFrame({"k": keys.view(np.int64)})).repartition(3)
    ribbon.spark.build(df, "k", str(tmp_path / file), bits=1, width=32, shard_size=1024)
    assert (tmp_path / file).read_bytes() == corpus_bytes(file)
