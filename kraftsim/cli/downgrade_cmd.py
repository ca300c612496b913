"""`kraftsim downgrade-report PATH --to MV`: would lowering metadata.version lose anything?

Two answers, kept apart because they differ:

- **What the data needs.** The image (the end of a log directory, or `--at OFFSET`) is
  written at the target metadata.version with the image writer and a loss report, so
  every item that version cannot represent is listed by kind and entity (broker log
  directories, controller registrations, replica directory assignments, ELR fields,
  SCRAM credentials, delegation tokens, ...), with the summary strings Kafka's writer would
  throw. Also listed: what the versions in between change (the catalog's gates), and
  finalized features whose levels need a higher metadata.version.
- **What Kafka says.** The UpdateFeatures request `kafka-features downgrade --metadata MV`
  (and `--unsafe`) sends is decided by kraftsim's controller rules as the active controller
  of the catalog's release would decide it (default: the newest release, whose refusal
  text follows the catalog's `mv_downgrade_error` policy). Kafka refuses any downgrade
  across a metadata.version that changed metadata, whatever the data holds.

The active controller is the leader named in the directory's quorum-state, else the
lowest registered controller; static voters come from quorum-state. Exit status: 0 when
nothing would be lost, 1 when something would, 2 for bad input.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import msgspec

from kraftsim.cli.common import add_catalog_options, catalog_from_args
from kraftsim.cli.replay_cmd import (
    BadInput, input_errors, load, parse_metadata_version, print_json, show_progress, split_offset,
)
from kraftsim.controller.context import ControllerContext
from kraftsim.controller.features import (
    FAILED_PREFIX, FeatureUpdate, UpdateFeaturesRequest, UpgradeType, update_features,
)
from kraftsim.errors import KraftsimError
from kraftsim.image.image import MetadataImage
from kraftsim.image.loss import LossReport
from kraftsim.image.writer import WriterLine, write_image
from kraftsim.storage.names import QUORUM_STATE_FILE, PathKind, classify_path
from kraftsim.storage.quorum_state import read_quorum_state
from kraftsim.storage.view import metadata_dir_of
from kraftsim.versions import FEATURE_NAME as MV_NAME, Catalog, IllegalArgument, MetadataVersion


class LostItem(msgspec.Struct, kw_only=True):
    kind: str
    entity: str
    kafka_summary: str
    kafka_reported: bool  # False: Kafka drops it silently (ELR with the feature off)


class Verdict(msgspec.Struct, kw_only=True):
    """The controller's answer to one UpdateFeatures request (validate only)."""

    upgrade_type: str
    accepted: bool
    error: str | None  # the API error name
    message: str | None  # the controller's message
    tool_line: str  # what `kafka-features ... --dry-run` prints for it


class DowngradeReport(msgspec.Struct, kw_only=True):
    path: str | None
    offset: int  # the image's end offset
    current: str | None
    current_level: int | None
    target: str
    target_level: int
    direction: str  # "downgrade", "upgrade" or "unchanged"
    writer: str
    lossless: bool  # nothing in this image would be dropped
    catalog_lossy: bool  # some version in between changed metadata (Kafka's checkIfMetadataChanged)
    lost: list[LostItem] = []
    kafka_loss_summaries: list[str] = []
    version_changes: list[str] = []
    feature_notes: list[str] = []
    controller: str = ""
    verdicts: list[Verdict] = []


def _verdict(ctx: ControllerContext, level: int, upgrade_type: UpgradeType, op: str) -> Verdict:
    request = UpdateFeaturesRequest(updates=(FeatureUpdate(MV_NAME, level, int(upgrade_type)),), validate_only=True)
    result = update_features(ctx, request)
    if result.ok:
        return Verdict(upgrade_type=upgrade_type.name, accepted=True, error=None, message=None,
                       tool_line=f"{MV_NAME} can be {op}d to {level}.")
    top = FAILED_PREFIX + (result.error.message or "")
    return Verdict(upgrade_type=upgrade_type.name, accepted=False, error=result.error.name,
                   message=result.error.message, tool_line=f"Can not {op} {MV_NAME} to {level}. {top}")


def _feature_notes(image: MetadataImage, catalog: Catalog, target: MetadataVersion) -> list[str]:
    notes = []
    for name, level in image.features.finalized:
        try:
            deps = catalog.dependencies(name, level)
        except (IllegalArgument, KraftsimError):
            continue
        need = deps.get(MV_NAME)
        if need is not None and need > target.level:
            notes.append(f"{name}={level} needs {MV_NAME} {catalog.metadata_version(need).version} or higher "
                         "(Kafka checks no dependencies when metadata.version changes)")
    return notes


def downgrade_report(image: MetadataImage, target: Any, catalog: Catalog, *, path: str | None = None,
                     node_id: int | None = None, static_voters: tuple[int, ...] = (),
                     writer_line: WriterLine | str | None = None) -> DowngradeReport:
    """What writing `image` at `target` drops, and what the active controller of `catalog`'s
    release answers to the metadata.version change."""
    mv = catalog.metadata_version(target)
    current_level = image.metadata_version
    current = None if current_level is None else catalog.metadata_version(current_level)
    report = LossReport()
    write_image(image, mv, catalog, loss_handler=report, writer_line=writer_line)
    line = writer_line or WriterLine.from_catalog(catalog)
    out = DowngradeReport(
        path=path, offset=image.provenance.last_contained_offset + 1,
        current=None if current is None else current.version, current_level=current_level,
        target=mv.version, target_level=mv.level,
        direction=("unchanged" if current is None or mv.level == current.level
                   else "downgrade" if mv.level < current.level else "upgrade"),
        writer=line if isinstance(line, str) else line.name,
        lossless=report.lossless,
        catalog_lossy=current is not None and mv.level < current.level and catalog.is_lossy(current, mv),
        lost=[LostItem(kind=x.kind, entity=x.entity, kafka_summary=x.summary, kafka_reported=x.kafka_reported)
              for x in report],
        kafka_loss_summaries=report.summaries(),
        feature_notes=_feature_notes(image, catalog, mv),
    )
    if current is not None and mv.level < current.level:
        out.version_changes = catalog.downgrade_losses(current, mv).lines()
    if current is not None:
        if node_id is None:
            ids = sorted(image.cluster.controllers)
            node_id = ids[0] if ids else (min(static_voters) if static_voters else 0)
        ctx = ControllerContext(node_id=node_id, supported=catalog.supported_features(), image=image,
                                catalog=catalog, static_voters=tuple(static_voters))
        out.controller = f"node {node_id} running Kafka {catalog.release.name}"
        if mv.level >= current.level:
            out.verdicts = [_verdict(ctx, mv.level, UpgradeType.UPGRADE, "upgrade")]
        else:
            out.verdicts = [_verdict(ctx, mv.level, UpgradeType.SAFE_DOWNGRADE, "downgrade"),
                            _verdict(ctx, mv.level, UpgradeType.UNSAFE_DOWNGRADE, "downgrade")]
    return out


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
    p.add_argument("--at", type=int, metavar="OFFSET", help="the state after every record below OFFSET")
    p.add_argument("--controller-id", type=int, metavar="N",
                   help="the active controller's node id (default: quorum-state's leader, else the lowest "
                        "registered controller)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--progress", action="store_true", help="show progress on stderr even when it is not a terminal")
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
    result = load(path, catalog, at=at, progress=show_progress(args))
    leader, voters = _quorum(path)
    node = args.controller_id if args.controller_id is not None else leader
    report = downgrade_report(result.image, target, catalog, path=str(path), node_id=node, static_voters=voters)
    if args.json:
        print_json(report)
    else:
        print("\n".join(report_lines(report)))
    return 0 if report.lossless else 1
