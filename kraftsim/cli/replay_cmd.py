"""`kraftsim replay PATH...`: load a log directory, snapshot, segment or bootstrap file, print
what the image holds, and verify it (kraftsim.image.verification.verify).

For a directory every snapshot is checked against the log; for every path the image's
lossless downgrades are checked to round-trip; with several directories (replicas of one
quorum) they are compared at every common offset and each one's extra tail is listed.
`--json` prints one object: {"results": [...], "replicas": ... or null, "ok": bool}.

Exit status: 0 when every check passes, 1 when one fails, 2 for bad input (missing or
unreadable file, wrong kind, offset out of range, unknown version), with one line on stderr.
The helpers at the bottom are shared by the other replay-family commands.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

import msgspec

from kraftsim.cli.common import add_catalog_options, catalog_from_args
from kraftsim.errors import KraftsimError
from kraftsim.image import resource_type_name
from kraftsim.image.image import MetadataImage
from kraftsim.image import LoadResult, SnapshotChoice, load_path
from kraftsim.image import entity_text
from kraftsim.image import mechanism_name
from kraftsim.image import (
    render_directory, render_replicas, render_roundtrip, verify_directory, verify_replicas, verify_roundtrip,
)
from kraftsim.image import MvChangeHandling
from kraftsim.storage.names import PathKind, SnapshotId, classify_path, parse_snapshot_name, snapshot_file_name
from kraftsim.versions import FEATURE_NAME as MV_NAME, Catalog, MetadataVersion

#: Text output lists at most this many items per section (JSON lists everything).
TEXT_LIMIT = 20


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("replay", help="load a metadata log, snapshot or bootstrap file, summarize and verify the image",
                       description="Load each PATH as a node would, print the image it gives, and verify it: every "
                                   "snapshot of a directory against the log, lossless downgrades round-trip, and "
                                   "with several directories, that the replicas agree. Exit 1 if a check fails.")
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="a __cluster_metadata-0 directory or a log directory holding one, a .checkpoint snapshot, "
                        "a .log segment or a bootstrap.checkpoint; several directories are compared as replicas")
    p.add_argument("--at", type=int, metavar="OFFSET",
                   help="the state after every record below OFFSET (a snapshot id's end offset); default: the end")
    p.add_argument("--snapshot", default="latest", metavar="latest|none|OFFSET-EPOCH",
                   help="which snapshot a directory load starts from (default: the newest usable one; none: the "
                        "whole log)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.add_argument("--no-verify", action="store_true", help="only load and summarize")
    p.add_argument("--roundtrip", choices=("lossless", "all", "none"), default="lossless",
                   help="downgrade round trips to check: to every lower metadata.version Kafka calls a lossless "
                        "downgrade (default), to every lower one (those where this image loses nothing must "
                        "round-trip), or none; each rewrites and replays the image twice")
    p.add_argument("--progress", action="store_true", help="show progress on stderr even when it is not a terminal")
    p.add_argument("--mv-change", choices=("kafka", "kip-778"), default="kafka",
                   help="how metadata.version changes are loaded: as Kafka does (default), or rewriting the image "
                        "at each new metadata.version as KIP-778 designs it (logs of a cluster run under the "
                        "kip-778 policy)")
    add_catalog_options(p)
    p.set_defaults(run=input_errors(run_replay))


# ------------------------------------------------------------------------------ shared helpers


class BadInput(KraftsimError):
    """Input the command cannot work with: exit 2."""


def input_errors(run: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Bad input → one line on stderr naming the path and the cause, exit 2, no traceback."""

    def wrapped(args: argparse.Namespace) -> int:
        try:
            return run(args)
        except KraftsimError as e:
            print(f"kraftsim: error: {e}", file=sys.stderr)
            return 2
        except BrokenPipeError:
            raise
        except OSError as e:
            where = e.filename if e.filename is not None else "input"
            print(f"kraftsim: error: {where}: {e.strerror or e}", file=sys.stderr)
            return 2

    return wrapped


def parse_snapshot_choice(text: str) -> SnapshotChoice:
    """`latest`, `none`, `OFFSET-EPOCH` or a snapshot file name."""
    if text in ("latest", "none"):
        return text  # type: ignore[return-value]
    m = re.fullmatch(r"(\d+)-(\d+)(\.checkpoint)?", Path(text).name)
    if not m:
        raise BadInput(f"--snapshot {text}: expected latest, none or OFFSET-EPOCH (e.g. 7752-1)")
    return SnapshotId(int(m.group(1)), int(m.group(2)))


def parse_metadata_version(catalog: Catalog, text: str) -> MetadataVersion:
    """A feature level (`14`) or a version (`3.6-IV2`, `3.6`)."""
    text = text.strip()
    return catalog.metadata_version(int(text) if re.fullmatch(r"\d+", text) else text)


def split_offset(text: str) -> tuple[Path, int | None]:
    """`PATH` or `PATH@OFFSET` (a directory's state at an offset). A path that exists as
    given is taken whole, even if it holds an `@`."""
    p = Path(text)
    if p.exists() or "@" not in text:
        return p, None
    head, _, tail = text.rpartition("@")
    if not re.fullmatch(r"\d+", tail):
        return p, None
    return Path(head), int(tail)


def load(path: Path, catalog: Catalog, *, at: int | None = None, snapshot: SnapshotChoice = "latest",
         progress: bool = False, mv_change: MvChangeHandling = MvChangeHandling.KAFKA) -> LoadResult:
    """load_path with the command-line checks: the path exists, the offset makes sense."""
    if not path.exists():
        raise BadInput(f"{path}: no such file or directory")
    kind = classify_path(path)
    if at is not None and at < 0:
        raise BadInput(f"{path}: offset {at} is negative")
    if kind is PathKind.BOOTSTRAP and at not in (None, 0):
        raise BadInput(f"{path}: a bootstrap file holds the state before the log begins (offset 0), not at {at}")
    if snapshot != "latest" and kind not in (PathKind.METADATA_DIR, PathKind.LOG_DIR):
        raise BadInput(f"{path}: --snapshot applies to a log directory, not a {kind.value}")
    if kind is PathKind.SNAPSHOT and at is not None and parse_snapshot_name(path.name) is None:
        raise BadInput(f"{path}: the file name does not say which offset this snapshot holds; "
                       "--at/@OFFSET cannot apply")
    reporter = _progress_printer(path) if progress else None
    try:
        result = load_path(path, catalog=catalog, upto_offset=at, snapshot=snapshot, progress=reporter,
                           mv_change=mv_change)
    finally:
        if reporter is not None:
            print(file=sys.stderr)
    if kind is PathKind.SEGMENT and at is not None and at > result.disk_end_offset:
        raise BadInput(f"{path}: offset {at} is beyond the end of the segment ({result.disk_end_offset})")
    return result


def show_progress(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "progress", False)) or sys.stderr.isatty()


def _progress_printer(path: Path) -> Callable[[int, int], None]:
    def report(done: int, total: int) -> None:
        print(f"\rkraftsim: replaying {path}: {done / 1e6:.1f} of {total / 1e6:.1f} MB", end="", file=sys.stderr,
              flush=True)

    return report


def step_printer(enabled: bool) -> Callable[[str], None] | None:
    if not enabled:
        return None
    return lambda text: print(f"kraftsim: {text}", file=sys.stderr, flush=True)


def print_json(obj: Any) -> None:
    print(json.dumps(msgspec.to_builtins(obj), indent=2, ensure_ascii=False))


# ------------------------------------------------------------------------------ the summary


def mv_names(catalog: Catalog) -> dict[int, str]:
    """Level → version string, over every level the catalog defines (also those this line
    no longer knows, so old registrations still read as names)."""
    return {v.level: v.version for v in catalog.all_metadata_versions}


def _range_of(features: Sequence[Any], name: str) -> tuple[int, int] | None:
    for f in features:
        if f.name == name:
            return f.min_version, f.max_version
    return None


def _mv_range_text(rng: tuple[int, int] | None, names: dict[int, str]) -> str:
    if rng is None:
        return "-"
    lo, hi = rng
    return f"{lo}-{hi} ({names.get(lo, '?')} to {names.get(hi, '?')})"


def _listeners(reg: Any) -> list[str]:
    return [f"{e.name}://{e.host}:{e.port}" for e in reg.listeners]


def _features_of(reg: Any) -> dict[str, str]:
    return {f.name: f"{f.min_version}-{f.max_version}" for f in sorted(reg.supported_features, key=lambda f: f.name)}


def broker_state(b: Any) -> str:
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
    }


def _more(items: Sequence[Any], limit: int = TEXT_LIMIT) -> tuple[Sequence[Any], str | None]:
    if len(items) <= limit:
        return items, None
    return items[:limit], f"... and {len(items) - limit} more"


def _clip(line: str, width: int = 160) -> str:
    return line if len(line) <= width else line[:width - 3] + "..."


def summary_lines(loaded: dict[str, Any], s: dict[str, Any]) -> list[str]:
    """The readable form of a load and an image summary."""
    out = [f"{loaded['path']} ({loaded['kind']})"]
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


# ------------------------------------------------------------------------------ the command


def run_replay(args: argparse.Namespace) -> int:
    catalog = catalog_from_args(args)
    choice = parse_snapshot_choice(args.snapshot)
    paths = [Path(p) for p in args.paths]
    progress = show_progress(args)
    steps = step_printer(progress)
    mv_change = MvChangeHandling.KIP_778 if args.mv_change == "kip-778" else MvChangeHandling.KAFKA
    loads = [load(p, catalog, at=args.at, snapshot=choice, progress=progress, mv_change=mv_change) for p in paths]

    results: list[dict[str, Any]] = []
    text: list[str] = []
    ok = True
    for path, result in zip(paths, loads):
        entry: dict[str, Any] = {"load": load_summary(result), "summary": image_summary(result.image, catalog)}
        lines = summary_lines(entry["load"], entry["summary"])
        if not args.no_verify:
            checks: dict[str, Any] = {}
            if result.kind in (PathKind.METADATA_DIR, PathKind.LOG_DIR):
                directory = verify_directory(path, catalog=catalog, progress=steps, mv_change=mv_change)
                checks["directory"] = directory
                lines += ["verification"] + ["  " + x for x in render_directory(directory)]
                ok &= directory.ok
            if args.roundtrip != "none":
                trips = verify_roundtrip(result.image, catalog=catalog, targets=args.roundtrip)
                checks["roundtrip"] = trips
                if "directory" not in checks:
                    lines.append("verification")
                lines += ["  " + x for x in render_roundtrip(trips)]
                ok &= trips.ok
            entry["verification"] = checks
        results.append(entry)
        text += lines + [""]

    replicas = None
    if len(paths) > 1 and not args.no_verify:
        kinds = {r.kind for r in loads}
        if kinds <= {PathKind.METADATA_DIR, PathKind.LOG_DIR}:
            replicas = verify_replicas(paths, catalog=catalog, progress=steps, mv_change=mv_change)
            ok &= replicas.ok
            text += ["replicas"] + ["  " + x for x in render_replicas(replicas)]
        else:
            raise BadInput("several paths are compared as replicas: give only log directories")

    if args.json:
        print_json({"results": results, "replicas": replicas, "ok": ok})
    else:
        print("\n".join(text).rstrip("\n"))
    return 0 if ok else 1
