"""Ribbon filters on Apache Spark: a distributed build, byte-identical to ``ribbon build``,
and vectorized membership (``contains``) and retrieval (``lookup``) column functions.

``build`` runs the engine-neutral steps of :mod:`ribbon.distributed` with Spark as the engine:

* one aggregation counts the rows and the nulls of the key column (errors before any heavy
  work: nulls, a column of another type, an output path that cannot be written);
* executors hash their rows and route each hash to its shard range: one row per (batch,
  range) with the range's hashes as one binary blob, so the shuffle carries 8 bytes per key
  plus Spark's framing. Layer 0 does it in the executors' JVMs where the session has
  ribbon.jar (no key reaches a Python worker), else in Arrow batches (``mapInArrow``; no
  per-row Python); later layers route the bumped hashes in Arrow batches;
* Spark's DataFrame exchange (``repartition`` on a column chosen so that partition r receives
  range r) brings each range to one task (``mapInArrow``), which hands the blobs' buffers to
  C++ (one copy), sorts, drops repeats, solves on ``spark.task.cpus`` threads, writes the
  range's part file under the output's directory and returns the range's bumped hashes
  (about 8 %), kept by Spark (memory, then disk) for the next layer;
* layers of at most ``one_place_keys`` keys are finished on the driver; tasks then compute the
  sections' checksums and place the parts' bytes in the file (positioned writes on a local or
  shared file system, one streaming task elsewhere); the driver writes only the header, the
  descriptors and the finished layers, and renames (or moves) the file into place.

The output can be a path on a file system that the executors and the driver share (a local
path in ``local[...]`` mode, NFS...) or a URI of any file system ``pyarrow.fs`` resolves
(``s3://``, ``hdfs://``, ``gs://``...).

The package's modules, by concern: :mod:`.routing` (Spark's partitioning, the hash blobs, the
map side of each layer), :mod:`.engine` (:class:`SparkEngine`: the range tasks, the session's
settings), :mod:`.api` (:func:`build`, :func:`build_set`) and :mod:`.functions` (the
column functions and :func:`read_indexed`). Every name is re-exported here:
``ribbon.spark.X`` is the way to reach it.
"""

from __future__ import annotations

from .api import (  # noqa: F401
    _BUILD_OPTIONS,
    _build,
    _options,
    _value_bits,
    build,
    build_set,
    key_kind_of_column,
)
from .engine import (  # noqa: F401
    RESULT_COLUMNS,
    SOLVED_SCHEMA,
    SparkEngine,
    _build_settings,
    _collect,
    _Counts,
    _error,
    _run_pickled,
    _solve_ranges,
)
from .functions import (  # noqa: F401
    _NOT_FOUND,
    _answer,
    _column_function,
    _executor_filters,
    _filter_on_executor,
    _filter_source,
    _query_column,
    _without_nulls,
    contains,
    contains_in,
    lookup,
    read_indexed,
)
from .routing import (  # noqa: F401
    ROUTE_BATCH_KEYS,
    ROUTED_SCHEMA,
    ROUTED_VALUES_SCHEMA,
    _blob_ends,
    _blob_views,
    _blobs,
    _check_engine,
    _hash_and_route,
    _hash_columns,
    _route_bumped,
    _route_in_jvm,
    _routed_batch,
    _routed_in_jvm,
    _rotl32,
    _signed64,
    partition_keys,
    spark_partition_of,
)
