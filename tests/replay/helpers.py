"""Helpers for the replay tests: the oracle's sets, and what raw records say, computed
without the image code (only the codec and the storage readers are used)."""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any, Iterable

from kraftsim.protocol.entries import LogEntry
from kraftsim.protocol.registry import default_registry
from kraftsim.storage import MetadataLog, read_snapshot
from tests.conftest import ORACLE

REGISTRY = default_registry()
MARKERS = {"BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord"}


def metadata_dirs() -> list[Path]:
    """Every `__cluster_metadata-0` directory of the oracle (empty when it is absent)."""
    if not ORACLE.is_dir():
        return []
    return sorted(p for p in ORACLE.rglob("__cluster_metadata-0") if p.is_dir())


def bootstrap_files() -> list[Path]:
    return sorted(ORACLE.rglob("bootstrap.checkpoint")) if ORACLE.is_dir() else []


def rel(p: Path) -> str:
    return str(p.relative_to(ORACLE)) if ORACLE in p.parents else str(p)


def log_records(directory: Path) -> list[LogEntry]:
    """Every record of a directory's log, in offset order, control records included."""
    with MetadataLog.open(directory, read_only=True) as log:
        return list(log.entries(None, REGISTRY))


def snapshot_records(path: Path) -> list[LogEntry]:
    return list(read_snapshot(path, REGISTRY).data_entries())


def what_records_say(records: Iterable[LogEntry]) -> dict[str, Any]:
    """Features, brokers (state, rack, listeners, advertised metadata.version), controllers,
    topics and their partition counts, straight from the records. Transactions in the
    oracle are all committed (checked), so markers are skipped."""
    mv = None
    features: dict[str, int] = {}
    brokers: dict[int, dict[str, Any]] = {}
    controllers: set[int] = set()
    topics: dict[bytes, str] = {}
    partitions: dict[bytes, set[int]] = collections.defaultdict(set)
    for e in records:
        if e.control:
            continue
        n, m = e.record_type.name, e.message
        assert n != "AbortTransactionRecord", "an aborted transaction needs the loader's rules"
        if n == "FeatureLevelRecord":
            if m.name == "metadata.version":
                mv = m.feature_level
            elif m.name != "kraft.version":
                if m.feature_level == 0:
                    features.pop(m.name, None)
                else:
                    features[m.name] = m.feature_level
        elif n == "RegisterBrokerRecord":
            mv_range = next(((f.min_supported_version, f.max_supported_version) for f in m.features
                             if f.name == "metadata.version"), None)
            brokers[m.broker_id] = {"fenced": m.fenced, "shutdown": m.in_controlled_shutdown, "rack": m.rack,
                                    "listeners": sorted(f"{x.name}://{x.host}:{x.port}" for x in m.end_points),
                                    "mv_range": mv_range}
        elif n == "UnregisterBrokerRecord":
            brokers.pop(m.broker_id, None)
        elif n == "FenceBrokerRecord":
            brokers[m.id]["fenced"] = True
        elif n == "UnfenceBrokerRecord":
            brokers[m.id]["fenced"] = False
        elif n == "BrokerRegistrationChangeRecord":
            if m.fenced != 0:
                brokers[m.broker_id]["fenced"] = m.fenced == 1
            if m.in_controlled_shutdown == 1:
                brokers[m.broker_id]["shutdown"] = True
        elif n == "RegisterControllerRecord":
            controllers.add(m.controller_id)
        elif n == "TopicRecord":
            topics[bytes(m.topic_id)] = m.name
            partitions[bytes(m.topic_id)] = set()
        elif n == "RemoveTopicRecord":
            topics.pop(bytes(m.topic_id))
            partitions.pop(bytes(m.topic_id))
        elif n == "PartitionRecord":
            partitions[bytes(m.topic_id)].add(m.partition_id)
    state = {b: ("controlled shutdown" if v["shutdown"] else "fenced" if v["fenced"] else "unfenced")
             for b, v in brokers.items()}
    return {
        "metadata.version": mv, "features": features, "brokers": brokers, "broker_states": state,
        "controllers": controllers,
        "topics": {name: len(partitions[tid]) for tid, name in topics.items()},
    }


def record_key(payload: Any) -> tuple:
    """A record as a hashable value; a registration's listener and feature lists as sets
    (Kafka writes them in Java hash-map order, which is not metadata)."""
    m = payload.message
    name = payload.record_type.name
    if name in ("RegisterBrokerRecord", "RegisterControllerRecord"):
        fields = {f: getattr(m, f) for f in m.__struct_fields__ if f not in ("end_points", "features", "_unknown")}
        eps = frozenset((e.name, e.host, e.port, e.security_protocol) for e in m.end_points)
        feats = frozenset((f.name, f.min_supported_version, f.max_supported_version) for f in m.features)
        return name, payload.version, repr(sorted(fields.items())), eps, feats
    return name, payload.version, repr(m)


def record_multiset(payloads: Iterable[Any]) -> collections.Counter:
    return collections.Counter(record_key(p) for p in payloads)
