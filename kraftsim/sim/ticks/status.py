"""What `kraftsim cluster status` shows: nodes, releases, supported ranges, fencing, the
finalized features and each replica's offsets, as a dict (for --json) and as text lines.

Everything comes from the nodes themselves: a running node's loader (its applied offset
and finalized features), its replica's log end offset, the release's supported ranges,
and the active controller's image for registrations and fencing.
"""

from __future__ import annotations

from typing import Any

from kraftsim.sim.ticks.cluster import SimCluster
from kraftsim.sim.node.simnode import SimNode
from kraftsim.versions import FEATURE_NAME as MV_NAME, range_text


def _registration(cluster: SimCluster, node: SimNode) -> dict[str, object] | None:
    """The node's registrations as the active controller sees them (without one: as the
    node's own replica says, or unknown for a stopped node)."""
    image = cluster.image() or node.image
    if image is None:
        return None
    out: dict[str, object] = {}
    if node.state.is_broker:
        reg = image.cluster.broker(node.id)
        if reg is not None:
            out["broker"] = {"epoch": reg.epoch, "fenced": reg.fenced,
                             "in_controlled_shutdown": reg.in_controlled_shutdown,
                             "incarnation": str(reg.incarnation_id),
                             "current_incarnation": str(reg.incarnation_id) == node.state.incarnation}
    if node.state.is_controller:
        creg = image.cluster.controller(node.id)
        if creg is not None:
            out["controller"] = {"incarnation": str(creg.incarnation_id),
                                 "current_incarnation": str(creg.incarnation_id) == node.state.incarnation}
    return out


def cluster_status(cluster: SimCluster) -> dict[str, object]:
    st = cluster.state
    leader = cluster.leader_node()
    finalized = leader.finalized() if leader is not None else None
    nodes = []
    for ns in sorted(st.nodes, key=lambda n: n.id):
        node = cluster.node(ns.id)
        nf = node.finalized() if ns.running else None
        nodes.append({
            "id": ns.id,
            "roles": list(ns.roles),
            "release": ns.release,
            "running": ns.running,
            "voter": ns.id in st.voters,
            "active_controller": ns.id == st.leader,
            "incarnation": ns.incarnation,
            "supported": {name: list(rng) for name, rng in sorted(node.supported.items())},
            "log_end_offset": node.log_end_offset,
            "applied_offset": node.applied_offset if ns.running else None,
            "finalized_epoch": nf.epoch if nf is not None else None,
            "registration": _registration(cluster, node),
            "note": ns.note,
            "blocked": node.blocked.text() if ns.running and node.blocked is not None else None,
            "faults": list(node.faults),
        })
    return {
        "directory": str(cluster.directory),
        "cluster_id": st.cluster_id,
        "seed": st.seed,
        "time_ms": st.now_ms,
        "policies": list(st.policies),
        "voters": list(st.voters),
        "leader": st.leader,
        "epoch": st.epoch,
        "kraft_version": st.kraft_version,
        "finalized": dict(finalized.levels) if finalized is not None else None,
        "finalized_epoch": finalized.epoch if finalized is not None else None,
        "nodes": nodes,
    }


def _fence_text(node: dict[str, Any]) -> str:
    reg = node["registration"]
    if "broker" not in node["roles"]:
        return "-"
    if reg is None:
        return "unknown"
    b = reg.get("broker")
    if b is None:
        return "not registered"
    if not b["current_incarnation"]:
        return "fenced (old incarnation)" if b["fenced"] else "unfenced (old incarnation)"
    if b["in_controlled_shutdown"]:
        return "controlled shutdown"
    return "fenced" if b["fenced"] else "unfenced"


def status_lines(status: dict[str, Any], mv_names: dict[int, str] | None = None) -> list[str]:
    """The text form: a header, the finalized features, then one line per node."""
    leader = status["leader"]
    lines = [f"Cluster {status['cluster_id']} in {status['directory']} (seed {status['seed']}, "
             f"virtual time {status['time_ms']} ms"
             + (f", policies: {', '.join(status['policies'])}" if status["policies"] else "") + ")",
             f"Voters: {','.join(str(v) for v in status['voters'])}; "
             + (f"active controller: node {leader}, epoch {status['epoch']}" if leader is not None
                else f"no active controller (last epoch {status['epoch']})")]
    fin = status["finalized"]
    if fin is None:
        lines.append("Finalized features: unknown (no active controller)")
    else:
        parts = []
        for name, level in sorted(fin.items()):
            shown = f"{level} ({mv_names[level]})" if name == MV_NAME and mv_names and level in mv_names else str(level)
            parts.append(f"{name}={shown}")
        lines.append(f"Finalized features (epoch {status['finalized_epoch']}): {', '.join(parts)}")
    lines.append("")
    lines.append("ID  ROLES              RELEASE  STATE    BROKER                    LOG-END  APPLIED  SUPPORTED")
    for n in status["nodes"]:
        roles = "+".join(n["roles"]) + ("*" if n["active_controller"] else "")
        state = "running" if n["running"] else "stopped"
        applied = "-" if n["applied_offset"] is None else str(n["applied_offset"])
        supported = ", ".join(f"{k}={range_text(*v)}" for k, v in n["supported"].items())
        lines.append(f"{n['id']:<3} {roles:<18} {n['release']:<8} {state:<8} {_fence_text(n):<25} "
                     f"{n['log_end_offset']:<8} {applied:<8} {supported}")
        if n["note"]:
            lines.append(f"    {n['note']}")
        if n["blocked"]:
            lines.append(f"    cannot apply the log beyond offset {n['applied_offset']}: {n['blocked']}")
        for fault in n["faults"]:
            lines.append(f"    loader: {fault}")
    lines.append("(* = active controller)")
    return lines
