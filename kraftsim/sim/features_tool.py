"""kafka-features against a simulated cluster: the same flags, lines and exit codes (facts §7.2).

The tool of a release (the `tool` catalog) talks to the cluster the way Kafka's
FeatureCommand does through its admin client:

- `describe` asks one node ApiVersions at the highest version both the tool and the node
  know, and prints its SupportedFeatures, FinalizedFeatures and epoch (KIP-584); a node of
  a release before KIP-1022 answers at v3, which leaves out ranges starting at 0.
- `upgrade`, `downgrade`, `disable` build the updates on the client side (release-version
  defaults from the tool's own catalog, the admin client's FeatureUpdate checks) and send
  one UpdateFeatures request to the active controller; every feature's line then carries
  the controller's answer for it (4.x: the whole request's; 3.x: the feature's own),
  sorted by feature name, and any failure ends in
  `<k> out of <n> operation(s) failed.` on stderr with exit code 1.
- `version-mapping` and `feature-dependencies` need no cluster from 4.3 on; an older
  tool refuses them without one, as its argument parser does (cli.features_cmd).
- `describe` prints each line as the tool's release lays it out: tab-separated up to 4.2,
  fixed-width columns from 4.3 (policy `features_describe`).

On a cluster the tool is, unless told otherwise, that of the newest release running in it
(`cluster_release`): an operator runs the tools of the new installation, so mid-roll an
older active controller is the one that refuses.

Errors that Kafka's tool prints alone (its TerseException, IllegalArgumentException and
RuntimeException messages) are raised as ToolFailure with Kafka's text.

Beyond Kafka, under the cluster's "kip-778" policy: a metadata.version change is followed
by what each node's loader did with it, and a lossy downgrade by the loss report.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

from kraftsim.controller import FeatureUpdate, UpdateFeaturesResponse, UpgradeType
from kraftsim.sim.node.api_versions import max_api_versions_version
from kraftsim.sim.ticks.cluster import MvChangeReport, SimCluster
from kraftsim.sim.node.simnode import BROKER, CONTROLLER, SimNode
from kraftsim.versions import (
    FEATURE_NAME as MV_NAME, Catalog, ToolFailure, UnknownMetadataVersion, parse_feature_arg, release_name_key,
    release_version_updates,
)

Out = Callable[[str], None]
OPS = ("upgrade", "downgrade", "disable")
#: The admin client's answer when no node (or no controller) can be reached.
NO_NODE = "Timed out waiting for a node assignment. Call: {call}"


def level_text(tool: Catalog, feature: str, level: int) -> str:
    """FeatureCommand.levelToString: metadata.version levels as version strings."""
    if feature != MV_NAME:
        return str(level)
    try:
        return tool.mv_from_level(level).version
    except UnknownMetadataVersion:
        return f"UNKNOWN {level}"


def describe_target(cluster: SimCluster, node_id: int | None) -> SimNode:
    """The node describeFeatures goes to: --node-id, else the lowest-id running broker, else
    the active controller (what a --bootstrap-server / --bootstrap-controller client reaches)."""
    if node_id is not None:
        state = cluster.state.node(node_id)
        if not state.running:
            raise ToolFailure(NO_NODE.format(call="describeFeatures"))
        return cluster.nodes[node_id]
    for node in cluster.running_nodes():
        if node.state.is_broker:
            return node
    leader = cluster.leader_node()
    if leader is None:
        raise ToolFailure(NO_NODE.format(call="describeFeatures"))
    return leader


def describe_rows(cluster: SimCluster, tool: Catalog, node_id: int | None = None) -> dict[str, Any]:
    """What `kafka-features describe [--node-id N]` shows, as data: the node asked, the
    finalized features' epoch, and per supported feature (by name) its range and finalized
    level, as levels and as the tool prints them."""
    node = describe_target(cluster, node_id)
    listener = BROKER if node.state.is_broker else CONTROLLER
    tool_max = max_api_versions_version(tool.release.name, BROKER)
    response = node.api_versions(min(tool_max, node.max_api_versions_version(listener)), listener)
    finalized = {name: hi for name, _, hi in response.finalized_features}
    epoch = response.finalized_features_epoch if response.finalized_features_epoch >= 0 else None
    rows = [{"feature": name, "supported_min": lo, "supported_max": hi, "finalized_level": finalized.get(name, 0),
             "text": {"supported_min": level_text(tool, name, lo), "supported_max": level_text(tool, name, hi),
                      "finalized_level": level_text(tool, name, finalized.get(name, 0))}}
            for name, lo, hi in sorted(response.supported_features)]
    return {"node": node.id, "epoch": epoch, "features": rows}


def describe(cluster: SimCluster, tool: Catalog, node_id: int | None = None) -> list[str]:
    """`kafka-features describe [--node-id N]`: one line per supported feature, by name."""
    rows = describe_rows(cluster, tool, node_id)
    epoch = "-" if rows["epoch"] is None else str(rows["epoch"])
    template = tool.policy_text("features_describe", "line")
    return [template.format(feature=r["feature"], min=r["text"]["supported_min"], max=r["text"]["supported_max"],
                            level=r["text"]["finalized_level"], epoch=epoch) for r in rows["features"]]


#: One node as cluster_release reads it: (id, roles, release, running).
NodeSummary = tuple[int, Sequence[str], str, bool]


def newest_release(releases: Iterable[str]) -> str | None:
    """The newest of some Kafka release names ("3.9.1" < "4.0.2"); None when there are none."""
    return max(releases, key=release_name_key, default=None)


def cluster_release(nodes: Sequence[NodeSummary]) -> str | None:
    """The release whose kafka-features an operator runs against a cluster: the newest release
    running in it (mid-roll, the new installation's; a refusal then comes from the
    controller, as in life), else the newest of its nodes; None for no nodes."""
    return newest_release(n[2] for n in nodes if n[3]) or newest_release(n[2] for n in nodes)


def tool_note(release: str, nodes: Sequence[NodeSummary], chosen: bool) -> str | None:
    """The line that says whose kafka-features answered, when there was a choice: the release
    was named, or the cluster runs more than one (mid-roll). None otherwise, so a cluster on one
    release prints exactly what Kafka's tool prints."""
    if not chosen and len({n[2] for n in nodes}) < 2:
        return None
    why = "chosen" if chosen else "the newest release running in the cluster"
    return f"kafka-features of Kafka {release} ({why})"


def feature_update(name: str, level: int, upgrade_type: UpgradeType) -> FeatureUpdate:
    """One update, with the checks of the admin client's FeatureUpdate constructor."""
    if level == 0 and upgrade_type is UpgradeType.UPGRADE:
        raise ToolFailure("The upgradeType flag should be set to SAFE_DOWNGRADE or UNSAFE_DOWNGRADE when the provided "
                          f"maxVersionLevel:{level} is < 1.")
    if level < 0:
        raise ToolFailure("Cannot specify a negative version level.")
    return FeatureUpdate(name, level, int(upgrade_type))


def build_updates(tool: Catalog, op: str, *, metadata: str | None = None, release_version: str | None = None,
                  features: Sequence[str] = (), unsafe: bool = False, out: Out = print) -> dict[str, FeatureUpdate]:
    """What FeatureCommand puts into its update map, with its checks and texts, in its order."""
    if op not in OPS:
        raise ToolFailure(f"Unknown command {op}")
    upgrade_type = UpgradeType.UPGRADE if op == "upgrade" else (
        UpgradeType.UNSAFE_DOWNGRADE if unsafe else UpgradeType.SAFE_DOWNGRADE)
    updates: dict[str, FeatureUpdate] = {}

    def put(name: str, level: int) -> bool:
        """Add an update (the update is built first, as Kafka does); True if `name` was there."""
        update = feature_update(name, level, upgrade_type)
        seen = name in updates
        updates[name] = update
        return seen

    if op == "disable":
        for name in features:
            if put(name, 0):
                raise ToolFailure(f"Feature {name} was specified more than once.")
        return updates
    if release_version is not None and (metadata is not None or features):
        raise ToolFailure("Can not specify `release-version` with other feature flags.")
    if release_version is not None:
        try:
            levels = release_version_updates(tool, release_version, downgrade=upgrade_type is not UpgradeType.UPGRADE)
        except UnknownMetadataVersion as e:
            raise ToolFailure(str(e)) from None
        for name, level in levels.items():
            put(name, level)
        return updates
    if metadata is not None:
        if tool.policy("features_metadata_flag") == "deprecated":
            out(tool.policy_text("features_metadata_flag", "notice"))
        try:
            mv = tool.mv_from_string(metadata, unstable=True)
        except UnknownMetadataVersion as e:
            raise ToolFailure(str(e)) from None
        put(MV_NAME, mv.level)
    for arg in features:
        name, level = parse_feature_arg(arg)
        if put(name, level):
            raise ToolFailure(f"Feature {name} was specified more than once.")
    return updates


def update(cluster: SimCluster, tool: Catalog, op: str, *, metadata: str | None = None,
           release_version: str | None = None, features: Sequence[str] = (), unsafe: bool = False,
           dry_run: bool = False, out: Out = print) -> int:
    """`kafka-features upgrade|downgrade|disable ...`: prints the result lines; raises
    ToolFailure (Kafka's terse error) when the tool fails, returns 0 when every update went through."""
    updates = build_updates(tool, op, metadata=metadata, release_version=release_version, features=features,
                            unsafe=unsafe, out=out)
    if not updates:
        raise ToolFailure(f"You must specify at least one feature to {op}")
    if any(not name.strip() for name in updates):
        raise ToolFailure("Provided feature can not be empty.")
    response, reports = cluster.update_features(updates, dry_run)
    failures = 0
    worded_dry = dry_run and tool.policy("features_dry_run_text") == "can"  # (3.3-3.5 word a dry run as a run)
    for name in sorted(updates):
        level = updates[name].max_version_level
        error = feature_error(response, name)
        if error is not None:
            helper = "Can not " if worded_dry else "Could not "
            suffix = f"disable {name}" if op == "disable" else f"{op} {name} to {level}"
            out(f"{helper}{suffix}. {error}")
            failures += 1
        else:
            verb = " can be " if worded_dry else " was "
            obj = "disabled." if op == "disable" else f"{op}d to {level}."
            out(f"{name}{verb}{obj}")
    for line in mv_change_lines(cluster, reports):
        out(line)
    if failures:
        raise ToolFailure(f"{failures} out of {len(updates)} operation(s) failed.")
    return 0


def feature_error(response: UpdateFeaturesResponse | None, name: str) -> str | None:
    """The admin client's answer for one feature: the top-level error when there is one (no
    controller, or a 4.x refusal of the whole request), else the feature's own result (3.x)."""
    if response is None:
        return NO_NODE.format(call="updateFeatures")
    if response.error_code != 0:
        return response.error_message or ""
    for result in response.results:
        if result.feature == name and result.error_code != 0:
            return result.error_message or ""
    return None


def mv_change_lines(cluster: SimCluster, reports: Sequence[MvChangeReport]) -> list[str]:
    """kraftsim's account of a KIP-778 metadata.version change: per node, the snapshots written
    and, for a lossy downgrade, every item dropped (the same on every node; listed once)."""
    if not reports:
        return []
    cat = cluster.catalog
    first = reports[0].change
    lines = [f"[kip-778] {first.text(cat)}."]
    for r in reports:
        snaps = ", ".join(r.snapshots) if r.snapshots else "none"
        lines.append(f"[kip-778] node {r.node_id} wrote snapshots: {snaps}")
    if first.is_downgrade():
        if first.lossless:
            lines.append("[kip-778] Loss report: nothing in this cluster's metadata had to be dropped.")
        else:
            lines.append(f"[kip-778] Loss report: {len(first.losses)} item(s) that "
                         f"{cat.mv_from_level(first.new_level)} cannot hold were dropped:")
            lines += [f"[kip-778]   {line}" for line in first.losses.lines()]
    return lines
