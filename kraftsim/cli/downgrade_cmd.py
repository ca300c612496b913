"""`kraftsim downgrade-report PATH --to MV`: would lowering metadata.version lose anything,
and what would Kafka's controller answer?

The report itself (what the data needs, what Kafka says) is
kraftsim.controller.downgrade_report's; this module loads the image (the end of a log
directory, or `--at OFFSET`), finds the active controller and prints the report.

The active controller is the leader named in the directory's quorum-state, else the
lowest registered controller; static voters come from quorum-state. Its release is the
catalog's (default: the newest release, whose refusal text follows the catalog's
`mv_downgrade_error` policy). Exit status: 0 when nothing would be lost, 1 when something
would, 2 for bad input.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from kraftsim.cli.common import add_catalog_options, add_damage_option, catalog_from_args, node_id, offset
from kraftsim.cli.replay_cmd import (
    BadInput, input_errors, load, parse_metadata_version, print_json, show_progress, split_offset,
)
from kraftsim.controller.downgrade_report import DowngradeReport, downgrade_report
from kraftsim.storage.names import QUORUM_STATE_FILE, PathKind, classify_path
from kraftsim.storage.quorum_state import read_quorum_state
from kraftsim.storage.view import metadata_dir_of
from kraftsim.versions import FEATURE_NAME as MV_NAME


def report_lines(r: DowngradeReport) -> list[str]:
    where = f"{r.path} at offset {r.offset}" if r.path else f"the image at offset {r.offset}"
    cur = "no finalized metadata.version" if r.current is None else f"{r.current} ({r.current_level})"
    out = [f"{MV_NAME} {cur} → {r.target} ({r.target_level}) for {where}: {r.direction}"]
    if r.lossless:
        out.append(f"data: nothing in this image would be lost (writer {r.writer})")
    else:
        out.append(f"data: {len(r.lost)} item(s) would be lost (writer {r.writer}):")
        for x in r.lost:
            silent = "" if x.kafka_reported else " (dropped silently by Kafka)"
            out.append(f"  {x.kind}: {x.entity}{silent}")
        for s in r.kafka_loss_summaries:
            out.append(f"  Kafka's writer: Metadata has been lost because the following could not be represented "
                       f"in metadata.version {r.target}: {s}")
    if r.version_changes:
        out.append("versions in between:")
        out += [f"  {x.strip()}" for x in r.version_changes[1:]] or ["  no metadata change"]
    for n in r.feature_notes:
        out.append(f"feature: {n}")
    if r.verdicts:
        lossy = "crosses a metadata change" if r.catalog_lossy else "crosses no metadata change"
        out.append(f"Kafka's verdict ({r.controller}; the change {lossy}):")
        for v in r.verdicts:
            what = "accepted" if v.accepted else f"refused, {v.error}: {v.message}"
            out.append(f"  {v.upgrade_type}: {what}")
            out.append(f"    kafka-features --dry-run: {v.tool_line}")
    return out


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("downgrade-report", help="would lowering metadata.version lose data, what exactly, and what "
                                                "Kafka's controller would answer",
                       description="Exit 0 when nothing in the image would be lost at MV, 1 when something would.")
    p.add_argument("path", metavar="PATH", help="a log directory (DIR@OFFSET for its state at OFFSET), snapshot, "
                                                "segment or bootstrap.checkpoint")
    p.add_argument("--to", required=True, metavar="MV", help="the target metadata.version (level or version)")
    p.add_argument("--at", type=offset, metavar="OFFSET", help="the state after every record below OFFSET")
    p.add_argument("--controller-id", type=node_id, metavar="N",
                   help="the active controller's node id (default: quorum-state's leader, else the lowest "
                        "registered controller)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--progress", action="store_true", help="show progress on stderr even when it is not a terminal")
    add_damage_option(p)
    add_catalog_options(p)
    p.set_defaults(run=input_errors(run_downgrade_report))


def _quorum(path: Path) -> tuple[int | None, tuple[int, ...]]:
    """(leader id, static voters) from the directory's quorum-state, when there is one."""
    if classify_path(path) not in (PathKind.METADATA_DIR, PathKind.LOG_DIR):
        return None, ()
    qs = metadata_dir_of(path) / QUORUM_STATE_FILE
    if not qs.is_file():
        return None, ()
    state = read_quorum_state(qs)
    leader = state.leader_id if state.leader_id >= 0 else None
    return leader, tuple(state.current_voters or ())


def run_downgrade_report(args: argparse.Namespace) -> int:
    catalog = catalog_from_args(args)
    path, offset = split_offset(args.path)
    if offset is not None and args.at is not None and offset != args.at:
        raise BadInput(f"{args.path}: two different offsets ({offset} and --at {args.at})")
    at = args.at if args.at is not None else offset
    target = parse_metadata_version(catalog, args.to)
    result = load(path, catalog, at=at, progress=show_progress(args), up_to_damage=args.up_to_damage)
    leader, voters = _quorum(path)
    node = args.controller_id if args.controller_id is not None else leader
    report = downgrade_report(result.image, target, catalog, path=str(path), node_id=node, static_voters=voters)
    if args.json:
        print_json(report)
    else:
        print("\n".join(report_lines(report)))
    return 0 if report.lossless and result.partial is None else 1  # a partial state never passes
