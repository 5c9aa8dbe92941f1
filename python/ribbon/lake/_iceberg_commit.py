"""Statistics files: read (the footer and only the wanted blobs' byte ranges) and committed
so that no other writer's statistics are lost. PyIceberg's statistics update carries no
requirement and replaces a snapshot's statistics file whole, so :func:`commit_statistics`
refreshes the table and merges into the file registered now, commits, then checks in the
metadata log that the file it replaced is the one it merged; if another writer committed in
between, it merges that writer's file too and commits again (a bounded number of times). A
snapshot expired meanwhile is refused, and a Puffin file no commit keeps is deleted."""

from __future__ import annotations

import uuid
import warnings
from typing import List, Optional, Sequence, Tuple

from .._lakecore.table import IndexUnusable, LakeError
from . import _puffin
from ._iceberg_table import table_name

#: How many times a commit is tried when other writers commit statistics at the same time.
COMMIT_ATTEMPTS = 4

# The blob types PyIceberg 0.12's table metadata accepts in a statistics file's blob-metadata
# (its model is a Literal of the spec's types): a statistics file that listed a ribbon blob
# there would make the table unreadable by PyIceberg, so ribbon's blobs are found from the
# Puffin footer and only these are listed.
LISTABLE_BLOB_TYPES = {"apache-datasketches-theta-v1", "deletion-vector-v1"}


def statistics_of(metadata, snapshot_id: int):
    return next((s for s in metadata.statistics if s.snapshot_id == snapshot_id), None)


def read_statistics(table, statistics, wanted=None) -> List[_puffin.Blob]:
    """The blobs (those ``wanted`` says, all by default) of a statistics file: its footer
    read from the end (the recorded footer size first), then each wanted blob's range.
    IndexUnusable (a LakeError) where the file is gone or not a Puffin file."""
    return _read_blobs(table, statistics, wanted, with_data=True)


def listed_blobs(table, statistics) -> List[_puffin.Blob]:
    """The blobs a statistics file's footer lists (type, fields, snapshot, properties), data
    left empty: which fields the file indexes, its footer alone read. IndexUnusable as
    :func:`read_statistics`."""
    return _read_blobs(table, statistics, None, with_data=False)


def _read_blobs(table, statistics, wanted, *, with_data: bool) -> List[_puffin.Blob]:
    path = statistics.statistics_path
    try:
        source = table.io.new_input(path)
        size = len(source)
        with source.open() as f:
            tail = _tail(f, size, max(int(statistics.file_footer_size_in_bytes or 0),
                                      _puffin.FOOTER_OVERHEAD))
            entries, _ = _puffin.read_footer(tail, size, path)
            blobs = []
            for entry in entries:
                if wanted is None or wanted(entry.blob):
                    if with_data:
                        f.seek(entry.offset)
                        entry.blob.data = f.read(entry.length)
                    blobs.append(entry.blob)
    except LakeError as e:
        raise IndexUnusable(str(e)) from None
    except (OSError, ValueError) as e:
        unusable = IndexUnusable(f"statistics file {path} cannot be read: {e}")
        # A file that is there but failed to read may hold other engines' blobs: not replaced.
        unusable.transient = isinstance(e, OSError) and not isinstance(e, FileNotFoundError)
        raise unusable from None
    if size != statistics.file_size_in_bytes:
        raise IndexUnusable(f"statistics file {path} is {size} bytes, not the "
                            f"{statistics.file_size_in_bytes} its registration records")
    return blobs


def _tail(f, size: int, guess: int) -> bytes:
    """The file's last bytes, the whole Puffin footer among them (read again if the guess,
    the recorded footer size, was short)."""
    length = min(size, guess)
    f.seek(size - length)
    tail = f.read(length)
    if len(tail) >= _puffin.FOOTER_OVERHEAD:
        payload = int.from_bytes(tail[-12:-8], "little", signed=True)
        needed = payload + _puffin.FOOTER_OVERHEAD  # magic, payload, trailer
        if length < needed <= size:
            f.seek(size - needed)
            tail = f.read(needed)
    return tail


def _key(blob: _puffin.Blob) -> Tuple[str, Tuple[int, ...]]:
    """Blobs of one key (type and fields) replace each other: a column's ribbon parts, or
    another engine's sketch of a column."""
    return blob.type, tuple(blob.fields)


def _merged(table, blobs: Sequence[_puffin.Blob], sources) -> Tuple[list, list]:
    """(blobs, blob-metadata) of the file to write: ``blobs``, then the blobs of ``sources``
    (statistics files, the newest first) of the keys not yet there, as stored, with the
    blob-metadata entries their files registered for them."""
    out, listed, taken = list(blobs), [], {_key(b) for b in blobs}
    for statistics in sources:
        try:
            carried = read_statistics(table, statistics, lambda b: _key(b) not in taken)
        except LakeError as e:
            if getattr(e, "transient", False):
                raise LakeError(f"{e}: not replaced, try again") from None
            warnings.warn(f"ribbon.lake.iceberg: the statistics file {statistics.statistics_path}"
                          f" of snapshot {statistics.snapshot_id} is replaced and not carried "
                          f"over: {e}", stacklevel=4)
            continue
        keys = {_key(b) for b in carried}
        out += carried
        listed += [m for m in statistics.blob_metadata
                   if (m.type, tuple(m.fields)) in keys and (m.type, tuple(m.fields)) not in taken]
        taken |= keys
    described = {(m.type, tuple(m.fields)) for m in listed}
    listed += [_listed(b) for b in out
               if b.type in LISTABLE_BLOB_TYPES and _key(b) not in described]
    return out, listed


def _listed(blob: _puffin.Blob):
    from pyiceberg.table.statistics import BlobMetadata

    return BlobMetadata(**{"type": blob.type, "snapshot-id": blob.snapshot_id,
                           "sequence-number": blob.sequence_number, "fields": blob.fields,
                           "properties": blob.properties or None})


def _write(table, snapshot_id: int, blobs, listed):
    from pyiceberg.table.statistics import StatisticsFile

    from .. import __version__

    layout = _puffin.write(blobs, {"created-by": f"ribbon {__version__}"})
    path = (f"{table.metadata.location.rstrip('/')}/metadata/"
            f"{snapshot_id}-{uuid.uuid4()}-ribbon.stats")
    with table.io.new_output(path).create(overwrite=False) as out:
        out.write(layout.data)
    return StatisticsFile(**{"snapshot-id": snapshot_id, "statistics-path": path,
                             "file-size-in-bytes": len(layout.data),
                             "file-footer-size-in-bytes": layout.footer_size,
                             "blob-metadata": listed})


def _delete(table, paths: Sequence[str]) -> None:
    for path in paths:
        try:
            table.io.delete(path)
        except (OSError, ValueError):  # already gone, or the store refuses: an orphan left
            pass


def _replaced(table) -> Optional[object]:
    """The table metadata our commit was applied to (the metadata log's last entry), or None
    where the catalog keeps no log."""
    from pyiceberg.serializers import FromInputFile

    log = table.metadata.metadata_log
    return FromInputFile.table_metadata(table.io.new_input(log[-1].metadata_file)) if log else None


def _snapshot_gone(table, snapshot_id: int, what: str) -> LakeError:
    return LakeError(f"snapshot {snapshot_id} of table {table_name(table)} is gone (expired "
                     f"{what}): its statistics are not registered")


def commit_statistics(table, snapshot_id: int, blobs: Sequence[_puffin.Blob]) -> str:
    """Registers a new Puffin file holding ``blobs`` and, as stored, every other blob of the
    snapshot's statistics file (another column's index, another engine's sketch, with its
    blob-metadata) as the snapshot's statistics file; a blob of ``blobs``'s types and fields
    replaces the old ones. Refreshes ``table``. Returns the new file's path; LakeError where
    the snapshot is gone or the commit fails (no Puffin file of ours left behind)."""
    from pyiceberg.exceptions import CommitFailedException

    clobbered, written = [], []  # files a commit of ours replaced unread; our files
    for _ in range(COMMIT_ATTEMPTS):
        table.refresh()
        if table.snapshot_by_id(snapshot_id) is None:
            _delete(table, written)
            raise _snapshot_gone(table, snapshot_id, "before the commit")
        current = statistics_of(table.metadata, snapshot_id)
        merged, listed = _merged(table, blobs, clobbered + ([current] if current else []))
        statistics = _write(table, snapshot_id, merged, listed)
        try:
            with table.update_statistics() as update:
                update.set_statistics(statistics)
        except CommitFailedException:  # another commit won the race: merge it, try again
            _delete(table, [statistics.statistics_path])
            continue
        except Exception as e:
            _delete(table, [statistics.statistics_path])
            raise LakeError(f"committing the statistics of snapshot {snapshot_id} of table "
                            f"{table_name(table)} failed: {e}") from e
        written.append(statistics.statistics_path)
        if table.snapshot_by_id(snapshot_id) is None:
            with table.update_statistics() as update:
                update.remove_statistics(snapshot_id)
            _delete(table, written)
            raise _snapshot_gone(table, snapshot_id, "during the commit")
        base = _replaced(table)
        before = statistics_of(base, snapshot_id) if base is not None else current
        if _path(before) == _path(current):
            _delete(table, written[:-1])
            return statistics.statistics_path
        if before is not None:  # another writer's file, replaced by ours unread
            clobbered.insert(0, before)
    _delete(table, written[:-1])
    raise LakeError(f"the statistics of snapshot {snapshot_id} of table {table_name(table)} "
                    f"were changed by other writers {COMMIT_ATTEMPTS} times while ribbon "
                    "committed: try again")


def _path(statistics) -> Optional[str]:
    return statistics.statistics_path if statistics is not None else None
