"""ribbon.spark_jvm: the JVM's ribbon_contains / ribbon_lookup answer as `ribbon query` does,
for integer, string and binary key columns and retrieval files (a local Spark session).
Run alone: pytest python/tests -m spark -k spark_jvm (needs ribbon.jar: $RIBBON_JAVA_JAR)."""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

from spark_fixtures import (  # noqa: F401
    cli_build,
    cli_query,
    jar,
    random_strings,
    random_u64,
    ribbon_cli,
    spark,
)

pytestmark = pytest.mark.spark
pd = pytest.importorskip("pandas")  # with PySpark; absent in CI's fresh wheel venv


@pytest.fixture(scope="module")
def spark_jvm(spark, jar):  # noqa: F811
    jar.register(spark)
    return jar


def answers(spark, spark_jvm, path, frame, column="k", function="contains"):  # noqa: F811
    df = spark.createDataFrame(frame).repartition(3)
    make = spark_jvm.contains_column if function == "contains" else spark_jvm.lookup_column
    rows = df.select("i", make(path, column).alias("a")).collect()
    by_index = {row.i: row.a for row in rows}
    return [by_index[i] for i in range(len(frame))]


def test_integer_keys_equal_the_cli(spark, spark_jvm, tmp_path):  # noqa: F811
    members = random_u64(20000, seed=5)
    path = str(tmp_path / "ints.ribbon")
    with open(path, "wb") as f:
        f.write(cli_build(members, str(tmp_path), "--fpr", "0.01"))
    probes = np.concatenate([members[::2], random_u64(20000, seed=6)])
    expected = cli_query(path, probes, str(tmp_path))
    frame = pd.DataFrame({"i": np.arange(len(probes)), "k": probes.view(np.int64)})
    got = answers(spark, spark_jvm, path, frame)
    assert got == expected.tolist()
    assert sum(got) >= len(members) // 2


def test_string_and_binary_keys_equal_the_cli(spark, spark_jvm, tmp_path):  # noqa: F811
    members = random_strings(20000, seed=7)
    path = str(tmp_path / "strings.ribbon")
    with open(path, "wb") as f:
        f.write(cli_build(members, str(tmp_path), "-w", "128", "--variant", "standard"))
    probes = members[::2] + [b"x%d" % i for i in range(20000)]
    expected = cli_query(path, probes, str(tmp_path)).tolist()
    texts = pd.DataFrame({"i": np.arange(len(probes)), "k": [p.decode() for p in probes]})
    assert answers(spark, spark_jvm, path, texts) == expected
    binary = spark.createDataFrame(texts).selectExpr("i", "cast(k as binary) as b").toPandas()
    binary["b"] = binary["b"].map(bytes)
    assert answers(spark, spark_jvm, path, binary, column="b") == expected


def test_lookup_equals_the_cli(spark, spark_jvm, tmp_path):  # noqa: F811
    keys = random_strings(5000, seed=9)
    rng = np.random.default_rng(9)
    values = rng.integers(0, 2**20, len(keys))
    tsv = tmp_path / "kv.tsv"
    tsv.write_bytes(b"".join(b"%s\t%d\n" % (k, v) for k, v in zip(keys, values)))
    path = str(tmp_path / "kv.ribbon")
    subprocess.run([ribbon_cli(), "build", "--values", "-i", str(tsv), "-o", path, "-q"], check=True)
    probes = keys + [b"other%d" % i for i in range(2000)]
    (tmp_path / "probes.txt").write_bytes(b"".join(p + b"\n" for p in probes))
    run = subprocess.run([ribbon_cli(), "query", "--values", path, "-i", str(tmp_path / "probes.txt")],
                         stdout=subprocess.PIPE, check=True)
    expected = [int(line.rsplit(b"\t", 1)[1]) for line in run.stdout.split(b"\n")[:-1]]
    assert expected[: len(keys)] == values.tolist()
    frame = pd.DataFrame({"i": np.arange(len(probes)), "k": [p.decode() for p in probes]})
    assert answers(spark, spark_jvm, path, frame, function="lookup") == expected


def test_lookup_with_check_bits_is_null_for_keys_found_absent(spark, spark_jvm, tmp_path):  # noqa: F811
    # The JVM's ribbon_lookup and the Python route answer as `ribbon query --values --absent`.
    import ribbon
    import ribbon.spark

    keys = random_strings(4000, seed=12)
    values = np.random.default_rng(12).integers(0, 2**12, len(keys))
    tsv = tmp_path / "kv.tsv"
    tsv.write_bytes(b"".join(b"%s\t%d\n" % (k, v) for k, v in zip(keys, values)))
    path = str(tmp_path / "checked.ribbon")
    subprocess.run([ribbon_cli(), "build", "--values", "--check-bits", "3", "-i", str(tsv), "-o", path, "-q"],
                   check=True)
    probes = keys + [b"other%d" % i for i in range(4000)]
    (tmp_path / "probes.txt").write_bytes(b"".join(p + b"\n" for p in probes))
    run = subprocess.run([ribbon_cli(), "query", "--values", "--absent", "null", path, "-i",
                          str(tmp_path / "probes.txt")], stdout=subprocess.PIPE, check=True)
    expected = [None if v == b"null" else int(v) for v in (line.rsplit(b"\t", 1)[1] for line in run.stdout.split(b"\n")[:-1])]
    assert expected[: len(keys)] == values.tolist()
    assert 200 < expected[len(keys):].count(None) < 4000  # at 2^-3, about 1/8 found
    frame = pd.DataFrame({"i": np.arange(len(probes)), "k": [p.decode() for p in probes]})
    assert answers(spark, spark_jvm, path, frame, function="lookup") == expected
    df = spark.createDataFrame(frame).repartition(2)
    rows = df.select("i", ribbon.spark.lookup("k", ribbon.load(path), engine="python").alias("a")).collect()
    assert [r.a for r in sorted(rows, key=lambda r: r.i)] == expected


def test_null_keys_and_sql(spark, spark_jvm, tmp_path):  # noqa: F811
    path = str(tmp_path / "small.ribbon")
    with open(path, "wb") as f:
        f.write(cli_build([b"a", b"b"], str(tmp_path)))
    spark.createDataFrame(pd.DataFrame({"k": ["a", None]})).createOrReplaceTempView("ribbon_jvm_keys")
    rows = spark.sql("select k, ribbon_contains('%s', k) as c from ribbon_jvm_keys" % path).collect()
    assert {row.k: row.c for row in rows} == {"a": True, None: None}
    assert os.path.isfile(spark_jvm.jar_path())


def test_ribbon_spark_contains_picks_the_jvm_function_when_the_jar_is_loaded(spark, spark_jvm, tmp_path):  # noqa: F811
    import ribbon.spark

    members = random_u64(5000, seed=11)
    path = str(tmp_path / "auto.ribbon")
    with open(path, "wb") as f:
        f.write(cli_build(members, str(tmp_path), "-r", "4"))
    probes = np.concatenate([members[:1000], random_u64(4000, seed=12)])
    expected = cli_query(path, probes, str(tmp_path)).tolist()
    df = spark.createDataFrame(pd.DataFrame({"i": np.arange(len(probes)), "k": probes.view(np.int64)}))
    for engine, jvm in (("auto", True), ("jvm", True), ("python", False)):
        column = ribbon.spark.contains("k", path, engine=engine)
        # The catalog's function with the path in its name: ribbon.`/path`.contains(k)
        assert ("`.contains(" in str(column)) == jvm, (engine, str(column))
        rows = df.select("i", column.alias("a")).collect()
        by_index = {row.i: row.a for row in rows}
        assert [by_index[i] for i in range(len(probes))] == expected, engine
    with pytest.raises(ValueError, match="engine"):
        ribbon.spark.contains("k", path, engine="gpu")
    with pytest.raises(FileNotFoundError):
        ribbon.spark.contains("k", str(tmp_path / "missing.ribbon"))


def test_a_file_replaced_under_the_same_path_answers_anew(spark, spark_jvm, tmp_path):  # noqa: F811
    # Each task checks the file's size, time and inode on its first row (FilterCache maps it
    # again where they differ), so the second file's answers come back in the same JVM.
    first, second = random_u64(3000, seed=21), random_u64(3000, seed=22)
    path = str(tmp_path / "replaced.ribbon")
    probes = np.concatenate([first[:500], second[:500]])
    frame = pd.DataFrame({"i": np.arange(len(probes)), "k": probes.view(np.int64)})
    local = spark.createDataFrame([(int(second[:1].view(np.int64)[0]),)], "k bigint")
    for members in (first, second):
        staged = str(tmp_path / "staged.ribbon")
        with open(staged, "wb") as f:
            f.write(cli_build(members, str(tmp_path), "-r", "16"))
        os.replace(staged, path)
        expected = cli_query(path, probes, str(tmp_path)).tolist()
        assert answers(spark, spark_jvm, path, frame) == expected
        assert local.select(spark_jvm.contains_column(path, "k")).collect()[0][0] == (members is second)
