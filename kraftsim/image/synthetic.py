"""Synthetic cluster states of a chosen shape, for what-ifs, demonstrations and benchmarks.

A `ClusterShape` (brokers, topics, partitions per topic, replication factor, and a few
extras: SCRAM users, delegation tokens, topic configs) becomes the records a cluster of
that shape holds at a metadata.version, written at the record versions the catalog gives
for that version and using only what it can represent. The output is fully determined by
the shape, the version and the seed.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from typing import Iterator

from kraftsim.image.delta import MetadataDelta
from kraftsim.image.image import MetadataImage
from kraftsim.image.provenance import MetadataProvenance
from kraftsim.protocol.entries import Payload
from kraftsim.protocol.primitives import Uuid
from kraftsim.protocol.registry import Registry, default_registry
from kraftsim.versions import Catalog, MetadataVersion, MVLike

SCRAM_SHA_256 = 1  # Kafka's ScramMechanism type id
TOPIC_CONFIG = 2  # ConfigResource.Type.TOPIC


@dataclass(frozen=True)
class ClusterShape:
    """How big a cluster is and what it holds besides topics."""

    brokers: int = 3
    topics: int = 10
    partitions: int = 3
    replication_factor: int = 3
    controllers: int = 1
    scram_users: int = 2
    delegation_tokens: int = 1
    configs_per_topic: int = 1
    release: str | None = None  # the software the nodes run (what they advertise); default: the catalog's

    def __post_init__(self) -> None:
        if self.brokers < 1 or self.topics < 0 or self.partitions < 1:
            raise ValueError("a cluster needs at least one broker, and topics need at least one partition")
        if not 1 <= self.replication_factor <= self.brokers:
            raise ValueError(f"replication factor {self.replication_factor} must be between 1 and the number of "
                             f"brokers ({self.brokers})")


def _uuid(seed: int, *parts: object) -> Uuid:
    digest = hashlib.blake2b(repr((seed, *parts)).encode(), digest_size=16).digest()
    return Uuid(digest)


def cluster_records(shape: ClusterShape, catalog: Catalog, metadata_version: MVLike, *, seed: int = 0,
                    registry: Registry | None = None) -> Iterator[Payload]:
    """The records of a cluster of `shape` at `metadata_version`, lazily, in Kafka's image order."""
    reg = registry or default_registry()
    mv: MetadataVersion = catalog.metadata_version(metadata_version)
    node_catalog = catalog.at_release(shape.release) if shape.release else catalog
    supported = node_catalog.supported_features()
    rng = random.Random(seed)

    fl = reg["FeatureLevelRecord"]
    yield Payload(fl, 0, fl.new(name="metadata.version", feature_level=mv.level))
    for name, level in sorted(catalog.default_levels(mv, production_only=True).items()):
        if level > 0 and name != "kraft.version":
            yield Payload(fl, 0, fl.new(name=name, feature_level=level))

    directories = catalog.supports("directory_assignment", mv)
    broker_dir = {b: _uuid(seed, "dir", b) for b in range(shape.brokers)}
    rb = reg["RegisterBrokerRecord"]
    endpoint, feature = rb.nested["BrokerEndpoint"], rb.nested["BrokerFeature"]
    features = [feature(name=n, min_supported_version=lo, max_supported_version=hi) for n, (lo, hi) in supported.items()]
    for b in range(shape.brokers):
        yield Payload(rb, catalog.record_version("RegisterBrokerRecord", mv), rb.new(
            broker_id=b, incarnation_id=_uuid(seed, "incarnation", b), broker_epoch=10 + b,
            end_points=[endpoint(name="PLAINTEXT", host=f"broker-{b}", port=9092, security_protocol=0)],
            features=features, rack=f"rack-{b % 3}", fenced=False,
            log_dirs=[broker_dir[b]] if directories else []))
    if catalog.supports("controller_registration", mv):
        rc = reg["RegisterControllerRecord"]
        cendpoint, cfeature = rc.nested["ControllerEndpoint"], rc.nested["ControllerFeature"]
        cfeatures = [cfeature(name=n, min_supported_version=lo, max_supported_version=hi) for n, (lo, hi) in supported.items()]
        for c in range(shape.controllers):
            node = 3000 + c
            yield Payload(rc, 0, rc.new(controller_id=node, incarnation_id=_uuid(seed, "controller", c),
                                        end_points=[cendpoint(name="CONTROLLER", host=f"controller-{c}", port=9093,
                                                              security_protocol=0)],
                                        features=cfeatures))

    tr, pr = reg["TopicRecord"], reg["PartitionRecord"]
    pr_version = catalog.record_version("PartitionRecord", mv)
    for t in range(shape.topics):
        tid = _uuid(seed, "topic", t)
        yield Payload(tr, 0, tr.new(name=f"topic-{t:05d}", topic_id=tid))
        start = rng.randrange(shape.brokers)
        for p in range(shape.partitions):
            replicas = [(start + p + i) % shape.brokers for i in range(shape.replication_factor)]
            yield Payload(pr, pr_version, pr.new(
                partition_id=p, topic_id=tid, replicas=replicas, isr=list(replicas), leader=replicas[0],
                leader_epoch=0, partition_epoch=0,
                directories=[broker_dir[r] for r in replicas] if pr_version >= 1 else []))

    cr = reg["ConfigRecord"]
    for t in range(shape.topics):
        for k in range(shape.configs_per_topic):
            key = ("retention.ms", "cleanup.policy", "min.insync.replicas")[k % 3]
            value = {"retention.ms": str(3_600_000 * (1 + t % 24)), "cleanup.policy": "delete",
                     "min.insync.replicas": "2"}[key]
            yield Payload(cr, 0, cr.new(resource_type=TOPIC_CONFIG, resource_name=f"topic-{t:05d}", name=key, value=value))

    pids = reg["ProducerIdsRecord"]
    yield Payload(pids, 0, pids.new(broker_id=0, broker_epoch=10, next_producer_id=1000 * shape.brokers))

    if shape.scram_users and catalog.supports("scram", mv):
        sc = reg["UserScramCredentialRecord"]
        for u in range(shape.scram_users):
            h = hashlib.sha256(f"{seed}-{u}".encode()).digest()
            yield Payload(sc, 0, sc.new(name=f"user-{u}", mechanism=SCRAM_SHA_256, salt=h[:16], stored_key=h,
                                        server_key=hashlib.sha256(h).digest(), iterations=4096))
    if shape.delegation_tokens and catalog.supports("delegation_tokens", mv):
        dt = reg["DelegationTokenRecord"]
        for k in range(shape.delegation_tokens):
            yield Payload(dt, 0, dt.new(owner="User:user-0", requester="User:user-0", renewers=[],
                                        issue_timestamp=1_700_000_000_000, max_timestamp=1_700_604_800_000,
                                        expiration_timestamp=1_700_086_400_000, token_id=f"token-{k}"))


def cluster_image(shape: ClusterShape, catalog: Catalog, metadata_version: MVLike, *, seed: int = 0,
                  registry: Registry | None = None) -> MetadataImage:
    """The image of a cluster of `shape`; its provenance says it holds every record as one batch."""
    delta = MetadataDelta(MetadataImage(), catalog)
    delta.replay_all(cluster_records(shape, catalog, metadata_version, seed=seed, registry=registry))
    return delta.apply(MetadataProvenance(delta.records_replayed - 1, 1, 0, True))
