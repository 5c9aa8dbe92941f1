"""Asking ribbon.lake's indexes: LakeIndex (the base file and its deltas), load_index, and
candidate_files (the files a read must open)."""

from __future__ import annotations

import json
import os
import re
import warnings
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs

from .. import _ribbon
from ..sets import FilterSet
from .schema import unify_types
from .table import (INDEX_FORMAT, IndexUnusable, LakeError, Table, _footer_facts,
                     key_kind_of_type_or_none, list_files, open_table)


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


def _unified_type_name(names: Sequence[str]) -> str:
    """Types recorded by an index's parts (Arrow type names), unified; the base's where they
    agree (only named types are parsed: ribbon.lake.iceberg's parts use this class too)."""
    if len(set(names)) == 1:
        return names[0]
    return str(unify_types([pa.type_for_alias(n) for n in names]))


class LakeIndex:
    """A table's index (the base file and its deltas): :meth:`files_for` answers from the
    index alone; :meth:`plan` lists the table and says which files a read must open."""

    def __init__(self, parts: Sequence[Tuple[str, FilterSet, dict]]):
        self.parts = list(parts)
        base = self.parts[0][2]
        self.table, self.column = base["table"], base["column"]
        self.key_kind = base["key_kind"]
        #: The column's type unified over the parts (a delta's files may be wider).
        self.type = _unified_type_name([m["type"] for _, _, m in self.parts])
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
        reasons = self._unknown_or_changed(table, listed, verify_footers)
        for relative in listed:
            if relative not in reasons and relative in candidates:
                reasons[relative] = "candidate"
        return table, sorted(reasons), reasons

    def _unknown_or_changed(self, table: "Table", listed, verify_footers: bool) -> Dict[str, str]:
        """{relative: "unindexed" | "changed"}: the listed files the index cannot answer for,
        which every read must open whatever its keys."""
        reasons = {}
        for relative, info in listed.items():
            known = self.files.get(relative)
            if known is None:
                reasons[relative] = "unindexed"
            elif (known[0]["size"] != info.size or known[0]["mtime_ns"] != info.mtime_ns
                  or (verify_footers and _footer_facts(table, relative, info, self.column)[0]
                      ["footer_hash"] != known[0]["footer_hash"])):
                reasons[relative] = "changed"
        return reasons

    def files_for_each(self, keys, table: Optional["Table"] = None, *,
                       verify_footers: bool = False) -> "FilesForEach":
        """For each key (10^5-10^6 at once: an upsert's batch), the files a read of that key
        alone must open, as :meth:`plan` would answer for it: a :class:`FilesForEach` (CSR
        arrays, no Python per key). Lists the table once; files it does not know or that
        changed are there for every key, files recorded but deleted for none."""
        table = table or open_table(self.table)
        listed = list_files(table)
        return self._files_for_each(keys, sorted(listed),
                                    self._unknown_or_changed(table, listed, verify_footers))

    def _files_for_each(self, keys, names: List[str], always: Dict[str, str]) -> "FilesForEach":
        """files_for_each over the table's files ``names`` (sorted), ``always`` those the
        index cannot answer for (there for every key): one batched groups_of per part."""
        keys = self.check_keys(keys)
        position = {relative: i for i, relative in enumerate(names)}
        count = len(keys)
        key_ids, file_ids = [], []
        for part, (_, fs, _) in enumerate(self.parts):
            if count == 0:
                break
            offsets, indices = fs.groups_of(keys)
            # The listed file each of this part's groups stands for, or -1: a file another
            # (newer) part records, one deleted, or one read for every key anyway.
            to_file = np.array([position[r] if self.files.get(r, (None, -1))[1] == part
                                and r in position and r not in always else -1
                                for r in (g.decode() for g in fs.groups())], dtype=np.int64)
            found = to_file[indices.astype(np.int64)] if len(to_file) else np.empty(0, np.int64)
            owner = np.repeat(np.arange(count, dtype=np.int64), np.diff(offsets.astype(np.int64)))
            key_ids.append(owner[found >= 0])
            file_ids.append(found[found >= 0])
        if always and count:
            every = np.array([position[r] for r in always], dtype=np.int64)
            key_ids.append(np.repeat(np.arange(count, dtype=np.int64), len(every)))
            file_ids.append(np.tile(every, count))
        return FilesForEach.from_pairs(names, count, key_ids, file_ids, always)

    def __repr__(self) -> str:
        return (f"<ribbon.lake.LakeIndex {self.table} column {self.column!r} ({self.type}): "
                f"{len(self.files)} files, {len(self.parts)} index file(s), {self.nbytes} bytes>")


class FilesForEach:
    """Which files may hold each of a batch of keys (:meth:`LakeIndex.files_for_each`), as
    CSR arrays: key i's files are ``files[indices[offsets[i]:offsets[i + 1]]]``, ascending.

    ``files``: the relative paths any key needs (sorted: the files the whole batch opens);
    ``offsets``: int64, one more than the keys; ``indices``: int64 positions in ``files``;
    ``always``: {relative: "unindexed" | "changed"}, the files there for every key."""

    def __init__(self, files: List[str], offsets: np.ndarray, indices: np.ndarray,
                 always: Dict[str, str]):
        self.files, self.offsets, self.indices, self.always = files, offsets, indices, always

    @classmethod
    def from_pairs(cls, names: List[str], count: int, key_ids: List[np.ndarray],
                   file_ids: List[np.ndarray], always: Dict[str, str]) -> "FilesForEach":
        """From (key, file position in ``names``) pairs, in any order, repeats allowed."""
        keys = np.concatenate(key_ids) if key_ids else np.empty(0, np.int64)
        files = np.concatenate(file_ids) if file_ids else np.empty(0, np.int64)
        pairs = np.unique(keys * max(len(names), 1) + files)  # sorted by key, then file
        keys, files = np.divmod(pairs, max(len(names), 1))
        used = np.unique(files)
        offsets = np.zeros(count + 1, dtype=np.int64)
        np.cumsum(np.bincount(keys, minlength=count), out=offsets[1:])
        return cls([names[int(i)] for i in used], offsets,
                   np.searchsorted(used, files).astype(np.int64), always)

    def __len__(self) -> int:
        """The number of keys."""
        return len(self.offsets) - 1

    def files_of(self, i: int) -> List[str]:
        """Key i's files (relative paths, sorted)."""
        return [self.files[int(j)] for j in self.indices[self.offsets[i]:self.offsets[i + 1]]]

    def to_arrow(self) -> pa.LargeListArray:
        """A large_list<string> array: one list of relative paths per key."""
        names = pa.array(self.files, type=pa.string()).take(pa.array(self.indices))
        return pa.LargeListArray.from_arrays(pa.array(self.offsets), names)

    def keys_of_files(self) -> Tuple[np.ndarray, np.ndarray]:
        """The transpose: ``(offsets, keys)``, file j's key positions being
        ``keys[offsets[j]:offsets[j + 1]]`` (ascending): what each file must be searched for."""
        order = np.argsort(self.indices, kind="stable")
        owner = np.repeat(np.arange(len(self), dtype=np.int64), np.diff(self.offsets))
        offsets = np.zeros(len(self.files) + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.indices, minlength=len(self.files)), out=offsets[1:])
        return offsets, owner[order]

    def __repr__(self) -> str:
        return (f"<ribbon.lake.FilesForEach {len(self)} keys, {len(self.files)} files, "
                f"{len(self.indices)} (key, file) pairs>")


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
    base = parts[0][2]
    for p, _, meta in parts[1:]:
        if (meta["table"], meta["column"], meta["key_kind"]) != (base["table"], base["column"],
                                                                  base["key_kind"]):
            raise IndexUnusable(f"delta {p} is of {meta['table']} column {meta['column']!r} "
                                f"({meta['type']}), not of {base['table']} column "
                                f"{base['column']!r} ({base['type']})")
    index = LakeIndex(parts)
    if table is not None:
        wanted = open_table(table).id
        if wanted != index.table:
            raise IndexUnusable(f"{path} indexes table {index.table}, not {wanted}")
    if column is not None and column != index.column:
        raise IndexUnusable(f"{path} indexes column {index.column!r}, not {column!r}")
    return index


def plan_read(table, column: str, keys, index=None, *, verify_footers: bool = False,
              filesystem: Optional[pafs.FileSystem] = None):
    """``(table, files, key type)``: the files a read of ``keys`` must open (relative paths:
    the index's candidates, plus every file it does not know or whose size or modification
    time changed) and the column's type as the index records it, unified over every file
    it indexed (None without a usable index). Every file (with one warning naming the
    reason) when ``index`` (a path or a LakeIndex) is None, missing, unreadable, corrupt or
    another table's or column's."""
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
        return source, list(list_files(source)), None
    index.check_keys(keys)  # a KeyTypeError, not a scan, for keys of the wrong kind
    _, read_files, _ = index.plan(keys, source, verify_footers=verify_footers)
    return source, read_files, pa.type_for_alias(index.type)


def candidate_files(table, column: str, keys, index=None, *, verify_footers: bool = False,
                    filesystem: Optional[pafs.FileSystem] = None) -> Tuple["Table", List[str]]:
    """The files a read of ``keys`` must open: ``(table, relative paths)``, as
    :func:`plan_read`."""
    source, files, _ = plan_read(table, column, keys, index, verify_footers=verify_footers,
                                 filesystem=filesystem)
    return source, files


def schema_files(source: "Table", files: List[str]) -> List[str]:
    """The files whose schema a read's answer has: those it opens, or, opening none, the
    table's first (LakeError for a table of no file)."""
    if files:
        return files
    first = next(iter(list_files(source)), None)
    if first is None:
        raise LakeError(f"table {source.id} has no Parquet files")
    return [first]
