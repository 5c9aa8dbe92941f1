"""Spark SQL functions in the JVM: ``ribbon_contains(path, key)`` and ``ribbon_lookup(path, key)``.

The jar built from ``java/`` (a pure-Java reader of ribbon files, docs/format.md) holds Java
UDFs that map a filter file once per executor JVM and query it row by row, with no Python
worker and no Arrow transfer::

    spark = SparkSession.builder.config("spark.jars", ribbon.spark_jvm.jar_path()).getOrCreate()
    ribbon.spark_jvm.register(spark)
    big.where("ribbon_contains('/shared/users.ribbon', user_id)")
    big.where(ribbon.spark_jvm.contains_column("/shared/users.ribbon", "user_id"))

Keys are read as ``ribbon.spark`` reads them: integer columns (long, int, short, byte) as
64-bit integer keys, string columns as their UTF-8 bytes, binary columns as their bytes; a
null key gives null. The file must be readable at the same path on every executor.
"""

from __future__ import annotations

import os
import re

__all__ = ["jar_path", "jvm_available", "add_jar", "register", "contains_column", "lookup_column"]

_CONTAINS_CLASS = "dev.ribbon.spark.ContainsFunction"
_LOOKUP_CLASS = "dev.ribbon.spark.LookupFunction"


def jar_path() -> str:
    """The path of ``ribbon.jar``: $RIBBON_JAVA_JAR (the build tree's tests set it), else the
    jar installed in this package (wheels built where a JDK was found). Raises
    FileNotFoundError if there is none."""
    candidates = [os.environ.get("RIBBON_JAVA_JAR"), os.path.join(os.path.dirname(__file__), "ribbon.jar")]
    for path in candidates:
        if path and os.path.isfile(path):
            return os.path.abspath(path)
    raise FileNotFoundError(
        "ribbon.jar not found: build with a JDK 17+ and lz4-java (cmake -DRIBBON_BUILD_JAVA=ON) "
        "or set RIBBON_JAVA_JAR"
    )


def jvm_available(spark) -> bool:
    """Can this session query in the JVM: the driver loads the ribbon UDF classes and the jar
    goes to the executors (``spark.jars``, ``ADD JAR`` or their extra class path)? False under
    Spark Connect, which has no driver JVM gateway."""
    jvm = getattr(spark, "_jvm", None) or getattr(getattr(spark, "sparkContext", None), "_jvm", None)
    if jvm is None:
        return False
    try:
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName(_CONTAINS_CLASS, False, loader)
    except Exception:  # py4j reports ClassNotFoundException as a Py4JJavaError
        return False
    # The executors need it too: a jar only on spark.driver.extraClassPath is not shipped.
    shipped = str(spark.sparkContext._jsc.sc().listJars())
    shipped += " " + (spark.sparkContext.getConf().get("spark.executor.extraClassPath", "") or "")
    return re.search(r"ribbon[^/\\\s,():]*\.jar", shipped) is not None


def add_jar(spark) -> None:
    """Makes the jar's classes loadable on the driver and the executors: adds the jar to the
    session (``ADD JAR``) if they are not yet; starting the session with ``spark.jars`` set
    to :func:`jar_path` is the surer way. RuntimeError if they stay unloadable."""
    if not jvm_available(spark):
        spark.sql("ADD JAR '%s'" % jar_path().replace("'", "\\'"))
    if not jvm_available(spark):
        raise RuntimeError(
            "the ribbon UDF classes are not on the driver's class path: start the session with "
            "spark.jars=%s" % jar_path()
        )


def register(spark) -> None:
    """Registers ``ribbon_contains`` (boolean) and ``ribbon_lookup`` (long) in ``spark``
    (adding the jar first where needed: :func:`add_jar`)."""
    from pyspark.sql.types import BooleanType, LongType

    add_jar(spark)
    spark.udf.registerJavaFunction("ribbon_contains", _CONTAINS_CLASS, BooleanType())
    spark.udf.registerJavaFunction("ribbon_lookup", _LOOKUP_CLASS, LongType())


def _bound(function: str, path, key_col):
    """``function(path, key_col)`` with the path bound in the JVM (dev.ribbon.spark.BoundQuery,
    registered once per path and function under a name of its own), so that Spark converts
    only the key per row."""
    import hashlib

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    spark = SparkSession.getActiveSession()
    if spark is None:
        raise RuntimeError("no active Spark session")
    column = F.col(key_col) if isinstance(key_col, str) else key_col
    path = os.path.abspath(os.fspath(path))
    name = "%s_%s" % (function, hashlib.sha256(path.encode()).hexdigest()[:16])
    jvm = spark._jvm
    types = jvm.org.apache.spark.sql.types.DataTypes
    query = jvm.dev.ribbon.spark.BoundQuery(path, function == "ribbon_lookup")
    return_type = types.LongType if function == "ribbon_lookup" else types.BooleanType
    spark._jsparkSession.udf().register(name, query, return_type)
    call = getattr(F, "call_function", None) or F.call_udf
    return call(name, column)


def contains_column(path, key_col):
    """``ribbon_contains(path, key_col)`` as a Column (call :func:`register` first)."""
    return _bound("ribbon_contains", path, key_col)


def lookup_column(path, key_col):
    """``ribbon_lookup(path, key_col)`` as a Column (call :func:`register` first)."""
    return _bound("ribbon_lookup", path, key_col)
