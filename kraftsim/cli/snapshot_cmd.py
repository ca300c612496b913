"""`kraftsim snapshot create` and `kraftsim snapshot diff`.

`create` writes the Kafka-format snapshot of a log's state at an offset (`--at`), at the image's
metadata.version or another one, with the writer of a Kafka release (inferred from the
registrations in the log unless `--release` names one); kraftsim.image.publisher.snapshot_create
holds every rule. A target metadata.version that cannot hold everything is refused with
Kafka's UnwritableMetadataException text (exit 1) unless `--allow-loss`, which writes the
snapshot and prints every dropped item.

`diff` compares two images (snapshots, directories, bootstrap files, segments; a
directory's state at an offset with `--at`, `--at-a`, `--at-b`) entity by entity and, like
diff, exits 1 when they differ.

Bad input exits 2 with one line on stderr.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import nullcontext
from pathlib import Path

from kraftsim.cli.common import (
    add_at_option, add_catalog_options, add_damage_option, add_metadata_option, catalog_from_args, offset, path_at,
    required, timestamp_ms,
)
from kraftsim.cli.progress import show_progress
from kraftsim.cli.replay_cmd import (BadInput, input_errors, load, metadata_version_token, parse_metadata_version,
                                     print_json)
from kraftsim.regular_file import why_absent
from kraftsim.image import ABSENT, diff_images, show
from kraftsim.image import image_digest
from kraftsim.image.errors import UnwritableMetadataException
from kraftsim.image import configs_dropped_line, snapshot_contents, snapshot_output_problem
from kraftsim.storage import check_output, cluster_lock, locked_directory_around
from kraftsim.storage.names import snapshot_file_name
from kraftsim.versions import load_catalog


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = sub.add_parser("snapshot", help="create KRaft snapshots from a log, compare snapshots and images")
    cmds = group.add_subparsers(dest="snapshot_command", metavar="SUBCOMMAND")
    cmds.required = True

    create = cmds.add_parser(
        "create", help="write the Kafka-format snapshot of a log's state at an offset",
        description="Write the snapshot a Kafka node would emit for the state after every record below OFFSET: "
                    "id OFFSET-<epoch of the record at OFFSET-1>, LastContainedLogTimestamp = that record's batch "
                    "timestamp, records in the order of the chosen release's image writer.")
    create.add_argument("path", metavar="PATH", help="a log directory (or __cluster_metadata-0), segment or snapshot")
    add_at_option(create, "the snapshot id's end offset: the snapshot holds the state after every record below "
                          "OFFSET (required)")
    add_metadata_option(create, "write at this metadata.version, as a level (14) or a version (3.6-IV2); default: "
                                "the one finalized at OFFSET", old=["--metadata-version"])
    create.add_argument("--allow-loss", action="store_true",
                        help="write even if MV cannot represent everything, and list what was dropped")
    create.add_argument("--release", metavar="R",
                        help="emulate the snapshot writer of Kafka release R (3.x writers add a ZkMigrationStateRecord "
                             "after the feature levels, 4.x writers do not); default: the release the registered "
                             "nodes run, from the highest metadata.version they advertise")
    create.add_argument("--catalog", metavar="FILE",
                        help="a catalog file adding hypothetical metadata versions, features, releases or record types")
    create.add_argument("--time-ms", type=timestamp_ms, metavar="MS",
                        help="timestamp for every batch (Kafka uses its wall clock while writing); default: the "
                             "LastContainedLogTimestamp, so the same input always gives the same bytes")
    create.add_argument("--allow-unaligned", action="store_true",
                        help="kraftsim: allow an offset inside a batch (Kafka refuses snapshots that are not "
                             "batch aligned)")
    create.add_argument("-o", "--output", required=True, metavar="FILE",
                        help="the file to write, or a directory to write <offset>-<epoch>.checkpoint into")
    create.add_argument("--json", action="store_true",
                        help="print one JSON object: file, snapshot, records, metadata_version, writer_release, "
                             "writer_reason, source, configs_dropped, and with --allow-loss lossless and lost")
    create.set_defaults(run=input_errors(run_create))

    diff = cmds.add_parser("diff", help="compare two snapshots or images entity by entity (exit 1 when they differ)")
    diff.add_argument("a", metavar="A", help="a snapshot, log directory (or __cluster_metadata-0), segment or "
                                             "bootstrap.checkpoint")
    diff.add_argument("b", metavar="B", help="the same kinds as A")
    add_at_option(diff, "compare both states after every record below OFFSET (a snapshot id's end offset); "
                        "default: the end")
    diff.add_argument("--at-a", type=offset, metavar="OFFSET", help="A's state at OFFSET, where B's is another")
    diff.add_argument("--at-b", type=offset, metavar="OFFSET", help="B's state at OFFSET, where A's is another")
    diff.add_argument("--json", action="store_true", help="print one JSON object")
    diff.add_argument("--progress", action="store_true", help="show progress on stderr even when it is not a terminal")
    add_damage_option(diff)
    add_catalog_options(diff)
    diff.set_defaults(run=input_errors(run_diff))


def run_create(args: argparse.Namespace) -> int:
    catalog = load_catalog(args.catalog)
    path = Path(args.path)
    if not path.exists():
        raise BadInput(f"{path}: {why_absent(path)}")
    at = required(args.at, "--at OFFSET")
    if path.is_file() and not Path(args.output).is_dir():  # (a snapshot may go into the log directory it reads)
        check_output(args.output, [path], flag="--output")
    if (problem := snapshot_output_problem(args.output)) is not None:  # (before a long read, not after it)
        raise BadInput(problem)
    mv: int | str | None = None
    if args.metadata is not None:  # (a version the writer's release knows: 3.3-IV2 is a 3.3 version, not a 4.x one)
        mv = metadata_version_token(args.metadata)
        if args.release is not None:  # (checked before the log is read; an inferred writer checks it after)
            parse_metadata_version(catalog.at_release(args.release), args.metadata)
    try:
        contents = snapshot_contents(path, at, metadata_version=mv, allow_loss=args.allow_loss,
                                     release=args.release, catalog=catalog, allow_unaligned=args.allow_unaligned)
    except UnwritableMetadataException as e:
        print(str(e), file=sys.stderr)
        print("kraftsim: nothing was written; --allow-loss writes the snapshot without it and lists every dropped item",
              file=sys.stderr)
        return 1
    output = Path(args.output)
    owner = locked_directory_around(output if output.is_dir() else output.parent)
    with cluster_lock(owner) if owner is not None else nullcontext():  # (a cluster's node directory: its one writer)
        # the text as given: Path drops a trailing separator, which names a directory, never a file
        written = contents.write(args.output, time_ms=args.time_ms)
    sid = contents.snapshot_id
    if args.json:
        out: dict[str, object] = {
            "file": str(written), "snapshot": snapshot_file_name(sid), "records": len(contents.records),
            "metadata_version": contents.metadata_version.version, "writer_release": contents.release,
            "writer_reason": contents.release_reason, "source": str(contents.source),
            "configs_dropped": contents.configs_dropped}
        if args.allow_loss:
            out.update(lossless=contents.loss.lossless, lost=contents.loss.lines(),
                       kafka_loss_summaries=contents.loss.summaries())
        print_json(out)
        return 0
    print(f"wrote {written}: snapshot {snapshot_file_name(sid)}, {len(contents.records)} records at metadata.version "
          f"{contents.metadata_version.version}, writer of Kafka {contents.release} ({contents.release_reason}), "
          f"from {contents.source}")
    if contents.configs_dropped:
        print(configs_dropped_line(contents.configs_dropped))
    if args.allow_loss:
        report = contents.loss
        if report.lossless:
            print("nothing was lost")
        else:
            print(f"lost at metadata.version {contents.metadata_version.version} ({len(report)} item(s)):")
            for line in report.lines():
                print(f"  {line}")
            for text in report.kafka_texts():
                print(f"Kafka would refuse with: {text}")
    return 0


def _json_value(v: object) -> object:
    """A changed value as JSON: absent as null, plain values as they are, the rest as the diff shows them."""
    if v is ABSENT or v is None:
        return None
    if isinstance(v, (bool, int, float)) or type(v) is str:
        return v
    if isinstance(v, tuple) and all(isinstance(x, int) for x in v):
        return list(v)
    return show(v)


def run_diff(args: argparse.Namespace) -> int:
    catalog = catalog_from_args(args)
    progress = show_progress(args)
    loads = []
    if args.at is not None and (args.at_a is not None or args.at_b is not None):
        raise BadInput("--at sets both offsets: give it, or --at-a/--at-b, not both")
    for text, at, flag in ((args.a, args.at_a, "A"), (args.b, args.at_b, "B")):
        path, offset = path_at(text, at if at is not None else args.at, flag)
        loads.append(load(path, catalog, at=offset, progress=progress, up_to_damage=args.up_to_damage))
    a, b = (r.image for r in loads)
    partial = any(r.partial for r in loads)  # compared, but never a passing comparison
    changes = diff_images(a, b)
    if args.json:
        print_json({
            "a": args.a, "b": args.b, "identical": not changes,
            "a_digest": image_digest(a), "b_digest": image_digest(b),
            "a_offset": a.provenance.last_contained_offset + 1, "b_offset": b.provenance.last_contained_offset + 1,
            "changes": [{"component": c.component, "entity": c.entity, "field": c.field, "kind": c.kind,
                         "old": _json_value(c.old), "new": _json_value(c.new),
                         "text": c.text} for c in changes],
        })
    elif changes:
        print(f"--- {args.a} (offset {a.provenance.last_contained_offset + 1})")
        print(f"+++ {args.b} (offset {b.provenance.last_contained_offset + 1})")
        for c in changes:
            print(c.text)
    return 1 if changes or partial else 0
