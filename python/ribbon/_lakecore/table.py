"""ribbon.lake's tables: resolving one (a directory or glob, local or a URI), listing its
data files, naming them relative to its root, and the facts an index records of each file
(footer, rows) and the key kind of its column."""

from __future__ import annotations

import fnmatch
import hashlib
import os
import posixpath
import re
import urllib.parse
from dataclasses import dataclass
from typing import Dict, Optional

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq


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


# Shown (in tracebacks, pickles) as ribbon.lake's, which re-exports them.
LakeError.__module__ = IndexUnusable.__module__ = "ribbon.lake"


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


def spark_path(location: str) -> str:
    """A file's location as Spark reads it: glob characters escaped (Spark globs paths),
    s3:// as s3a://."""
    if location.startswith("s3://"):
        location = "s3a://" + location[len("s3://"):]
    return re.sub(r"([\\*?\[\]{}])", r"\\\1", location)


# ---------------------------------------------------------------------------------------
# What the index records of each file (the same function for both engines, on the driver).


def _footer_facts(table: Table, relative: str, info: pafs.FileInfo, column: str):
    """(facts, column type) of one file: size, mtime, footer length and hash, rows; the
    column's Arrow type, None if the file has no such column (a file written before the
    column was added). LakeError if it is not Parquet."""
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
    facts = {
        "size": size,
        "mtime_ns": info.mtime_ns,
        "footer_bytes": footer_bytes,
        "footer_hash": hashlib.blake2b(footer, digest_size=16).hexdigest(),
        "rows": meta.num_rows,
    }
    return facts, (schema.field(index).type if index >= 0 else None)


def key_kind_of_type(arrow_type: pa.DataType, column: str) -> str:
    """"u64" for integer columns, "bytes" for string and binary ones; LakeError otherwise."""
    if pa.types.is_integer(arrow_type):
        return "u64"
    if (pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)
            or pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type)):
        return "bytes"
    raise LakeError(f"column {column!r} is of type {arrow_type}: an index takes integer, "
                    "string or binary columns")


def key_kind_of_type_or_none(arrow_type) -> Optional[str]:
    try:
        return key_kind_of_type(arrow_type, "")
    except LakeError:
        return None
