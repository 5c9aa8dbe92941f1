"""Which columns a statistics file indexes, from its footer alone (the indexes an upsert or a
delete refreshes), and files_for_each on a table with no snapshot (nothing, as plan_files and
read give)."""

import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyiceberg")

from ribbon._lakecore.table import LakeError  # noqa: E402
from ribbon.lake import _iceberg_commit, _iceberg_rewrite, iceberg  # noqa: E402
from ribbon.lake._iceberg_table import BLOB_TYPE  # noqa: E402
from test_iceberg import SCHEMA, catalog, make_table  # noqa: E402,F401
from test_iceberg_statistics import THETA, register_spark_statistics  # noqa: E402


def test_the_footer_says_which_fields_are_indexed(catalog):
    table = make_table(catalog)
    register_spark_statistics(table)  # another engine's sketch of field 1 (id)
    iceberg.build_index(table, "name")
    iceberg.build_index(table, "region")
    (statistics,) = table.metadata.statistics
    listed = _iceberg_commit.listed_blobs(table, statistics)
    assert sorted((b.type, tuple(b.fields)) for b in listed) == [
        (THETA, (1,)), (BLOB_TYPE, (2,)), (BLOB_TYPE, (3,))]
    assert all(b.data == b"" for b in listed)  # no blob's bytes read
    assert sorted(_iceberg_rewrite.indexed_columns(table, None)) == ["name", "region"]
    assert _iceberg_rewrite.indexed_columns(table, "score")[0] == "score"


def test_an_unreadable_statistics_file_lists_no_index(catalog):
    table = make_table(catalog)
    register_spark_statistics(table, garbage=True)
    assert _iceberg_rewrite.indexed_columns(table, None) == []
    with pytest.raises(LakeError):
        _iceberg_commit.listed_blobs(table, table.metadata.statistics[0])


def test_files_for_each_on_a_table_with_no_snapshot(catalog):
    table = catalog.create_table("db.empty", schema=SCHEMA)
    each = iceberg.files_for_each(table, "id", [1, 2, 3])
    assert len(each) == 3 and each.files == [] and each.files_of(2) == []
    assert iceberg.plan_files(table, "id", [1]) == []
    assert iceberg.read(table, "id", [1]).num_rows == 0
    with pytest.raises(LakeError):
        iceberg.files_for_each(table, "missing", [1])
