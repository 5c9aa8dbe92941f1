"""The build functions (:func:`build`, :func:`build_set`): the options checked, the key
columns' kinds and the retrieval's value bits found, then :class:`SparkEngine` run by
:func:`ribbon.distributed.run_build`."""

from __future__ import annotations

import os
import time
from typing import Any, Optional, Sequence, Tuple, Union

from .. import _ribbon
from .. import distributed as dist
from .engine import SparkEngine, _build_settings, _Counts, _error
from .routing import ROUTE_BATCH_KEYS, _check_engine, _route_in_jvm


def key_kind_of_column(df, column: str) -> str:
    """"u64" for integer columns (long, int, short, byte), "bytes" for string and binary
    columns; ribbon.KeyTypeError for any other type or a missing column."""
    from pyspark.sql import types as T

    fields = {f.name: f for f in df.schema.fields}
    if column not in fields:
        raise _error("KeyTypeError", TypeError)(
            f"no column {column!r} (columns: {', '.join(fields) or 'none'})"
        )
    data_type = fields[column].dataType
    if isinstance(data_type, (T.LongType, T.IntegerType, T.ShortType, T.ByteType)):
        return "u64"
    if isinstance(data_type, (T.StringType, T.BinaryType)):
        return "bytes"
    raise _error("KeyTypeError", TypeError)(
        f"column {column!r} has type {data_type.simpleString()}: keys must be integers "
        "(long, int) or byte strings (string, binary)"
    )


@dist.takes_build_options
def build(
    df,
    column: str,
    path: Union[str, os.PathLike],
    *,
    values: Optional[str] = None,
    check_bits: int = 0,
    batch_keys: int = ROUTE_BATCH_KEYS,
    engine: str = "auto",
    _fail_first_attempt: Sequence[Tuple[int, int, str]] = (),
    **options,
) -> dist.BuildStats:
    """Builds the default (bumped) filter of the keys in ``df[column]`` into ``path``.

    The file is byte-identical to ``ribbon build`` over the same distinct keys and options
    (integer columns as ``--format u64``, string/binary columns as byte strings), whatever
    the partitioning, the number of executors, the order of rows, task retries and lost
    executors (adaptive query execution is off while the build runs: see
    :func:`_build_settings`). Repeated keys count once. ``range_keys``: keys per range task (its memory: about 40 bytes per key);
    ``one_place_keys``: layers this small are finished on the driver. ``path``: a path on a
    file system that the executors and the driver share, or a URI that ``pyarrow.fs``
    resolves (``s3://bucket/key``, ``hdfs://...``; credentials from the usual environment
    variables) or a path on ``filesystem`` (a ``pyarrow.fs.FileSystem``). The file is either
    complete or untouched (a rename, or on object stores a copy once it is whole).

    ``engine``: where layer 0's keys are hashed and routed. ``"auto"`` (default): in the
    executors' JVMs (ribbon.jar, the hashes of ``ribbon build``) when the session's class path
    has the jar (``spark.jars`` set to ``ribbon.spark_jvm.jar_path()``), else in Python
    workers from Arrow batches; ``"jvm"`` and ``"python"`` force one. The file is the same;
    the JVM route spares handing every key to Python, which took the map stage a fifth of
    its executor time in bench/RESULTS.md ("Layer 0 routed inside the JVM").
    ``batch_keys``: keys a map task routes at once (at most 2^28 - 1).

    ``values``: a retrieval structure instead (key -> value; ``ribbon.load(path).lookup``,
    :func:`lookup`), the values in that integer column, byte-identical to ``ribbon build
    --values`` over the same pairs: ``bits`` value bits (default: as many as the largest value
    needs), ``check_bits`` check bits (non-members found at 2^-check_bits). A key given twice
    with one value counts once; nulls, negative values, values of more than ``bits`` bits
    (``ribbon.KeysError``) and a key given with two values (``ribbon.ConflictingValuesError``,
    naming the key) are refused, and nothing is written.
    """
    if values is None:
        if check_bits:
            raise _error("OptionsError", ValueError)("check_bits is for builds with values")
        return _build(df, [column], ["key"], path, **_options(locals()), **options)
    return _build(df, [column, values], ["key", "value"], path, **_options(locals()), **options)


@dist.takes_build_options
def build_set(
    df,
    group_column: str,
    key_column: str,
    path: Union[str, os.PathLike],
    *,
    batch_keys: int = ROUTE_BATCH_KEYS,
    engine: str = "auto",
    group_names: Union[bool, Any] = True,
    metadata: Optional[bytes] = None,
    _fail_first_attempt: Sequence[Tuple[int, int, str]] = (),
    **options,
) -> dist.BuildStats:
    """Builds the filter set of the pairs (``df[group_column]``, ``df[key_column]``) into
    ``path``: one file answering "may group g hold key k?" (``ribbon.load_set``,
    :func:`contains_in`, ``ribbon query --group``), byte-identical to ``ribbon build --groups
    -o`` over the same distinct pairs (integer groups and keys as ``--format u64``, string
    columns as ``group<TAB>key`` lines) and to ``ribbon.build_set``, whatever the
    partitioning. Groups and keys are each integers (long, int, short, byte) or byte strings
    (string, binary); neither may be null. The returned stats count the groups. Options,
    engines, retries and the output as for :func:`build`; the JVM route hashes the pairs in
    the executors' JVMs. The file names every group (format version 7, so that
    ``FilterSet.groups_of`` answers; the driver collects the distinct groups) unless
    ``group_names`` is False (version 6, for readers of the release before) or the names
    themselves (every group, those without pairs too: not collected); ``metadata``
    (bytes) is stored with the file as ``ribbon.build_set(metadata=)`` stores it."""
    return _build(df, [group_column, key_column], ["group", "key"], path, check_bits=0,
                  **_options(locals()), **options)


#: build()'s and build_set()'s own options, handed to _build beside the shared ones.
_BUILD_OPTIONS = ("batch_keys", "engine", "_fail_first_attempt", "check_bits", "group_names",
                  "metadata")


def _options(arguments: dict) -> dict:
    return dist.options_of(arguments, _BUILD_OPTIONS)


def _build(df, columns, roles, path, *, fpr, bits, width, seed, shard_size, threshold_codes,
           check_bits, range_keys, one_place_keys, batch_keys, filesystem, engine,
           _fail_first_attempt, group_names=True, metadata=None) -> dist.BuildStats:
    """build() and build_set(): ``columns`` in their ``roles`` ("key"; "group", "key";
    "key", "value")."""
    _check_engine(engine)
    if not 1 <= batch_keys < 1 << 28:
        raise ValueError(f"batch_keys must be in [1, 2^28), not {batch_keys}")
    destination = dist.Destination(path, filesystem)
    destination.check()
    kinds = {role: key_kind_of_column(df, column) for column, role in zip(columns, roles)}
    if kinds.get("value", "u64") != "u64":
        raise _error("KeyTypeError", TypeError)(
            f"column {columns[roles.index('value')]!r} holds the values: it must be of an "
            "integer type (long, int, short, byte)")
    spark_engine = SparkEngine(
        df,
        columns,
        roles,
        batch_keys=batch_keys,
        route_in_jvm=_route_in_jvm(df.sparkSession, engine),
        fail_first_attempt=_fail_first_attempt,
    )
    try:
        with _build_settings(df.sparkSession):
            clock = time.monotonic()
            counts = spark_engine.counts()  # before the parameters: values may set the bits
            counting = time.monotonic() - clock
            if "value" in roles:
                bits = _value_bits(counts, bits, check_bits, columns[roles.index("value")])
            group_kind, values = kinds.get("group"), "value" in roles
            spark_engine.params = dist.build_params(kinds["key"], **dist.options_of(locals()))
            threads = int(df.sparkSession.conf.get("spark.task.cpus", "1"))
            stats = dist.run_build(spark_engine, spark_engine.params, destination,
                                   **dist.options_of(locals(), dist.RUN_OPTIONS))
        stats.seconds["count"] += counting  # run_build's count() found it done
        stats.layer0_route = "jvm" if spark_engine.route_in_jvm else "python"
        return stats
    finally:
        spark_engine.release_all()


def _value_bits(counts: _Counts, bits: Optional[int], check_bits: int, column: str) -> int:
    """The value bits of a retrieval build, as ``ribbon build --values`` picks them: ``bits``
    where given (every value must fit), else as many as the largest value needs (at least
    1); KeysError for negative values and values of 32 bits or more."""
    keys_error = _error("KeysError", ValueError)
    if counts.smallest_value < 0:
        raise keys_error(f"column {column!r} holds the negative value {counts.smallest_value}: "
                         "values are unsigned")
    if counts.largest_value >= 1 << 32:
        raise keys_error(f"column {column!r} holds the value {counts.largest_value}, which does "
                         "not fit in 32 bits")
    if bits is None:
        return _ribbon.value_bits_for(counts.largest_value)
    if counts.largest_value >= 1 << bits:
        raise keys_error(f"column {column!r} holds the value {counts.largest_value}, which does "
                         f"not fit in bits={bits} (values must be below 2^{bits})")
    return bits
