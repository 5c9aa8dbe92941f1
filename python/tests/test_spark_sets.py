"""ribbon.spark.build_set and contains_in on a local Spark session: filter sets byte-identical
to `ribbon build --groups -o` (integer pairs, string pairs) and to ribbon.build_set (mixed
kinds), on either route, whatever the partitioning and repeats; nulls refused before any work;
the Arrow UDF, the JVM function and SQL's ribbon_contains_in answer as ribbon.FilterSet does.

Run alone: pytest python/tests -m spark -k spark_sets."""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

import ribbon
import ribbon.spark
from spark_fixtures import jar, random_strings, random_u64, ribbon_cli, spark  # noqa: F401

pytestmark = pytest.mark.spark
pd = pytest.importorskip("pandas")  # with PySpark; absent in CI's fresh wheel venv

# As test_spark.py's: several ranges in layer 0 and a distributed layer 1 from 40000 pairs.
SMALL = dict(width=32, shard_size=1024, range_keys=2500, one_place_keys=300)
CLI_SMALL = ("-w", "32", "--shard-size", "1024")


def engine_of(request, engine: str) -> str:
    if engine == "jvm":
        request.getfixturevalue("jar")
    return engine


def zipf_groups(count: int, seed: int) -> np.ndarray:
    """Group numbers of `count` pairs, sizes drawn from a Zipf law (a few large groups, many
    of a few pairs), as files of a data lake are."""
    return np.random.default_rng(seed).zipf(1.5, count).astype(np.uint64) % 2000 + 7


def cli_set(directory, groups, keys, *options: str) -> bytes:
    """The bytes of `ribbon build --groups -o` over these pairs: integers as --format u64
    pairs, byte strings as group<TAB>key lines."""
    if isinstance(keys, np.ndarray):
        pairs = np.empty(2 * len(keys), dtype="<u8")
        pairs[0::2], pairs[1::2] = groups, keys
        source, fmt = os.path.join(directory, "pairs.u64"), "u64"
        pairs.tofile(source)
    else:
        source, fmt = os.path.join(directory, "pairs.tsv"), "lines"
        with open(source, "wb") as f:
            f.write(b"".join(g + b"\t" + k + b"\n" for g, k in zip(groups, keys)))
    out = os.path.join(directory, "cli-set.ribbon")
    subprocess.run([ribbon_cli(), "build", "--groups", "-i", source, "--format", fmt, "-o", out,
                    "--quiet", *options], check=True)
    with open(out, "rb") as f:
        return f.read()


@pytest.fixture(scope="module")
def integer_pairs():
    keys = random_u64(40000, seed=31)
    return zipf_groups(len(keys), seed=32), keys


@pytest.fixture(scope="module")
def integer_set(integer_pairs, tmp_path_factory):
    return cli_set(str(tmp_path_factory.mktemp("cli")), *integer_pairs, *CLI_SMALL)


def pair_frame(spark, groups, keys, partitions: int, seed: int, types="g long, k long"):
    order = np.random.default_rng(seed).permutation(len(keys))
    columns = [np.asarray(c)[order] for c in (groups, keys)]
    columns = [c.astype(np.int64) if c.dtype == np.uint64 else c.tolist() for c in columns]
    frame = pd.DataFrame({"g": columns[0], "k": columns[1]})
    return spark.createDataFrame(frame, types).repartition(partitions)


@pytest.mark.parametrize("engine,partitions", [("python", 7), ("jvm", 5)])
def test_integer_pairs_equal_the_cli(spark, integer_pairs, integer_set, engine, partitions,
                                     tmp_path, request):
    groups, keys = integer_pairs
    # A third of the pairs given twice: they count once.
    again = np.arange(0, len(keys), 3)
    df = pair_frame(spark, np.concatenate([groups, groups[again]]),
                    np.concatenate([keys, keys[again]]), partitions, seed=partitions)
    out = str(tmp_path / "set.ribbon")
    stats = ribbon.spark.build_set(df, "g", "k", out, engine=engine_of(request, engine),
                                   batch_keys=3000, **SMALL)
    assert stats.layer0_route == engine
    assert (stats.rows, stats.keys) == (len(keys) + len(again), len(keys))
    assert stats.groups == len(np.unique(groups))
    distributed = [layer for layer in stats.layers if not layer["replanned"]]
    assert len(distributed) >= 2 and distributed[0]["ranges"] >= 5
    assert open(out, "rb").read() == integer_set
    loaded = ribbon.load_set(out)
    assert len(loaded) == stats.groups and loaded.contains(groups, keys).all()


@pytest.mark.parametrize("engine", ["python", "jvm"])
def test_string_pairs_equal_the_cli(spark, engine, tmp_path, request):
    engine = engine_of(request, engine)
    keys = random_strings(20000, seed=33) + ["ünïcødé %d" % i for i in range(50)]
    keys = [k if isinstance(k, bytes) else k.encode() for k in keys]
    groups = [b"s3://lake/part-%05d.parquet" % g for g in zipf_groups(len(keys), seed=34)]
    expected = cli_set(str(tmp_path), groups, keys, *CLI_SMALL, "--fpr", "0.001", "--seed", "3")
    out = str(tmp_path / "set.ribbon")
    text = pair_frame(spark, [g.decode() for g in groups], [k.decode() for k in keys], 7, seed=1,
                      types="g string, k string")
    ribbon.spark.build_set(text, "g", "k", out, fpr=0.001, seed=3, engine=engine, **SMALL)
    assert open(out, "rb").read() == expected
    binary = pair_frame(spark, groups, keys, 3, seed=2, types="g binary, k binary")
    ribbon.spark.build_set(binary, "g", "k", out, fpr=0.001, seed=3, engine=engine, **SMALL)
    assert open(out, "rb").read() == expected


@pytest.mark.parametrize("engine", ["python", "jvm"])
def test_mixed_kinds_equal_build_set(spark, engine, tmp_path, request):
    # Integer groups with string keys and string groups with integer keys, which the CLI's
    # inputs cannot name: the bytes of ribbon.build_set over the same pairs.
    engine = engine_of(request, engine)
    numbers = zipf_groups(12000, seed=35)
    words = random_strings(12000, seed=36)
    integers = random_u64(12000, seed=37)
    out = str(tmp_path / "set.ribbon")
    cases = [(numbers, words, "g long, k binary"),
             ([b"file-%d" % g for g in numbers], integers, "g binary, k long")]
    for (groups, keys, types), (names, metadata) in zip(cases, ((True, b"{}"), (False, None))):
        df = pair_frame(spark, groups, keys, 4, seed=3, types=types)
        ribbon.spark.build_set(df, "g", "k", out, seed=9, engine=engine, group_names=names,
                               metadata=metadata, **SMALL)
        expected = ribbon.build_set(groups, keys, seed=9, width=32, shard_size=1024,
                                    group_names=names, metadata=metadata)
        assert open(out, "rb").read() == expected.to_bytes(), types


def test_an_empty_frame_is_the_empty_set(spark, tmp_path):
    out = str(tmp_path / "empty.ribbon")
    stats = ribbon.spark.build_set(spark.createDataFrame([], "g long, k long"), "g", "k", out)
    assert (stats.rows, stats.groups) == (0, 0)
    empty = np.empty(0, dtype=np.uint64)
    assert open(out, "rb").read() == cli_set(str(tmp_path), empty, empty)


def test_bad_pairs_are_refused_before_any_work(spark, tmp_path):
    out = tmp_path / "x.ribbon"
    null_group = spark.createDataFrame([(1, 1), (None, 2), (3, 3)], "g long, k long")
    with pytest.raises(ribbon.KeysError, match="column 'g' has 1 null values in 3 rows: groups"):
        ribbon.spark.build_set(null_group, "g", "k", str(out))
    null_key = spark.createDataFrame([(1, None)], "g long, k long")
    with pytest.raises(ribbon.KeysError, match="column 'k' has 1 null values in 1 rows: keys"):
        ribbon.spark.build_set(null_key, "g", "k", str(out))
    doubles = spark.createDataFrame([(1.5, 1)], "g double, k long")
    with pytest.raises(ribbon.KeyTypeError, match="column 'g' has type double"):
        ribbon.spark.build_set(doubles, "g", "k", str(out))
    assert not out.exists()
    assert [n for n in os.listdir(tmp_path) if "ribbon-parts" in n] == []


@pytest.mark.parametrize("route,group_type", [
    ("python", "long"), ("python-broadcast", "string"), ("jvm", "string"), ("sql", "long")])
def test_contains_in_answers_as_the_filter_set(spark, route, group_type, tmp_path, request):
    if route in ("jvm", "sql"):
        request.getfixturevalue("jar")
    numbers = zipf_groups(6000, seed=38)
    groups = numbers.astype(np.int64) if group_type == "long" else ["f%d" % g for g in numbers]
    keys = random_u64(6000, seed=39)
    path = str(tmp_path / "q.ribbon")
    build_frame = pair_frame(spark, groups, keys, 2, seed=5, types=f"g {group_type}, k long")
    ribbon.spark.build_set(build_frame, "g", "k", path, bits=4)
    fs = ribbon.load_set(path)
    # Members, other groups' keys, and a null group or key (null).
    probe_groups = list(groups) + list(np.roll(groups, 7))
    probe_keys = np.concatenate([keys, keys]).astype(np.int64).tolist()
    expected = fs.contains(probe_groups, np.array(probe_keys).view(np.uint64)).tolist()
    assert all(expected[:6000]) and 0 < sum(expected[6000:]) < 6000  # r = 4: some, not all
    probe_groups += [None, groups[0]]
    probe_keys += [probe_keys[0], None]
    expected += [None, None]
    frame = pd.DataFrame({"i": np.arange(len(probe_keys)),  # Int64: nulls without floats
                          "g": pd.array(probe_groups, dtype="Int64" if group_type == "long" else object),
                          "k": pd.array(probe_keys, dtype="Int64")})
    df = spark.createDataFrame(frame, f"i long, g {group_type}, k long").repartition(3)
    if route == "sql":
        df.createOrReplaceTempView("probes")
        request.getfixturevalue("jar").register(spark)
        escaped = path.replace("'", "\\'")
        rows = spark.sql(f"select i, ribbon_contains_in('{escaped}', g, k) as a from probes")
    else:
        source = fs if route == "python-broadcast" else path
        engine = "jvm" if route == "jvm" else "python"
        rows = df.select("i", ribbon.spark.contains_in("g", "k", source, engine=engine).alias("a"))
    by_index = {row.i: row.a for row in rows.collect()}
    assert [by_index[i] for i in range(len(expected))] == expected
