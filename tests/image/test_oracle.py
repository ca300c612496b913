"""Images against real Kafka logs and snapshots (../shared/oracle).

- Every log replays, and the image agrees with what the records say, computed here
  independently of the image code (features, brokers and their fencing, topics,
  partitions, ISRs, leader epochs).
- Where a log and a Kafka snapshot at offset O exist: the image of the log's records below
  O has the same digest as the image loaded from Kafka's snapshot, and write_image of it,
  at the set's metadata.version with the writer of that Kafka release line, gives Kafka's
  records as a multiset (listener/feature lists inside registrations compared as sets:
  Kafka emits them in Java hash-map order).
- Every snapshot, loaded and written back, gives exactly Kafka's records (bytes included).
- Replaying the log past O on top of the snapshot image gives the log's full image.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.image import (
    MetadataImage,
    MetadataProvenance,
    diff_text,
    image_digest,
    image_from_records,
    write_image,
)
from kraftsim.versions import default_catalog
from tests.image.helpers import (
    data_records,
    needs_oracle,
    oracle_logs,
    oracle_snapshot_pairs,
    read_entries,
    record_multiset,
    rel,
)

pytestmark = needs_oracle

CATALOG = default_catalog()

# The Kafka release line that wrote each set (README of the oracle).
RELEASE_OF_SET = {
    "cp-kafka-3.6_rjmfernandes": "3.6",
    "cp-kafka-3.8_otus": "3.8",
    "cp-kafka-3.9_weebee": "3.9",
    "cp-kafka-7.5.1_3voters_greenlemonT": "3.5",
    "kafka-3.4_cooler-SAI": "3.4",
    "kafka-3.5-to-3.8-binary-upgrade_13LAckHEart": "3.8",
    "kafka-3.5.1_bitnami_pmatuan": "3.5",
    "kafka-3.6.0_jeongrae": "3.6",
    "kafka-3.7.0_ldipoc": "3.7",
    "kafka-3.8.0_codecrafters": "3.8",
    "kafka-3.9.0_mspractice": "3.9",
    "kafka-4.0_kurizma": "4.0",
    "kafka-4.1_dkoh12": "4.1",
    "kafka-4.2_induswargods": "4.2",
}

# metadata.version of each set, from the oracle README.
MV_OF_SET = {
    "kafka-3.4_cooler-SAI": 8, "kafka-3.5.1_bitnami_pmatuan": 11, "cp-kafka-7.5.1_3voters_greenlemonT": 11,
    "kafka-3.5-to-3.8-binary-upgrade_13LAckHEart": 11, "kafka-3.6.0_jeongrae": 14, "cp-kafka-3.6_rjmfernandes": 14,
    "kafka-3.7.0_ldipoc": 19, "kafka-3.8.0_codecrafters": 20, "cp-kafka-3.8_otus": 20, "cp-kafka-3.9_weebee": 21,
    "kafka-3.9.0_mspractice": 21, "kafka-4.0_kurizma": 25, "kafka-4.1_dkoh12": 27, "kafka-4.2_induswargods": 29,
}


def set_name(path: Path) -> str:
    return rel(path).split("/")[0]


def catalog_for(path: Path):
    return CATALOG.at_release(RELEASE_OF_SET[set_name(path)])


def expected_from_records(records) -> dict:
    """What the records say, computed without the image code."""
    mv = None
    features: dict[str, int] = {}
    brokers: dict[int, bool] = {}  # id -> fenced
    topics: dict[bytes, str] = {}
    parts: dict[tuple[bytes, int], dict] = {}
    for e in records:
        n, m = e.record_type.name, e.message
        if n == "FeatureLevelRecord":
            if m.name == "metadata.version":
                mv = m.feature_level
            elif m.name != "kraft.version":
                features[m.name] = m.feature_level
        elif n == "RegisterBrokerRecord":
            brokers[m.broker_id] = m.fenced
        elif n == "UnregisterBrokerRecord":
            brokers.pop(m.broker_id, None)
        elif n == "BrokerRegistrationChangeRecord" and m.fenced != 0:
            brokers[m.broker_id] = m.fenced == 1
        elif n in ("FenceBrokerRecord", "UnfenceBrokerRecord"):
            brokers[m.id] = n == "FenceBrokerRecord"
        elif n == "TopicRecord":
            topics[bytes(m.topic_id)] = m.name
            for k in [k for k in parts if k[0] == bytes(m.topic_id)]:
                del parts[k]
        elif n == "RemoveTopicRecord":
            del topics[bytes(m.topic_id)]
            for k in [k for k in parts if k[0] == bytes(m.topic_id)]:
                del parts[k]
        elif n == "PartitionRecord":
            parts[(bytes(m.topic_id), m.partition_id)] = {"isr": tuple(m.isr), "leader": m.leader,
                                                          "leader_epoch": m.leader_epoch,
                                                          "partition_epoch": m.partition_epoch}
        elif n == "PartitionChangeRecord":
            p = parts[(bytes(m.topic_id), m.partition_id)]
            if m.isr is not None:
                p["isr"] = tuple(m.isr)
            if m.leader != -2:
                p["leader"] = m.leader
                p["leader_epoch"] += 1
            p["partition_epoch"] += 1
    return {"mv": mv, "features": {k: v for k, v in features.items() if v}, "brokers": brokers,
            "topics": topics, "partitions": parts}


@pytest.mark.parametrize("log", oracle_logs(), ids=rel)
def test_log_replays_to_what_its_records_say(log: Path) -> None:
    records = data_records(read_entries(log))
    img = image_from_records(records)
    exp = expected_from_records(records)
    assert img.features.metadata_version == exp["mv"] == MV_OF_SET[set_name(log)]
    assert img.features.finalized_map() == exp["features"]
    assert {b: r.fenced for b, r in img.cluster.brokers.items()} == exp["brokers"]
    assert {bytes(t.id): t.name for t in img.topics.by_id.values()} == exp["topics"]
    assert {n: bytes(i) for n, i in img.topics.by_name.items()} == {v: k for k, v in exp["topics"].items()}
    got = {}
    for t in img.topics.by_id.values():
        for pid, p in t.partitions.items():
            got[(bytes(t.id), pid)] = {"isr": p.isr, "leader": p.leader, "leader_epoch": p.leader_epoch,
                                       "partition_epoch": p.partition_epoch}
    assert got == exp["partitions"]
    # replaying one record per delta gives the same image as one big delta
    step = MetadataImage()
    from kraftsim.image import MetadataDelta
    for e in records:
        d = MetadataDelta(step)
        d.replay(e)
        step = d.apply(MetadataProvenance(e.offset, e.epoch, e.timestamp, True))
    assert step.same_content(img)


def test_known_oracle_facts() -> None:
    """A few facts from the oracle's README, checked end to end."""
    logs = {set_name(p): p for p in oracle_logs() if p.parent.parent.name == set_name(p)}
    img = image_from_records(data_records(read_entries(logs["kafka-4.2_induswargods"])))
    assert set(img.features.finalized_map()) == {"group.version", "transaction.version",
                                                 "eligible.leader.replicas.version", "share.version",
                                                 "streams.version"}
    img = image_from_records(data_records(read_entries(logs["kafka-4.1_dkoh12"])))
    assert img.features.level("eligible.leader.replicas.version") == 1 and img.features.is_elr_enabled()
    img = image_from_records(data_records(read_entries(logs["kafka-3.7.0_ldipoc"])))
    assert img.topics.partition_count() == 54 and len(img.cluster.controllers) == 1


PAIRS = [(s, l, o) for s, l, o in oracle_snapshot_pairs() if l is not None]


@pytest.mark.parametrize("snap,log,offset", PAIRS, ids=[rel(s) for s, _, _ in PAIRS])
def test_log_image_matches_kafka_snapshot(snap: Path, log: Path, offset: int) -> None:
    # replayed as the release that wrote the files (from 4.3 replay drops configs the release
    # does not define, and a 3.x log holds some)
    cat = catalog_for(snap)
    snap_records = data_records(read_entries(snap))
    from_snapshot = image_from_records(snap_records, snapshot=True, catalog=cat)
    log_records = data_records(read_entries(log))
    from_log = image_from_records([e for e in log_records if e.offset < offset], catalog=cat)
    assert image_digest(from_log) == image_digest(from_snapshot), diff_text(from_snapshot, from_log)
    assert diff_text(from_snapshot, from_log) == ""

    written = write_image(from_log, from_log.metadata_version, cat)
    assert record_multiset(written, normalize_map_order=True) == record_multiset(snap_records, normalize_map_order=True)
    assert written[0].record_type.name == "FeatureLevelRecord" and written[0].message.name == "metadata.version"
    assert written[0].version == 0

    # the log after O, replayed on the snapshot's image, reaches the log's own final image
    later = [e for e in log_records if e.offset >= offset]
    assert image_from_records(later, base=from_snapshot, catalog=cat).same_content(
        image_from_records(log_records, catalog=cat))


SNAPSHOTS = oracle_snapshot_pairs()


@pytest.mark.parametrize("snap,log,offset", SNAPSHOTS, ids=[rel(s) for s, _, _ in SNAPSHOTS])
def test_snapshot_written_back_is_kafkas_bytes(snap: Path, log: Path | None, offset: int) -> None:
    cat = catalog_for(snap)
    snap_records = data_records(read_entries(snap))
    img = image_from_records(snap_records, snapshot=True, catalog=cat)
    written = write_image(img, img.metadata_version, cat)
    assert record_multiset(written) == record_multiset(snap_records)
    # in Kafka's order, record for record; except where Kafka's order of config resources
    # depended on its JVM run (ConfigResource's hash code holds an enum's identity hash)
    ours, kafkas = _in_order(written), _in_order(snap_records)
    if set_name(snap) in CONFIG_ORDER_OF_THE_JVM_RUN:
        ours, kafkas = [r for r in ours if r[0] != "ConfigRecord"], [r for r in kafkas if r[0] != "ConfigRecord"]
    assert ours == kafkas
    # and on the other writer line, the only difference is the ZkMigrationStateRecord (and
    # the order of brokers' features: 3.x rehashes them, 4.x keeps the record's)
    other = "4.x" if cat.policy("snapshot_zk_migration_state") == "write" else "3.x"
    theirs = record_multiset(write_image(img, img.metadata_version, cat, writer_line=other), normalize_map_order=True)
    mine = record_multiset(written, normalize_map_order=True)
    assert {k[0] for k in (theirs - mine) + (mine - theirs)} <= {"ZkMigrationStateRecord"}


#: Sets whose config resources Kafka ordered by hash codes that only its JVM run knew
#: (tests/replay/test_oracle_acceptance.py shows the rest of their order is Kafka's).
CONFIG_ORDER_OF_THE_JVM_RUN = {"cp-kafka-3.6_rjmfernandes"}


def _in_order(records: list) -> list[tuple]:
    return [(r.record_type.name, r.version, repr(r.message)) for r in records]


def test_consecutive_snapshots_load_as_full_replacements() -> None:
    snaps = [s for s, _, _ in SNAPSHOTS if set_name(s) == "kafka-3.9.0_mspractice"]
    if len(snaps) < 2:
        pytest.skip("needs the kafka-3.9.0_mspractice snapshots")
    images = [image_from_records(data_records(read_entries(s)), snapshot=True) for s in snaps[:6]]
    for before, after, path in zip(images, images[1:], snaps[1:]):
        on_top = image_from_records(data_records(read_entries(path)), base=before, snapshot=True)
        assert image_digest(on_top) == image_digest(after)
