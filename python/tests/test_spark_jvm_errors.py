"""What ribbon says when its JVM code cannot run: Spark Connect, a session without ribbon.jar,
a ribbon.jar without the Spark classes (as `pip install .` shipped before its Spark classes
were compiled against the stubs of java/src/spark-api). engine="auto" warns once and builds
through Python; engine="jvm" and register() fail naming the cause; nothing is written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest

import ribbon.spark_jvm
from spark_fixtures import cli_build, random_u64

HELPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "spark_jvm_unavailable.py")


def test_a_session_without_a_driver_jvm_is_named_spark_connect():
    class ConnectSession:  # pyspark.sql.connect's session has no _jvm and no sparkContext
        pass

    problem = ribbon.spark_jvm.jvm_problem(ConnectSession())
    assert "Spark Connect" in problem and "spark.jars" in problem
    with pytest.raises(ribbon.spark_jvm.JvmUnavailableError, match="Spark Connect"):
        ribbon.spark_jvm.add_jar(ConnectSession())


def test_the_installed_jar_holds_the_spark_classes():
    try:
        path = ribbon.spark_jvm.jar_path()
    except FileNotFoundError as e:
        if os.environ.get("RIBBON_TEST_REQUIRE_JAR"):
            pytest.fail(str(e))
        pytest.skip(str(e))
    with zipfile.ZipFile(path) as jar:
        names = set(jar.namelist())
    for cls in ("ContainsFunction", "LookupFunction", "BoundQuery", "Routing", "RibbonCatalog",
                "RibbonFunctions$Contains"):
        assert f"dev/ribbon/spark/{cls}.class" in names, (path, cls)
    assert not any(n.startswith("org/apache/spark/") for n in names), "stubs shipped in the jar"


def run_helper(tmp_path, keys, jar=None):
    keys_path = str(tmp_path / "keys.u64")
    keys.astype("<u8").tofile(keys_path)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    if jar:
        env["RIBBON_JAVA_JAR"] = jar  # the package's own jar is this one too
    args = [sys.executable, HELPER, keys_path, str(tmp_path)] + ([jar] if jar else [])
    run = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def keys():
    return random_u64(20000, seed=31)


@pytest.mark.spark
def test_a_session_without_the_jar_warns_once_and_builds_through_python(tmp_path, keys):
    pytest.importorskip("pyspark")
    try:
        ribbon.spark_jvm.jar_path()
    except FileNotFoundError:
        pytest.skip("no ribbon.jar: engine='jvm' cannot add one")
    report = run_helper(tmp_path, keys)
    assert "not on this session's class path" in report["problem"]
    assert report["routes"] == ["python", "python"]
    assert len(report["warnings"]) == 1, report["warnings"]
    assert "Python route" in report["warnings"][0] and "spark.jars" in report["warnings"][0]
    expected = cli_build(keys, str(tmp_path))
    for name in ("auto", "auto2", "jvm"):  # engine="jvm" adds the package's jar (ADD JAR)
        assert open(tmp_path / f"{name}.ribbon", "rb").read() == expected, name
    assert report["jvm_build"]["type"] is None and report["register"]["type"] is None


@pytest.mark.spark
def test_a_jar_without_the_spark_classes_is_named_and_jvm_builds_refuse(tmp_path, keys):
    pytest.importorskip("pyspark")
    try:
        whole = ribbon.spark_jvm.jar_path()
    except FileNotFoundError as e:
        pytest.skip(str(e))
    stripped = str(tmp_path / "ribbon.jar")
    with zipfile.ZipFile(whole) as source, zipfile.ZipFile(stripped, "w") as out:
        for item in source.infolist():
            if not item.filename.startswith("dev/ribbon/spark/"):
                out.writestr(item, source.read(item))
    report = run_helper(tmp_path, keys, jar=stripped)
    assert "no Spark classes" in report["problem"], report["problem"]
    assert report["routes"] == ["python", "python"]
    assert len(report["warnings"]) == 1 and "no Spark classes" in report["warnings"][0]
    for call in ("jvm_build", "register"):
        assert report[call]["type"] == "JvmUnavailableError", report[call]
        assert "no Spark classes" in report[call]["message"]
    assert not os.path.exists(tmp_path / "jvm.ribbon")
    expected = cli_build(keys, str(tmp_path))
    assert open(tmp_path / "auto.ribbon", "rb").read() == expected
