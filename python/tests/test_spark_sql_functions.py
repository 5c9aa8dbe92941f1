"""ribbon's function catalog (dev.ribbon.spark.RibbonCatalog: ribbon.contains, ribbon.lookup,
ribbon.contains_in, with the path as an argument or in the name) answers as the Java UDFs
(ribbon_contains, ...) and as Python's ribbon.Filter, for every variant and key type; its
errors come at analysis time, naming the function, the argument and the reason; a file
replaced by rename while a query runs answers per task, old or new, never a crash.
Run alone: pytest python/tests -m spark -k spark_sql_functions (needs ribbon.jar)."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from spark_fixtures import jar, random_strings, random_u64, spark  # noqa: F401

pytestmark = pytest.mark.spark
pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def sql(spark, jar):  # noqa: F811
    jar.register(spark)
    if not jar.catalog_available(spark):
        pytest.fail("ribbon.jar has no dev.ribbon.spark.RibbonCatalog")
    return spark


def three_ways(spark, frame, function, path, *args):  # noqa: F811
    """The answers of `function` over `frame` in each row's order, per form: the catalog's
    function with the path as an argument, with the path in its name, and the Java UDF."""
    view = "ribbon_sql_rows"
    spark.createDataFrame(frame).repartition(3).createOrReplaceTempView(view)
    named = "ribbon.`%s`.%s" % (path, function)
    arguments = ", ".join(args)
    rows = spark.sql(
        f"select i, ribbon.{function}('{path}', {arguments}) as a, {named}({arguments}) as b, "
        f"ribbon_{function}('{path}', {arguments}) as c from {view}").collect()
    rows.sort(key=lambda r: r.i)
    return [[r.a for r in rows], [r.b for r in rows], [r.c for r in rows]]


def check(spark, frame, function, path, expected, *args):  # noqa: F811
    got = three_ways(spark, frame, function, path, *args)
    for form, answers in zip(("path argument", "path in the name", "UDF"), got):
        assert answers == expected, (function, form, args)


def test_integer_keys_of_every_variant_and_column_type(sql, tmp_path):
    import ribbon

    members = random_u64(3000, seed=41)
    probes = np.concatenate([members[::2], random_u64(3000, seed=42)])
    small = np.arange(-500, 500, dtype=np.int64)  # int and smallint columns, negative keys too
    small_probes = np.arange(-1000, 1000, dtype=np.int64)
    for options in ({}, {"variant": "standard", "width": 128, "bits": 13},
                    {"variant": "homogeneous", "width": 32, "bits": 5}):
        path = str(tmp_path / ("ints_%s.ribbon" % options.get("variant", "bumped")))
        f = ribbon.build(members, **options)
        f.save(path)
        frame = pd.DataFrame({"i": np.arange(len(probes)), "k": probes.view(np.int64)})
        expected = f.contains(probes).tolist()
        assert sum(expected) >= len(members) // 2
        check(sql, frame, "contains", path, expected, "k")
        small_path = str(tmp_path / "small.ribbon")
        g = ribbon.build(small.view(np.uint64), **options)
        g.save(small_path)
        frame = pd.DataFrame({"i": np.arange(len(small_probes)), "k": small_probes})
        expected = g.contains(small_probes.view(np.uint64)).tolist()
        check(sql, frame, "contains", small_path, expected, "cast(k as int)")
        check(sql, frame, "contains", small_path, expected, "cast(k as smallint)")


def test_string_and_binary_keys_and_nulls(sql, tmp_path):
    import ribbon

    members = random_strings(3000, seed=43)
    probes = members[::2] + [b"y%d" % i for i in range(3000)]
    path = str(tmp_path / "strings.ribbon")
    f = ribbon.build(members, width=128, variant="standard")
    f.save(path)
    expected = f.contains(probes).tolist() + [None]
    frame = pd.DataFrame({"i": np.arange(len(probes) + 1), "k": [p.decode() for p in probes] + [None]})
    check(sql, frame, "contains", path, expected, "k")
    check(sql, frame, "contains", path, expected, "cast(k as binary)")


def test_lookup_with_and_without_check_bits_and_contains_on_check_bits(sql, tmp_path):
    import ribbon

    keys = random_strings(3000, seed=44)
    values = np.random.default_rng(44).integers(0, 2**12, len(keys)).astype(np.uint32)
    probes = keys + [b"z%d" % i for i in range(2000)]
    frame = pd.DataFrame({"i": np.arange(len(probes) + 1), "k": [p.decode() for p in probes] + [None]})
    plain = str(tmp_path / "kv.ribbon")
    f = ribbon.build(keys, values=values)
    f.save(plain)
    check(sql, frame, "lookup", plain, f.lookup(probes).tolist() + [None], "k")
    checked = str(tmp_path / "checked.ribbon")
    g = ribbon.build(keys, values=values, check_bits=3)
    g.save(checked)
    absent = 2**32 - 1
    expected = [None if v == absent else int(v) for v in g.lookup(probes, absent=absent)] + [None]
    assert expected[: len(keys)] == values.tolist() and None in expected[len(keys):-1]
    check(sql, frame, "lookup", checked, expected, "k")
    check(sql, frame, "contains", checked, g.contains(probes).tolist() + [None], "k")
    integers = random_u64(2000, seed=45)
    h = ribbon.build(integers, values=np.arange(len(integers), dtype=np.uint32))
    ints = str(tmp_path / "kv_ints.ribbon")
    h.save(ints)
    frame = pd.DataFrame({"i": np.arange(len(integers)), "k": integers.view(np.int64)})
    check(sql, frame, "lookup", ints, h.lookup(integers).tolist(), "k")


def test_contains_in_every_group_and_key_type(sql, tmp_path):
    import ribbon

    rng = np.random.default_rng(46)
    groups = rng.integers(0, 20, 4000)
    keys = rng.integers(0, 2000, 4000)
    probe_groups = rng.integers(0, 25, 6000)
    probe_keys = rng.integers(0, 3000, 6000)
    for kind in ("ints", "strings"):
        if kind == "ints":
            s = ribbon.build_set(groups.astype(np.uint64), keys.astype(np.uint64))
            g_probe, k_probe = probe_groups, probe_keys
            expected = s.contains(probe_groups.astype(np.uint64), probe_keys.astype(np.uint64)).tolist()
        else:
            s = ribbon.build_set([b"g%d" % g for g in groups], [b"k%d" % k for k in keys])
            g_probe = ["g%d" % g for g in probe_groups]
            k_probe = ["k%d" % k for k in probe_keys]
            expected = s.contains([g.encode() for g in g_probe], [k.encode() for k in k_probe]).tolist()
        assert sum(expected) > 100
        path = str(tmp_path / f"set_{kind}.ribbon")
        s.save(path)
        frame = pd.DataFrame({"i": np.arange(len(expected)), "g": g_probe, "k": k_probe})
        check(sql, frame, "contains_in", path, expected, "g", "k")
        if kind == "strings":
            check(sql, frame, "contains_in", path, expected, "cast(g as binary)", "k")
            check(sql, frame, "contains_in", path, expected, "g", "cast(k as binary)")


def analysis_error(spark, query):
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException) as caught:
        spark.sql(query).schema  # analysis only: no job runs
    return str(caught.value)


def test_errors_at_analysis_name_the_function_argument_and_reason(sql, tmp_path):
    import ribbon

    ints = str(tmp_path / "ints.ribbon")
    ribbon.build(np.arange(100, dtype=np.uint64)).save(ints)
    strings = str(tmp_path / "strings.ribbon")
    ribbon.build([b"a", b"b"]).save(strings)
    junk = tmp_path / "junk.ribbon"
    junk.write_bytes(b"not a filter" * 10)
    sql.createDataFrame([(1, "a", 1.5)], "i bigint, s string, d double").createOrReplaceTempView("ribbon_bad")
    message = analysis_error(sql, f"select ribbon.`{strings}`.contains(i) from ribbon_bad")
    assert "contains" in message and "argument 1 (key)" in message and "byte-string keys" in message
    message = analysis_error(sql, f"select ribbon.`{ints}`.contains(s) from ribbon_bad")
    assert "argument 1 (key)" in message and "64-bit integer keys" in message
    message = analysis_error(sql, f"select ribbon.`{tmp_path}/missing.ribbon`.contains(i) from ribbon_bad")
    assert "missing.ribbon" in message and "No such file" in message
    message = analysis_error(sql, f"select ribbon.`{junk}`.contains(i) from ribbon_bad")
    assert "junk.ribbon" in message and "contains" in message
    message = analysis_error(sql, f"select ribbon.`{ints}`.lookup(i) from ribbon_bad")
    assert "not a retrieval structure" in message
    message = analysis_error(sql, f"select ribbon.`{ints}`.contains_in(i, i) from ribbon_bad")
    assert "not a filter set" in message
    message = analysis_error(sql, f"select ribbon.contains(1, i) from ribbon_bad")
    assert "argument 1 (path)" in message and "string literal" in message
    message = analysis_error(sql, f"select ribbon.contains('{ints}', d) from ribbon_bad")
    assert "argument 2 (key) is double" in message
    message = analysis_error(sql, f"select ribbon.contains('{ints}') from ribbon_bad")
    assert "takes 2 arguments" in message


def test_a_file_renamed_over_during_a_query_answers_per_task(sql, tmp_path):
    # Each task binds the file on its first row: a rename under a running query gives every
    # task (a partition) either the old file's answers or the new one's, and never fails it.
    import ribbon
    from pyspark.sql import functions as F

    first, second = random_u64(5000, seed=47), random_u64(5000, seed=48)
    path = str(tmp_path / "swapped.ribbon")
    files = []
    for n, members in enumerate((first, second)):
        files.append(str(tmp_path / f"version{n}.ribbon"))
        ribbon.build(members, bits=4).save(files[-1])
    partitions, rows = 16, 400_000
    probes = np.resize(np.concatenate([first, second]), rows)
    per_row = [ribbon.load(version).contains(probes) for version in files]
    os.link(files[0], path + ".tmp")
    os.replace(path + ".tmp", path)
    frame = pd.DataFrame({"n": np.arange(rows), "k": probes.view(np.int64)})
    keys = sql.createDataFrame(frame).repartitionByRange(partitions, "n").cache()
    assert keys.count() == rows
    stop = threading.Event()

    def swap():
        n = 0
        while not stop.is_set():
            n += 1
            os.link(files[n % 2], path + ".tmp")
            os.replace(path + ".tmp", path)

    swapper = threading.Thread(target=swap)
    swapper.start()
    try:
        for _ in range(2):
            counted = (keys.groupBy(F.spark_partition_id().alias("p"))
                       .agg(F.sum(F.expr(f"cast(ribbon.contains('{path}', k) as int)")).alias("c"),
                            F.min("n").alias("first"), F.max("n").alias("last")).collect())
            assert len(counted) == partitions
            for r in counted:  # a partition holds the rows first..last
                old, new = (int(answers[r.first:r.last + 1].sum()) for answers in per_row)
                assert old != new and r.c in (old, new), (r, old, new)
    finally:
        stop.set()
        swapper.join()
