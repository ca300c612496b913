"""What `cluster import` tells the operator: every fact, and whether it was read from the
metadata, inferred from it, assumed, or given on the command line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kraftsim.image import MetadataImage
from kraftsim.storage import topic_name_error
from kraftsim.textsafe import visible
from kraftsim.sim.importing.plan import ImportPlan, finalized_levels
from kraftsim.sim.saved import SavedState


def _listeners(image: MetadataImage, node_id: int) -> list[str]:
    """The endpoints the node last registered (broker's, then controller's), as name://host:port."""
    out: list[str] = []
    for reg in (image.cluster.brokers.get(node_id), image.cluster.controllers.get(node_id)):
        if reg is not None:
            out += [f"{e.name}://{e.host}:{e.port}" for e in reg.listeners]
    return out


def _rack(image: MetadataImage, node_id: int) -> str | None:
    reg = image.cluster.brokers.get(node_id)
    return None if reg is None else reg.rack


def summary_dict(plan: ImportPlan, saved: SavedState, directory: Path) -> dict[str, object]:
    image = plan.image
    ref = plan.reference
    return {
        "directory": str(directory),
        "cluster_id": saved.cluster_id, "cluster_id_from": plan.cluster_id_how,
        "end_offset": ref.end_offset, "epoch": plan.epoch,
        "partial": plan.partial, "stopped_at_offset": plan.stopped_at,
        "damage": [n.source.damage.text() if n.source.damage is not None else str(n.source.loaded.partial)
                   for n in plan.nodes if n.source.damage is not None or n.source.loaded.partial][:1],
        "finalized": finalized_levels(image),
        "voters": list(plan.voters), "voters_from": plan.voters_how, "kraft_version": plan.kraft_version,
        "topics": len(image.topics), "partitions": image.topics.partition_count(),
        "illegal_topic_names": [e for e in (topic_name_error(t.name) for t in image.topics.sorted_topics())
                                if e is not None],
        "nodes": [{"id": n.id, "roles": list(n.roles), "release": n.release, "release_from": n.release_how,
                   "starts_from": n.source_how, "end_offset": n.source.end_offset,
                   "directory_id": n.directory_id, "directory_id_from": n.directory_how,
                   "listeners": _listeners(image, n.id), "rack": _rack(image, n.id)} for n in plan.nodes],
        "notes": list(plan.notes) + sorted({str(n.source.loaded.recovered) for n in plan.nodes
                                             if n.source.loaded.recovered}),
    }


def summary_lines(s: dict[str, Any]) -> list[str]:
    fin = ", ".join(f"{k}={v}" for k, v in s["finalized"].items()) or "none"
    lines = [f"Imported cluster {s['cluster_id']} into {s['directory']}: {len(s['nodes'])} node(s) starting at "
             f"offset {s['end_offset']} (epoch {s['epoch']})"
             + (f" -- PARTIAL: stopped at offset {s['stopped_at_offset']}, where the source is damaged"
                if s["partial"] else ""),
             f"  cluster id: from {s['cluster_id_from']}",
             f"  voters: {','.join(map(str, s['voters']))} (from {s['voters_from']})"
             + (f"; a dynamic quorum (KIP-853, kraft.version {s['kraft_version']})" if s["kraft_version"] >= 1
                else ""),
             f"  finalized (as in the source): {fin}",
             f"  topics: {s['topics']}, partitions: {s['partitions']}"]
    lines += [f"  damage: {t} (imported up to it)" for t in s["damage"]]
    lines += [f"  WARNING: a topic Kafka could never have created: {visible(t)}" for t in s["illegal_topic_names"]]
    for n in s["nodes"]:
        roles = "+".join(n["roles"])
        lines.append(f"  node {n['id']}: {roles}, release {n['release']} -- {n['release_from']}; starts from "
                     f"{n['starts_from']} at offset {n['end_offset']}; "
                     + (f"directory id {n['directory_id']} ({n['directory_id_from']})" if n["directory_id"]
                        else f"no directory id ({n['directory_id_from'].removeprefix('none: ')})"))
        if n["listeners"]:
            lines.append(f"    registers with its real endpoints: {', '.join(n['listeners'])}"
                         + (f"; rack {n['rack']}" if n["rack"] else ""))
    lines += [f"  note: {t}" for t in s["notes"]]
    return lines


__all__ = ["summary_dict", "summary_lines"]
