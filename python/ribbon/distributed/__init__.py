"""The steps of a distributed build, for any engine (Spark, Dask, Ray, a process pool).

A bumped layer's shard ranges are independent, so a cluster can solve them the way the
out-of-core builder solves them one after another. The file is a pure function of the distinct
key hashes and the options: byte-identical to ``ribbon build`` over the same keys, whatever
the partitioning, the order of rows, the order in which ranges are solved or task retries.

An engine provides three things (see :class:`Engine`; :class:`LocalEngine` is the reference,
``ribbon.spark`` the Spark one, ``python/examples/process_pool_engine.py`` a page of a process
pool):

* ``count()``: the number of keys (rows), before any heavy work; for a filter set also
  ``count_groups()``, its distinct groups (the file states them);
* ``solve_layer(plan, source, task)``: route every hash of ``source`` to its range
  (:func:`route_batch`), run ``task(range, hash_arrays, value_arrays)`` once per range
  (anywhere, in any order, retried at will; it returns its :class:`RangeResult`, its bumped
  hashes and their values), and return the results and a handle on the bumped hashes, the
  next layer's source;
* ``collect(source)``: the bumped hashes of a small last layer as one array, and their values;
* ``run_tasks(tasks)``: run small independent callables where the data is (the assembly's
  checksum and placement tasks); the default runs them here, on the driver.

Retrieval structures (``build_params(..., values=True)``, as ``ribbon build --values``) carry
a value beside each hash: layer 0 the keys' values, as given (the range task stores them under
their keys' check bits: :func:`to_stored_values`), later layers the stored values the tasks
return with their bumped hashes. For filters every values argument and result is None.

:func:`run_build` is the driver's loop over them. The output and the parts can be on any file
system that ``pyarrow.fs`` resolves from a URI (``file://``, ``s3://``, ``hdfs://``...) or on
the one given as ``filesystem=`` (see :class:`Destination`).

The package's modules, by concern: :mod:`.steps` (parameters, hashing, routing, the range
task), :mod:`.destination` (the output's file system, the parts directory and its lock),
:mod:`.engine` (the engine interface and the local engine), :mod:`.driver` (the driver's loop
over the layers) and :mod:`.assembly` (where each step of the C++ assembler runs). Every
name is re-exported here: ``ribbon.distributed.X`` is the way to reach it.
"""

from __future__ import annotations

from .._ribbon import (  # noqa: F401  (the steps, re-exported)
    DistributedParams,
    FinishedLayers,
    LayerPlan,
    FileFrame,
    LayerStep,
    PartsDirectory,
    RangedLayers,
    assemble,
    assembly_frame,
    checksum_sections,
    copy_windows,
    create_assembled_file,
    finish_layers,
    group_by_range,
    plan_layer,
    solve_range,
    to_layer_hashes,
    to_stored_values,
)
from .assembly import (  # noqa: F401
    Window,
    _fsync_directory,
    assemble_file,
    checksum_task,
    place_task,
    stream_task,
)
from .destination import Destination, check_output_path  # noqa: F401
from .driver import (  # noqa: F401
    RUN_OPTIONS,
    BuildStats,
    _raise_conflicts,
    _solve_layers,
    build,
    run_build,
)
from .engine import Engine, LocalEngine  # noqa: F401
from .steps import (  # noqa: F401
    BUILD_OPTIONS,
    DEFAULT_ONE_PLACE_KEYS,
    DEFAULT_RANGE_KEYS,
    PARAM_OPTIONS,
    RangeResult,
    as_group_names,
    build_params,
    hash_batch,
    options_of,
    route_batch,
    solve_task,
    takes_build_options,
)
