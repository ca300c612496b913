"""A small simulated cluster for the cluster-control and replication tests (no tests here).

`RuleCluster` keeps an image, the controller's BrokerHeartbeats, the next log offset and a
virtual clock. Every decision is made by the rule functions under test, and every result
is applied by replaying its records through MetadataDelta, as a controller would.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import msgspec

from kraftsim.controller.cluster_control import (
    BrokerHeartbeatRequest,
    BrokerHeartbeats,
    BrokerRegistrationRequest,
    Listener,
    broker_heartbeat,
    register_broker,
    supported_features,
)
from kraftsim.controller.context import ControllerConfig, ControllerContext
from kraftsim.controller import CreatableTopic, CreateTopicsRequest, create_topics
from kraftsim.controller.result import ControllerResult
from kraftsim.image import MetadataDelta, MetadataImage, MetadataProvenance
from kraftsim.protocol.entries import LogEntry, Payload
from kraftsim.protocol.primitives import Uuid
from kraftsim.versions import Catalog, default_catalog
from tests.controller.conftest import features, payload

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qk"
CATALOG = default_catalog()
ELR = "eligible.leader.replicas.version"


def uid(n: int, hi: int = 0x51) -> Uuid:
    """A deterministic Uuid that is not a reserved directory id."""
    return Uuid.from_longs((hi << 40) | n, 0x1234_5678_0000 + n)


def replay(image: MetadataImage, records: Iterable[Any], catalog: Catalog = CATALOG,
           next_offset: int | None = None) -> MetadataImage:
    delta = MetadataDelta(image, catalog)
    n = 0
    for r in records:
        delta.replay(r)
        n += 1
    last = (image.provenance.last_contained_offset + n) if next_offset is None else next_offset - 1
    return delta.apply(MetadataProvenance(last, 1, 0, True))


def to_json(p: Payload, offset: int = 0) -> dict:
    """A payload as `kraftsim log dump --json` shows its data."""
    return LogEntry(offset, 1, 0, False, p.record_type, p.version, p.message).to_json()


class RuleCluster:
    """An image plus the controller's soft state, advanced only by rule results."""

    def __init__(self, metadata_version: str = "4.1-IV1", *, catalog: Catalog = CATALOG, elr: bool | None = None,
                 levels: Mapping[str, int] | None = None, min_insync_replicas: int | None = None,
                 config: ControllerConfig | None = None, kraft_version: int = 0):
        self.catalog = catalog
        mv = catalog.metadata_version(metadata_version)
        lv = {"metadata.version": mv.level}
        if levels is not None:
            lv.update(levels)
        if elr is not None:
            lv[ELR] = 1 if elr else 0
        self.config = config or ControllerConfig(cluster_id=CLUSTER_ID, default_replication_factor=3, num_partitions=3)
        self.kraft_version = kraft_version
        records = features({k: v for k, v in lv.items() if v})
        if min_insync_replicas is not None:
            records.append(payload("ConfigRecord", resource_type=4, resource_name="", name="min.insync.replicas",
                                   value=str(min_insync_replicas)))
        self.image = replay(MetadataImage(), records, catalog, next_offset=len(records))
        self.next_offset = len(records)
        self.now_ms = 1_000
        self.heartbeats = BrokerHeartbeats(self.config.broker_session_timeout_ms)
        self.log: list[tuple[int, Payload]] = []

    @property
    def mv(self):
        return self.catalog.metadata_version(self.image.metadata_version)

    def ctx(self, **changes: Any) -> ControllerContext:
        c = ControllerContext(node_id=3000, supported=self.catalog.supported_features(), image=self.image,
                              catalog=self.catalog, config=self.config, next_write_offset=self.next_offset,
                              kraft_version=self.kraft_version, now_ms=self.now_ms)
        return msgspec.structs.replace(c, **changes) if changes else c

    def apply(self, result: ControllerResult) -> ControllerResult:
        """Commit a result's records at the next offsets."""
        if result.records:
            self.image = replay(self.image, result.records, self.catalog, self.next_offset + len(result.records))
            for p in result.records:
                self.log.append((self.next_offset, p))
                self.next_offset += 1
        return result

    def run(self, rule, *args: Any) -> ControllerResult:
        return self.apply(rule(self.ctx(), *args))

    # --- brokers

    def registration(self, broker_id: int, *, incarnation: int | None = None, rack: str | None = None,
                     dirs: int = 1, features: Mapping[str, tuple[int, int]] | None = None,
                     **kw: Any) -> BrokerRegistrationRequest:
        inc = uid(1000 + broker_id if incarnation is None else incarnation, hi=0x77)
        log_dirs = tuple(uid(100 * broker_id + d, hi=0x33) for d in range(dirs))
        return BrokerRegistrationRequest(
            broker_id=broker_id, cluster_id=CLUSTER_ID, incarnation_id=inc,
            listeners=(Listener("PLAINTEXT", f"broker-{broker_id}", 9092, 0),),
            features=supported_features(features if features is not None else self.catalog.supported_features()),
            rack=rack, log_dirs=log_dirs, **kw)

    def register(self, broker_id: int, **kw: Any) -> ControllerResult:
        return self.apply(register_broker(self.ctx(), self.registration(broker_id, **kw), self.heartbeats))

    def heartbeat(self, broker_id: int, **kw: Any) -> ControllerResult:
        reg = self.image.cluster.broker(broker_id)
        kw.setdefault("broker_epoch", reg.epoch if reg is not None else -1)
        kw.setdefault("current_metadata_offset", self.next_offset - 1)
        req = BrokerHeartbeatRequest(broker_id=broker_id, **kw)
        return self.apply(broker_heartbeat(self.ctx(), req, self.heartbeats))

    def start_brokers(self, ids: Iterable[int], racks: Mapping[int, str] | None = None, dirs: int = 1) -> None:
        """Register and unfence brokers."""
        for b in ids:
            self.register(b, rack=(racks or {}).get(b), dirs=dirs)
        for b in ids:
            self.heartbeat(b)

    def create(self, name: str, partitions: int = 3, rf: int = 3, seed: int = 0, **kw: Any) -> ControllerResult:
        req = CreateTopicsRequest((CreatableTopic(name, partitions, rf, **kw),), seed=seed)
        return self.apply(create_topics(self.ctx(), req))

    def partition(self, topic: str, pid: int):
        return self.image.topics.get_topic_by_name(topic).partitions[pid]


def types(result: ControllerResult) -> list[tuple[str, int]]:
    return [(p.record_type.name, p.version) for p in result.records]
