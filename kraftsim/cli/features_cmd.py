"""`kraftsim features`: Kafka's kafka-features tool (facts §7.2) against a simulated cluster.

The subcommands, flags, printed lines and exit codes are kafka-features'. Instead of
`--bootstrap-server`/`--bootstrap-controller` the tool is pointed at a cluster directory
(`--cluster DIR`); `--release` picks the release whose tool it acts as (its version
table, feature defaults and output layout): by default the newest release running in the
cluster, as an operator mid-roll runs the new installation's tools (a `[cluster]` line on
stderr then says whose tool answered), and without a cluster the newest release in the
catalog. The logic lives in kraftsim.sim.features_tool; this
module maps flags to calls.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kraftsim.cli.common import kafka_tool, node_id, print_lines
from kraftsim.errors import KraftsimError, UsageError
from kraftsim.cli.kafka_usage import missing_subcommand, record_flags, refuse, release_line, unknown_flag
from kraftsim.versions import Catalog, ToolFailure, load_catalog
from kraftsim.versions import feature_dependencies, version_mapping

if TYPE_CHECKING:
    from kraftsim.sim.features_tool import NodeSummary


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = sub.add_parser("features", help="kafka-features: describe, upgrade, downgrade or disable feature flags "
                                            "of a simulated cluster")
    group.add_argument("--cluster", metavar="DIR", help="the simulated cluster (made by `kraftsim cluster create`)")
    group.add_argument("--release", metavar="R",
                       help="act as this Kafka release's tool (e.g. 3.9.1, or 3.9 for its newest patch); default: "
                            "the newest release running in the cluster, else the newest in the catalog")
    group.add_argument("--catalog", metavar="FILE",
                       help="a catalog file adding hypothetical versions or releases (default: the cluster's)")
    cmds = group.add_subparsers(dest="features_command", metavar="SUBCOMMAND")
    cmds.required = True

    describe = cmds.add_parser("describe", help="Describes the current active feature flags.")
    describe.add_argument("--node-id", type=node_id, metavar="N", help="Send request to specific node.")
    describe.add_argument("--json", action="store_true",
                          help="kraftsim's addition: one JSON object (the node asked, the finalized epoch, and per "
                               "feature its supported range and finalized level, as levels and as printed)")
    describe.set_defaults(run=kafka_tool(_run_describe))

    for op, text in (("upgrade", "Upgrade one or more feature flags."),
                     ("downgrade", "Downgrade one or more feature flags.")):
        p = cmds.add_parser(op, help=text)
        p.add_argument("--metadata", metavar="VERSION",
                       help=f"DEPRECATED -- The level to which we should {op} the metadata. For example, 3.3-IV3.")
        p.add_argument("--release-version", metavar="VERSION",
                       help=f"The release version to {op} all features to. For example, 3.9-IV0 will set "
                            "metadata.version=21 and kraft.version=1.")
        p.add_argument("--feature", action="append", metavar="FEATURE=LEVEL",
                       help=f"A feature {op} we should perform, in feature=level format. "
                            "For example: `metadata.version=5`.")
        if op == "downgrade":
            p.add_argument("--unsafe", action="store_true",
                           help="Perform this downgrade even if it may irreversibly destroy metadata.")
        p.add_argument("--dry-run", action="store_true", help=f"Validate this {op}, but do not perform it.")
        record_flags(p, ("metadata", "release_version", "feature", "unsafe", "dry_run"))
        p.set_defaults(run=kafka_tool(_run_update), op=op)

    disable = cmds.add_parser("disable", help="Disable one or more feature flags. This is the same as downgrading "
                                              "the version to zero.")
    disable.add_argument("--feature", action="append", metavar="FEATURE", help="A feature flag to disable.")
    disable.add_argument("--unsafe", action="store_true",
                         help="Disable this feature flag even if it may irreversibly destroy metadata.")
    disable.add_argument("--dry-run", action="store_true", help="Perform a dry-run of this disable operation.")
    disable.set_defaults(run=kafka_tool(_run_update), op="disable")

    vm = cmds.add_parser("version-mapping", help="Look up the corresponding features for a given metadata version.")
    vm.add_argument("--release-version", metavar="VERSION",
                    help="The release version to use for the corresponding feature mapping.")
    vm.set_defaults(run=kafka_tool(_run_version_mapping))

    fd = cmds.add_parser("feature-dependencies", help="Look up dependencies for a given feature version.")
    fd.add_argument("--feature", action="append", required=True, metavar="FEATURE=VERSION",
                    help="The feature and version to look up dependencies for, in feature=version format.")
    fd.set_defaults(run=kafka_tool(_run_feature_dependencies))


def _catalog_path(args: argparse.Namespace) -> str | None:
    if args.catalog is not None or args.cluster is None:
        catalog: str | None = args.catalog
        return catalog
    from kraftsim.sim.tools.directory import catalog_path  # the simulator loads only for commands on a cluster

    return catalog_path(Path(args.cluster))


def _cluster_nodes(path: str) -> list[NodeSummary]:
    """(id, roles, release, running) of the cluster's nodes, as either simulator saved them."""
    from kraftsim.sim.tools.directory import TICKS, engine_of, simulation_status  # loaded only for a cluster
    if engine_of(path) == TICKS:
        from kraftsim.sim.ticks.cluster import read_state
        return [(n.id, n.roles, n.release, n.running) for n in read_state(Path(path)).nodes]
    return [(n["id"], n["roles"], n["release"], n["running"]) for n in simulation_status(path)["nodes"]]


def _tool(args: argparse.Namespace) -> Catalog:
    release = args.release
    if release is None and args.cluster is not None:
        from kraftsim.sim import features_tool
        nodes = _cluster_nodes(args.cluster)
        release = features_tool.cluster_release(nodes)
        note = None if release is None else features_tool.tool_note(release, nodes, chosen=False)
        if note:
            print(f"[cluster] {note}", file=sys.stderr)
    return load_catalog(_catalog_path(args), line=release)


def _offline_tool(args: argparse.Namespace) -> Catalog:
    """The tool for version-mapping / feature-dependencies. Kafka before 4.3 also wants
    --bootstrap-server/--bootstrap-controller here (policy features_offline_commands); kraftsim
    has no such flag to stand for, so it runs these as Kafka does when one is given."""
    return _tool(args)


def _need_cluster(args: argparse.Namespace) -> str:
    if args.cluster is None:
        raise ToolFailure("kraftsim features: --cluster DIR is required for this command")
    cluster: str = args.cluster
    return cluster


def _run_describe(args: argparse.Namespace) -> int:
    from kraftsim.sim import features_tool
    from kraftsim.sim.tools.directory import open_for_tool

    tool = _tool(args)
    cluster = open_for_tool(_need_cluster(args), emit=lambda line: None, passive=True)
    try:
        _known_node(cluster, args.node_id)
        if args.json:
            print(json.dumps(features_tool.describe_rows(cluster, tool, args.node_id), sort_keys=True))
            return 0
        lines = features_tool.describe(cluster, tool, args.node_id)
    finally:
        cluster.close()
    for line in lines:
        print(line)
    return 0


def _known_node(cluster: Any, node: int | None) -> None:
    """An unknown --node-id is invalid input (exit 2), told before anything is asked."""
    if node is None:
        return
    try:
        cluster.state.node(node)
    except KraftsimError as e:
        raise UsageError(f"--node-id {node}: {e}") from None


def _run_update(args: argparse.Namespace) -> int:
    from kraftsim.sim import features_tool
    from kraftsim.sim.tools.directory import open_for_tool

    tool = _tool(args)
    refused = refuse(unknown_flag("kafka-features", args.op, release_line(tool), args))
    if refused is not None:
        return refused
    path = _need_cluster(args)
    flags: dict[str, Any] = dict(metadata=getattr(args, "metadata", None), release_version=getattr(args, "release_version", None),
                 features=args.feature or (), unsafe=getattr(args, "unsafe", False))
    # Flags are checked before the tool connects, as FeatureCommand builds its updates first.
    features_tool.build_updates(tool, args.op, out=lambda line: None, **flags)
    with open_for_tool(path, emit=lambda line: print(f"[cluster] {line}", file=sys.stderr), passive=False) as cluster:
        return features_tool.update(cluster, tool, args.op, dry_run=args.dry_run, **flags)


def _run_version_mapping(args: argparse.Namespace) -> int:
    tool = _offline_tool(args)
    refused = refuse(missing_subcommand("kafka-features", "version-mapping", release_line(tool)))
    if refused is not None:
        return refused
    return print_lines(version_mapping(tool, args.release_version))


def _run_feature_dependencies(args: argparse.Namespace) -> int:
    tool = _offline_tool(args)
    refused = refuse(missing_subcommand("kafka-features", "feature-dependencies", release_line(tool)))
    if refused is not None:
        return refused
    return print_lines(feature_dependencies(tool, args.feature, tool="features"))
