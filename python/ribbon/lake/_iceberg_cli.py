"""python -m ribbon.lake iceberg build|query|update|info|upsert|delete: ribbon.lake.iceberg on
the command line, the table named in a PyIceberg catalog (``--catalog NAME``, its properties from
``--catalog-property KEY=VALUE`` or, as PyIceberg finds them, ``.pyiceberg.yaml`` and
``PYICEBERG_CATALOG__*`` environment variables)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Sequence

import pyarrow as pa

from .. import _ribbon
from .._lakecore.table import LakeError


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog, description="Data-skipping indexes of Iceberg tables, stored as Puffin "
        "statistics files.")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, text in [("build", "index a column at the current snapshot"),
                       ("update", "index the data files added since"),
                       ("query", "the data files a read of the keys must open"),
                       ("info", "the index's blobs (JSON lines)"),
                       ("upsert", "upsert a Parquet file's rows by key (as table.upsert)"),
                       ("delete", "delete the rows of keys (--input, or one a line on stdin)")]:
        command = commands.add_parser(name, help=text)
        command.add_argument("--catalog", default="default",
                             help="the PyIceberg catalog's name (default: default)")
        command.add_argument("--catalog-property", action="append", default=[],
                             metavar="KEY=VALUE", help="a catalog property (uri=, warehouse=, "
                             "type=...), as pyiceberg.catalog.load_catalog takes them")
        command.add_argument("--table", required=True, help="namespace.table")
        command.add_argument("--column", "-c", required=True)
        if name in ("build", "update"):
            command.add_argument("--fpr", type=float)
            command.add_argument("--bits", type=int)
            command.add_argument("--threads", type=int, default=0)
        if name == "query":
            command.add_argument("keys", nargs="+")
            command.add_argument("--snapshot-id", type=int)
        if name in ("upsert", "delete"):
            _write_arguments(command, name)
    return parser


def _table(args):
    from pyiceberg.catalog import load_catalog
    from pyiceberg.exceptions import NoSuchTableError

    properties = {}
    for item in args.catalog_property:
        key, sep, value = item.partition("=")
        if not sep:
            raise LakeError(f"--catalog-property {item!r} is not KEY=VALUE")
        properties[key] = value
    try:
        return load_catalog(args.catalog, **properties).load_table(args.table)
    except NoSuchTableError as e:
        raise LakeError(f"no table {args.table!r} in catalog {args.catalog!r}: {e}") from None


def _parse_keys(table, column: str, words: Sequence[str]):
    from ._iceberg_table import key_field

    _, arrow_type, kind = key_field(table, column)
    if kind == "u64":
        try:
            return [int(w, 0) for w in words]
        except ValueError as e:
            raise _ribbon.KeyTypeError(f"column {column!r} ({arrow_type}) takes integers: {e}")
    binary = pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type)
    return [w.encode() for w in words] if binary else list(words)


def main(argv: Sequence[str], prog: str = "python -m ribbon.lake iceberg") -> int:
    args = _parser(prog).parse_args(argv)
    try:
        from . import iceberg

        table = _table(args)
        if args.command in ("build", "update"):
            run = iceberg.build_index if args.command == "build" else iceberg.update_index
            stats = run(table, args.column, fpr=args.fpr, bits=args.bits, threads=args.threads)
            print(json.dumps(dataclasses.asdict(stats), sort_keys=True))
        elif args.command == "query":
            keys = _parse_keys(table, args.column, args.keys)
            for task in iceberg.plan_files(table, args.column, keys, args.snapshot_id):
                print(task.file.file_path)
        elif args.command in ("upsert", "delete"):
            print(json.dumps(_write(table, args), sort_keys=True))
        else:
            index = iceberg.load_index(table, args.column)
            for _, fs, meta in index.parts:
                summary = {k: v for k, v in meta.items() if k != "files"}
                summary.update(statistics_path=index.statistics_path, files=len(meta["files"]),
                               bytes=fs.nbytes, pairs=fs.key_count,
                               bits_per_pair=fs.bits_per_key)
                print(json.dumps(summary, sort_keys=True))
    except ImportError as e:
        print(f"ribbon.lake iceberg: {e}", file=sys.stderr)
        return 2
    except (LakeError, _ribbon.Error, OSError, ValueError) as e:
        print(f"ribbon.lake iceberg: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # the catalog's own errors (a failed commit, no such namespace)
        if not type(e).__module__.startswith("pyiceberg"):
            raise
        print(f"ribbon.lake iceberg: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    return 0


def _write_arguments(command, name: str):
    command.add_argument("--input", help="a Parquet file: the rows to upsert (its columns "
                         "the table's), or for delete the keys in its --column"
                         + ("" if name == "upsert" else " (default: one key a line on stdin)"),
                         required=name == "upsert")
    command.add_argument("--threads", type=int, default=0)
    command.add_argument("--retries", type=int, default=3,
                         help="re-plans after a conflicting commit (default 3)")
    if name == "upsert":
        command.add_argument("--no-update", action="store_true",
                             help="leave matched rows as they are (insert only)")
        command.add_argument("--no-insert", action="store_true",
                             help="update matched rows only")


def _progress():
    """A progress line on stderr at most every 2 seconds, the first after 2 seconds."""
    import time

    start = last = time.monotonic()

    def report(line: str):
        nonlocal last
        now = time.monotonic()
        if now - last >= 2 or (now - start >= 2 and last == start):
            print(f"ribbon.lake iceberg: {line} ({now - start:.0f} s)", file=sys.stderr,
                  flush=True)
            last = now
    return report


def _write(table, args) -> dict:
    """upsert (--column: the join columns, comma-separated) or delete; errors as LakeError."""
    import time

    import pyarrow.parquet as pq
    from pyiceberg.exceptions import CommitFailedException, ValidationException

    from . import iceberg

    clock = time.monotonic()
    options = dict(retries=args.retries, threads=args.threads, progress=_progress())
    try:
        if args.command == "upsert":
            batch = pq.read_table(args.input)
            result = iceberg.upsert(table, batch, args.column.split(","),
                                    when_matched_update_all=not args.no_update,
                                    when_not_matched_insert_all=not args.no_insert, **options)
            done = {"rows_updated": result.rows_updated, "rows_inserted": result.rows_inserted}
        else:
            if args.input:
                keys = pq.read_table(args.input, columns=[args.column]).column(args.column)
            else:
                keys = _parse_keys(table, args.column, sys.stdin.read().split())
            done = {"rows_deleted": iceberg.delete(table, args.column, keys, **options)}
    except (TypeError, KeyError, CommitFailedException, ValidationException) as e:
        raise LakeError(f"{args.command} of {args.table}: {type(e).__name__}: {e}") from None
    done["seconds"] = round(time.monotonic() - clock, 3)
    return done
