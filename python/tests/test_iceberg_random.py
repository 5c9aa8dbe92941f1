"""Random operations on a small Iceberg table (append, overwrite, delete, add_files, a column
added with a default, rename, promotion, partition evolution, expire, another engine's
statistics, build and update of the index on random columns), and after every step read and
plan_files checked against PyIceberg's own scan for random present and absent keys.

Seeded and bounded: RIBBON_ICEBERG_RANDOM_STEPS steps (default 80, about a minute on a
2-core machine), RIBBON_ICEBERG_RANDOM_SEED to replay another sequence."""

import os
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyiceberg")

from pyiceberg.expressions import In  # noqa: E402
from pyiceberg.io.pyarrow import ArrowScan, schema_to_pyarrow  # noqa: E402
from pyiceberg.types import IntegerType, LongType, StringType  # noqa: E402

from ribbon.lake import LakeError  # noqa: E402
from ribbon.lake import iceberg  # noqa: E402
from test_iceberg import catalog, same_rows  # noqa: E402,F401
from test_iceberg_statistics import register_spark_statistics  # noqa: E402

STEPS = int(os.environ.get("RIBBON_ICEBERG_RANDOM_STEPS", "80"))
SEED = int(os.environ.get("RIBBON_ICEBERG_RANDOM_SEED", "62"))
KEYS = 40  # values drawn from [0, KEYS): keys repeat across files; KEYS.. are absent


class Lake:
    """The table and the random operations on it."""

    def __init__(self, catalog, rng, tmp_path):
        self.catalog, self.rng, self.tmp_path, self.added = catalog, rng, tmp_path, 0
        schema = pa.schema([pa.field("k", pa.int64()), pa.field("s", pa.string()),
                            pa.field("v", pa.int32()), pa.field("p", pa.string())])
        self.table = catalog.create_table("db.random", schema=schema)

    def rows(self, n=None, p=None):
        """Random rows of the current schema (nulls among them); ``p`` a constant p."""
        n = n or int(self.rng.integers(1, 30))
        columns = {}
        for field in schema_to_pyarrow(self.table.schema(), include_field_ids=False):
            values = self.rng.integers(0, KEYS, n)
            if field.name == "p":  # the partition source: never null, few values
                columns[field.name] = pa.array([p or f"x{values[0] % 3}"] * n, field.type)
                continue
            if pa.types.is_string(field.type) or pa.types.is_large_string(field.type):
                array = pa.array([f"x{v}" for v in values], field.type)
            else:
                array = pa.array(values, field.type)
            mask = pa.array(self.rng.random(n) < 0.1)
            columns[field.name] = pa.compute.if_else(mask, pa.scalar(None, field.type), array)
        return pa.table(columns)

    def key_columns(self):
        return [f.name for f in self.table.schema().fields
                if isinstance(f.field_type, (IntegerType, LongType, StringType))]

    def op_append(self):
        self.table.append(self.rows())

    def op_overwrite(self):
        column = self.rng.choice(self.key_columns())
        self.table.overwrite(self.rows(), overwrite_filter=In(column, self.keys_of(column, 2)))

    def op_delete(self):
        column = self.rng.choice(self.key_columns())
        self.table.delete(In(column, self.keys_of(column, 2)))

    def op_add_files(self):
        """A file written without field ids (as a Parquet lake brought into Iceberg), its
        partition columns constant (add_files takes them from the file's bounds)."""
        self.added += 1
        path = str(self.tmp_path / f"added-{self.added}.parquet")
        pq.write_table(self.rows(p=f"x{self.added % 3}"), path)
        self.table.add_files([path])

    def op_add_column(self):
        name = f"c{len(self.table.schema().fields)}"
        kind, default = ((LongType(), int(self.rng.integers(0, KEYS))) if self.rng.random() < 0.5
                         else (StringType(), f"x{self.rng.integers(0, KEYS)}"))
        with self.table.update_schema() as update:
            update.add_column(name, kind, default_value=default)

    def op_rename(self):
        column = self.rng.choice([c for c in self.key_columns() if c != "p"])
        with self.table.update_schema() as update:
            update.rename_column(column, f"{column}_r")

    def op_promote(self):
        ints = [f.name for f in self.table.schema().fields if isinstance(f.field_type, IntegerType)]
        if ints:
            with self.table.update_schema() as update:
                update.update_column(ints[0], LongType())

    def op_partition(self):
        with self.table.update_spec() as spec:
            if self.table.spec().is_unpartitioned():
                spec.add_identity("p")
            else:
                spec.remove_field(self.table.spec().fields[0].name)

    def op_expire(self):
        current = self.table.current_snapshot()
        older = [s.snapshot_id for s in self.table.metadata.snapshots
                 if current is not None and s.snapshot_id != current.snapshot_id]
        if older:
            self.table.maintenance.expire_snapshots().by_id(older[0]).commit()

    def op_foreign_statistics(self):
        other = self.catalog.load_table("db.random")  # a second writer, as Spark replaces
        if other.current_snapshot() is not None:
            register_spark_statistics(other)
        self.table.refresh()

    def op_index(self):
        column = self.rng.choice(self.key_columns())
        run = iceberg.build_index if self.rng.random() < 0.4 else iceberg.update_index
        try:
            run(self.table, column, bits=int(self.rng.choice([4, 8])), threads=1)
        except LakeError as e:  # no snapshot yet, or no data files
            assert "no snapshot" in str(e) or "no data files" in str(e), e

    def keys_of(self, column, n):
        values = self.table.scan(selected_fields=(column,)).to_arrow().column(0).drop_null()
        values = values.to_pylist()
        return [values[i] for i in self.rng.integers(0, len(values), n)] if values else []

    def check(self):
        """read and the tasks of plan_files give PyIceberg's scan's rows, for the keys
        together and each alone."""
        column = str(self.rng.choice(self.key_columns()))
        present = self.keys_of(column, 2)
        string = isinstance(self.table.schema().find_field(column).field_type, StringType)
        absent = [f"x{KEYS + 1}" if string else KEYS + 1]
        for keys in [present + absent] + [[k] for k in present + absent]:
            scan = self.table.scan(row_filter=In(column, keys))
            expected = scan.to_arrow()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # no index yet: the full plan, warned
                same_rows(iceberg.read(self.table, column, keys), expected)
                planned = iceberg.plan_files(self.table, column, keys)
            through_plan = ArrowScan(scan.table_metadata, scan.io, scan.projection(),
                                     scan.row_filter).to_table(planned)
            same_rows(through_plan, expected)


OPERATIONS = {"append": 6, "overwrite": 1, "delete": 1, "add_files": 2, "add_column": 1,
              "rename": 1, "promote": 1, "partition": 1, "expire": 1, "foreign_statistics": 1,
              "index": 5}


def test_random_operations_agree_with_pyiceberg(catalog, tmp_path):
    rng = np.random.default_rng(SEED)
    lake = Lake(catalog, rng, tmp_path)
    names = list(OPERATIONS)
    weights = np.array([OPERATIONS[n] for n in names], float)
    done = []
    for step in range(STEPS):
        name = names[rng.choice(len(names), p=weights / weights.sum())]
        getattr(lake, f"op_{name}")()
        done.append(name)
        try:
            lake.check()
        except AssertionError as e:
            raise AssertionError(f"step {step} (seed {SEED}) after {done[-5:]}: {e}") from e
    assert {"add_files", "index", "rename"} <= set(done)
