"""The statistics file ribbon shares with other engines and writers: another engine's blobs
(Spark's zstd theta sketches, an LZ4 footer) carried over byte for byte with their
blob-metadata, foreign or unreadable files passed over in the ancestor walk, two writers that
never lose each other's blobs, an expired snapshot refused, no orphan file, and the smaller
promises (an empty table, the index's options kept, the footer's hash, one read of a
statistics file's footer and only the blobs wanted)."""

import glob
import hashlib
import json
import warnings

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("pyiceberg")

from pyiceberg.table.statistics import BlobMetadata, StatisticsFile  # noqa: E402

from ribbon.lake import LakeError  # noqa: E402
from ribbon.lake import _iceberg_cli, _iceberg_commit, _iceberg_plan  # noqa: E402
from ribbon.lake import _puffin as puffin  # noqa: E402
from ribbon.lake import iceberg  # noqa: E402
from test_iceberg import batch, catalog, make_table, oracle, same_rows, some_keys  # noqa: E402,F401
from test_puffin import lz4_footer  # noqa: E402

THETA = "apache-datasketches-theta-v1"


def register_spark_statistics(table, sketch=bytes(range(256)) * 40, garbage=False):
    """A statistics file as Spark's compute_table_stats writes it for the current snapshot:
    a theta sketch of field 1, zstd-compressed, ``ndv`` in its properties, an LZ4 footer, and
    its blob-metadata registered (``garbage``: a file that is no Puffin file at all)."""
    snapshot = table.current_snapshot()
    stored = pa.Codec("zstd").compress(sketch, asbytes=True)
    blob = puffin.Blob(THETA, [1], snapshot.snapshot_id, snapshot.sequence_number, stored,
                       {"ndv": "1234"}, compression_codec="zstd")
    data = b"garbage " * 20 if garbage else lz4_footer(
        puffin.write([blob], {"created-by": "Spark 3.5"}).data)
    path = f"{table.metadata.location}/metadata/{snapshot.snapshot_id}-spark.stats"
    with table.io.new_output(path).create(overwrite=True) as out:
        out.write(data)
    listed = [BlobMetadata(**{"type": THETA, "snapshot-id": snapshot.snapshot_id,
                              "sequence-number": snapshot.sequence_number, "fields": [1],
                              "properties": {"ndv": "1234"}})]
    footer = 0 if garbage else len(data) - 4 - len(stored)
    with table.update_statistics() as update:
        update.set_statistics(StatisticsFile(**{
            "snapshot-id": snapshot.snapshot_id, "statistics-path": path,
            "file-size-in-bytes": len(data), "file-footer-size-in-bytes": footer,
            "blob-metadata": listed}))
    return blob, listed


def registered(table):
    (statistics,) = [s for s in table.metadata.statistics
                     if s.snapshot_id == table.current_snapshot().snapshot_id]
    with table.io.new_input(statistics.statistics_path).open() as f:
        return statistics, puffin.read(f.read())


def ribbon_fields(blobs):
    return sorted(b.fields[0] for b in blobs if b.type == iceberg.BLOB_TYPE)


def test_another_engines_blobs_are_carried_byte_for_byte(catalog):
    table = make_table(catalog, files=3)
    theta, listed = register_spark_statistics(table)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "replaced and not carried over"
        iceberg.build_index(table, "id")
        iceberg.build_index(table, "name")
    statistics, blobs = registered(table)
    (carried,) = [b for b in blobs if b.type == THETA]
    assert (carried.data, carried.compression_codec, carried.properties) == (
        theta.data, "zstd", {"ndv": "1234"})
    assert statistics.blob_metadata == listed
    assert ribbon_fields(blobs) == [1, 2]
    assert catalog.load_table("db.events").metadata.statistics[0].blob_metadata == listed


def test_a_file_that_fails_to_read_is_not_replaced(catalog, monkeypatch):
    """A passing read error (a network's) is not a corrupt file: the commit is refused rather
    than the other engine's statistics dropped."""
    table = make_table(catalog, files=2)
    register_spark_statistics(table)
    spark_file = registered(table)[0]
    from pyiceberg.io.pyarrow import PyArrowFile
    opened = PyArrowFile.open

    def flaky(self, seekable=True):
        if self.location == spark_file.statistics_path:
            raise ConnectionResetError("connection reset by peer")
        return opened(self, seekable)
    monkeypatch.setattr(PyArrowFile, "open", flaky)
    with pytest.raises(LakeError, match="not replaced"):
        iceberg.build_index(table, "id")
    monkeypatch.undo()
    assert registered(catalog.load_table("db.events"))[0] == spark_file


@pytest.mark.parametrize("garbage", [False, True], ids=["foreign", "unreadable"])
def test_the_ancestor_walk_passes_over_other_files(catalog, garbage):
    table = make_table(catalog, files=3)
    iceberg.build_index(table, "id")
    indexed = table.current_snapshot().snapshot_id
    table.append(batch(np.random.default_rng(5)))
    register_spark_statistics(table, garbage=garbage)
    assert iceberg.load_index(table, "id").snapshot_id == indexed
    keys = some_keys(table, "id", 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        same_rows(iceberg.read(table, "id", keys), oracle(table, "id", keys))


def test_two_writers_keep_each_others_blobs(catalog):
    make_table(catalog, files=3)
    first, second = catalog.load_table("db.events"), catalog.load_table("db.events")
    iceberg.build_index(first, "id")
    iceberg.build_index(second, "name")  # second's metadata is stale: no statistics yet
    table = catalog.load_table("db.events")
    _, blobs = registered(table)
    assert ribbon_fields(blobs) == [1, 2]
    for column in ("id", "name"):
        keys = some_keys(table, column, 2)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            same_rows(iceberg.read(table, column, keys), oracle(table, column, keys))


def test_a_writer_that_commits_in_between_is_merged(catalog, monkeypatch):
    """Another writer commits after this one read the registered file and before its commit
    (the window PyIceberg's requirement-free update leaves): the check after the commit sees
    it in the metadata log, and the retry carries its blobs."""
    make_table(catalog, files=3)
    register_spark_statistics(catalog.load_table("db.events"))
    write, raced = _iceberg_commit._write, []

    def write_then_race(table, snapshot_id, blobs, listed):
        written = write(table, snapshot_id, blobs, listed)
        if not raced:
            raced.append(True)
            iceberg.build_index(catalog.load_table("db.events"), "name")
        return written

    monkeypatch.setattr(_iceberg_commit, "_write", write_then_race)
    iceberg.build_index(catalog.load_table("db.events"), "id")
    table = catalog.load_table("db.events")
    _, blobs = registered(table)
    assert ribbon_fields(blobs) == [1, 2] and [b.type for b in blobs].count(THETA) == 1
    # The superseded Puffin file of the first try is gone: one ribbon file per commit kept.
    kept = glob.glob(f"{table.metadata.location[len('file://'):]}/metadata/*-ribbon.stats")
    assert len(kept) == 2  # the racing writer's (replaced) and the final one


def test_an_expired_snapshot_is_refused(catalog):
    make_table(catalog, files=3)
    stale, other = catalog.load_table("db.events"), catalog.load_table("db.events")
    old = other.current_snapshot().snapshot_id
    other.append(batch(np.random.default_rng(6)))
    other.maintenance.expire_snapshots().by_id(old).commit()
    with pytest.raises(LakeError, match="gone"):
        iceberg.build_index(stale, "id")
    table = catalog.load_table("db.events")
    assert all(s.snapshot_id != old for s in table.metadata.statistics)
    assert not glob.glob(f"{table.metadata.location[len('file://'):]}/metadata/*-ribbon.stats")


def test_a_snapshot_expired_during_the_commit_is_refused(catalog, monkeypatch):
    make_table(catalog, files=3)
    table = catalog.load_table("db.events")
    old = table.current_snapshot().snapshot_id
    write = _iceberg_commit._write

    def write_then_expire(table, snapshot_id, blobs, listed):
        written = write(table, snapshot_id, blobs, listed)
        other = catalog.load_table("db.events")
        other.append(batch(np.random.default_rng(7)))
        other.maintenance.expire_snapshots().by_id(old).commit()
        return written

    monkeypatch.setattr(_iceberg_commit, "_write", write_then_expire)
    with pytest.raises(LakeError, match="gone"):
        iceberg.build_index(table, "id")
    table = catalog.load_table("db.events")
    assert table.snapshot_by_id(old) is None and table.metadata.statistics == []
    assert not glob.glob(f"{table.metadata.location[len('file://'):]}/metadata/*-ribbon.stats")


class Refused(Exception):
    pass


def refuse_commits(monkeypatch):
    def refuse(self, *args, **kwargs):
        raise Refused("the catalog refused the commit")
    from pyiceberg.table.update.statistics import UpdateStatistics
    monkeypatch.setattr(UpdateStatistics, "commit", refuse)


def test_a_failed_commit_leaves_no_file(catalog, monkeypatch, tmp_path, capsys):
    table = make_table(catalog, files=3)
    refuse_commits(monkeypatch)
    with pytest.raises(LakeError, match="refused"):
        iceberg.build_index(table, "id")
    assert not glob.glob(f"{table.metadata.location[len('file://'):]}/metadata/*-ribbon.stats")
    code = _iceberg_cli.main(["build", "--catalog", "test", "--catalog-property", "type=sql",
                              "--catalog-property", f"uri=sqlite:///{tmp_path}/catalog.db",
                              "--catalog-property", f"warehouse=file://{tmp_path}/warehouse",
                              "--table", "db.events", "--column", "id"])
    err = capsys.readouterr().err
    assert code == 2 and "refused" in err and "Traceback" not in err


def test_a_table_with_no_snapshot_reads_nothing(catalog):
    table = catalog.create_table("db.empty", schema=make_table(catalog).schema())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert iceberg.plan_files(table, "id", [1]) == []
        same_rows(iceberg.read(table, "id", [1]), oracle(table, "id", [1]))
    with pytest.raises(LakeError, match="no column"):
        iceberg.plan_files(table, "nope", [1])


def test_update_keeps_the_index_options(catalog):
    table = make_table(catalog, files=8)
    iceberg.build_index(table, "id", fpr=1 / 1024, seed=7)
    table.append(batch(np.random.default_rng(8)))
    assert iceberg.update_index(table, "id").action == "delta"
    for _ in range(4):
        table.append(batch(np.random.default_rng(9)))
    assert iceberg.update_index(table, "id").action == "rebuild"
    index = iceberg.load_index(table, "id")
    assert [round(1 / fs.fpr) for _, fs, _ in index.parts] == [1024]
    assert index.parts[0][2]["options"] == {"fpr": 1 / 1024, "bits": None, "seed": 7}
    table.append(batch(np.random.default_rng(10)))
    iceberg.update_index(table, "id")
    assert [round(1 / fs.fpr) for _, fs, _ in iceberg.load_index(table, "id").parts] == [1024,
                                                                                          1024]


def test_each_file_is_recorded_with_its_footers_hash(catalog):
    table = make_table(catalog, files=2)
    iceberg.build_index(table, "id")
    (_, _, meta), = iceberg.load_index(table, "id").parts
    for path, facts in meta["files"].items():
        with open(path[len("file://"):], "rb") as f:
            data = f.read()
        length = int.from_bytes(data[-8:-4], "little")
        assert facts["footer_bytes"] == length and facts["by"] == "id"
        footer = data[-8 - length:-8]
        assert facts["footer_hash"] == hashlib.blake2b(footer, digest_size=16).hexdigest()


class CountingIO:
    """The table's FileIO, counting the bytes read of each path."""

    def __init__(self, io):
        self.io, self.read = io, {}

    def __getattr__(self, name):
        return getattr(self.io, name)

    def new_input(self, path):
        source, counts = self.io.new_input(path), self.read
        if not path.endswith(".stats"):
            return source

        class Stream:
            def __init__(self, stream):
                self.stream = stream

            def __getattr__(self, name):
                return getattr(self.stream, name)

            def read(self, size=-1):
                data = self.stream.read(size)
                counts[path] = counts.get(path, 0) + len(data)
                return data

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self.stream.close()

        class Input:
            def __len__(self):
                return len(source)

            def open(self, seekable=True):
                return Stream(source.open(seekable))

        return Input()


def test_statistics_footers_are_read_once_and_only_the_blobs_wanted(catalog):
    table = make_table(catalog, files=3)
    iceberg.build_index(table, "id")
    table.append(batch(np.random.default_rng(11)))
    big = np.random.default_rng(1).bytes(1 << 20)  # incompressible: a 1 MiB foreign blob
    register_spark_statistics(table, sketch=big)
    foreign = registered(table)[0]
    _iceberg_plan._LOADED.clear()
    table.io = counting = CountingIO(table.io)
    keys = some_keys(table, "id", 2)
    iceberg.read(table, "id", keys)
    assert 0 < counting.read[foreign.statistics_path] < foreign.file_footer_size_in_bytes + 64
    counting.read.clear()
    iceberg.read(table, "id", keys)
    assert foreign.statistics_path not in counting.read  # its answer is kept


def test_verify_footers_plans_a_file_whose_footer_changed(catalog):
    """A data file changed in place with its size and row count kept (here its footer's
    created_by, the rows the same): pruned as before by default, planned for every key with
    verify_footers=True."""
    table = make_table(catalog, files=3)
    iceberg.build_index(table, "id")
    path = sorted(t.file.file_path for t in table.scan().plan_files())[0]
    with open(path[len("file://"):], "rb") as f:
        data = f.read()
    import re
    version = re.findall(rb"parquet-cpp-arrow version [0-9.]+", data)[-1]
    at = data.rindex(version)
    changed = version[:-1] + (b"9" if version[-1:] != b"9" else b"8")
    with open(path[len("file://"):], "wb") as f:
        f.write(data[:at] + changed + data[at + len(version):])
    absent = [-1]  # no id is -1 here: every file pruned by the index
    plain = {t.file.file_path for t in iceberg.plan_files(table, "id", absent)}
    verified = {t.file.file_path for t in iceberg.plan_files(table, "id", absent,
                                                             verify_footers=True)}
    assert path not in plain and path in verified
    assert iceberg.files_for_each(table, "id", absent).files_of(0) == []
    assert iceberg.files_for_each(table, "id", absent, verify_footers=True).files_of(0) == [path]
    keys = some_keys(table, "id", 2)
    same_rows(iceberg.read(table, "id", keys, verify_footers=True), oracle(table, "id", keys))
