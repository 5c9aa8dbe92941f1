"""ribbon.spark.build with values= on a local Spark session: retrieval structures
byte-identical to ribbon.build(keys, values=...) and `ribbon build --values`, on either route,
over several ranges and distributed layers, whatever the partitioning and repeats; every
member's value exact; nulls, negative, too wide and conflicting values refused before
anything is written.

Run alone: pytest python/tests -m spark -k spark_values."""

from __future__ import annotations

import os
import re
import subprocess

import numpy as np
import pytest

import ribbon
import ribbon.spark
from spark_fixtures import jar, random_strings, random_u64, ribbon_cli, spark  # noqa: F401

pytestmark = pytest.mark.spark
pd = pytest.importorskip("pandas")  # with PySpark; absent in CI's fresh wheel venv

# As test_spark.py's: several ranges in layer 0 and a distributed layer 1 from 40000 keys.
SMALL = dict(width=32, shard_size=1024, range_keys=2500, one_place_keys=300)


def engine_of(request, engine: str) -> str:
    if engine == "jvm":
        request.getfixturevalue("jar")
    return engine


def parts_left(directory) -> list:
    return [n for n in os.listdir(directory) if "ribbon-parts" in n or ".tmp-" in n]


def value_frame(spark, keys, values, partitions: int, seed: int, types="k long, v long"):
    order = np.random.default_rng(seed).permutation(len(keys))
    key_column = (np.asarray(keys)[order].astype(np.int64) if isinstance(keys, np.ndarray)
                  else [keys[i] for i in order])
    frame = pd.DataFrame({"k": key_column, "v": np.asarray(values, dtype=np.int64)[order]})
    return spark.createDataFrame(frame, types).repartition(partitions)


@pytest.fixture(scope="module")
def pairs():
    keys = random_u64(40000, seed=41)
    values = (np.arange(len(keys), dtype=np.uint64) * 40503 % 3001).astype(np.uint32)
    return keys, values


@pytest.mark.parametrize("engine,partitions,check_bits",
                         [("python", 7, 8), ("jvm", 5, 0)])
def test_integer_keys_equal_ribbon_build(spark, pairs, engine, partitions, check_bits, tmp_path,
                                         request):
    keys, values = pairs
    again = np.arange(0, len(keys), 4)  # a quarter of the pairs given twice, with their values
    df = value_frame(spark, np.concatenate([keys, keys[again]]),
                     np.concatenate([values, values[again]]), partitions, seed=partitions)
    out = str(tmp_path / "kv.ribbon")
    stats = ribbon.spark.build(df, "k", out, values="v", bits=12, check_bits=check_bits,
                               engine=engine_of(request, engine), batch_keys=3000, **SMALL)
    assert stats.layer0_route == engine
    assert (stats.rows, stats.keys) == (len(keys) + len(again), len(keys))
    distributed = [layer for layer in stats.layers if not layer["replanned"]]
    assert len(distributed) >= 2 and distributed[0]["ranges"] >= 5
    expected = ribbon.build(keys, values=values, bits=12, check_bits=check_bits, width=32,
                            shard_size=1024)
    assert open(out, "rb").read() == expected.to_bytes()
    assert np.array_equal(ribbon.load(out).lookup(keys), values)  # every member's value


def test_failed_task_attempts_are_retried_and_the_file_unchanged(spark, pairs, tmp_path):
    # The first attempts of range 2 of layer 0 and range 1 of layer 1 fail after writing their
    # parts (and, in layer 0, after storing the values); local[2,4] retries them.
    keys, values = pairs
    markers = [str(tmp_path / "fault-0"), str(tmp_path / "fault-1")]
    out = str(tmp_path / "kv.ribbon")
    ribbon.spark.build(value_frame(spark, keys, values, 5, seed=9), "k", out, values="v",
                       bits=12, check_bits=4, _fail_first_attempt=[(0, 2, markers[0]),
                                                                   (1, 1, markers[1])], **SMALL)
    assert all(os.path.exists(m) for m in markers)  # both faults fired
    expected = ribbon.build(keys, values=values, bits=12, check_bits=4, width=32, shard_size=1024)
    assert open(out, "rb").read() == expected.to_bytes()
    assert parts_left(tmp_path) == []


@pytest.mark.parametrize("engine", ["python", "jvm"])
def test_string_keys_equal_the_cli_with_its_default_bits(spark, engine, tmp_path, request):
    # No bits given: as many as the largest value needs, as `ribbon build --values` picks.
    engine = engine_of(request, engine)
    keys = random_strings(20000, seed=42)
    values = np.arange(len(keys), dtype=np.uint32) % 700 + 3
    source = tmp_path / "kv.tsv"
    source.write_bytes(b"".join(k + b"\t%d\n" % v for k, v in zip(keys, values)))
    expected = tmp_path / "cli.ribbon"
    subprocess.run([ribbon_cli(), "build", "--values", "-i", str(source), "-o", str(expected),
                    "-w", "32", "--shard-size", "1024", "--quiet"], check=True)
    df = value_frame(spark, [k.decode() for k in keys], values, 4, seed=1, types="k string, v int")
    out = str(tmp_path / "kv.ribbon")
    ribbon.spark.build(df, "k", out, values="v", engine=engine, **SMALL)
    assert open(out, "rb").read() == expected.read_bytes()


def test_lookup_columns_answer_from_a_file_built_on_spark(spark, pairs, tmp_path):
    keys, values = pairs
    path = str(tmp_path / "kv.ribbon")
    ribbon.spark.build(value_frame(spark, keys, values, 3, seed=2), "k", path, values="v",
                       check_bits=16)
    probes = np.concatenate([keys[:3000], random_u64(3000, seed=43)])
    df = spark.createDataFrame(pd.DataFrame({"k": probes.astype(np.int64)})).repartition(2)
    got = {r.k: r.v for r in df.select("k", ribbon.spark.lookup("k", path).alias("v")).collect()}
    stored = dict(zip(keys[:3000].astype(np.int64).tolist(), values[:3000].tolist()))
    assert all(got[k] == v for k, v in stored.items())
    assert sum(got[k] is not None for k in probes[3000:].astype(np.int64).tolist()) <= 2


@pytest.mark.parametrize("engine", ["python", "jvm"])
def test_bad_values_are_refused_and_nothing_is_written(spark, engine, tmp_path, request):
    engine = engine_of(request, engine)
    out = tmp_path / "kv.ribbon"

    def refused(error, message, rows, types="k long, v long", **options):
        df = spark.createDataFrame(rows, types).repartition(2)
        with pytest.raises(error, match=message):
            ribbon.spark.build(df, "k", str(out), values="v", engine=engine, **options)
        assert not out.exists() and parts_left(tmp_path) == []

    refused(ribbon.KeysError, "column 'v' has 1 null values in 3 rows: values cannot be null",
            [(1, 1), (2, None), (3, 3)])
    refused(ribbon.KeysError, "negative value -5", [(1, 1), (2, -5)])
    refused(ribbon.KeysError, re.escape("value 300, which does not fit in bits=8"),
            [(1, 1), (2, 300)], bits=8)
    refused(ribbon.KeysError, "does not fit in 32 bits", [(1, 1), (2, 2**32)])
    refused(ribbon.KeyTypeError, "column 'v' holds the values: it must be of an integer type",
            [(1, "x")], types="k long, v string")
    # A key given twice with two values: named, wherever the two pairs sit.
    keys = random_u64(20000, seed=44).astype(np.int64)
    rows = [(int(k), i % 100) for i, k in enumerate(keys)] + [(int(keys[1234]), 99)]
    refused(ribbon.ConflictingValuesError, f"key {int(keys[1234]) % 2**64} is given twice", rows,
            **SMALL)
    words = [w.decode() for w in random_strings(5000, seed=45)]
    rows = [(w, i % 100) for i, w in enumerate(words)] + [(words[77], 100)]
    refused(ribbon.ConflictingValuesError, re.escape(f"key {words[77]!r} is given twice"), rows,
            types="k string, v long", **SMALL)
