"""A data-skipping index for Parquet tables: which data files may hold a key, before any is
opened (docs/lake.md).

An index is one filter set file (format version 7) whose groups are the table's data files,
named by their paths relative to the table root, every file listed (those without keys too),
and whose metadata section is a JSON document naming the table, the column, its type and, per
file, what detects change (size, modification time, the Parquet footer's length and a hash of
it, rows and nulls).

>>> ribbon.lake.build_index("lake/events/", "user_id", "events.user_id.ribbon")
>>> ribbon.lake.load_index("events.user_id.ribbon").files_for([42, 43])
>>> ribbon.lake.read("lake/events/", "user_id", [42], index="events.user_id.ribbon")

The first rule: the index is advisory. :func:`read` (and :func:`candidate_files`, and
``ribbon.spark.read_indexed``) lists the table when asked and reads every file the index does
not know or whose size or modification time changed; a missing, unreadable, corrupt or foreign
index means a full scan with one warning naming the reason. The answer is always a full
scan's.

``python -m ribbon.lake build TABLE --column C -o INDEX``, ``query INDEX KEY...``,
``update TABLE --column C -i INDEX``, ``info INDEX``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import fnmatch
import hashlib
import json
import os
import posixpath
import re
import sys
import time
import urllib.parse
import uuid
import warnings
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from . import _ribbon
from . import distributed as dist
from .sets import FilterSet

#: The ``format`` field of the index's metadata (its JSON schema's version).
INDEX_FORMAT = "ribbon.lake/1"
#: Files an update may add as a delta before it rebuilds the whole index instead.
MAX_DELTAS = 8
#: An update that would re-index more than this share of the table rebuilds it.
REBUILD_SHARE = 0.25
_GLOB = re.compile(r"[*?\[]")


class LakeError(ValueError):
    """A table or index that cannot be used as asked (the message names what and where)."""


class IndexUnusable(LakeError):
    """The index cannot answer for this table and column (missing, unreadable, corrupt,
    foreign): readers fall back to a full scan with a warning naming ``reason``."""


# ---------------------------------------------------------------------------------------
# Tables: a directory (recursive) or a glob of Parquet files, local or on any file system
# pyarrow.fs resolves from a URI (s3://, gs://, hdfs://; s3a:// is read as s3://).


@dataclass
class Table:
    """A table's identity (``id``: its normalised location, as the index records it), its
    file system, its root directory there and the glob its files must match (or None)."""

    id: str
    fs: pafs.FileSystem
    root: str
    pattern: Optional[str]
    local: bool

    def path(self, relative: str) -> str:
        """A file's path on ``fs``."""
        return self.root.rstrip("/") + "/" + relative

    def uri(self, relative: str) -> str:
        """A file's location for other engines (an absolute local path, or a URI)."""
        if self.local:
            return self.path(relative)
        scheme = self.id.split("://", 1)[0]
        return f"{scheme}://{self.path(relative)}"


def open_table(table, filesystem: Optional[pafs.FileSystem] = None) -> Table:
    """Resolves a table: a local directory or glob (``lake/t``, ``lake/t/*.parquet``), a URI
    (``s3://bucket/t/``), or a path on ``filesystem``."""
    text = os.fspath(table) if isinstance(table, os.PathLike) else str(table)
    if text.startswith("s3a://"):
        text = "s3://" + text[len("s3a://"):]
    scheme = None
    if filesystem is None and "://" in text:
        scheme, rest = text.split("://", 1)
        if scheme == "file":
            text, scheme = "/" + rest.lstrip("/"), None
    if filesystem is None and scheme is None:
        text = os.path.abspath(text)
    parts = text.split("://", 1)[-1].rstrip("/").split("/")
    cut = next((i for i, p in enumerate(parts) if _GLOB.search(p)), len(parts))
    root_parts, pattern = parts[:cut], "/".join(parts[cut:]) or None
    root_text = "/".join(root_parts) or "/"
    if filesystem is not None:
        fs, root, local = filesystem, root_text, isinstance(filesystem, pafs.LocalFileSystem)
    elif scheme is not None:
        fs, root = pafs.FileSystem.from_uri(f"{scheme}://{root_text}")
        local = False
    else:
        fs, root, local = pafs.LocalFileSystem(), root_text, True
    table_id = (f"{scheme}://" if scheme else "") + "/".join(parts)
    return Table(table_id, fs, root.rstrip("/") or "/", pattern, local)


def _hidden(relative: str) -> bool:
    return any(p.startswith(("_", ".")) for p in relative.split("/"))


def list_files(table: Table) -> Dict[str, pafs.FileInfo]:
    """The table's data files: {path relative to the root: FileInfo}, every file under the
    root (recursively) that matches the glob, skipping names that start with ``_`` or ``.``
    (``_SUCCESS``, ``.crc``: pyarrow.dataset's and Spark's rule)."""
    info = table.fs.get_file_info(table.root)
    if info.type == pafs.FileType.File:  # one file given as the table
        name = posixpath.basename(table.root)
        table.root = posixpath.dirname(table.root)
        return {name: info}
    if info.type != pafs.FileType.Directory:
        raise LakeError(f"table {table.id}: {table.root} is not a directory or a file")
    prefix = table.root.rstrip("/") + "/"
    files = {}
    for entry in table.fs.get_file_info(pafs.FileSelector(table.root, recursive=True)):
        if entry.type != pafs.FileType.File or not entry.path.startswith(prefix):
            continue
        relative = normalise(entry.path[len(prefix):])
        if _hidden(relative) or (table.pattern and not fnmatch.fnmatchcase(relative, table.pattern)):
            continue
        files[relative] = entry
    return dict(sorted(files.items()))


def normalise(relative: str) -> str:
    """A relative path as the index names files: ``/`` separators, no ``.`` or empty parts."""
    parts = [p for p in relative.replace("\\", "/").split("/") if p not in ("", ".")]
    if ".." in parts:
        raise LakeError(f"{relative!r} is not under the table root")
    return "/".join(parts)


def relative_of_uri(table: Table, uri: str) -> str:
    """The relative name of a file from a URI such as Spark's ``input_file_name()`` or
    ``_metadata.file_path`` (``file:/lake/t/a%20b.parquet``: percent-encoded)."""
    parsed = urllib.parse.urlsplit(uri)
    path = urllib.parse.unquote(parsed.path if parsed.scheme else uri)
    if parsed.scheme and parsed.scheme != "file":
        path = parsed.netloc + path  # bucket/key, as pyarrow's S3 paths
    root = table.root.rstrip("/") + "/"
    if not path.startswith(root):
        root = root.lstrip("/")
        path = path.lstrip("/")
    if not path.startswith(root):
        raise LakeError(f"{uri} is not under the table root {table.root}")
    return normalise(path[len(root):])


# ---------------------------------------------------------------------------------------
# What the index records of each file (the same function for both engines, on the driver).


def _footer_facts(table: Table, relative: str, info: pafs.FileInfo, column: str):
    """(facts, column type) of one file: size, mtime, footer length and hash, rows; the
    column's Arrow type (LakeError if the file has no such column or is not Parquet)."""
    path = table.path(relative)
    with table.fs.open_input_file(path) as f:
        size = f.size()
        if size < 12:
            raise LakeError(f"{table.uri(relative)} is not a Parquet file ({size} bytes)")
        f.seek(size - 8)
        tail = f.read(8)
        if tail[4:] != b"PAR1":
            raise LakeError(f"{table.uri(relative)} is not a Parquet file (no PAR1 at its end)")
        footer_bytes = int.from_bytes(tail[:4], "little")
        f.seek(size - 8 - footer_bytes)
        footer = f.read(footer_bytes)
        f.seek(0)
        meta = pq.ParquetFile(f).metadata
        schema = meta.schema.to_arrow_schema()
    index = schema.get_field_index(column)
    if index < 0:
        raise LakeError(f"column {column!r} is not in {table.uri(relative)} (its columns: "
                        f"{', '.join(schema.names)})")
    facts = {
        "size": size,
        "mtime_ns": info.mtime_ns,
        "footer_bytes": footer_bytes,
        "footer_hash": hashlib.blake2b(footer, digest_size=16).hexdigest(),
        "rows": meta.num_rows,
    }
    return facts, schema.field(index).type


def key_kind_of_type(arrow_type: pa.DataType, column: str) -> str:
    """"u64" for integer columns, "bytes" for string and binary ones; LakeError otherwise."""
    if pa.types.is_integer(arrow_type):
        return "u64"
    if (pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)
            or pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type)):
        return "bytes"
    raise LakeError(f"column {column!r} is of type {arrow_type}: an index takes integer, "
                    "string or binary columns")


def _survey(table: Table, files: Dict[str, pafs.FileInfo], column: str, threads: int):
    """{relative: facts} and the column's type (the first file's, by name) and key kind;
    every file must have the column, of one key kind."""
    with concurrent.futures.ThreadPoolExecutor(max(1, threads)) as pool:
        found = list(pool.map(lambda item: _footer_facts(table, item[0], item[1], column),
                              files.items()))
    facts = {relative: f for relative, (f, _) in zip(files, found)}
    # A column of type null (a file written from no or only null values) holds no key.
    typed = [(r, t) for r, (_, t) in zip(files, found) if not pa.types.is_null(t)]
    first_name, first_type = typed[0] if typed else (next(iter(files)), found[0][1])
    kind = key_kind_of_type(first_type, column)
    for relative, arrow_type in typed:
        if key_kind_of_type(arrow_type, column) != kind:
            raise LakeError(f"column {column!r} is {arrow_type} in {table.uri(relative)} but "
                            f"{first_type} in {table.uri(first_name)}")
    return facts, first_type, kind


def _metadata(table: Table, column: str, arrow_type, kind: str, facts: dict, nulls: dict,
              extra: Optional[dict] = None) -> bytes:
    files = {r: dict(f, nulls=int(nulls.get(r, 0))) for r, f in facts.items()}
    doc = {
        "format": INDEX_FORMAT,
        "table": table.id,
        "column": column,
        "type": str(arrow_type),
        "key_kind": kind,
        "rows": sum(f["rows"] for f in files.values()),
        "nulls": sum(f["nulls"] for f in files.values()),
        "files": files,
    }
    doc.update(extra or {})
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


# ---------------------------------------------------------------------------------------
# The local engine: files read in parallel (only the key column, a row group at a time), the
# (file, key) pairs hashed at once and kept as 8-byte hashes (deduplicated per file), spilled
# to disk past a memory limit, then the distributed builder's steps (ribbon.distributed) run
# here range by range: the bytes of ribbon.build_set over the same pairs.


def _repeated(name: bytes, n: int) -> pa.Array:
    """A binary array of n copies of ``name`` (the pairs' group column)."""
    offsets = np.arange(n + 1, dtype=np.int32) * len(name)
    return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets.tobytes()),
                                                  pa.py_buffer(name * n)])


def _key_column(array, arrow_type) -> pa.Array:
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    return array


def _file_pair_hashes(table: Table, relative: str, column: str, arrow_type, kind: str,
                      seed: int):
    """(pair hashes, nulls) of one file, read a row group at a time. Repeated pairs are left
    to the builder, which stores a pair once."""
    name = relative.encode()
    chunks, nulls = [], 0
    with table.fs.open_input_file(table.path(relative)) as f:
        parquet = pq.ParquetFile(f)
        for i in range(parquet.num_row_groups):
            keys = _key_column(parquet.read_row_group(i, columns=[column]).column(0), arrow_type)
            if keys.null_count:
                nulls += keys.null_count
                keys = pc.drop_null(keys)
            if len(keys):
                chunks.append(_ribbon.hash_pairs(_repeated(name, len(keys)), keys, seed=seed,
                                                 group_kind="bytes", key_kind=kind))
    hashes = np.concatenate(chunks) if len(chunks) > 1 else (chunks[0] if chunks else
                                                              np.empty(0, np.uint64))
    return hashes, nulls


@dataclass
class IndexStats:
    """What :func:`build_index` and :func:`update_index` did."""

    path: str = ""
    files: int = 0
    files_indexed: int = 0
    rows: int = 0
    nulls: int = 0
    pairs: int = 0
    bytes: int = 0
    spilled: bool = False
    action: str = "build"  # "build", "delta", "rebuild", "none"
    seconds: Dict[str, float] = field(default_factory=dict)


def _build_local(table, files, column, arrow_type, kind, out, *, fpr, bits, seed, threads,
                 memory_limit, tmp_dir):
    """The local engine: files read ``threads`` at a time, their pair hashes streamed into
    the out-of-core bulk builder (ribbon.BulkBuilder), which keeps them in memory while they
    fit in ``memory_limit`` and spills them under ``tmp_dir`` beyond it."""
    nulls, with_keys = {}, 0
    built = os.path.join(os.path.dirname(os.path.abspath(out)),
                         f".{os.path.basename(out)}.{uuid.uuid4().hex}.building")
    window = max(1, threads) * 2  # at most 2 * threads files' hashes wait at once
    with _ribbon.BulkBuilder(kind, memory_limit=memory_limit, tmp_dir=tmp_dir, fpr=fpr,
                             bits=bits, seed=seed, threads=threads, groups="bytes") as builder:
        def take(relative, hashes, file_nulls):
            nonlocal with_keys
            nulls[relative] = file_nulls
            with_keys += bool(len(hashes))
            builder.add_hashes(hashes)

        with concurrent.futures.ThreadPoolExecutor(max(1, threads)) as pool:
            pending = []
            for relative in files:
                pending.append((relative, pool.submit(_file_pair_hashes, table, relative,
                                                      column, arrow_type, kind, seed)))
                if len(pending) >= window:
                    done, future = pending.pop(0)
                    take(done, *future.result())
            for done, future in pending:
                take(done, *future.result())
        builder.set_group_count(with_keys)
        builder.set_group_names([r.encode() for r in files])
        try:
            result = builder.finish(built)
            with open(built, "rb") as f:
                data = f.read()
        finally:
            if os.path.exists(built):
                os.remove(built)
    return data, nulls, result["out_of_core"]


def _build_spark(spark, table, files, facts, column, arrow_type, kind, out, *, fpr, bits, seed):
    """The Spark engine: only the listed files read, the groups named from
    ``_metadata.file_path`` (decoded on the driver), ribbon.spark's build_set route."""
    from pyspark.sql import functions as F

    from . import spark as ribbon_spark

    if kind == "u64" and pa.types.is_uint64(arrow_type):
        raise LakeError(f"column {column!r} is uint64, which Spark reads as a decimal: build "
                        "its index with engine='local'")
    paths = [spark_path(table.uri(r)) for r in files]
    quoted = "`" + column.replace("`", "``") + "`"
    df = spark.read.parquet(*paths).select(
        F.col(quoted).alias("key"), F.col("_metadata.file_path").alias("uri"))
    if kind == "u64":
        df = df.withColumn("key", F.col("key").cast("long"))
    counts = df.groupBy("uri").agg(F.count(F.lit(1)).alias("rows"),
                                   F.count("key").alias("keys")).collect()
    mapping, nulls = [], {}
    for row in counts:
        relative = relative_of_uri(table, row["uri"])
        if relative not in files:
            raise LakeError(f"Spark read {row['uri']}, which the listing of {table.id} has not")
        mapping.append((row["uri"], relative))
        nulls[relative] = row["rows"] - row["keys"]
    names = spark.createDataFrame(mapping, "uri string, file string")
    pairs = df.where(F.col("key").isNotNull()).join(F.broadcast(names), "uri").select("file", "key")
    built = os.path.join(os.path.dirname(os.path.abspath(out)),
                         f".{os.path.basename(out)}.{uuid.uuid4().hex}.building")
    try:
        ribbon_spark.build_set(pairs, "file", "key", built, fpr=fpr, bits=bits, seed=seed,
                               group_names=[r.encode() for r in files])
        with open(built, "rb") as f:
            data = f.read()
    finally:
        if os.path.exists(built):
            os.remove(built)
    return data, nulls


def spark_path(location: str) -> str:
    """A file's location as Spark reads it: glob characters escaped (Spark globs paths),
    s3:// as s3a://."""
    if location.startswith("s3://"):
        location = "s3a://" + location[len("s3://"):]
    return re.sub(r"([\\*?\[\]{}])", r"\\\1", location)


def build_index(table, column: str, index_path, *, fpr: Optional[float] = None,
                bits: Optional[int] = None, seed: int = 0, engine: str = "local", spark=None,
                threads: int = 0, memory_limit: int = 1 << 30, tmp_dir: Optional[str] = None,
                filesystem: Optional[pafs.FileSystem] = None, _only: Optional[Sequence[str]] = None,
                _extra: Optional[dict] = None) -> IndexStats:
    """Indexes ``column`` of ``table`` (a directory or glob of Parquet files, local or a URI)
    into ``index_path`` (a local path): one filter set whose groups are the data files
    (relative to the table root; every file, those with no key or only nulls too), nulls
    skipped and counted, and the metadata JSON that :func:`load_index` checks. The file is
    replaced atomically, and only once everything is built (an earlier index stays intact on
    any error); the table's delta files (:func:`update_index`) are removed after it.

    ``engine``: ``"local"`` (pyarrow here: only the key column read, ``threads`` files at
    once (0: all cores), pairs kept as 8-byte hashes by ``ribbon.BulkBuilder``, in memory
    while they fit in ``memory_limit`` and spilled under ``tmp_dir`` beyond it) or
    ``"spark"`` (``ribbon.spark.build_set`` on the session ``spark``; the same bytes).
    ``fpr``/``bits``: as ``ribbon.build_set`` (default r = 8: 1/256 a file)."""
    clock = time.monotonic()
    if engine not in ("local", "spark"):
        raise ValueError(f"engine must be 'local' or 'spark', not {engine!r}")
    if engine == "spark" and spark is None:
        raise ValueError("engine='spark' needs spark= (a SparkSession)")
    out = os.fspath(index_path)
    dist.check_output_path(out)
    threads = threads or os.cpu_count() or 1
    source = open_table(table, filesystem)
    files = list_files(source)
    if _only is not None:
        files = {r: files[r] for r in _only}
    if not files:
        raise LakeError(f"table {source.id} has no Parquet files")
    facts, arrow_type, kind = _survey(source, files, column, threads)
    surveyed = time.monotonic()
    if engine == "local":
        data, nulls, spilled = _build_local(source, files, column, arrow_type, kind, out,
                                            fpr=fpr, bits=bits, seed=seed, threads=threads,
                                            memory_limit=memory_limit, tmp_dir=tmp_dir)
    else:
        data, nulls = _build_spark(spark, source, files, facts, column, arrow_type, kind, out,
                                   fpr=fpr, bits=bits, seed=seed)
        spilled = False
    meta = _metadata(source, column, arrow_type, kind, facts, nulls, _extra)
    index = _ribbon.Filter.from_bytes(data).with_metadata(meta)
    index.save(out)  # a temporary file and a rename
    if _only is None:
        for delta in _delta_paths(out):
            os.remove(delta)
    stats = IndexStats(path=out, files=len(files), files_indexed=len(files),
                       rows=sum(f["rows"] for f in facts.values()), nulls=sum(nulls.values()),
                       pairs=len(index), bytes=index.nbytes, spilled=spilled,
                       seconds={"survey": surveyed - clock, "total": time.monotonic() - clock})
    return stats


# ---------------------------------------------------------------------------------------
# Asking: the index object, and the files a read must open.


def _delta_paths(index_path: str) -> List[str]:
    directory, base = os.path.split(os.path.abspath(index_path))
    pattern = re.compile(re.escape(base) + r"\.delta-([0-9]+)$")
    try:
        found = [(int(m.group(1)), n) for n in os.listdir(directory) if (m := pattern.match(n))]
    except FileNotFoundError:
        return []
    return [os.path.join(directory, n) for _, n in sorted(found)]


class LakeIndex:
    """A table's index (the base file and its deltas): :meth:`files_for` answers from the
    index alone; :meth:`plan` lists the table and says which files a read must open."""

    def __init__(self, parts: Sequence[Tuple[str, FilterSet, dict]]):
        self.parts = list(parts)
        base = self.parts[0][2]
        self.table, self.column = base["table"], base["column"]
        self.type, self.key_kind = base["type"], base["key_kind"]
        #: {relative path: (facts, the part that indexes it)}: the newest part wins.
        self.files: Dict[str, Tuple[dict, int]] = {}
        for i, (_, _, meta) in enumerate(self.parts):
            for relative, facts in meta["files"].items():
                self.files[relative] = (facts, i)

    @property
    def paths(self) -> List[str]:
        return [p for p, _, _ in self.parts]

    @property
    def nbytes(self) -> int:
        return sum(s.nbytes for _, s, _ in self.parts)

    def check_keys(self, keys):
        """The keys as ribbon queries take them; KeyTypeError for keys of the other kind."""
        if isinstance(keys, (str, bytes, int, np.integer)):
            keys = [keys]
        if isinstance(keys, pa.ChunkedArray):
            keys = keys.combine_chunks()
        if isinstance(keys, pa.Array):
            kind = ("u64" if pa.types.is_integer(keys.type) else "bytes"
                    if key_kind_of_type_or_none(keys.type) == "bytes" else None)
            what = str(keys.type)
        elif isinstance(keys, np.ndarray):
            kind = {"i": "u64", "u": "u64", "S": "bytes", "U": "bytes"}.get(keys.dtype.kind)
            what = str(keys.dtype)
            if keys.dtype.kind == "O":
                return self.check_keys(keys.tolist())
        else:
            keys = list(keys)
            kinds = {("int" if isinstance(k, (int, np.integer)) and not isinstance(k, bool)
                      else "bytes" if isinstance(k, (str, bytes)) else type(k).__name__)
                     for k in keys}
            what = ", ".join(sorted(kinds))
            kind = {"int": "u64", "bytes": "bytes"}.get(kinds.pop()) if len(kinds) == 1 else (
                self.key_kind if not kinds else None)
        if kind != self.key_kind:
            wanted = "integers" if self.key_kind == "u64" else "strings or bytes"
            raise _ribbon.KeyTypeError(
                f"the index of column {self.column!r} ({self.type}) takes {wanted}, not {what}")
        return keys

    def files_for(self, keys) -> List[str]:
        """The data files (relative to the table root, as recorded) that may hold any of the
        keys (numpy, Arrow or a list; one key too), sorted. Every file holding one is there;
        any other with probability about 2^-r per key. Files the index does not know are not
        (:meth:`plan` adds them)."""
        keys = self.check_keys(keys)
        found = set()
        if len(keys) == 0:
            return []
        for i, (_, fs, _) in enumerate(self.parts):
            _, indices = fs.groups_of(keys)
            names = fs.groups()
            for j in np.unique(indices):
                relative = names[int(j)].decode()
                if self.files.get(relative, (None, -1))[1] == i:
                    found.add(relative)
        return sorted(found)

    def plan(self, keys, table: Optional["Table"] = None, *, verify_footers: bool = False):
        """The files a read of these keys must open: ``(table, read, reasons)``; ``read``
        the relative paths (sorted), ``reasons`` {relative: "candidate" | "unindexed" |
        "changed"}. Lists the table; a file whose size or modification time differs from
        the index's record is read (``verify_footers``: also one whose footer differs, at
        one small read per file)."""
        table = table or open_table(self.table)
        listed = list_files(table)
        candidates = set(self.files_for(keys))
        reasons = {}
        for relative, info in listed.items():
            known = self.files.get(relative)
            if known is None:
                reasons[relative] = "unindexed"
            elif (known[0]["size"] != info.size or known[0]["mtime_ns"] != info.mtime_ns
                  or (verify_footers and _footer_facts(table, relative, info, self.column)[0]
                      ["footer_hash"] != known[0]["footer_hash"])):
                reasons[relative] = "changed"
            elif relative in candidates:
                reasons[relative] = "candidate"
        return table, sorted(reasons), reasons

    def __repr__(self) -> str:
        return (f"<ribbon.lake.LakeIndex {self.table} column {self.column!r} ({self.type}): "
                f"{len(self.files)} files, {len(self.parts)} index file(s), {self.nbytes} bytes>")


def key_kind_of_type_or_none(arrow_type) -> Optional[str]:
    try:
        return key_kind_of_type(arrow_type, "")
    except LakeError:
        return None


def _load_part(path: str) -> Tuple[str, FilterSet, dict]:
    if not os.path.exists(path):
        raise IndexUnusable(f"index {path} does not exist")
    try:
        fs = FilterSet(_ribbon.load(path, mmap=False))
    except (OSError, _ribbon.Error) as e:
        raise IndexUnusable(f"index {path} is unreadable or corrupt: {e}")
    try:
        meta = json.loads(fs.metadata or b"")
        if meta.get("format") != INDEX_FORMAT:
            raise ValueError(f"format {meta.get('format')!r}")
        for name in ("table", "column", "type", "key_kind", "files"):
            meta[name]
        if not fs.has_group_names or fs.group_kind != "bytes" or fs.key_kind != meta["key_kind"]:
            raise ValueError("its filter set does not match its metadata")
    except (ValueError, KeyError, TypeError) as e:
        raise IndexUnusable(f"{path} is not a ribbon.lake index ({e})")
    return path, fs, meta


def load_index(index_path, *, table=None, column: Optional[str] = None) -> LakeIndex:
    """Opens an index (its base file and the deltas :func:`update_index` wrote beside it).
    With ``table``/``column``: IndexUnusable unless it is that table's index of that column
    (IndexUnusable too for a missing, unreadable, corrupt or foreign file)."""
    path = os.fspath(index_path)
    parts = [_load_part(path)] + [_load_part(p) for p in _delta_paths(path)]
    index = LakeIndex(parts)
    for p, _, meta in parts:
        if (meta["table"], meta["column"]) != (index.table, index.column):
            raise IndexUnusable(f"delta {p} is of {meta['table']} column {meta['column']!r}, "
                                f"not of {index.table} column {index.column!r}")
    if table is not None:
        wanted = open_table(table).id
        if wanted != index.table:
            raise IndexUnusable(f"{path} indexes table {index.table}, not {wanted}")
    if column is not None and column != index.column:
        raise IndexUnusable(f"{path} indexes column {index.column!r}, not {column!r}")
    return index


def candidate_files(table, column: str, keys, index=None, *, verify_footers: bool = False,
                    filesystem: Optional[pafs.FileSystem] = None) -> Tuple["Table", List[str]]:
    """The files a read of ``keys`` must open (``(table, relative paths)``): the index's
    candidates, plus every file it does not know or whose size or modification time changed;
    every file (with one warning naming the reason) when ``index`` (a path or a LakeIndex)
    is None, missing, unreadable, corrupt or another table's or column's."""
    source = open_table(table, filesystem)
    if index is not None:
        try:
            if not isinstance(index, LakeIndex):
                index = load_index(index)
            if index.table != source.id:
                raise IndexUnusable(f"the index is of table {index.table}, not {source.id}")
            if index.column != column:
                raise IndexUnusable(f"the index is of column {index.column!r}, not {column!r}")
        except IndexUnusable as e:
            warnings.warn(f"ribbon.lake: full scan of {source.id}: {e}", stacklevel=3)
            index = None
    if index is None:
        return source, list(list_files(source))
    index.check_keys(keys)  # a KeyTypeError, not a scan, for keys of the wrong kind
    _, read_files, _ = index.plan(keys, source, verify_footers=verify_footers)
    return source, read_files


def _key_array(keys, arrow_type) -> pa.Array:
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    if isinstance(keys, np.ndarray) and keys.dtype.kind in "SU":
        keys = keys.tolist()
    if isinstance(keys, (str, bytes, int)):
        keys = [keys]
    if not isinstance(keys, pa.Array):
        keys = list(keys)
        if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
            keys = [k.decode() if isinstance(k, bytes) else k for k in keys]
        elif pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
            keys = [k.encode() if isinstance(k, str) else k for k in keys]
        return pa.array(keys, type=arrow_type)
    return keys.cast(arrow_type)


def read(table, column: str, keys, index=None, *, columns: Optional[List[str]] = None,
         verify_footers: bool = False, filesystem: Optional[pafs.FileSystem] = None) -> pa.Table:
    """The rows of ``table`` whose ``column`` is one of ``keys``: an Arrow table, read through
    pyarrow.dataset from the files :func:`candidate_files` names (the index's candidates,
    unindexed and changed files), so the answer is a full scan's, in file order."""
    source, files = candidate_files(table, column, keys, index, verify_footers=verify_footers,
                                    filesystem=filesystem)
    if not files:
        everything = list_files(source)
        if not everything:
            raise LakeError(f"table {source.id} has no Parquet files")
        schema = ds.dataset(source.path(next(iter(everything))), filesystem=source.fs,
                            format="parquet").schema
        empty = schema.empty_table()
        return empty.select(columns) if columns else empty
    dataset = ds.dataset([source.path(r) for r in files], filesystem=source.fs, format="parquet")
    arrow_type = dataset.schema.field(column).type
    return dataset.to_table(columns=columns,
                            filter=ds.field(column).isin(_key_array(keys, arrow_type)))


# ---------------------------------------------------------------------------------------
# Keeping it current.


def update_index(table, column: str, index_path, *, fpr: Optional[float] = None,
                 bits: Optional[int] = None, engine: str = "local", spark=None,
                 threads: int = 0, **options) -> IndexStats:
    """Indexes the files added or changed since ``index_path`` was built: a delta file
    (``INDEX.delta-N``, beside it; every query consults them) holding only those files, or,
    when they are more than a quarter of the table, there are already MAX_DELTAS deltas, or
    the index is unusable, a rebuild of the whole index. Deleted files need nothing (reads
    open only the files listed). Nothing changed: nothing written (``action`` "none")."""
    out = os.fspath(index_path)
    source = open_table(table, options.get("filesystem"))
    try:
        index = load_index(out, table=table, column=column)
    except IndexUnusable:
        stats = build_index(table, column, out, fpr=fpr, bits=bits, engine=engine, spark=spark,
                            threads=threads, **options)
        stats.action = "rebuild"
        return stats
    listed = list_files(source)
    stale = [r for r, info in listed.items()
             if r not in index.files or index.files[r][0]["size"] != info.size
             or index.files[r][0]["mtime_ns"] != info.mtime_ns]
    if not stale:
        return IndexStats(path=out, files=len(listed), action="none")
    deltas = _delta_paths(out)
    if len(stale) > REBUILD_SHARE * len(listed) or len(deltas) >= MAX_DELTAS:
        stats = build_index(table, column, out, fpr=fpr, bits=bits, engine=engine, spark=spark,
                            threads=threads, **options)
        stats.action = "rebuild"
        return stats
    number = 1 + max([int(p.rsplit("-", 1)[1]) for p in deltas] or [0])
    stats = build_index(table, column, f"{out}.delta-{number}", fpr=fpr, bits=bits,
                        engine=engine, spark=spark, threads=threads, _only=stale,
                        _extra={"delta": number}, **options)
    stats.files, stats.action = len(listed), "delta"
    return stats


# ---------------------------------------------------------------------------------------
# python -m ribbon.lake


def _parse_keys(index: LakeIndex, words: Sequence[str]):
    if index.key_kind == "u64":
        try:
            return [int(w, 0) for w in words]
        except ValueError as e:
            raise _ribbon.KeyTypeError(f"the index of {index.column!r} ({index.type}) takes "
                                       f"integers: {e}")
    return [w.encode() for w in words]


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ribbon.lake",
                                     description="Data-skipping indexes of Parquet tables.")
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="index a column of a table")
    build.add_argument("table")
    build.add_argument("--column", "-c", required=True)
    build.add_argument("-o", "--output", required=True)
    build.add_argument("--fpr", type=float)
    build.add_argument("--bits", type=int)
    build.add_argument("--threads", type=int, default=0)
    build.add_argument("--memory-limit", type=int, default=1 << 30)
    build.add_argument("--tmp-dir")
    update = commands.add_parser("update", help="index the files added or changed since")
    update.add_argument("table")
    update.add_argument("--column", "-c", required=True)
    update.add_argument("-i", "--index", required=True)
    update.add_argument("--threads", type=int, default=0)
    query = commands.add_parser("query", help="the files a read of the keys must open")
    query.add_argument("index")
    query.add_argument("keys", nargs="+")
    query.add_argument("--recorded", action="store_true",
                       help="the index's answer only (no listing of the table)")
    info = commands.add_parser("info", help="the index's metadata (JSON)")
    info.add_argument("index")
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            stats = build_index(args.table, args.column, args.output, fpr=args.fpr,
                                bits=args.bits, threads=args.threads,
                                memory_limit=args.memory_limit, tmp_dir=args.tmp_dir)
            print(f"{stats.path}: {stats.files} files, {stats.rows} rows ({stats.nulls} null), "
                  f"{stats.pairs} (file, key) pairs, {stats.bytes} bytes", file=sys.stderr)
        elif args.command == "update":
            stats = update_index(args.table, args.column, args.index, threads=args.threads)
            print(f"{args.index}: {stats.action}, {stats.files_indexed} files indexed",
                  file=sys.stderr)
        elif args.command == "query":
            index = load_index(args.index)
            keys = _parse_keys(index, args.keys)
            if args.recorded:
                files = index.files_for(keys)
            else:
                _, files = candidate_files(index.table, index.column, keys, index)
            for relative in files:
                print(relative)
        else:
            index = load_index(args.index)
            for path, fs, meta in index.parts:
                summary = {k: v for k, v in meta.items() if k != "files"}
                summary.update(path=path, files=len(meta["files"]), bytes=fs.nbytes,
                               pairs=fs.key_count, bits_per_pair=fs.bits_per_key)
                print(json.dumps(summary, sort_keys=True))
    except (LakeError, _ribbon.Error, OSError, TypeError) as e:
        print(f"ribbon.lake: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
