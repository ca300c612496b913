"""Cluster directories of both simulators, for the CLI: which one made a directory, a view
of an event-simulator cluster that the kafka-features tool can use, and its status.

`cluster.json` format 1 is SimCluster's (ticks); format 2 is Simulation's (events).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kraftsim import jsoninput
from kraftsim.errors import KraftsimError
from kraftsim.image import load_path
from kraftsim.sim.ticks.cluster import STATE_FILE, MvChangeReport, SimCluster
from kraftsim.sim.tools.narrate import narrator
from kraftsim.sim.node.simnode import NodeState, SimNode, node_directory, supported_ranges
from kraftsim.sim.node.format import clock_text
from kraftsim.sim.node.voters import majority_leader
from kraftsim.sim.simulation import STATE_FORMAT, Simulation, read_saved
from kraftsim.sim.types import SimError
from kraftsim.storage import METADATA_DIR_NAME, MetadataLog, cluster_lock, read_quorum_state
from kraftsim.versions import Catalog

if TYPE_CHECKING:
    from kraftsim.image import MetadataImage
    from kraftsim.sim.saved import SavedState

TICKS, EVENTS = "ticks", "events"


def engine_of(directory: Path | str) -> str:
    """"events" when the directory's cluster.json is the event simulator's, else "ticks"
    (a missing or broken file is reported by whichever opens it)."""
    path = Path(directory) / STATE_FILE
    try:
        if not path.is_file():  # (a FIFO would be waited on forever, /dev/zero read without end)
            return TICKS
        head = jsoninput.loads(path.read_bytes())
    except (OSError, ValueError):
        return TICKS
    return EVENTS if isinstance(head, dict) and head.get("format") == STATE_FORMAT else TICKS


def catalog_path(directory: Path | str) -> str | None:
    """The user catalog a cluster was created with (None: the shipped one)."""
    if engine_of(directory) == EVENTS:
        return read_saved(Path(directory)).catalog
    from kraftsim.sim.ticks.cluster import read_state
    return read_state(Path(directory)).catalog


class _States:
    def __init__(self, sim: Simulation):
        self.sim = sim

    def node(self, node_id: int) -> NodeState:
        return self.sim.engine.member(node_id).state


class SimulationView:
    """What kraftsim.sim.features_tool asks of a cluster, answered by a Simulation."""

    def __init__(self, sim: Simulation, passive: bool = True):
        self.sim = sim
        self.passive = passive
        self.catalog: Catalog = sim.catalog
        self.state = _States(sim)

    @property
    def nodes(self) -> dict[int, SimNode]:
        return {m.id: m.node for m in self.sim.engine.ordered() if m.node is not None}

    def running_nodes(self) -> list[SimNode]:
        return [m.node for m in self.sim.engine.ordered() if m.running and m.node is not None]

    def leader_node(self) -> SimNode | None:
        m = self.sim.engine.leader_member()
        if m is None:  # a passive view: the leader a majority's quorum-state names
            leader = simulation_status(self.sim.directory)["leader"]
            m = None if leader is None else self.sim.engine.member(leader)
        return None if m is None else m.node

    def update_features(self, updates: Mapping[str, Any], validate_only: bool
                        ) -> tuple[Any, list[MvChangeReport]]:
        return self.sim.update_features(updates, validate_only)

    def __enter__(self) -> SimulationView:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """After an update the cluster settles (registrations its new levels allow, brokers
        caught up) before the command ends, bounded as the settling before it."""
        e = self.sim.engine
        if not self.passive:
            e.run_until(e.now + self.sim.config.request_timeout_ms * 5, e.stable)
        self.sim.close()


def open_for_tool(directory: Path | str, *, passive: bool, emit=print):  # type: ignore[no-untyped-def]
    """A cluster for kraftsim.sim.features_tool: SimCluster, or a view of a Simulation
    (passive: the nodes' replicas loaded, nothing run or written; else it settles first,
    so an update finds a leader when the quorum has one)."""
    if engine_of(directory) == TICKS:
        return SimCluster.open(directory, emit=emit, passive=passive)
    sim = Simulation.open(directory, passive=passive, on_event=None if passive else narrator(emit))
    if not passive:
        sim.engine.run_until(sim.engine.now + sim.config.request_timeout_ms * 5, sim.engine.stable)
    return SimulationView(sim, passive)


def _registration(image: MetadataImage, node: dict[str, Any], incarnation: str) -> dict[str, Any]:
    """The node's registrations in `image`, in the shape `cluster status --json` gives."""
    out: dict[str, object] = {}
    reg = image.cluster.broker(node["id"]) if "broker" in node["roles"] else None
    if reg is not None:
        out["broker"] = {"epoch": reg.epoch, "fenced": reg.fenced, "in_controlled_shutdown": reg.in_controlled_shutdown,
                         "incarnation": str(reg.incarnation_id),
                         "current_incarnation": str(reg.incarnation_id) == incarnation}
    creg = image.cluster.controller(node["id"]) if "controller" in node["roles"] else None
    if creg is not None:
        out["controller"] = {"incarnation": str(creg.incarnation_id),
                             "current_incarnation": str(creg.incarnation_id) == incarnation}
    return out


def simulation_status(directory: Path | str) -> dict[str, Any]:
    """`cluster status` of an event-simulator cluster, read from its files only (nothing
    runs, nothing is written): cluster.json, each node's quorum-state, and each running
    node's replica loaded by its own software (what it applied, where it is blocked)."""
    d = Path(directory)
    read_saved(d)  # a directory that is not a cluster is refused as it is, no lock file made in it
    with cluster_lock(d, exclusive=False):  # never half of another command's operation
        saved = read_saved(d)
        sim = Simulation.open(d, passive=True)
        try:
            return _status(d, saved, sim)
        finally:
            sim.close()


def _status(d: Path, saved: SavedState, sim: Simulation) -> dict[str, Any]:
    catalog = sim.catalog
    nodes: list[dict[str, Any]] = []
    beliefs: list[tuple[int, int]] = []
    images: dict[int, MetadataImage] = {}
    epochs = [0]  # every epoch a node's quorum-state names, with or without a leader (an imported cluster)
    for n in saved.nodes:
        meta = node_directory(d, n.id) / METADATA_DIR_NAME
        qs = read_quorum_state(meta / "quorum-state") if (meta / "quorum-state").exists() else None
        if qs is not None:
            epochs.append(qs.leader_epoch)
        if qs is not None and qs.leader_id >= 0 and n.id in saved.voters and n.status == "running":
            # (what a running voter knows: a stopped or crashed process knows no leader, an observer has no say)
            beliefs.append((qs.leader_epoch, qs.leader_id))
        with MetadataLog.open(meta, read_only=True) as log:
            end = log.log_end_offset
        try:
            image = load_path(meta, catalog=catalog).image
            finalized = dict(image.features.finalized)
            mv = image.features.metadata_version
            if mv is not None:
                finalized["metadata.version"] = mv
        except KraftsimError as e:  # shown, not raised: status reports what it can read
            image, finalized = None, {"error": str(e)}  # type: ignore[dict-item]
        node = sim.engine.member(n.id).node if n.status == "running" else None
        fin = node.finalized() if node is not None else None
        if node is not None and node.image is not None:
            images[n.id] = node.image
        nodes.append({"id": n.id, "roles": list(n.roles), "release": n.release, "state": n.status,
                      "running": n.status == "running", "voter": n.id in saved.voters,
                      "incarnation": n.incarnation,
                      "epoch": None if qs is None else qs.leader_epoch,
                      "leader": None if qs is None or qs.leader_id < 0 else qs.leader_id,
                      "log_end_offset": end, "finalized_in_log": finalized, "detail": n.detail, "note": n.detail,
                      "applied_offset": node.applied_offset if node is not None else None,
                      "finalized_epoch": fin.epoch if fin is not None else None,
                      "blocked": node.blocked.text() if node is not None and node.blocked is not None else None,
                      "faults": list(node.faults) if node is not None else [],
                      "supported": {k: list(v) for k, v in sorted(supported_ranges(catalog.at_release(n.release),
                                                                                   n.configs).items())}})
    known = majority_leader(saved.voters, beliefs)
    epoch, leader = known if known is not None else (max(epochs), None)
    # Registrations and fencing as the active controller's image says (without one: each
    # running node's own image; unknown for a stopped node).
    leader_node = sim.engine.member(leader).node if leader is not None and leader in sim.engine.members else None
    leader_image = images.get(leader) if leader is not None else None
    incarnations = {n.id: n.incarnation for n in saved.nodes}
    for row in nodes:
        row["active_controller"] = row["id"] == leader
        image = leader_image if leader_image is not None else images.get(row["id"])
        row["registration"] = None if image is None else _registration(image, row, incarnations[row["id"]])
    fin = leader_node.finalized() if leader_node is not None else None
    return {"directory": str(d), "engine": EVENTS, "cluster_id": saved.cluster_id, "seed": saved.seed,
            "time_ms": saved.now_ms, "policies": list(saved.policies), "voters": list(saved.voters),
            "leader": leader, "epoch": epoch, "kraft_version": saved.kraft_version,
            "finalized": fin.as_dict() if fin is not None else None,
            "finalized_epoch": fin.epoch if fin is not None else None,
            "partition": saved.partition, "nodes": nodes}


def simulation_status_lines(status: dict[str, Any], mv_names: dict[int, str] | None = None) -> list[str]:
    leader = status["leader"]
    lines = [f"Cluster {status['cluster_id']} in {status['directory']} (event simulator, seed {status['seed']}, "
             f"virtual time {clock_text(status['time_ms'])}"
             + (f", policies: {', '.join(status['policies'])}" if status["policies"] else "") + ")",
             f"Voters: {','.join(str(v) for v in status['voters'])}; "
             + (f"leader: node {leader}, epoch {status['epoch']}" if leader is not None
                else f"no leader known to a majority (last epoch {status['epoch']})")]
    fin = status["finalized"]
    if fin is not None:
        parts = [f"{k}={v} ({mv_names[v]})" if k == "metadata.version" and mv_names and v in mv_names else f"{k}={v}"
                 for k, v in sorted(fin.items())]
        lines.append(f"Finalized features (epoch {status['finalized_epoch']}): {', '.join(parts)}")
    if status["partition"]:
        lines.append("Network partition: " + " | ".join(",".join(map(str, g)) for g in status["partition"]))
    lines += ["", "ID  ROLES              RELEASE  STATE    EPOCH  LEADER  LOG-END  APPLIED  FINALIZED (in its log)"]
    for n in status["nodes"]:
        fin_log = ", ".join(f"{k}={v}" for k, v in sorted(n["finalized_in_log"].items()))
        applied = "-" if n["applied_offset"] is None else n["applied_offset"]
        lines.append(f"{n['id']:<3} {'+'.join(n['roles']):<18} {n['release']:<8} {n['state']:<8} "
                     f"{'-' if n['epoch'] is None else n['epoch']:<6} {'-' if n['leader'] is None else n['leader']:<7} "
                     f"{n['log_end_offset']:<8} {applied:<8} {fin_log}")
        broker = (n["registration"] or {}).get("broker")
        if broker is not None:
            state = "controlled shutdown" if broker["in_controlled_shutdown"] else (
                "fenced" if broker["fenced"] else "unfenced")
            lines.append(f"    broker epoch {broker['epoch']}, {state}"
                         + ("" if broker["current_incarnation"] else " (an earlier incarnation)"))
        if n["detail"]:
            lines.append(f"    {n['detail']}")
        if n["blocked"]:
            lines.append(f"    cannot apply the log beyond offset {n['applied_offset']}: {n['blocked']}")
        for fault in n["faults"]:
            lines.append(f"    loader: {fault}")
    return lines


__all__ = ["EVENTS", "TICKS", "SimError", "SimulationView", "catalog_path", "engine_of", "open_for_tool",
           "simulation_status", "simulation_status_lines"]
