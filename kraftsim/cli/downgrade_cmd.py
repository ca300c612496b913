"""`kraftsim downgrade-report PATH --metadata MV`: would lowering metadata.version lose anything,
and what would Kafka's controller answer?

The report itself (what the data needs, what Kafka says) is
kraftsim.controller.downgrade_report's; this module loads the image (the end of a log
directory, or `--at OFFSET`), finds the active controller and prints the report.

The active controller is the leader named in the directory's quorum-state, else the
lowest registered controller; static voters come from quorum-state. Its release is the
cluster's own unless `--release` names one: the release whose supported ranges equal what
the controller's registration advertises (as `cluster import` infers a node's release),
else the one whose nodes advertise the highest metadata.version the registered nodes do
(as `snapshot create` infers its writer), else the catalog's newest. The report says which
and why. With no metadata.version finalized at the offset there is nothing to downgrade: the
report says so (`direction` "none", no verdicts) and exits by the data as ever.
Exit status: 0 when nothing would be lost, 1 when something would, 2 for bad input.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import msgspec

from kraftsim.cli.common import (
    add_at_option, add_catalog_options, add_damage_option, add_metadata_option, catalog_from_args, node_id, path_at,
    required,
)
from kraftsim.cli.style import paint
from kraftsim.cli.progress import show_progress
from kraftsim.cli.replay_cmd import BadInput, input_errors, load_as_release, parse_metadata_version, print_json
from kraftsim.errors import KraftsimError
from kraftsim.controller.downgrade_report import DowngradeReport, Verdict, downgrade_report
from kraftsim.image import (LossGroup, MetadataImage, group_losses, largest_topics, named_items,
                            infer_writer_release as release_of_registered_nodes)
from kraftsim.sim.importing.plan import advertised, infer_release, ranges_text
from kraftsim.storage.names import QUORUM_STATE_FILE, PathKind, classify_path
from kraftsim.storage.quorum_state import read_quorum_state
from kraftsim.storage.view import metadata_dir_of
from kraftsim.versions import FEATURE_NAME as MV_NAME, Catalog, load_catalog


def policy_answer(verdicts: list[Verdict]) -> str:
    """One phrase for a policy's answer: what an operator asks first."""
    if not verdicts:
        return "no finalized metadata.version to change"
    if verdicts[0].accepted:
        return "accepted"
    if any(v.accepted for v in verdicts[1:]):
        return "refused; accepted only as an unsafe downgrade (--unsafe)"
    return "refused"


def _verdict_lines(label: str, verdicts: list[Verdict], shown: list[Verdict] | None = None) -> list[str]:
    out = [f"{label}: {policy_answer(verdicts)}"]
    for v in verdicts if shown is None else shown:
        out.append(f"  {v.upgrade_type}: {'accepted' if v.accepted else f'refused, {v.error}: {v.message}'}")
        out.append(f"    kafka-features --dry-run: {v.tool_line}")
    return out


def _loss_lines(groups: list[LossGroup], details: bool) -> list[str]:
    out: list[str] = []
    kinds = list(dict.fromkeys(g.kind for g in groups))
    for kind in kinds:
        mine = [g for g in groups if g.kind == kind]
        others = [e for g in mine if g.topic is None for e in g.entities]
        topics = [g for g in mine if g.topic is not None]
        total = sum(g.count for g in mine)
        where = f" in {len(topics)} topic(s)" if topics else ""
        named = others if details else named_items(others)
        out.append(f"  {kind}: {total}{where}" + (f" ({', '.join(named)})" if others else ""))
        shown = topics if details else largest_topics(topics)
        for g in shown:
            out.append(f"    {g.topic}: {g.count} partition(s)")
            if details:
                out += [f"      {e}" for e in g.entities]
        if len(shown) < len(topics):
            out.append(f"    and {len(topics) - len(shown)} more topic(s)")
    return out


def _painted(line: str) -> str:
    """A verdict line with its answer in colour on a terminal (green accepted, red refused)."""
    if not line.startswith("verdict, policy"):
        return line
    head, _, answer = line.rpartition(": ")
    return f"{head}: {paint(answer, 'green' if answer == 'accepted' else 'red')}" if head else line


def report_lines(r: DowngradeReport, release_reason: str | None = None, *, details: bool = False) -> list[str]:
    """The verdict per policy first, then what would be lost grouped by kind and topic (every
    item with `details`), then why: the controller, the versions in between, feature notes."""
    where = f"{r.path} at offset {r.offset}" if r.path else f"the image at offset {r.offset}"
    if r.current is None:  # (not "unchanged": there is no level to keep or lower)
        out = [f"no {MV_NAME} is finalized for {where}: nothing to downgrade to {r.target} ({r.target_level})"]
    else:
        out = [f"{MV_NAME} {r.current} ({r.current_level}) → {r.target} ({r.target_level}) for {where}: "
               f"{r.direction}"]
    if r.verdicts:
        lossy = "crosses a metadata change" if r.catalog_lossy else "crosses no metadata change"
        out += _verdict_lines(f"verdict, policy kafka ({r.controller}; the change {lossy})", r.verdicts)
        differ = [v for v, k in zip(r.kip778_verdicts, r.verdicts) if v != k]
        label = "verdict, policy kip-778 (kraftsim's, beyond Kafka)"
        if differ:  # only the answers that differ from Kafka's
            out += _verdict_lines(label, r.kip778_verdicts, differ)
        elif r.kip778_verdicts:
            out.append(f"{label}: the same")
    if r.lossless:
        out.append(f"data: nothing in this image would be lost (writer {r.writer})")
    else:
        out.append(f"data: {len(r.lost)} item(s) would be lost (writer {r.writer}), by kind and topic:")
        out += _loss_lines(group_losses((x.kind, x.entity) for x in r.lost), details)
        silent = sum(not x.kafka_reported for x in r.lost)
        if silent:
            out.append(f"  of which {silent} dropped silently by Kafka (it reports no loss for them)")
        for text in r.kafka_loss_texts:
            out.append(f"  Kafka's writer: {text}")
        if not details:
            out.append("  (--details lists every item; --json has them all)")
    if r.controller and release_reason:
        out.append(f"controller: {r.controller} ({release_reason})")
    if r.version_changes:
        out.append("versions in between:")
        out += [f"  {x.strip()}" for x in r.version_changes[1:]] or ["  no metadata change"]
    for n in r.feature_notes:
        out.append(f"feature: {n}")
    return out


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("downgrade-report", help="would lowering metadata.version lose data, what exactly, and what "
                                                "Kafka's controller would answer",
                       description="Report what writing the image of PATH at metadata.version MV would drop, and "
                                   "what the cluster's active controller (on the cluster's own release, unless "
                                   "--release names one) would answer to `kafka-features downgrade --metadata MV`. "
                                   "Exit 0 when nothing in the image would be lost at MV, 1 when something would, "
                                   "2 for bad input.")
    p.add_argument("path", metavar="PATH", help="a log directory (or __cluster_metadata-0), snapshot, segment or "
                                                "bootstrap.checkpoint")
    add_metadata_option(p, "the target metadata.version, as a level (14) or a version (3.6-IV2) (required)",
                        old=["--to"])
    add_at_option(p)
    p.add_argument("--controller-id", type=node_id, metavar="N",
                   help="the active controller's node id (default: quorum-state's leader, else the lowest "
                        "registered controller)")
    p.add_argument("--details", action="store_true", help="list every item that would be lost (by default: counts "
                                                            "per kind and topic)")
    p.add_argument("--json", action="store_true", help="print one JSON object (every lost item, the groups and the "
                                                       "verdict per policy)")
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


def _default_controller(image: MetadataImage, given: int | None, leader: int | None,
                        voters: tuple[int, ...] = ()) -> int | None:
    """The controller that answers: --controller-id, else quorum-state's leader, else the lowest
    registered controller. A --controller-id that is not one of the cluster's controllers is
    refused: it was answered for as if it were one. Where none is known (a bootstrap file)
    every id is refused, not taken on trust."""
    if given is not None:
        known = set(image.cluster.controllers) | set(voters) | ({leader} if leader is not None else set())
        if not known:
            raise BadInput(f"--controller-id {given}: not a controller of this cluster (none is known here: no "
                           "controller registration, quorum-state leader or voter)")
        if given not in known:
            raise BadInput(f"--controller-id {given}: not a controller of this cluster (its controllers: "
                           f"{', '.join(str(n) for n in sorted(known))})")
        return given
    if leader is not None:
        return leader
    return min(image.cluster.controllers, default=None)


def controller_release(image: MetadataImage, catalog: Catalog, node: int | None) -> tuple[str, str]:
    """(release, why): the release the controller `node` runs, as far as the image tells."""
    registration = image.cluster.controllers.get(node) if node is not None else None
    if registration is not None:
        ranges = advertised(registration.supported_features)
        name, unstable = infer_release(catalog, ranges)
        if name is not None:
            how = " with unstable versions enabled" if unstable else ""
            return name, f"the cluster's release: controller {node}'s registration advertises exactly what Kafka " \
                         f"{name}{how} supports ({ranges_text(ranges)})"
    name, why = release_of_registered_nodes(image, catalog)
    return name, f"the cluster's release: {why}"


def run_downgrade_report(args: argparse.Namespace) -> int:
    catalog = load_catalog(args.catalog)  # every version kraftsim knows, to read the log with
    wanted = required(args.metadata, "--metadata MV")
    path, at = path_at(args.path, args.at, "PATH")
    leader, voters = _quorum(path)

    def choose(image: MetadataImage) -> tuple[str, str]:
        """The release whose controller answers, and why; its replay rules read the log."""
        if args.release is not None:
            return catalog_from_args(args).release.name, f"--release {args.release}"
        name, why = controller_release(image, catalog, _default_controller(image, args.controller_id, leader,
                                                                           voters))
        return name, why + "; --release R to ask another release's controller"

    result, _, rule = load_as_release(path, catalog, choose, at=at, progress=show_progress(args),
                                      up_to_damage=args.up_to_damage)
    node = _default_controller(result.image, args.controller_id, leader, voters)
    name, reason = choose(result.image)
    if rule is not None:  # its release is the controller's, whose reason the report gives
        rule = msgspec.structs.replace(rule, reason="the answering controller's release")
    release_catalog = load_catalog(args.catalog, line=name)
    try:
        target = parse_metadata_version(release_catalog, wanted)
    except KraftsimError as e:
        raise BadInput(f"{e} (the controller runs Kafka {release_catalog.release.name}: {reason})") from None
    report = downgrade_report(result.image, target, release_catalog, path=str(path), node_id=node,
                              static_voters=voters)
    if args.json:
        groups = group_losses((x.kind, x.entity) for x in report.lost)
        kraft_record = {} if rule is None else {"kraft_version_record": msgspec.to_builtins(rule)}
        print_json({**msgspec.to_builtins(report), **kraft_record, "controller_release": release_catalog.release.name,
                    "controller_release_reason": reason,
                    "verdict": {"kafka": policy_answer(report.verdicts),
                                "kip-778": policy_answer(report.kip778_verdicts)},
                    "loss_groups": [{"kind": g.kind, "topic": g.topic, "count": g.count} for g in groups]})
    else:
        lines = report_lines(report, f"release from {reason}" if reason.startswith("--") else reason,
                             details=args.details)
        if rule is not None:
            lines.insert(1, rule.line())
        print("\n".join(_painted(line) for line in lines))
    return 0 if report.lossless and result.partial is None else 1  # a partial state never passes
