"""`kraftsim export`: metadata logs, snapshots and bootstrap files to Parquet (kraftsim/pipeline/export.py).

The default table, `records`, holds one row per record with exactly what
`kraftsim log dump --json` prints for it; `image_entities` holds the entities of the image
at the end of each log directory, snapshot and bootstrap file. A damaged input is refused
(exit 1, nothing written) unless `--up-to-damage` asks for the records before the damage,
labelled partial (exit 1); a torn last batch of a log is left out, as Kafka's recovery does,
and said in one line.
"""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import nullcontext
from pathlib import Path

from kraftsim.cli.progress import StatusLine, add_progress_flag, show_progress
from kraftsim.cli.common import INT32_MAX, add_catalog_options, add_damage_option, bounded_int, catalog_from_args
from kraftsim.pipeline.export import TABLES, export_parquet
from kraftsim.pipeline.records import DEFAULT_BATCH_ROWS
from kraftsim.protocol.registry import load_registry
from kraftsim.storage import check_output, cluster_lock, locked_directory_around


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("export", help="write metadata records (or image entities) as Parquet, streaming")
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="a .log segment, a .checkpoint snapshot, a bootstrap.checkpoint, a __cluster_metadata-0 "
                        "directory, or a folder of any of these")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="the Parquet file to write")
    p.add_argument("--table", choices=TABLES, default=TABLES[0],
                   help="records: one row per record, as `log dump --json`; image_entities: one row per entity of "
                        "the image each log directory, snapshot and bootstrap file holds (default: %(default)s)")
    p.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    p.add_argument("--batch-rows", type=bounded_int(1, INT32_MAX, "a number of rows"), default=DEFAULT_BATCH_ROWS,
                   metavar="N",
                   help="rows per Parquet row group; memory holds about this many rows (default: %(default)s)")
    p.add_argument("--compression", default="zstd", choices=("zstd", "snappy", "gzip", "lz4", "none"),
                   help="Parquet compression (default: %(default)s)")
    p.add_argument("--schemas", action="append", default=[], metavar="DIR",
                   help="an extra folder of record schema files (repeatable)")
    add_damage_option(p)
    add_catalog_options(p)
    add_progress_flag(p)
    p.add_argument("--json", action="store_true", help="print what was written as one JSON object")
    p.set_defaults(run=run_export)


def run_export(args: argparse.Namespace) -> int:
    # The catalog is read whenever one is named, for either table: a missing or broken one is
    # refused, and the record types it brings are decoded.
    check_output(args.output, args.paths, flag="--output")  # never over what it reads, checked first
    catalog = catalog_from_args(args) if args.table != "records" or args.catalog or args.release else None
    extra = catalog.record_schema_dirs if catalog is not None else ()
    registry = load_registry([*(Path(d) for d in args.schemas), *extra])
    status = StatusLine(show_progress(args))
    output = Path(args.output)
    owner = locked_directory_around(output if output.is_dir() else output.parent)
    try:
        with cluster_lock(owner) if owner is not None else nullcontext():  # (into a cluster: its one writer)
            result = export_parquet(args.paths, args.output, table=args.table, registry=registry, catalog=catalog,
                                    batch_rows=args.batch_rows, compression=args.compression, overwrite=args.overwrite,
                                    up_to_damage=args.up_to_damage,
                                    progress=(lambda text: status(lambda: f"export: {text}")) if status.enabled
                                    else None)
    finally:
        status.clear()
    for line in result.recovery:
        print(f"kraftsim: recovery: {line}", file=sys.stderr)
    for line in result.partial:
        print(f"kraftsim: PARTIAL: {line}", file=sys.stderr)
    what = "records" if args.table == "records" else "entities"
    if args.json:
        print(json.dumps({"table": args.table, "rows": result.rows, "files": result.files, "output": str(result.output),
                          "partial": list(result.partial), "recovery": list(result.recovery)}, sort_keys=True))
        return 1 if result.partial else 0
    files = f"{result.files} {'file' if result.files == 1 else 'files'}"
    label = " (PARTIAL: see above)" if result.partial else ""
    print(f"wrote {result.rows} {what} from {files} to {result.output}{label}")
    return 1 if result.partial else 0
