"""Data files whose key column PyIceberg finds other than by Parquet field id: files added
with ``add_files`` (no field ids: the table's name mapping), a column added with a default
(``initial_default``), an identity-partition column that lives only in the partition tuple
(tables migrated by Iceberg's migrate and snapshot procedures). The index must find each
file's keys exactly as PyIceberg's scan does, the oracle here."""

import warnings

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyiceberg")

from pyiceberg.manifest import DataFile, DataFileContent, FileFormat  # noqa: E402
from pyiceberg.typedef import Record  # noqa: E402
from pyiceberg.types import LongType  # noqa: E402

from ribbon.lake import iceberg  # noqa: E402
from spark_fixtures import spark  # noqa: E402,F401
from test_iceberg import catalog, oracle, same_rows  # noqa: E402,F401

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string()),
                    pa.field("region", pa.string())])


def rows(ids, region="eu"):
    return pa.table({"id": ids, "name": [f"n{i}" for i in ids],
                     "region": [region] * len(ids)}, schema=SCHEMA)


def check(table, column, present, absent):
    """read and plan_files agree with PyIceberg's scan for each key, with no warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for key in present + absent:
            expected = oracle(table, column, [key])
            assert (expected.num_rows > 0) == (key in present), key
            same_rows(iceberg.read(table, column, [key]), expected)
            planned = {t.file.file_path for t in iceberg.plan_files(table, column, [key])}
            assert len(planned) >= (key in present)


def test_added_files_without_field_ids(catalog, tmp_path):
    table = catalog.create_table("db.added", schema=SCHEMA)
    table.append(rows([1, 2, 3]))
    path = str(tmp_path / "outside.parquet")
    pq.write_table(rows([10, 11, 12]), path)  # pyarrow writes no PARQUET:field_id
    table.add_files([path])
    stats = iceberg.build_index(table, "id")
    assert stats.nulls == 0 and stats.rows == 6
    check(table, "id", [1, 11, 12], [4, 13])
    assert len(iceberg.plan_files(table, "id", [11])) == 1


def test_a_column_added_with_a_default(catalog):
    table = catalog.create_table("db.defaulted", schema=SCHEMA)
    table.append(rows([1, 2, 3]))
    with table.update_schema() as update:
        update.add_column("level", LongType(), default_value=7)
    assert oracle(table, "level", [7]).num_rows == 3  # PyIceberg fills initial_default
    stats = iceberg.build_index(table, "level")
    assert stats.nulls == 0
    check(table, "level", [7], [8])


def test_identity_partition_values_only_in_the_partition_tuple(catalog, tmp_path):
    """As Iceberg's migrate procedure leaves a Hive table: the files lack the partition
    column, whose value is the partition tuple's (PyIceberg reads it from there)."""
    table = catalog.create_table("db.migrated", schema=SCHEMA)
    with table.update_spec() as spec:
        spec.add_identity("region")
    with table.transaction() as tx:
        tx.set_properties({"schema.name-mapping.default":
                           table.schema().name_mapping.model_dump_json()})
    for region, ids in [("eu", [1, 2]), ("us", [3, 4])]:
        bare = tmp_path / f"{region}.parquet"
        pq.write_table(rows(ids, region).drop_columns(["region"]), bare)
        data_file = DataFile.from_args(
            content=DataFileContent.DATA, file_path=str(bare), file_format=FileFormat.PARQUET,
            partition=Record(region), record_count=len(ids),
            file_size_in_bytes=bare.stat().st_size)
        data_file.spec_id = table.spec().spec_id
        with table.transaction() as tx:
            with tx.update_snapshot().fast_append() as append:
                append.append_data_file(data_file)
    assert oracle(table, "region", ["us"]).num_rows == 2
    stats = iceberg.build_index(table, "region")
    assert stats.nulls == 0
    check(table, "region", ["eu", "us"], ["ap"])


def test_a_changed_name_mapping_means_the_file_is_planned(catalog, tmp_path):
    """A file read through the name mapping holds other keys once the mapping changes: the
    index must stop pruning it (it keeps pruning the files with field ids)."""
    from pyiceberg.table.name_mapping import MappedField, NameMapping

    schema = pa.schema([pa.field("id", pa.int64()), pa.field("other", pa.int64())])
    table = catalog.create_table("db.remapped", schema=schema)
    table.append(pa.table({"id": [1, 2], "other": [100, 200]}, schema=schema))
    path = str(tmp_path / "outside.parquet")
    pq.write_table(pa.table({"id": [10, 20], "other": [15, 30]}, schema=schema), path)
    table.add_files([path])
    iceberg.build_index(table, "id")
    swapped = NameMapping([MappedField(field_id=1, names=["other"]),
                           MappedField(field_id=2, names=["id"])])
    with table.transaction() as tx:
        tx.set_properties({"schema.name-mapping.default": swapped.model_dump_json()})
    # PyIceberg now reads "other" as id (its min/max pruning still by the bounds of add_files)
    assert oracle(table, "id", [15]).num_rows == 1
    check(table, "id", [1, 15], [10, 12, 3])
    assert {t.file.file_path for t in iceberg.plan_files(table, "id", [12])} == {path}


@pytest.mark.spark
@pytest.mark.parametrize("column", ["id", "name"])
def test_the_spark_engine_reads_added_files_as_pyiceberg(catalog, spark, tmp_path, column):
    """Spark reads the files with field ids; the file without (add_files) is read by
    PyIceberg's reader on the driver: the local engine's bytes."""
    from ribbon.lake import _puffin as puffin

    table = catalog.create_table("db.added", schema=SCHEMA)
    table.append(rows([1, 2, 3]))
    path = str(tmp_path / "outside.parquet")
    pq.write_table(rows([10, 11, 12]), path)
    table.add_files([path])

    def blobs(stats):
        with table.io.new_input(stats.path).open() as f:
            return [b.data for b in puffin.read(f.read()) if b.fields == [stats_field]]
    stats_field = table.schema().find_field(column).field_id
    local = blobs(iceberg.build_index(table, column))
    on_spark = blobs(iceberg.build_index(table, column, engine="spark", spark=spark))
    assert on_spark == local
    check(table, column, [1, 11] if column == "id" else ["n1", "n11"], [13] if column == "id"
          else ["n13"])
