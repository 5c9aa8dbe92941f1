"""Queries on Spark: the column functions :func:`contains`, :func:`contains_in` and
:func:`lookup` (ribbon.jar's SQL functions in the executors' JVMs where the session has it, else
an Arrow UDF over the batched query path), and :func:`read_indexed`, reads through a
``ribbon.lake`` index."""

from __future__ import annotations

import os
import uuid
from typing import Optional, Tuple

import numpy as np
import pyarrow as pa

from .. import _ribbon
from .routing import _check_engine

_executor_filters: dict = {}  # per Python worker: filters loaded once, reused by batches


def _filter_on_executor(source):
    kind, value, key = source
    f = _executor_filters.get(key)
    if f is None:
        f = _ribbon.load(value) if kind == "path" else _ribbon.Filter.from_bytes(value.value)
        _executor_filters[key] = f
    return f


def _filter_source(filter_or_path, spark):
    """(kind, path or broadcast, cache key) for the executors."""
    if isinstance(filter_or_path, (str, os.PathLike)):
        path = os.path.abspath(os.fspath(filter_or_path))
        stat = os.stat(path)  # a rewritten file is loaded again
        return ("path", path, (path, stat.st_mtime_ns, stat.st_size))
    if isinstance(filter_or_path, _ribbon.Filter):
        from pyspark.sql import SparkSession

        session = spark or SparkSession.getActiveSession()
        broadcast = session.sparkContext.broadcast(filter_or_path.to_bytes())
        return ("broadcast", broadcast, ("broadcast", uuid.uuid4().hex))
    raise TypeError("filter must be a path (str) or a ribbon.Filter")


# lookup()'s answer for keys whose check bits fail: no value can be 2^32 - 1, as a file with
# check bits keeps at most 31 value bits.
_NOT_FOUND = 2**32 - 1


def _without_nulls(array: pa.Array) -> Tuple[pa.Array, Optional[np.ndarray]]:
    """The array with nulls filled (0 or b"") and where they were (None if nowhere)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if not array.null_count:
        return array, None
    where = array.is_null().to_numpy(zero_copy_only=False)
    return array.fill_null(0 if pa.types.is_integer(array.type) else b""), where


def _answer(source, method: str, *columns: pa.Array) -> pa.Array:
    """The method's answers for a batch of keys (contains_in: of groups and keys): null where
    any of them is null and, for lookups in a file with check bits, for keys found absent."""
    f = _filter_on_executor(source)
    absent = None
    filled = []
    for column in columns:  # a null group or key is no member: its answer is null
        column, nulls = _without_nulls(column)
        filled.append(column)
        if nulls is not None:
            absent = nulls if absent is None else absent | nulls
    if method == "lookup" and f.check_bits:
        answers = f.lookup(*filled, absent=_NOT_FOUND)
        not_found = answers == _NOT_FOUND
        absent = not_found if absent is None else absent | not_found
    else:
        answers = getattr(f, method)(*filled)
    return pa.array(answers, mask=absent)


def _column_function(source, method: str, return_type: str):
    try:
        from pyspark.sql.functions import arrow_udf  # Spark >= 4.1: Arrow in and out

        def run(*columns: pa.Array) -> pa.Array:
            out = _answer(source, method, *columns)
            return out.cast(pa.int64()) if method == "lookup" else out

        return arrow_udf(run, return_type)
    except ImportError:
        import pandas as pd
        from pyspark.sql.functions import pandas_udf

        def run_pandas(*columns: pd.Series) -> pd.Series:
            out = _answer(source, method, *(pa.Array.from_pandas(c) for c in columns))
            return (out.cast(pa.int64()) if method == "lookup" else out).to_pandas()

        return pandas_udf(run_pandas, return_type)


def _query_column(method: str, return_type: str, columns, filter, spark, engine: str):
    """The column of one query method: the JVM's ribbon_<method> (ribbon.spark_jvm) where it
    can run, else the Arrow UDF over the batched query path."""
    _check_engine(engine)
    if engine != "python" and isinstance(filter, (str, os.PathLike)):
        from pyspark.sql import SparkSession

        from .. import spark_jvm

        session = spark or SparkSession.getActiveSession()
        if session is None:
            raise RuntimeError("no active Spark session: start one, or pass spark=")
        problem = None if engine == "jvm" else spark_jvm.jvm_problem(session)
        if problem is None:
            os.stat(filter)  # a missing file is refused here, as the Arrow path refuses it
            spark_jvm.register(session)
            return getattr(spark_jvm, method + "_column")(filter, *columns)
        spark_jvm.warn_python_route(session, f"ribbon.spark.{method}", problem)
    if engine == "jvm":
        raise TypeError("engine='jvm' needs a filter path (the JVM maps the file itself)")
    return _column_function(_filter_source(filter, spark), method, return_type)(*columns)


def contains(column, filter, *, spark=None, engine: str = "auto"):
    """A boolean column: may ``column``'s key be in the filter? (null for null keys).

    ``filter``: a path that every executor can read, or a ``ribbon.Filter`` (its file bytes
    are broadcast once). The pre-filter of a join, e.g.
    ``big.where(ribbon.spark.contains("user_id", "/shared/users.ribbon"))``.

    ``engine``: ``"auto"`` (default) queries a path inside the executors' JVMs
    (``ribbon_contains`` of ribbon.jar, no Python worker) when the session's class path has
    the jar (``spark.jars`` set to ``ribbon.spark_jvm.jar_path()``), else in Python workers
    through an Arrow UDF over the batched query path; ``"jvm"`` and ``"python"`` force one.
    """
    return _query_column("contains", "boolean", [column], filter, spark, engine)


def contains_in(group_column, key_column, filter_set, *, spark=None, engine: str = "auto"):
    """A boolean column: may the group in ``group_column`` hold the key in ``key_column``, in
    a filter set (:func:`build_set`, ``ribbon build --groups -o``)? Null where the group or
    the key is null. ``filter_set``: a path that every executor can read, or a
    ``ribbon.FilterSet`` (its bytes are broadcast once). E.g. the files that may hold each
    key: ``keys.crossJoin(files).where(ribbon.spark.contains_in("file", "key", path))``.
    ``engine`` as for :func:`contains` (the JVM's ``ribbon_contains_in``)."""
    from ..sets import FilterSet

    if isinstance(filter_set, FilterSet):
        filter_set = filter_set._filter  # the Filter it wraps: broadcast as file bytes
    return _query_column("contains_in", "boolean", [group_column, key_column], filter_set, spark,
                         engine)


def lookup(column, filter, *, spark=None, engine: str = "auto"):
    """A long column: the value a retrieval file (:func:`build` with ``values=``, or built on
    one machine) stores for each key (an arbitrary value below 2^bits for keys outside its
    set, except in files with check bits: null where the key's check bits fail; null for null
    keys).
    ``engine`` as for :func:`contains`."""
    return _query_column("lookup", "long", [column], filter, spark, engine)


# ---------------------------------------------------------------------------------------
# ribbon.lake on Spark: the index's build (its engine="spark") and reads through it.


def spark_schema(arrow_schema: pa.Schema, inferred=None):
    """A Spark StructType of an Arrow schema (pyspark's own conversion); a field it cannot
    convert (uint8, ...) as ``inferred(name)`` gives it (Spark's inference from a file)."""
    from pyspark.sql.pandas.types import from_arrow_type
    from pyspark.sql.types import StructField, StructType

    fields = []
    for field in arrow_schema:
        try:
            spark_type = from_arrow_type(field.type)
        except TypeError:
            if inferred is None:
                raise
            spark_type = inferred(field.name)
        fields.append(StructField(field.name, spark_type, True))
    return StructType(fields)


def _inferred_by_spark(spark, source, files):
    """``inferred(name)``: Spark's type of a column, from the first of ``files`` that has it."""
    from .._lakecore.schema import file_schemas
    from .._lakecore.table import spark_path

    schemas = []  # read at the first call only: most tables need none

    def inferred(name):
        if not schemas:
            schemas.extend(file_schemas(source, files))
        holder = next(r for r, s in zip(files, schemas) if s.get_field_index(name) >= 0)
        return spark.read.parquet(spark_path(source.uri(holder))).schema[name].dataType

    return inferred


def read_indexed(spark, table, column: str, keys, index):
    """A DataFrame of the rows of Parquet ``table`` whose ``column`` is one of ``keys``,
    scanning only the files ``ribbon.lake.candidate_files`` names through ``index`` (a path
    or a ``ribbon.lake.LakeIndex``): the index's candidates and every file it does not know or
    that changed; a full scan, with a warning, if the index cannot answer for this table and
    column. The rows are a full scan's (``column IN keys`` is applied), under the schema
    ``ribbon.lake.read`` unifies (a column a file lacks is null there, integer widths
    promote), Hive partition columns after it (Spark's partition discovery, from the root)."""
    from pyspark.sql import functions as F

    from .._lakecore.index import plan_read, schema_files
    from .._lakecore.schema import key_array, read_dataset
    from .._lakecore.table import spark_path

    source, files, key_type = plan_read(table, column, keys, index)
    opened = schema_files(source, files)
    schema = read_dataset(source, opened, column, key_type).schema
    df = (spark.read.schema(spark_schema(schema, _inferred_by_spark(spark, source, opened)))
          .option("basePath", spark_path(source.uri("")).rstrip("/"))
          .parquet(*[spark_path(source.uri(r)) for r in opened]))
    if not files:
        return df.where(F.lit(False))
    wanted = key_array(keys, schema.field(column).type).to_pylist()
    if pa.types.is_binary(schema.field(column).type):
        wanted = [bytearray(k) for k in wanted]
    return df.where(F.col("`" + column.replace("`", "``") + "`").isin(wanted))
