"""ribbon.spark on a local[2,4] session: builds byte-identical to `ribbon build` for integer
and string columns over 1, 7 and 64 partitions of shuffled rows, with several ranges per
layer and several distributed layers; a task attempt that fails; repeated keys; query
columns equal to `ribbon query`; bad input refused before any work.

Run alone: pytest python/tests -m spark (or ctest -R spark)."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

import ribbon
import ribbon.spark
from spark_fixtures import cli_build, cli_query, jar, random_strings, random_u64, spark  # noqa: F401

pytestmark = pytest.mark.spark

# w = 32 with the smallest shards (1024 slots) and ranges of 2500 keys: about 14 ranges in
# layer 0 and 2 in layer 1, which is distributed too (4000 keys), from 40000 keys.
SMALL = dict(width=32, shard_size=1024, range_keys=2500, one_place_keys=300)
CLI_SMALL = ("-w", "32", "--shard-size", "1024")


def parts_left(directory) -> list:
    return [n for n in os.listdir(directory) if "ribbon-parts" in n or ".tmp-" in n]


def integer_frame(spark, keys: np.ndarray, partitions: int, seed: int):
    shuffled = np.random.default_rng(seed).permutation(keys).astype(np.int64)  # two's complement
    return spark.createDataFrame(pd.DataFrame({"k": shuffled})).repartition(partitions)


@pytest.fixture(scope="module")
def integer_keys():
    return random_u64(40000, seed=11)


@pytest.fixture(scope="module")
def integer_expected(integer_keys, tmp_path_factory):
    return cli_build(integer_keys, str(tmp_path_factory.mktemp("cli")), *CLI_SMALL)


def engine_of(request, engine: str) -> str:
    if engine == "jvm":
        request.getfixturevalue("jar")
    return engine


@pytest.mark.parametrize(
    "engine,partitions", [("python", 1), ("python", 7), ("python", 64), ("jvm", 1), ("jvm", 7)]
)
def test_integer_column_equals_the_cli(
    spark, integer_keys, integer_expected, engine, partitions, tmp_path, request
):
    df = integer_frame(spark, integer_keys, partitions, seed=partitions)
    out = str(tmp_path / "k.ribbon")
    # batch_keys: several route batches per map task.
    stats = ribbon.spark.build(
        df, "k", out, engine=engine_of(request, engine), batch_keys=3000, **SMALL
    )
    assert stats.layer0_route == engine
    distributed = [layer for layer in stats.layers if not layer["replanned"]]
    assert len(distributed) >= 2 and distributed[0]["ranges"] >= 5
    assert distributed[1]["ranges"] >= 2 and stats.one_place_layers >= 1
    assert open(out, "rb").read() == integer_expected
    assert parts_left(tmp_path) == []


@pytest.mark.parametrize("engine", ["python", "jvm"])
def test_string_column_equals_the_cli(spark, engine, tmp_path, request):
    engine = engine_of(request, engine)
    keys = random_strings(20000, seed=12) + ["ünïcødé %d" % i for i in range(50)]
    keys = [k if isinstance(k, bytes) else k.encode() for k in keys]
    expected = cli_build(keys, str(tmp_path), *CLI_SMALL, "--fpr", "0.001", "--seed", "3")
    order = np.random.default_rng(5).permutation(len(keys))
    strings = pd.DataFrame({"s": [keys[i].decode() for i in order]})
    df = spark.createDataFrame(strings, "s string").repartition(7)
    out = str(tmp_path / "s.ribbon")
    ribbon.spark.build(df, "s", out, fpr=0.001, seed=3, engine=engine, **SMALL)
    assert open(out, "rb").read() == expected
    binary = spark.createDataFrame(pd.DataFrame({"b": [keys[i] for i in order]}), "b binary")
    binary = binary.repartition(3)
    ribbon.spark.build(binary, "b", out, fpr=0.001, seed=3, engine=engine, **SMALL)
    assert open(out, "rb").read() == expected


def test_auto_routes_in_the_jvm_where_the_session_has_the_jar(spark, jar, tmp_path):
    assert ribbon.spark._route_in_jvm(spark, "auto")
    assert not ribbon.spark._route_in_jvm(spark, "python")
    df = integer_frame(spark, random_u64(100, seed=1), 1, seed=1)
    for bad in (dict(engine="gpu"), dict(batch_keys=0), dict(batch_keys=1 << 28)):
        with pytest.raises(ValueError):
            ribbon.spark.build(df, "k", str(tmp_path / "x.ribbon"), **bad)


@pytest.mark.parametrize("engine", ["python", "jvm"])
def test_narrow_integer_columns_are_their_64_bit_values(spark, engine, tmp_path, request):
    # int and short columns with negative values: sign-extended, as --format u64 reads the
    # two's complement; a seed above 2^63 (the JVM gets it as a negative long).
    engine = engine_of(request, engine)
    values = np.arange(-15000, 15000, 2, dtype=np.int64)
    seed = "18446744073709551611"
    expected = cli_build(values.view(np.uint64), str(tmp_path), *CLI_SMALL, "--seed", seed)
    frame = spark.createDataFrame(pd.DataFrame({"k": values})).repartition(5)
    out = str(tmp_path / "n.ribbon")
    for column_type in ("int", "short"):
        df = frame.selectExpr(f"cast(k as {column_type}) as k")
        ribbon.spark.build(df, "k", out, seed=int(seed), engine=engine, **SMALL)
        assert open(out, "rb").read() == expected, column_type


def test_failed_task_attempts_are_retried_and_the_file_unchanged(
    spark, integer_keys, integer_expected, tmp_path
):
    # The first attempts of range 3 of layer 0 and range 1 of layer 1 fail after writing
    # their parts; local[2,4] retries them.
    markers = [str(tmp_path / "fault-0"), str(tmp_path / "fault-1")]
    df = integer_frame(spark, integer_keys, 7, seed=21)
    out = str(tmp_path / "k.ribbon")
    faults = [(0, 3, markers[0]), (1, 1, markers[1])]
    ribbon.spark.build(df, "k", out, _fail_first_attempt=faults, **SMALL)
    assert all(os.path.exists(m) for m in markers)  # both faults fired
    assert open(out, "rb").read() == integer_expected
    assert parts_left(tmp_path) == []


def test_repeated_keys_count_once(spark, tmp_path):
    keys = random_u64(15000, seed=13)
    doubled = np.concatenate([keys, keys[:6000]])
    expected = cli_build(keys, str(tmp_path), *CLI_SMALL)  # the file of the distinct keys
    out = str(tmp_path / "r.ribbon")
    stats = ribbon.spark.build(integer_frame(spark, doubled, 5, seed=1), "k", out, **SMALL)
    assert (stats.rows, stats.keys) == (len(doubled), len(keys))
    assert open(out, "rb").read() == expected


def test_contains_and_lookup_columns_answer_as_the_cli(spark, tmp_path):
    keys = random_u64(5000, seed=14)
    filter_path = str(tmp_path / "q.ribbon")
    ribbon.spark.build(integer_frame(spark, keys, 3, seed=2), "k", filter_path, bits=4)
    probes = np.concatenate([keys[:2000], random_u64(6000, seed=15)])
    expected = cli_query(filter_path, probes, str(tmp_path))
    assert 0 < expected[2000:].sum() < 6000  # r = 4: some false positives, not all
    df = spark.createDataFrame(
        pd.DataFrame({"i": np.arange(len(probes)), "k": probes.astype(np.int64)})
    ).repartition(4)
    for source in (filter_path, ribbon.load(filter_path)):  # a path, or a broadcast filter
        # The Arrow UDF (test_spark_jvm.py tests the JVM function that "auto" may pick).
        hit = ribbon.spark.contains("k", source, engine="python")
        rows = df.select("i", hit.alias("hit")).collect()
        answers = np.zeros(len(probes), dtype=bool)
        for row in rows:
            answers[row["i"]] = row["hit"]
        assert np.array_equal(answers, expected)
    # A null key is no member: null.
    nulls = spark.createDataFrame([(None,), (int(keys.astype(np.int64)[0]),)], "k long")
    hit = ribbon.spark.contains("k", filter_path, engine="python")
    assert [r[0] for r in nulls.select(hit).collect()] == [
        None, True]
    # Retrieval files (built on one machine): the stored values.
    values = np.arange(5000, dtype=np.uint32) % 1000
    retrieval = ribbon.build(keys, values=values)
    got = integer_frame(spark, keys[:300], 2, seed=0).select(
        "k", ribbon.spark.lookup("k", retrieval).alias("v")).collect()
    stored = {int(k): int(v) for k, v in zip(keys.astype(np.int64), values)}
    assert all(stored[r["k"]] == r["v"] for r in got) and len(got) == 300


def test_bad_input_is_refused_before_any_work(spark, tmp_path):
    out = tmp_path / "x.ribbon"
    with_null = spark.createDataFrame([(1,), (None,), (3,)], "k long")
    with pytest.raises(ribbon.KeysError, match="column 'k' has 1 null values in 3 rows"):
        ribbon.spark.build(with_null, "k", str(out))
    doubles = spark.createDataFrame([(1.5,)], "k double")
    with pytest.raises(ribbon.KeyTypeError, match="column 'k' has type double"):
        ribbon.spark.build(doubles, "k", str(out))
    with pytest.raises(ribbon.KeyTypeError, match="no column 'key'"):
        ribbon.spark.build(doubles, "key", str(out))
    fine = spark.createDataFrame([(1,)], "k long")
    with pytest.raises(OSError, match="does not exist"):
        ribbon.spark.build(fine, "k", str(tmp_path / "missing" / "x.ribbon"))
    assert not out.exists() and parts_left(tmp_path) == []


def test_builds_leave_the_sessions_settings_as_they_were(spark, tmp_path):
    # The build turns adaptive query execution off and sets the shuffle partitions while it
    # runs (ribbon.spark's _build_settings), and restores both, after a failure too.
    keys = ("spark.sql.adaptive.enabled", "spark.sql.shuffle.partitions")
    before = {key: spark.conf.get(key) for key in keys}
    try:
        for settings in (("true", "13"), ("false", "200")):
            for key, setting in zip(keys, settings):
                spark.conf.set(key, setting)
            ribbon.spark.build(spark.range(1000).withColumnRenamed("id", "k"), "k",
                               str(tmp_path / "k.ribbon"))
            assert tuple(spark.conf.get(key) for key in keys) == settings
            with pytest.raises(ribbon.KeysError):
                ribbon.spark.build_set(spark.createDataFrame([(None, 1)], "g long, k long"),
                                       "g", "k", str(tmp_path / "k.ribbon"))
            assert tuple(spark.conf.get(key) for key in keys) == settings
    finally:
        for key, value in before.items():
            spark.conf.set(key, value)
