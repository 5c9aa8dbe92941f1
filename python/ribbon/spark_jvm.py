"""Spark SQL functions in the JVM: ``ribbon.contains(path, key)``, ``ribbon.lookup(path, key)``
and, for filter sets, ``ribbon.contains_in(path, group, key)``, and the Java UDFs of the same
answers under their older names ``ribbon_contains``, ``ribbon_lookup`` and
``ribbon_contains_in``.

The jar built from ``java/`` (a pure-Java reader of ribbon files, docs/format.md) holds a
Spark function catalog (``dev.ribbon.spark.RibbonCatalog``, a DataSource V2 ``FunctionCatalog``)
whose functions Spark's generated code calls with primitive keys, no boxing, no Python worker
and no Arrow transfer; the file is mapped once per executor JVM and bound once per task::

    spark = SparkSession.builder.config("spark.jars", ribbon.spark_jvm.jar_path()).getOrCreate()
    ribbon.spark_jvm.register(spark)   # sets spark.sql.catalog.ribbon, registers the UDFs
    big.where("ribbon.contains('/shared/users.ribbon', user_id)")
    big.where("ribbon.`/shared/users.ribbon`.contains(user_id)")   # file checked at analysis
    big.where(ribbon.spark_jvm.contains_column("/shared/users.ribbon", "user_id"))

Keys are read as ``ribbon.spark`` reads them: integer columns (long, int, short, byte) as
64-bit integer keys, string columns as their UTF-8 bytes, binary columns as their bytes; a
null key gives null. The file must be readable at the same path on every executor (and, for
the path-in-the-name form and the column functions, on the driver, which checks it).
"""

from __future__ import annotations

import os
import re
import warnings
import zipfile
from typing import Optional

__all__ = [
    "JvmUnavailableError",
    "RibbonJvmWarning",
    "jar_path",
    "jvm_problem",
    "jvm_available",
    "add_jar",
    "register",
    "contains_column",
    "lookup_column",
    "contains_in_column",
    "catalog_available",
    "function_name",
    "CATALOG",
]

_CONTAINS_CLASS = "dev.ribbon.spark.ContainsFunction"
_LOOKUP_CLASS = "dev.ribbon.spark.LookupFunction"
_CONTAINS_IN_CLASS = "dev.ribbon.spark.ContainsInFunction"
_ROUTING_CLASS = "dev.ribbon.spark.Routing"
_CATALOG_CLASS = "dev.ribbon.spark.RibbonCatalog"
#: The name register() gives ribbon's function catalog: ``ribbon.contains(...)`` in SQL.
CATALOG = "ribbon"
_READER_CLASS = "dev.ribbon.RibbonFilter"
_SESSION_FIX = ".config('spark.jars', ribbon.spark_jvm.jar_path()) on the SparkSession builder"


class JvmUnavailableError(RuntimeError):
    """ribbon's JVM code cannot run in this session; the message says why and how to fix it."""


class RibbonJvmWarning(UserWarning):
    """A Spark call took the Python route because ribbon's JVM code cannot run (the message
    says why and how to fix it)."""


def jar_path() -> str:
    """The path of ``ribbon.jar``: $RIBBON_JAVA_JAR (the build tree's tests set it), else the
    jar installed in this package (packages built where a JDK 17+ and lz4-java were found).
    Raises FileNotFoundError, saying how to get one, if there is none."""
    candidates = [os.environ.get("RIBBON_JAVA_JAR"), os.path.join(os.path.dirname(__file__), "ribbon.jar")]
    for path in candidates:
        if path and os.path.isfile(path):
            return os.path.abspath(path)
    raise FileNotFoundError(
        "this ribbon package has no ribbon.jar: it was built without a JDK 17+ and lz4-java "
        "(Debian: apt-get install openjdk-17-jdk-headless liblz4-java, then pip install again), "
        "so the Spark SQL functions and the JVM route of ribbon.spark.build are not available"
    )


def _jar_has_spark_classes(path: str) -> bool:
    with zipfile.ZipFile(path) as jar:
        return _CONTAINS_CLASS.replace(".", "/") + ".class" in jar.namelist()


def _loads(jvm, name: str) -> bool:
    try:
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName(name, False, loader)
        return True
    except Exception:  # py4j reports ClassNotFoundException as a Py4JJavaError
        return False


def _session_jvm(spark):
    return getattr(spark, "_jvm", None) or getattr(getattr(spark, "sparkContext", None), "_jvm", None)


def jvm_problem(spark, *, routing: bool = False) -> Optional[str]:
    """Why ``spark`` cannot run ribbon's JVM code (the SQL functions; with ``routing``, the
    JVM route of :func:`ribbon.spark.build` too), with the fix; None when it can."""
    jvm = _session_jvm(spark)
    if jvm is None:
        return ("this is a Spark Connect session, which has no driver JVM for ribbon's classes: "
                "use a classic session, with " + _SESSION_FIX)
    if not _loads(jvm, _CONTAINS_CLASS):
        if _loads(jvm, _READER_CLASS):
            return ("the ribbon.jar on this session's class path has no Spark classes (a jar "
                    "built without them): start the session with " + _SESSION_FIX)
        return "ribbon.jar is not on this session's class path: start the session with " + _SESSION_FIX
    # The executors need it too: a jar only on spark.driver.extraClassPath is not shipped.
    shipped = str(spark.sparkContext._jsc.sc().listJars())
    shipped += " " + (spark.sparkContext.getConf().get("spark.executor.extraClassPath", "") or "")
    if re.search(r"ribbon[^/\\\s,():]*\.jar", shipped) is None:
        return ("ribbon.jar is on the driver's class path but not shipped to the executors: "
                "start the session with " + _SESSION_FIX)
    if routing:
        if not _loads(jvm, _ROUTING_CLASS):
            return ("the ribbon.jar on this session's class path predates the JVM route (no "
                    + _ROUTING_CLASS + "): start the session with " + _SESSION_FIX)
        if not _loads(jvm, "org.apache.spark.sql.classic.Dataset"):
            return "the JVM route reads classic Spark 4 Datasets, and this Spark has none: use Spark 4"
    return None


def jvm_available(spark) -> bool:
    """Can this session query in the JVM: the driver loads the ribbon UDF classes and the jar
    goes to the executors (``spark.jars``, ``ADD JAR`` or their extra class path)? False under
    Spark Connect, which has no driver JVM gateway. :func:`jvm_problem` says why not."""
    return jvm_problem(spark) is None


def add_jar(spark, *, routing: bool = False) -> None:
    """Makes the jar's classes loadable on the driver and the executors: adds the jar to the
    session (``ADD JAR``) if they are not yet; starting the session with ``spark.jars`` set
    to :func:`jar_path` is the surer way. JvmUnavailableError, naming the cause, if they stay
    unloadable (``routing``: the JVM route of ribbon.spark.build too)."""
    problem = jvm_problem(spark, routing=routing)
    if problem is None:
        return
    if _session_jvm(spark) is None:
        raise JvmUnavailableError(problem)
    try:
        path = jar_path()
    except FileNotFoundError as e:
        raise JvmUnavailableError(str(e)) from None
    if not _jar_has_spark_classes(path):
        raise JvmUnavailableError(
            f"{path} has no Spark classes: it was built without them; rebuild ribbon with a JDK "
            "17+ and lz4-java (pip install again)"
        )
    spark.sql("ADD JAR '%s'" % path.replace("'", "\\'"))
    problem = jvm_problem(spark, routing=routing)
    if problem is not None:
        raise JvmUnavailableError(problem)


_warned = set()


def warn_python_route(spark, what: str, problem: str) -> None:
    """Warns, once per session and cause, that ``what`` takes the Python route."""
    key = (id(spark), problem)
    if key in _warned:
        return
    _warned.add(key)
    warnings.warn(f"{what} takes the Python route, slower: {problem}", RibbonJvmWarning, stacklevel=3)


def register(spark) -> None:
    """Enables ribbon's SQL functions in ``spark`` (adding the jar first where needed:
    :func:`add_jar`): the function catalog ``ribbon`` (``spark.sql.catalog.ribbon`` set to
    ``dev.ribbon.spark.RibbonCatalog`` on the running session: ``ribbon.contains``,
    ``ribbon.lookup``, ``ribbon.contains_in``, called from generated code without boxing) and
    the Java UDFs ``ribbon_contains`` (boolean), ``ribbon_lookup`` (long) and
    ``ribbon_contains_in`` (boolean), which answer the same. A jar without the catalog (built
    before it) gets the UDFs only."""
    from pyspark.sql.types import BooleanType, LongType

    add_jar(spark)
    spark.udf.registerJavaFunction("ribbon_contains", _CONTAINS_CLASS, BooleanType())
    spark.udf.registerJavaFunction("ribbon_lookup", _LOOKUP_CLASS, LongType())
    spark.udf.registerJavaFunction("ribbon_contains_in", _CONTAINS_IN_CLASS, BooleanType())
    if catalog_available(spark):
        spark.conf.set("spark.sql.catalog." + CATALOG, _CATALOG_CLASS)


def catalog_available(spark) -> bool:
    """Does the session's ribbon.jar hold the function catalog (ribbon.contains, ...)?"""
    jvm = _session_jvm(spark)
    return jvm is not None and _loads(jvm, _CATALOG_CLASS)


def function_name(function: str, path=None) -> str:
    """The catalog function's SQL name: ``ribbon.contains`` (the path an argument), or with a
    path ``ribbon.`/abs/path`.contains`` (the path in the name: Spark opens and checks the file
    when it analyzes the query, and the rows carry only the key)."""
    if function.startswith("ribbon_"):
        function = function[len("ribbon_"):]
    if path is None:
        return "%s.%s" % (CATALOG, function)
    quoted = os.path.abspath(os.fspath(path)).replace("`", "``")
    return "%s.`%s`.%s" % (CATALOG, quoted, function)


def _bound(function: str, path, *columns):
    """``function(path, *columns)`` as a Column with the path bound: the catalog function
    ``ribbon.`path`.<function>`` (:func:`function_name`) where the session's jar has the
    catalog, else the older path-bound UDF (:func:`_bound_udf`)."""
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    spark = SparkSession.getActiveSession()
    if spark is None:
        raise RuntimeError("no active Spark session")
    if not catalog_available(spark):
        return _bound_udf(function, path, *columns)
    if spark.conf.get("spark.sql.catalog." + CATALOG, None) != _CATALOG_CLASS:
        spark.conf.set("spark.sql.catalog." + CATALOG, _CATALOG_CLASS)
    columns = [F.col(c) if isinstance(c, str) else c for c in columns]
    return F.call_function(function_name(function, path), *columns)


def _bound_udf(function: str, path, *columns):
    """``function(path, *columns)`` with the path bound in a Java UDF (dev.ribbon.spark.BoundQuery
    or BoundContainsIn, registered once per path and function under a name of its own), so
    that Spark converts only the columns per row (boxed): the column functions before the
    catalog, kept for jars without it and for comparison (bench/spark_sql_bench.py)."""
    import hashlib

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    spark = SparkSession.getActiveSession()
    if spark is None:
        raise RuntimeError("no active Spark session")
    columns = [F.col(c) if isinstance(c, str) else c for c in columns]
    path = os.path.abspath(os.fspath(path))
    name = "%s_%s" % (function, hashlib.sha256(path.encode()).hexdigest()[:16])
    jvm = spark._jvm
    types = jvm.org.apache.spark.sql.types.DataTypes
    if function == "ribbon_contains_in":
        query = jvm.dev.ribbon.spark.BoundContainsIn(path)
    else:
        query = jvm.dev.ribbon.spark.BoundQuery(path, function == "ribbon_lookup")
    return_type = types.LongType if function == "ribbon_lookup" else types.BooleanType
    spark._jsparkSession.udf().register(name, query, return_type)
    call = getattr(F, "call_function", None) or F.call_udf
    return call(name, *columns)


def contains_column(path, key_col):
    """``ribbon.`path`.contains(key_col)`` as a Column (call :func:`register` first): the
    file is checked when Spark analyzes the query (a missing file, not a ribbon file, a key
    column of the wrong kind: an AnalysisException naming the function and argument)."""
    return _bound("ribbon_contains", path, key_col)


def lookup_column(path, key_col):
    """``ribbon.`path`.lookup(key_col)`` as a Column (call :func:`register` first)."""
    return _bound("ribbon_lookup", path, key_col)


def contains_in_column(path, group_col, key_col):
    """``ribbon.`path`.contains_in(group_col, key_col)`` as a Column (call :func:`register`
    first)."""
    return _bound("ribbon_contains_in", path, group_col, key_col)


def _warn_if_built_without_spark_classes() -> None:
    """Says at import when this package cannot run ribbon's JVM code in any session."""
    try:
        path = jar_path()
    except FileNotFoundError as e:
        warnings.warn(str(e), RibbonJvmWarning, stacklevel=3)
        return
    if not _jar_has_spark_classes(path):
        warnings.warn(
            f"{path} has no Spark classes (built without them): the Spark SQL functions and the "
            "JVM route of ribbon.spark.build are not available; rebuild ribbon with a JDK 17+ "
            "and lz4-java (pip install again)",
            RibbonJvmWarning,
            stacklevel=3,
        )


_warn_if_built_without_spark_classes()
