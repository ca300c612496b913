"""Random metadata logs for the property tests: a synthetic cluster (kraftsim.image.synthetic)
followed by random valid changes, cut into random batches across several segments.

Changes are drawn against the image of the records so far (so every record replays):
ISR and leader changes, fencing and unfencing, topic configs set and deleted, topics
created and removed, client quotas, producer id blocks, no-ops, and committed metadata
transactions where the metadata.version has them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from kraftsim.image import image_from_records
from kraftsim.image.synthetic import ClusterShape, cluster_records
from kraftsim.protocol.entries import Payload
from kraftsim.protocol.primitives import Uuid
from kraftsim.protocol.registry import default_registry
from kraftsim.storage import MetadataLog
from kraftsim.versions import Catalog

REGISTRY = default_registry()
TOPIC = 2  # ConfigResource.Type.TOPIC
#: metadata.versions the logs are written at: 3.4 (no transactions), 3.6, 3.9, 4.1 (directories, ELR).
LEVELS = (8, 14, 21, 27)


def rec(catalog: Catalog, mv: int, _type: str, **fields: Any) -> Payload:
    rt = REGISTRY[_type]
    return Payload(rt, catalog.record_version(_type, mv), rt.new(**fields))


@dataclass
class RandomLog:
    """A written log: its directory, batch boundaries and metadata.version."""

    directory: Path
    boundaries: list[int]  # base offsets of batches, then the log end
    metadata_version: int
    in_transaction: set[int]  # batch boundaries that fall inside a transaction


def _change(draw: Any, catalog: Catalog, mv: int, records: list[Payload], serial: int) -> list[Payload]:
    image = image_from_records(records, catalog=catalog)
    topics = list(image.topics.sorted_topics())
    brokers = list(image.cluster.sorted_brokers())
    kind = draw(st.sampled_from(["isr", "leader", "fence", "config", "topic", "remove", "quota", "pids", "noop"]))
    if kind in ("isr", "leader") and topics:
        t = draw(st.sampled_from(topics))
        pid, p = draw(st.sampled_from(t.sorted_partitions()))
        if kind == "isr":
            isr = draw(st.lists(st.sampled_from(p.replicas), min_size=1, max_size=len(p.replicas), unique=True))
            return [rec(catalog, mv, "PartitionChangeRecord", partition_id=pid, topic_id=t.id, isr=isr)]
        return [rec(catalog, mv, "PartitionChangeRecord", partition_id=pid, topic_id=t.id,
                    leader=draw(st.sampled_from(list(p.isr) + [-1])))]
    if kind == "fence" and brokers:
        b = draw(st.sampled_from(brokers))
        return [rec(catalog, mv, "BrokerRegistrationChangeRecord", broker_id=b.id, broker_epoch=b.epoch,
                    fenced=-1 if b.fenced else 1)]
    if kind == "config" and topics:
        t = draw(st.sampled_from(topics))
        value = draw(st.none() | st.sampled_from(["1000", "delete", "compact", "2"]))
        return [rec(catalog, mv, "ConfigRecord", resource_type=TOPIC, resource_name=t.name,
                    name=draw(st.sampled_from(["retention.ms", "cleanup.policy", "min.insync.replicas"])), value=value)]
    if kind == "remove" and topics:
        return [rec(catalog, mv, "RemoveTopicRecord", topic_id=draw(st.sampled_from(topics)).id)]
    if kind == "quota":
        ed = REGISTRY["ClientQuotaRecord"].nested["EntityData"]
        user = draw(st.sampled_from(["alice", "bob"]))
        return [rec(catalog, mv, "ClientQuotaRecord", entity=[ed(entity_type="user", entity_name=user)],
                    key="producer_byte_rate", value=float(draw(st.integers(1, 10**6))),
                    remove=draw(st.booleans()))]
    if kind == "pids":
        return [rec(catalog, mv, "ProducerIdsRecord", broker_id=0, broker_epoch=10,
                    next_producer_id=max(0, image.producer_ids.next_producer_id) + 1000)]
    if kind == "topic" and brokers:
        tid = Uuid.from_longs(0x7E57 << 32 | serial, serial * 0x9E3779B97F4A7C15 & 0x7FFFFFFFFFFFFFFF)
        out = [rec(catalog, mv, "TopicRecord", name=f"new-{serial}", topic_id=tid)]
        ids = [b.id for b in brokers]
        for pid in range(draw(st.integers(1, 3))):
            replicas = draw(st.lists(st.sampled_from(ids), min_size=1, max_size=len(ids), unique=True))
            out.append(rec(catalog, mv, "PartitionRecord", partition_id=pid, topic_id=tid, replicas=replicas,
                           isr=replicas, leader=replicas[0], leader_epoch=0, partition_epoch=0))
        return out
    return [rec(catalog, mv, "NoOpRecord")]


@st.composite
def random_logs(draw: Any, directory: Path, catalog: Catalog) -> RandomLog:
    """Draw a log and write it into `directory` (a fresh `__cluster_metadata-0`)."""
    mv = draw(st.sampled_from(LEVELS))
    shape = ClusterShape(brokers=draw(st.integers(1, 4)), topics=draw(st.integers(0, 4)),
                         partitions=draw(st.integers(1, 3)), replication_factor=1, scram_users=0,
                         delegation_tokens=0, controllers=1)
    records = list(cluster_records(shape, catalog, mv, seed=draw(st.integers(0, 3))))
    groups: list[list[Payload]] = [records[i:i + 7] for i in range(0, len(records), 7)]
    transactions = catalog.supports("metadata_transactions", mv)
    flat = list(records)
    for serial in range(draw(st.integers(1, 25))):
        change = _change(draw, catalog, mv, flat, serial)
        if transactions and draw(st.integers(0, 5)) == 0:
            # a committed transaction spread over several batches
            groups.append([rec(catalog, mv, "BeginTransactionRecord", name=f"tx-{serial}")] + change[:1])
            if change[1:]:
                groups.append(change[1:])
            groups.append([rec(catalog, mv, "EndTransactionRecord")])
        else:
            groups.append(change)
        flat += change
    log = MetadataLog.open(directory, segment_bytes=draw(st.sampled_from([1024, 4096, 1 << 20])), fsync=False)
    boundaries, inside = [], set()
    open_tx = False
    epoch, ts = 1, 1_700_000_000_000
    with log:
        for group in groups:
            epoch += draw(st.sampled_from([0, 0, 0, 1]))
            ts += draw(st.integers(1, 5000))
            boundaries.append(log.log_end_offset)
            if open_tx:
                inside.add(log.log_end_offset)
            log.append_records(group, epoch=epoch, timestamp=ts)
            names = [p.record_type.name for p in group]
            if "BeginTransactionRecord" in names:
                open_tx = True
            if "EndTransactionRecord" in names:
                open_tx = False
        boundaries.append(log.log_end_offset)
    return RandomLog(directory, boundaries, mv, inside)
