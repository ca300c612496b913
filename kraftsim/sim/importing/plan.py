"""What a real cluster's metadata says about its nodes, and the simulated cluster made of it.

Nodes and roles come from the metadata itself: the voters (with kraft.version 1, a dynamic
quorum, the last VotersRecord; otherwise the last LeaderChange or VotersRecord, else
`quorum-state`, else the registered controllers), the registered
brokers, and from 3.7 the registered controllers. A voter that is also a registered broker
runs both roles in one process: a combined node. Each node's software is the release line
whose supported ranges are exactly what its latest registration advertises (metadata.version
and every feature with a maximum above 0); an override replaces what is inferred, and
every choice says where it came from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kraftsim.image import BrokerRegistration, MetadataImage, advertised_ranges
from kraftsim.sim.importing.sources import ImportRefused, SourceReplica
from kraftsim.versions import IllegalArgument, Catalog, range_text

BROKER, CONTROLLER = "broker", "controller"


@dataclass
class PlannedNode:
    """One node of the imported cluster and where each of its facts came from."""

    id: int
    roles: tuple[str, ...]
    release: str
    release_how: str
    source: SourceReplica
    source_how: str
    directory_id: str | None = None
    directory_how: str = "none"
    #: whether the node's release keeps a directory.id in meta.properties (3.7 on); a 3.3-3.6
    #: node without one is written without one, and a later 3.7+ start draws it
    keeps_directory_id: bool = True

    @property
    def role_text(self) -> str:
        return "broker+controller (combined)" if len(self.roles) == 2 else self.roles[0]


@dataclass
class ImportPlan:
    """The cluster `cluster import` makes (see the module docstring)."""

    cluster_id: str | None
    cluster_id_how: str
    voters: tuple[int, ...]
    voters_how: str
    nodes: list[PlannedNode]
    reference: SourceReplica
    notes: list[str] = field(default_factory=list)

    @property
    def image(self) -> MetadataImage:
        return self.reference.loaded.image

    @property
    def epoch(self) -> int:
        """The last epoch the source reached: its batches' and its quorum-state's (the first
        election of the imported quorum begins the next one)."""
        return int(max([n.source.last_epoch for n in self.nodes]
                       + [n.source.quorum.leader_epoch for n in self.nodes if n.source.quorum is not None]))

    @property
    def kraft_version(self) -> int:
        """kraft.version where the source ends (1: a dynamic quorum, KIP-853)."""
        return self.reference.membership.kraft_version

    @property
    def partial(self) -> bool:
        return self.stopped_at is not None

    @property
    def stopped_at(self) -> int | None:
        """The lowest offset where a damaged source stopped the import (None: nothing stopped it)."""
        at = [n.source.end_offset for n in self.nodes if n.source.damage is not None or n.source.loaded.partial]
        return min(at) if at else None


def advertised(features: Sequence[object]) -> dict[str, tuple[int, int]]:
    """A registration's supported features as {name: (min, max)}, features with max 0 left out."""
    return advertised_ranges(features)


def ranges_text(ranges: Mapping[str, tuple[int, int]]) -> str:
    return ", ".join(f"{k} {range_text(*v)}" for k, v in sorted(ranges.items()))


def infer_release(catalog: Catalog, ranges: Mapping[str, tuple[int, int]]) -> tuple[str | None, bool]:
    """The release whose supported ranges are exactly `ranges` (and whether it matched with
    unstable versions enabled); (None, False) when none does (Catalog.release_advertising)."""
    found, unstable = catalog.release_advertising(ranges)
    return (None, False) if found is None else (found.name, unstable)


def _line(catalog: Catalog, name: str) -> str:
    """A release as the catalog names it: as Kafka names it ("3.7.2"); a line ("3.7") means
    its newest patch release."""
    try:
        return catalog.find_release(name).name
    except IllegalArgument:
        names = [r.name for r in catalog.releases]
        raise ImportRefused(f"--release: unknown release {name}; known releases: {', '.join(names)}") from None


def _voters(sources: Sequence[SourceReplica], image: MetadataImage) -> tuple[tuple[int, ...], str]:
    longest = max(sources, key=lambda s: s.end_offset)
    membership = longest.membership
    if membership.dynamic and membership.voter_ids:  # a dynamic quorum: the voter set is in the log
        at = membership.voters_offset
        where = (f"at offset {at}" if at is not None and at >= 0
                 else f"in the header of snapshot {longest.snapshot_file.name if longest.snapshot_file else '?'}")
        return membership.voter_ids, f"the last VotersRecord, {where}"
    best: tuple[int, int, tuple[int, ...], str] | None = None  # (end offset, offset, voters, how)
    for s in sources:
        for e in s.header + s.control:
            if e.type_name not in ("LEADER_CHANGE", "KRAFT_VOTERS"):
                continue
            ids = tuple(sorted(v.voter_id for v in e.message.voters))
            what = "LeaderChange record" if e.type_name == "LEADER_CHANGE" else "VotersRecord"
            key = (s.end_offset, e.offset)
            if ids and (best is None or key >= best[:2]):
                best = (*key, ids, f"the last {what}, at offset {e.offset}")
    if best is not None:
        return best[2], best[3]
    for s in sources:
        if s.quorum is not None and s.quorum.current_voters:
            return tuple(sorted(s.quorum.current_voters)), f"quorum-state beside {s.given}"
    ctrl = tuple(sorted(image.cluster.controllers))
    if ctrl:
        return ctrl, "the registered controllers (no LeaderChange, VotersRecord or quorum-state)"
    raise ImportRefused("the source names no voters (no LeaderChange or VotersRecord, no quorum-state, no "
                        "registered controller): give them with --voters ID,ID,...")


def _inferred(catalog: Catalog, i: int, kind: str, reg: object, image: MetadataImage,
              notes: list[str]) -> tuple[str, str]:
    """The release node `i`'s latest registration names, and how that was decided."""
    ranges = advertised(reg.supported_features)  # type: ignore[attr-defined]
    name, unstable = infer_release(catalog, ranges)
    if name is None:
        raise ImportRefused(f"node {i}: its {kind} registration advertises {ranges_text(ranges)}, which no "
                            f"known release supports exactly; name its software with --release {i}=R")
    other = image.cluster.controllers.get(i) if kind == "broker" else None
    if other is not None and advertised(other.supported_features) != ranges:
        notes.append(f"node {i}: its broker and controller registrations advertise different ranges; "
                     "the broker's is used")
    how = f"inferred from its {kind} registration ({ranges_text(ranges)})"
    return name, how + (" with unstable versions enabled" if unstable else "")


def make_plan(sources: Sequence[SourceReplica], catalog: Catalog, *, voters: Sequence[int] | None = None,
              release: str | None = None, releases: Mapping[int, str] | None = None) -> ImportPlan:
    """Decide the nodes, roles, releases and starting copies (ImportRefused with one line when
    the metadata does not allow it)."""
    release = _line(catalog, release) if release else None
    releases = {i: _line(catalog, r) for i, r in (releases or {}).items()}
    reference = max(sources, key=lambda s: s.end_offset)  # max keeps the first of equals
    image = reference.loaded.image
    notes: list[str] = []
    by_id: dict[int, SourceReplica] = {}
    for s in sources:
        if s.node_id is None:
            if len(sources) > 1:
                raise ImportRefused(f"{s.given}: no meta.properties beside it, so it is not known which node's copy "
                                    "it is; with several sources each needs its meta.properties")
            continue
        if s.node_id in by_id:
            raise ImportRefused(f"{s.given}: node {s.node_id} is given twice (also {by_id[s.node_id].given})")
        by_id[s.node_id] = s
    cids = sorted({s.cluster_id for s in sources if s.cluster_id})
    if len(cids) > 1:
        raise ImportRefused(f"the sources belong to different clusters: {', '.join(cids)}")
    cluster_id, cid_how = (cids[0], "meta.properties") if cids else (None, "the seed (not in the source)")
    if voters:
        vs, how = tuple(sorted(set(voters))), "given (--voters)"
    else:
        vs, how = _voters(sources, image)
    brokers = set(image.cluster.brokers)
    ctrls = set(image.cluster.controllers)
    extra = sorted(ctrls - set(vs))
    if extra and not voters:
        notes.append(f"registered controller(s) {', '.join(map(str, extra))} are not named as voters; "
                     "imported as voters (the simulator's quorum is static)")
        vs = tuple(sorted(set(vs) | set(extra)))
    ids = sorted(set(vs) | brokers)
    strays = sorted(set(by_id) - set(ids))
    if strays:
        left_out = f"; --voters leaves out the registered controller(s) {', '.join(map(str, extra))}" \
            if voters and extra else ""
        raise ImportRefused(f"{by_id[strays[0]].given}: the copy of node {strays[0]} (its meta.properties), but the "
                            f"metadata names no node {strays[0]} (nodes: {', '.join(map(str, ids))}){left_out}")
    unknown = sorted(set(releases) - set(ids))
    if unknown:
        raise ImportRefused(f"--release {unknown[0]}=...: the cluster has no node {unknown[0]} "
                            f"(nodes: {', '.join(map(str, ids))})", node=unknown[0])
    planned: list[PlannedNode] = []
    inferred: list[str] = []
    pending: list[int] = []
    for i in ids:
        roles = tuple(r for r, on in ((BROKER, i in brokers), (CONTROLLER, i in vs)) if on)
        src = by_id.get(i, reference)
        src_how = (f"its own copy, {src.given}" if i in by_id else f"a copy of {reference.given}")
        node = PlannedNode(i, roles, "", "", src, src_how)
        reg = image.cluster.brokers.get(i) or image.cluster.controllers.get(i)
        kind = "broker" if i in brokers else "controller"
        if i in releases or release:
            node.release = releases.get(i) or release  # type: ignore[assignment]
            node.release_how = f"given (--release {node.release})"
        elif reg is not None:
            node.release, node.release_how = _inferred(catalog, i, kind, reg, image, notes)
            inferred.append(node.release)
        else:
            pending.append(i)
        if isinstance(reg, BrokerRegistration) and reg.directories:
            node.directory_id, node.directory_how = str(reg.directories[0]), f"its {kind} registration"
        if src.node_id == i and src.directory_id:
            node.directory_id, node.directory_how = src.directory_id, "meta.properties"
        planned.append(node)
    for node in planned:
        if node.id in pending:
            if not inferred:
                raise ImportRefused(f"node {node.id}: no registration in the metadata to infer its software from; "
                                    f"name it with --release R or --release {node.id}=R")
            node.release = max(inferred, key=lambda n: catalog.find_release(n).key)
            node.release_how = (f"assumed: the newest release inferred for the other nodes (node {node.id} has no "
                                "registration; controllers register from 3.7)")
        if catalog.find_release(node.release).policy("meta_properties_directory_id") == "none":
            node.keeps_directory_id = False
            if node.directory_id is None:
                node.directory_how = f"none: {node.release} writes no directory.id; a 3.7 or later start draws one"
    return ImportPlan(cluster_id, cid_how, vs, how, planned, reference, notes)


def finalized_levels(image: MetadataImage) -> dict[str, int]:
    """The finalized levels of an image, metadata.version included."""
    return dict(sorted(image.features.all_levels().items()))


__all__ = ["ImportPlan", "PlannedNode", "advertised", "finalized_levels", "infer_release", "make_plan",
           "ranges_text"]
