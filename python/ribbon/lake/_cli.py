"""python -m ribbon.lake: build, update, query and info (ribbon/lake/__main__.py runs it)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Optional, Sequence

from .. import _ribbon
from ._build import build_index, update_index
from .._lakecore.index import LakeIndex, candidate_files, load_index
from .._lakecore.table import LakeError


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


def main(argv: Optional[Sequence[str]] = None, prog: str = "python -m ribbon.lake") -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["iceberg"]:  # its own command line, which imports PyIceberg
        from ._iceberg_cli import main as iceberg_main

        return iceberg_main(argv[1:], prog=f"{prog} iceberg")
    parser = argparse.ArgumentParser(prog=prog,
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
    commands.add_parser("iceberg", help="indexes of Iceberg tables (python -m ribbon.lake "
                        "iceberg --help)")
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            stats = build_index(args.table, args.column, args.output, fpr=args.fpr,
                                bits=args.bits, threads=args.threads,
                                memory_limit=args.memory_limit, tmp_dir=args.tmp_dir)
            missing = (f" ({stats.files_without_column} without the column)"
                       if stats.files_without_column else "")
            print(f"{stats.path}: {stats.files} files{missing}, {stats.rows} rows "
                  f"({stats.nulls} null), {stats.pairs} (file, key) pairs, {stats.bytes} bytes",
                  file=sys.stderr)
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
