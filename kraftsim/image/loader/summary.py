"""What a load gives, as plain data and as text: where the image came from (the snapshot,
the log range, what recovery would cut) and what the image holds.

`image_summary` and `load_summary` are the JSON form of `kraftsim replay`; `summary_lines`
renders them as text. Other commands and tests use them to describe images.
"""

from __future__ import annotations

from typing import Any, Sequence

from kraftsim.image.components.cluster import BrokerRegistration, ControllerRegistration, FeatureRange
from kraftsim.image.image import MetadataImage
from kraftsim.image.loader.loading import LoadResult
from kraftsim.image.components.configs import resource_type_name
from kraftsim.image.components.quotas import entity_text
from kraftsim.image.components.scram import mechanism_name
from kraftsim.storage.names import PathKind, snapshot_file_name
from kraftsim.versions import FEATURE_NAME as MV_NAME, Catalog

#: Text output lists at most this many items per section (JSON lists everything).
TEXT_LIMIT = 20


def mv_names(catalog: Catalog) -> dict[int, str]:
    """Level → version string, over every level the catalog defines (also those this line
    no longer knows, so old registrations still read as names)."""
    return {v.level: v.version for v in catalog.all_metadata_versions}


def _range_of(features: Sequence[FeatureRange], name: str) -> tuple[int, int] | None:
    for f in features:
        if f.name == name:
            return f.min_version, f.max_version
    return None


def _mv_range_text(rng: tuple[int, int] | None, names: dict[int, str]) -> str:
    if rng is None:
        return "-"
    lo, hi = rng
    return f"{lo}-{hi} ({names.get(lo, '?')} to {names.get(hi, '?')})"


def _listeners(reg: BrokerRegistration | ControllerRegistration) -> list[str]:
    return [f"{e.name}://{e.host}:{e.port}" for e in reg.listeners]


def _features_of(reg: BrokerRegistration | ControllerRegistration) -> dict[str, str]:
    return {f.name: f"{f.min_version}-{f.max_version}" for f in sorted(reg.supported_features, key=lambda f: f.name)}


def broker_state(b: BrokerRegistration) -> str:
    if b.in_controlled_shutdown:
        return "controlled shutdown"
    return "fenced" if b.fenced else "unfenced"


def image_summary(image: MetadataImage, catalog: Catalog) -> dict[str, Any]:
    """What the image holds, as plain data (the JSON form; `summary_lines` renders it)."""
    names = mv_names(catalog)
    prov = image.provenance
    mv = image.metadata_version
    out: dict[str, Any] = {
        "provenance": {"last_contained_offset": prov.last_contained_offset, "epoch": prov.last_contained_epoch,
                       "log_time_ms": prov.last_contained_log_time_ms, "batch_aligned": prov.is_offset_batch_aligned},
        "features": {MV_NAME: None if mv is None else {"level": mv, "version": names.get(mv, "?")},
                     **dict(image.features.finalized)},
    }
    out["brokers"] = [{
        "id": b.id, "epoch": b.epoch, "incarnation_id": str(b.incarnation_id), "state": broker_state(b),
        "rack": b.rack, "listeners": _listeners(b),
        "metadata_version_range": _mv_range_text(_range_of(b.supported_features, MV_NAME), names),
        "supported_features": _features_of(b), "log_dirs": len(b.directories),
        "migrating_zk_broker": b.is_migrating_zk_broker,
    } for b in image.cluster.sorted_brokers()]
    out["controllers"] = [{
        "id": c.id, "incarnation_id": str(c.incarnation_id), "listeners": _listeners(c),
        "metadata_version_range": _mv_range_text(_range_of(c.supported_features, MV_NAME), names),
        "supported_features": _features_of(c), "zk_migration_ready": c.zk_migration_ready,
    } for c in image.cluster.sorted_controllers()]
    topics, leaderless, under = [], [], []
    for t in image.topics.sorted_topics():
        rf = 0
        for pid, p in t.sorted_partitions():
            rf = max(rf, len(p.replicas))
            if p.leader < 0:
                leaderless.append(f"{t.name}-{pid}")
            if len(p.isr) < len(p.replicas):
                under.append(f"{t.name}-{pid}")
        topics.append({"name": t.name, "id": str(t.id), "partitions": len(t.partitions), "replication_factor": rf})
    out["topics"] = {"count": len(topics), "partitions": sum(t["partitions"] for t in topics),
                     "leaderless_partitions": leaderless, "under_replicated_partitions": under, "list": topics}
    out["configs"] = [{"resource_type": resource_type_name(rtype), "resource_name": rname,
                       "configs": {k: data[k] for k in sorted(data)}}
                      for (rtype, rname), data in image.configs.sorted_resources()]
    out["client_quotas"] = [{"entity": entity_text(entity), "quotas": {k: data[k] for k in sorted(data)}}
                            for entity, data in image.client_quotas.sorted_entities()]
    npid = image.producer_ids.next_producer_id
    out["producer_ids"] = {"next_producer_id": None if npid < 0 else npid}
    out["acls"] = [{"id": str(aid), "resource_type": a.resource_type, "resource_name": a.resource_name,
                    "pattern_type": a.pattern_type, "principal": a.principal, "host": a.host,
                    "operation": a.operation, "permission_type": a.permission_type}
                   for aid, a in image.acls.sorted_acls()]
    out["scram_credentials"] = [{"mechanism": mechanism_name(mech), "user": user, "iterations": c.iterations}
                                for (mech, user), c in image.scram.sorted_credentials()]
    out["delegation_tokens"] = [{"token_id": tid, "owner": t.owner, "requester": t.requester,
                                 "renewers": list(t.renewers), "issue_timestamp": t.issue_timestamp,
                                 "max_timestamp": t.max_timestamp, "expiration_timestamp": t.expiration_timestamp}
                                for tid, t in image.delegation_tokens.sorted_tokens()]
    opaque: dict[str, int] = {}
    for _, rec in image.opaque.sorted_records():
        opaque[rec.type_name] = opaque.get(rec.type_name, 0) + 1
    out["other_records"] = opaque
    return out


def load_summary(result: LoadResult) -> dict[str, Any]:
    """Where the image came from: the snapshot, the log range, what recovery would cut."""
    return {
        "path": result.path, "kind": result.kind.value,
        "snapshot": None if result.snapshot_id is None else snapshot_file_name(result.snapshot_id),
        "log_start": result.log_start, "end_offset": result.end_offset, "disk_end_offset": result.disk_end_offset,
        "records": result.records, "batches": result.batches, "bytes": result.bytes,
        "recovery": [f"{a.kind.value} {a.path}: {a.reason}" for a in result.recovery],
        "gaps": [list(g) for g in result.gaps],
        "recovered": result.recovered,
        "partial": result.partial,
        "configs_dropped": configs_dropped(result),
    }


def configs_dropped(result: LoadResult) -> dict[str, Any] | None:
    """The ConfigRecords the load ignored as the catalog's release does (Kafka 4.3 on drops
    configs its code does not define): the release, the record count and the count by
    config; None when nothing was dropped."""
    dropped = result.loader.configs_dropped
    if not dropped:
        return None
    return {"release": result.loader.catalog.release.name, "records": dropped.records,
            "configs": dropped.by_config()}


def configs_dropped_line(dropped: dict[str, Any]) -> str:
    """One line saying what `configs_dropped` holds (at most TEXT_LIMIT configs by name)."""
    shown, more = _more(list(dropped["configs"]))
    names = ", ".join(shown) + (f" {more}" if more else "")
    n, k = dropped["records"], len(dropped["configs"])
    return (f"replay as Kafka {dropped['release']} dropped {n} ConfigRecord{'s' if n != 1 else ''} of {k} "
            f"config{'s' if k != 1 else ''} its code does not define: {names}")


def _more(items: Sequence[Any], limit: int = TEXT_LIMIT) -> tuple[Sequence[Any], str | None]:
    if len(items) <= limit:
        return items, None
    return items[:limit], f"... and {len(items) - limit} more"


def _clip(line: str, width: int = 160) -> str:
    return line if len(line) <= width else line[:width - 3] + "..."


def summary_lines(loaded: dict[str, Any], s: dict[str, Any]) -> list[str]:
    """The readable form of a load and an image summary."""
    out = [f"{loaded['path']} ({loaded['kind']})"]
    if loaded.get("partial"):
        out.append(f"  {loaded['partial']}")
    if loaded.get("recovered"):
        out.append(f"  {loaded['recovered']}")
    if loaded["snapshot"]:
        src = f"snapshot {loaded['snapshot']}"
    elif loaded["kind"] == PathKind.SNAPSHOT.value:
        src = "a snapshot whose file name does not give its id"
    else:
        src = "no snapshot"
    if loaded["kind"] in (PathKind.METADATA_DIR.value, PathKind.LOG_DIR.value, PathKind.SEGMENT.value):
        src += (f" + log offsets {loaded['log_start']}..{loaded['end_offset'] - 1}" if loaded["end_offset"] >
                loaded["log_start"] else " + no log records")
        if loaded["disk_end_offset"] > loaded["end_offset"]:
            src += f" (of {loaded['disk_end_offset']} on disk)"
    out.append(f"  loaded: {src}; {loaded['records']} records, {loaded['batches']} batches, {loaded['bytes']} bytes")
    p = s["provenance"]
    out.append(f"  image at offset {p['last_contained_offset']}, epoch {p['epoch']}, log time {p['log_time_ms']} ms, "
               f"{'batch aligned' if p['batch_aligned'] else 'not batch aligned'}")
    for r in loaded["recovery"]:
        out.append(f"  recovery would: {r}")
    for a, b in loaded["gaps"]:
        out.append(f"  gap: offsets {a}..{b - 1} are missing")
    if loaded.get("configs_dropped"):
        out.append(f"  {configs_dropped_line(loaded['configs_dropped'])}")

    out.append("features")
    for name, level in s["features"].items():
        if name == MV_NAME:
            text = "not finalized" if level is None else f"{level['level']} ({level['version']})"
            out.append(f"  {MV_NAME}: {text}")
        else:
            out.append(f"  {name}: {level}")

    out.append(f"brokers ({len(s['brokers'])})")
    for b in s["brokers"]:
        out.append(f"  {b['id']}: {b['state']}, epoch {b['epoch']}, rack {b['rack'] or '-'}, "
                   f"listeners {', '.join(b['listeners']) or '-'}, metadata.version {b['metadata_version_range']}")
    out.append(f"controllers ({len(s['controllers'])})")
    for c in s["controllers"]:
        out.append(f"  {c['id']}: listeners {', '.join(c['listeners']) or '-'}, "
                   f"metadata.version {c['metadata_version_range']}")

    t = s["topics"]
    out.append(f"topics ({t['count']}, {t['partitions']} partitions; {len(t['leaderless_partitions'])} leaderless, "
               f"{len(t['under_replicated_partitions'])} under-replicated)")
    shown, more = _more(t["list"])
    for topic in shown:
        out.append(f"  {topic['name']}: {topic['partitions']} partition(s), replication factor "
                   f"{topic['replication_factor']}")
    if more:
        out.append(f"  {more}")
    for label, key in (("leaderless", "leaderless_partitions"), ("under-replicated", "under_replicated_partitions")):
        if t[key]:
            shown, more = _more(t[key])
            out.append(f"  {label}: {', '.join(shown)}" + (f" {more}" if more else ""))

    keys = sum(len(c["configs"]) for c in s["configs"])
    out.append(f"configs ({len(s['configs'])} resources, {keys} keys)")
    shown, more = _more(s["configs"])
    for c in shown:
        name = c["resource_name"] or "<default>"
        items = ", ".join(f"{k}={v}" for k, v in c["configs"].items())
        out.append(_clip(f"  {c['resource_type']} {name}: {items}"))
    if more:
        out.append(f"  {more}")
    out.append(f"client quotas ({len(s['client_quotas'])})")
    for q in _more(s["client_quotas"])[0]:
        out.append(f"  {q['entity']}: " + ", ".join(f"{k}={v}" for k, v in q["quotas"].items()))
    npid = s["producer_ids"]["next_producer_id"]
    out.append(f"producer ids: {'none allocated' if npid is None else f'next {npid}'}")
    out.append(f"acls ({len(s['acls'])})")
    for a in _more(s["acls"])[0]:
        out.append(f"  {a['principal']} from {a['host']}: operation {a['operation']} permission "
                   f"{a['permission_type']} on resource type {a['resource_type']} {a['resource_name']!r} "
                   f"(pattern {a['pattern_type']})")
    out.append(f"scram credentials ({len(s['scram_credentials'])})")
    for c in _more(s["scram_credentials"])[0]:
        out.append(f"  {c['mechanism']} {c['user']} ({c['iterations']} iterations)")
    out.append(f"delegation tokens ({len(s['delegation_tokens'])})")
    for tok in _more(s["delegation_tokens"])[0]:
        out.append(f"  {tok['token_id']}: owner {tok['owner']}, expires {tok['expiration_timestamp']}")
    if s["other_records"]:
        out.append("records of types the image does not model: "
                   + ", ".join(f"{n} {k}" for k, n in s["other_records"].items()))
    return out
