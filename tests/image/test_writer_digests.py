"""The image writer's output, byte for byte, against digests recorded before a change.

A restructuring of the writer must not change a single byte of a snapshot. Each case
writes an image (Kafka's oracle logs, synthetic clusters, and seeded images holding every
kind of data the writer can drop) at a metadata.version, writer line and ELR setting,
lossless or collecting losses, and hashes the framed records together with the loss
report (or the exception the default handler raises). `data/writer_digests.json` holds
the digests; regenerate it with `python3 -m tests.image.test_writer_digests` only when a
change of output is intended.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from kraftsim.image import (
    LossReport,
    MetadataImage,
    UnwritableMetadataException,
    config_entry_ranks,
    image_from_records,
    iter_image_records,
)
from kraftsim.image.synthetic import ClusterShape, cluster_image
from kraftsim.image.intern import MIGRATING, UNASSIGNED
from kraftsim.protocol.entries import Payload
from kraftsim.protocol.framing import encode_metadata_record
from kraftsim.protocol.primitives import Uuid
from kraftsim.versions import Catalog, default_catalog
from tests.image.helpers import data_records, oracle_logs, read_entries, rec, rel
from tests.image.strategies import BF, CEP, ED, EP

DATA = Path(__file__).parent / "data" / "writer_digests.json"
CAT = default_catalog()

#: metadata.version levels every image is written at (lossy below what it needs).
LEVELS = (7, 8, 11, 14, 17, 20, 21, 25, 27)
#: (writer line, elr_enabled) pairs.
POLICIES = ((None, None), ("3.x", None), ("4.x", None), ("4.x", True), (None, False))


def _uuid(r: random.Random) -> Uuid:
    return Uuid(r.getrandbits(128).to_bytes(16, "big"))


def _seeded_records(seed: int) -> list[Payload]:
    """An image's records holding every kind of data some metadata.version cannot write."""
    r = random.Random(seed)
    out = [rec("FeatureLevelRecord", name="metadata.version", feature_level=27),
           rec("FeatureLevelRecord", name="eligible.leader.replicas.version", feature_level=1)]
    for name in r.sample(["group.version", "transaction.version", "share.version"], r.randint(0, 3)):
        out.append(rec("FeatureLevelRecord", name=name, feature_level=r.randint(1, 2)))
    brokers = r.sample(range(20), r.randint(1, 4))
    for b in brokers:
        listeners = r.sample(["PLAINTEXT", "SSL", "INTERNAL", "EXTERNAL"], r.randint(1, 3))
        out.append(rec(
            "RegisterBrokerRecord", broker_id=b, broker_epoch=r.randint(0, 10**6), incarnation_id=_uuid(r),
            end_points=[EP(name=n, host=f"h{b}", port=9092 + i, security_protocol=0) for i, n in enumerate(listeners)],
            features=[BF(name=n, min_supported_version=0, max_supported_version=29)
                      for n in r.sample(["metadata.version", "group.version", "kraft.version"], r.randint(1, 3))],
            rack=r.choice([None, "a", "b"]), fenced=r.random() < 0.5, in_controlled_shutdown=r.random() < 0.5,
            is_migrating_zk_broker=r.random() < 0.3, log_dirs=[_uuid(r) for _ in range(r.randint(0, 2))]))
    for c in r.sample(range(3000, 3005), r.randint(0, 2)):
        out.append(rec("RegisterControllerRecord", controller_id=c, incarnation_id=_uuid(r),
                       end_points=[CEP(name="CONTROLLER", host="c", port=9093, security_protocol=0)]))
    for t in range(r.randint(1, 4)):
        tid = _uuid(r)
        out.append(rec("TopicRecord", name=f"topic-{seed}-{t}", topic_id=tid))
        for pid in range(r.randint(1, 4)):
            replicas = r.sample(brokers, r.randint(1, len(brokers)))
            isr = replicas[: r.randint(0, len(replicas))]
            fields: dict[str, Any] = {}
            if r.random() < 0.7:
                fields["directories"] = [r.choice([MIGRATING, UNASSIGNED, _uuid(r)]) for _ in replicas]
            if r.random() < 0.5:
                fields["eligible_leader_replicas"] = r.sample(brokers, r.randint(0, min(2, len(brokers))))
                fields["last_known_elr"] = r.sample(brokers, r.randint(0, 1))
            out.append(rec("PartitionRecord", partition_id=pid, topic_id=tid, replicas=replicas, isr=isr,
                           leader=isr[0] if isr else -1, leader_epoch=r.randint(0, 5), partition_epoch=r.randint(0, 5),
                           leader_recovery_state=r.randint(0, 1), **fields))
        for key in r.sample(["retention.ms", "cleanup.policy", "segment.bytes"], r.randint(0, 3)):
            out.append(rec("ConfigRecord", resource_type=2, resource_name=f"topic-{seed}-{t}", name=key,
                           value=str(r.randint(1, 9999))))
    out.append(rec("ConfigRecord", resource_type=4, resource_name="", name="log.retention.ms", value="1"))
    for user in r.sample(["alice", "bob", None], r.randint(0, 3)):
        out.append(rec("ClientQuotaRecord", entity=[ED(entity_type="user", entity_name=user)],
                       key=r.choice(["producer_byte_rate", "consumer_byte_rate"]), value=float(r.randint(1, 10**6))))
    if r.random() < 0.7:
        out.append(rec("ProducerIdsRecord", broker_id=1, broker_epoch=1, next_producer_id=r.randint(0, 10**9)))
    for _ in range(r.randint(0, 2)):
        out.append(rec("AccessControlEntryRecord", id=_uuid(r), resource_type=2, resource_name="t", pattern_type=3,
                       principal=f"User:u{r.randint(0, 9)}", host="*", operation=r.randint(2, 8), permission_type=3))
    for mech, user in r.sample([(1, "alice"), (2, "alice"), (1, "bob")], r.randint(0, 3)):
        out.append(rec("UserScramCredentialRecord", name=user, mechanism=mech, salt=bytes([r.randint(0, 255)] * 4),
                       stored_key=b"k", server_key=b"s", iterations=4096))
    for tok in r.sample(["tok-a", "tok-b", "tok-c"], r.randint(0, 2)):
        out.append(rec("DelegationTokenRecord", token_id=tok, owner="User:o", requester="User:r",
                       renewers=["User:x"], issue_timestamp=1, max_timestamp=9, expiration_timestamp=5))
    return out


def _digest(image: MetadataImage, level: int, catalog: Catalog, **options: Any) -> str:
    """sha256 of the framed records and what was lost, written lossy; plus what the default
    handler raises (or that it does not)."""
    h = hashlib.sha256()
    report = LossReport()
    for p in iter_image_records(image, level, catalog, loss_handler=report, **options):
        h.update(encode_metadata_record(p.record_type, p.message, p.version))
    h.update(json.dumps([(x.kind, x.entity, x.summary, x.metadata_version, repr(x.path), x.kafka_reported)
                         for x in report.items]).encode())
    try:
        n = sum(1 for _ in iter_image_records(image, level, catalog, **options))
        h.update(f"lossless {n}".encode())
    except UnwritableMetadataException as e:
        h.update(str(e).encode())
    return h.hexdigest()


def _images() -> Iterator[tuple[str, MetadataImage, Catalog, dict[str, Any]]]:
    """(case name, image, catalog, extra writer options)."""
    for seed in range(6):
        yield f"seeded-{seed}", image_from_records(_seeded_records(seed), catalog=CAT), CAT, {}
    ranked = _seeded_records(7)
    yield ("seeded-7-config-hashes", image_from_records(ranked, catalog=CAT), CAT,
           {"config_type_hashes": {2: 0x1B6D3586, 4: 0x4554617C},
            "config_entry_ranks": config_entry_ranks((p.record_type.name, p.message) for p in ranked)})
    for shape in (ClusterShape(), ClusterShape(brokers=5, topics=40, partitions=4, controllers=3)):
        for level in (8, 21, 27):
            name = f"synthetic-{shape.brokers}b{shape.topics}t-mv{level}"
            yield name, cluster_image(shape, CAT, level, seed=level), CAT, {}
    for log in oracle_logs():
        image = image_from_records(data_records(read_entries(log)), catalog=CAT)
        yield f"oracle:{rel(log)}", image, CAT, {}


def _cases() -> Iterator[tuple[str, str]]:
    for name, image, catalog, extra in _images():
        for level in LEVELS:
            for line, elr in POLICIES:
                for read_only in (False, True):
                    key = f"{name} mv={level} line={line} elr={elr} read_only={read_only}"
                    yield key, _digest(image, level, catalog, writer_line=line, elr_enabled=elr,
                                       read_only=read_only, **extra)


def test_writer_output_is_byte_identical_to_the_recorded_digests() -> None:
    recorded = json.loads(DATA.read_text(encoding="utf-8"))
    now = dict(_cases())
    if not any(k.startswith("oracle:") for k in now):
        recorded = {k: v for k, v in recorded.items() if not k.startswith("oracle:")}
    assert len(now) == len(recorded) and len(now) > 500
    changed = sorted(k for k in recorded if now.get(k) != recorded[k])
    assert changed == [], f"{len(changed)} cases changed, first: {changed[:3]}"


def test_the_cases_cover_lossless_and_lossy_writes() -> None:
    report = LossReport()
    image = image_from_records(_seeded_records(0), catalog=CAT)
    list(iter_image_records(image, 7, CAT, loss_handler=report))
    assert report.summaries()  # the seeded image loses data at 3.3-IV3
    assert list(iter_image_records(image, 27, CAT))  # and writes losslessly at its own level


if __name__ == "__main__":
    DATA.parent.mkdir(exist_ok=True)
    DATA.write_text(json.dumps(dict(_cases()), indent=0, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {DATA}", file=sys.stderr)
    pytest.main([__file__, "-q"])
