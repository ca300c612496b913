"""Acceptance against the real Kafka files of ../shared/oracle.

- Every set replays without error, and the replay summary says what the raw records say
  (features, brokers and their state, controllers, topics and partition counts), computed
  here from the records alone.
- Every directory passes replay verification: each snapshot + the log after it gives the
  whole log's image, the log up to a snapshot's offset gives the snapshot's image, and the
  snapshot's id and header match the log at that offset.
- Where a set holds a log and a Kafka-written snapshot at offset O, the snapshot kraftsim
  writes from the log at O, stamped with Kafka's batch timestamps (its wall clock), is
  Kafka's file byte for byte; where Kafka's order of config resources depends on its JVM
  run (see CONFIG_TYPE_HASHES), every record is in Kafka's order except those resources.
- The three greenlemonT replicas agree, and kafka1's extra tail is reported.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kraftsim.image import image_summary
from kraftsim.image import image_digest
from kraftsim.image import load_path
from kraftsim.image import config_entry_ranks, snapshot_contents
from kraftsim.image import verify_directory, verify_replicas, verify_roundtrip
from kraftsim.javacompat import hash_map_capacity, string_hash
from kraftsim.storage import DamagedLog, read_snapshot, replay_clock
from kraftsim.versions import default_catalog
from tests.conftest import ORACLE
from tests.replay.helpers import (
    REGISTRY, bootstrap_files, log_records, metadata_dirs, record_multiset, rel, snapshot_records, what_records_say,
)

pytestmark = pytest.mark.skipif(not ORACLE.is_dir(), reason="../shared/oracle is not present")

CATALOG = default_catalog()
DIRS = metadata_dirs()
GREEN = ORACLE / "cp-kafka-7.5.1_3voters_greenlemonT"

# The sets with a log and Kafka-written snapshots inside it, and the release that wrote them
# (oracle README: image tag and the highest metadata.version the registrations advertise).
SNAPSHOT_SETS = {
    "cp-kafka-3.6_rjmfernandes": "3.6",
    "cp-kafka-3.8_otus": "3.8",
    "cp-kafka-7.5.1_3voters_greenlemonT/kafka1": "3.5",
    "cp-kafka-7.5.1_3voters_greenlemonT/kafka2": "3.5",
    "cp-kafka-7.5.1_3voters_greenlemonT/kafka3": "3.5",
    "kafka-4.1_dkoh12": "4.1",
    "kafka-4.2_induswargods": "4.2",
}


#: Sets whose config resources Kafka wrote in an order the log does not decide:
#: ConfigResource.hashCode includes the identity hash of its ConfigResource.Type constant
#: (a different one in every JVM run). Both 3.6 snapshots come from one process (the log has
#: one LeaderChange, at offset 0, one broker registration and epoch 1 throughout), so
#: TOPIC's is one constant; test_one_jvm_runs_type_hash_fitted_on_one_snapshot_predicts_the_other
#: fits it on one snapshot (any value with 31 * h = 250313 mod 2^23 orders the 55 resources'
#: buckets as Kafka did) and predicts the other.
CONFIG_TYPE_HASHES = {"cp-kafka-3.6_rjmfernandes": {2: 415650071}}
RJM = ORACLE / "cp-kafka-3.6_rjmfernandes" / "__cluster_metadata-0"


def _has_whole_log(d: Path) -> bool:
    return (d / "00000000000000000000.log").is_file()


def _pairs() -> list[tuple[Path, int]]:
    out = []
    for d in DIRS:
        if not _has_whole_log(d):
            continue
        for snap in sorted(d.glob("*.checkpoint")):
            out.append((snap, int(snap.name[:20])))
    return out


PAIRS = _pairs()


def test_the_snapshot_sets_are_the_ones_named() -> None:
    assert {str(s.parent.parent.relative_to(ORACLE)) for s, _ in PAIRS} == set(SNAPSHOT_SETS)


# ------------------------------------------------------------------------------ every set replays


def _expected(d: Path) -> dict:
    """What the records say about the state at the directory's end: the log when it holds
    records, else the newest snapshot."""
    records = log_records(d)
    snaps = sorted(d.glob("*.checkpoint"))
    if records:
        # in the oracle every log reaches past its snapshots and holds the records below them
        assert records[-1].offset + 1 >= max([int(s.name[:20]) for s in snaps] or [0])
        assert not snaps or records[0].offset == 0
        return what_records_say(records)
    return what_records_say(snapshot_records(snaps[-1]))


@pytest.mark.parametrize("directory", DIRS, ids=rel)
def test_every_directory_replays_to_what_its_records_say(directory: Path) -> None:
    if directory.parent.name.startswith("trimmed-"):  # batches cut by hand out of a Kafka log
        with pytest.raises(DamagedLog, match="offsets 0..0 are missing"):
            load_path(directory, catalog=CATALOG)
        return
    result = load_path(directory, catalog=CATALOG)
    assert not result.faults
    summary = image_summary(result.image, CATALOG)
    exp = _expected(directory)
    mv = summary["features"]["metadata.version"]
    assert mv["level"] == exp["metadata.version"]
    assert mv["version"] == CATALOG.mv_from_level(exp["metadata.version"]).version
    assert {k: v for k, v in summary["features"].items() if k != "metadata.version"} == exp["features"]
    assert {b["id"]: b["state"] for b in summary["brokers"]} == exp["broker_states"]
    for b in summary["brokers"]:
        raw = exp["brokers"][b["id"]]
        assert b["rack"] == raw["rack"]
        assert sorted(b["listeners"]) == raw["listeners"]
        lo, hi = raw["mv_range"]
        assert b["metadata_version_range"].startswith(f"{lo}-{hi} (")
    assert {c["id"] for c in summary["controllers"]} == exp["controllers"]
    assert summary["topics"]["count"] == len(exp["topics"])
    assert summary["topics"]["partitions"] == sum(exp["topics"].values())
    assert {t["name"]: t["partitions"] for t in summary["topics"]["list"]} == exp["topics"]


@pytest.mark.parametrize("bootstrap", bootstrap_files(), ids=rel)
def test_every_bootstrap_file_replays(bootstrap: Path) -> None:
    result = load_path(bootstrap, catalog=CATALOG)
    exp = what_records_say(read_snapshot(bootstrap, REGISTRY).data_entries())
    summary = image_summary(result.image, CATALOG)
    assert summary["features"]["metadata.version"]["level"] == exp["metadata.version"]
    assert summary["brokers"] == [] and summary["topics"]["count"] == 0


def test_known_facts_of_the_oracle() -> None:
    """Independent of the records: numbers the oracle README states."""
    s = image_summary(load_path(ORACLE / "kafka-3.7.0_ldipoc", catalog=CATALOG).image, CATALOG)
    assert s["topics"]["partitions"] == 54 and [c["id"] for c in s["controllers"]] == [1]
    s = image_summary(load_path(ORACLE / "kafka-4.2_induswargods", catalog=CATALOG).image, CATALOG)
    assert set(s["features"]) == {"metadata.version", "group.version", "transaction.version", "share.version",
                                  "eligible.leader.replicas.version", "streams.version"}
    assert s["features"]["metadata.version"] == {"level": 29, "version": "4.2-IV1"}


# ------------------------------------------------------------------------------ verification


@pytest.mark.parametrize("directory", DIRS, ids=rel)
def test_every_directory_passes_replay_verification(directory: Path) -> None:
    v = verify_directory(directory, catalog=CATALOG)
    assert v.ok, v
    snaps = sorted(directory.glob("*.checkpoint"))
    assert [s.snapshot for s in v.snapshots] == [p.name for p in snaps]
    if _has_whole_log(directory) and snaps:
        # with the whole log, every snapshot was checked both ways and against its id
        assert v.whole_log
        for s in v.snapshots:
            assert [c.check for c in s.comparisons] == ["snapshot + log after it = whole log",
                                                        f"log up to {s.end_offset} = snapshot"]
            assert len(s.fields) == 3 and all(f.ok for f in s.fields)


def test_verification_fails_on_a_snapshot_that_does_not_match_its_log(tmp_path: Path) -> None:
    src = ORACLE / "cp-kafka-3.6_rjmfernandes" / "__cluster_metadata-0"
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    shutil.copyfile(src / "00000000000000000000.log", d / "00000000000000000000.log")
    # the 7752 snapshot's contents under the 14926 name: Kafka never wrote that
    shutil.copyfile(src / "00000000000000007752-0000000001.checkpoint",
                    d / "00000000000000014926-0000000001.checkpoint")
    v = verify_directory(d, catalog=CATALOG)
    assert not v.ok
    (s,) = v.snapshots
    by_check = {c.check: c for c in s.comparisons}
    # the log after 14926 changes a topic the 7752 state does not have yet: replay fails there
    assert s.errors == ["snapshot + log after it: Error loading metadata log record from offset 16873: "
                        "Unable to find partition dRIZhvotRveXjSZwRXM2gA:0"]
    bad = by_check["log up to 14926 = snapshot"]
    assert not bad.ok  # and names the entities that differ, log → snapshot
    assert bad.differences == ["topic customers_keyed: removed", "topic products_keyed: removed"]
    header = next(f for f in s.fields if f.check.startswith("header"))
    assert not header.ok and header.found == 1713537222197


def test_verification_checks_the_snapshot_epoch_against_the_log(tmp_path: Path) -> None:
    src = ORACLE / "cp-kafka-3.8_otus" / "__cluster_metadata-0"
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    shutil.copyfile(src / "00000000000000000000.log", d / "00000000000000000000.log")
    shutil.copyfile(src / "00000000000000008931-0000000023.checkpoint",
                    d / "00000000000000008931-0000000022.checkpoint")
    v = verify_directory(d, catalog=CATALOG)
    epoch = next(f for f in v.snapshots[0].fields if "epoch" in f.check)
    assert not v.ok and not epoch.ok and (epoch.expected, epoch.found) == (23, 22)


# ------------------------------------------------------------------------------ Kafka's snapshots


@pytest.mark.parametrize("snap,offset", PAIRS, ids=[rel(s) for s, _ in PAIRS])
def test_kraftsim_writes_kafkas_snapshot_from_the_log(snap: Path, offset: int, tmp_path: Path) -> None:
    directory = snap.parent
    contents = snapshot_contents(directory, offset, catalog=CATALOG)
    assert contents.source == "the whole log"
    assert CATALOG.find_release(contents.release).line == SNAPSHOT_SETS[str(directory.parent.relative_to(ORACLE))]
    written = contents.write(tmp_path, fsync=False)
    assert written.name == snap.name  # same id: end offset and epoch

    kafka, ours = read_snapshot(snap, REGISTRY), read_snapshot(written, REGISTRY)
    type_hashes = CONFIG_TYPE_HASHES.get(str(directory.parent.relative_to(ORACLE)))
    _assert_written_as_kafka_did(snap, offset, kafka, type_hashes, tmp_path / "kafka-clock")
    # an equivalent header: the same header batch records, the same epoch on every batch,
    # the same batch structure (Kafka's batch timestamps are its wall clock; ours are the
    # LastContainedLogTimestamp)
    assert [(e.type_name, e.message) for e in ours.header_entries] == [(e.type_name, e.message)
                                                                       for e in kafka.header_entries]
    assert ours.last_contained_log_timestamp == kafka.last_contained_log_timestamp
    assert {fb.batch.partition_leader_epoch for fb in ours.batches} == {kafka.epoch} == {snap_epoch(snap)}
    assert [(fb.batch.is_control, fb.batch.records_count) for fb in ours.batches] == \
           [(fb.batch.is_control, fb.batch.records_count) for fb in kafka.batches]
    assert set(ours.batch_timestamps) == {kafka.last_contained_log_timestamp}
    assert all(t > kafka.last_contained_log_timestamp for t in kafka.batch_timestamps)

    # loading Kafka's snapshot and loading the log up to O give the same image
    from_kafka = load_path(snap, catalog=CATALOG).image
    from_log = load_path(directory, catalog=CATALOG, snapshot="none", upto_offset=offset).image
    assert image_digest(from_kafka) == image_digest(from_log)
    assert image_digest(load_path(written, catalog=CATALOG).image) == image_digest(from_kafka)


def _assert_written_as_kafka_did(snap: Path, offset: int, kafka, type_hashes, out: Path) -> None:
    """Our snapshot with Kafka's batch timestamps is Kafka's file (for a JVM-run order of
    config resources, given that run's type hashes: CONFIG_TYPE_HASHES)."""
    contents = snapshot_contents(snap.parent, offset, catalog=CATALOG, config_type_hashes=type_hashes)
    written = contents.write(out, time_ms=replay_clock(kafka.batch_timestamps), fsync=False)
    assert written.read_bytes() == snap.read_bytes()


def _config_resources(payloads) -> list[tuple[int, str]]:
    """Config resources in the order their first ConfigRecord comes."""
    return list(dict.fromkeys((p.message.resource_type, p.message.resource_name) for p in payloads
                              if p.record_type.name == "ConfigRecord"))


def _fit_topic_type_hashes(kafka_order: list[tuple[int, str]], ranks: dict) -> list[int]:
    """Every value of 31 * TOPIC's identity hash, modulo 2^(16 + b) (the bits that reach a
    bucket index of a 2^b-bucket table: h ^ h >>> 16), under which ordering the resources by
    (HashMap bucket, entry rank) gives Kafka's order."""
    import numpy as np

    bits = hash_map_capacity(len(kafka_order)).bit_length() - 1
    mask = (1 << bits) - 1
    candidates = np.arange(1 << (16 + bits), dtype=np.uint64)

    def buckets(name: str) -> np.ndarray:
        h = (candidates + string_hash(name)) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & mask

    for (_, a), (_, b) in zip(kafka_order, kafka_order[1:]):
        ba, bb = buckets(a), buckets(b)
        keep = (ba < bb) | ((ba == bb) & (ranks[2, a] < ranks[2, b]))
        candidates = candidates[keep]
    return [int(c) for c in candidates]


def test_one_jvm_runs_type_hash_fitted_on_one_snapshot_predicts_the_other(tmp_path: Path) -> None:
    """The identity hash of ConfigResource.Type.TOPIC is a per-process constant. Both 3.6
    snapshots were written by one process (the log shows no restart of its one node): fitted
    on the first snapshot's order of config resources, the hash predicts the second snapshot
    byte for byte, and the default writer (no hashes) does not."""
    entries = log_records(RJM)
    assert [e.offset for e in entries if e.record_type.name == "LeaderChangeMessage"] == [0]
    assert sum(e.record_type.name == "RegisterBrokerRecord" for e in entries) == 1
    assert {e.epoch for e in entries} == {1}

    first, second = (RJM / f"{o:020d}-0000000001.checkpoint" for o in (7752, 14926))
    ranks = config_entry_ranks((e.record_type.name, e.message) for e in entries if e.offset < 7752 and not e.control)
    fitted = _fit_topic_type_hashes(_config_resources(read_snapshot(first, REGISTRY).payloads()), ranks)
    assert fitted and (31 * CONFIG_TYPE_HASHES["cp-kafka-3.6_rjmfernandes"][2]) % (1 << 23) in fitted
    topic_hash = (fitted[0] * pow(31, -1, 1 << 32)) % (1 << 32)  # 31 * topic_hash = fitted[0] (mod 2^32)

    kafka = read_snapshot(second, REGISTRY)
    contents = snapshot_contents(RJM, 14926, catalog=CATALOG, config_type_hashes={2: topic_hash})
    written = contents.write(tmp_path / "fitted", time_ms=replay_clock(kafka.batch_timestamps), fsync=False)
    assert written.read_bytes() == second.read_bytes()
    default = snapshot_contents(RJM, 14926, catalog=CATALOG).write(
        tmp_path / "default", time_ms=replay_clock(kafka.batch_timestamps), fsync=False)
    assert default.read_bytes() != second.read_bytes()
    assert sorted(_config_resources(read_snapshot(default, REGISTRY).payloads())) == \
        sorted(_config_resources(kafka.payloads()))


def snap_epoch(p: Path) -> int:
    return int(p.name[21:31])


def test_the_other_writer_line_differs_only_by_the_zk_migration_record() -> None:
    snap = ORACLE / "cp-kafka-3.8_otus" / "__cluster_metadata-0" / "00000000000000008931-0000000023.checkpoint"
    three = snapshot_contents(snap.parent, 8931, catalog=CATALOG)
    four = snapshot_contents(snap.parent, 8931, catalog=CATALOG, release="4.0")
    assert record_multiset(three.records) - record_multiset(four.records) == \
           record_multiset([p for p in three.records if p.record_type.name == "ZkMigrationStateRecord"])
    names = [p.record_type.name for p in three.records]
    # 3.x: right after the feature levels
    assert names.index("ZkMigrationStateRecord") == max(i for i, n in enumerate(names) if n == "FeatureLevelRecord") + 1


# ------------------------------------------------------------------------------ replicas


def test_greenlemon_replicas_agree_and_kafka1s_tail_is_reported() -> None:
    paths = [GREEN / f"kafka{i}" for i in (1, 2, 3)]
    v = verify_replicas(paths, catalog=CATALOG)
    assert v.ok, v
    assert v.common_end_offset == 30637
    assert v.offsets == [28869, 28870, 30637]
    assert len(v.comparisons) == 6 and all(c.ok for c in v.comparisons)
    (tail,) = v.tails
    def size(i: int) -> int:
        return (GREEN / f"kafka{i}" / "__cluster_metadata-0" / "00000000000000000000.log").stat().st_size
    assert tail.path == str(paths[0])
    assert (tail.start_offset, tail.end_offset, tail.records) == (30637, 30638, 1)
    assert tail.bytes == size(1) - size(2) == 106
    assert tail.record_types == {"LEADER_CHANGE": 1} and tail.epochs == [190]


def test_replicas_that_disagree_are_reported(tmp_path: Path) -> None:
    one = tmp_path / "a" / "__cluster_metadata-0"
    two = tmp_path / "b" / "__cluster_metadata-0"
    one.mkdir(parents=True)
    two.mkdir(parents=True)
    shutil.copyfile(ORACLE / "cp-kafka-3.8_otus" / "__cluster_metadata-0" / "00000000000000000000.log",
                    one / "00000000000000000000.log")
    shutil.copyfile(ORACLE / "kafka-3.7.0_ldipoc" / "__cluster_metadata-0" / "00000000000000000000.log",
                    two / "00000000000000000000.log")
    v = verify_replicas([one, two], catalog=CATALOG)
    assert not v.ok
    assert v.diverged_at == 0
    assert v.comparisons and not v.comparisons[-1].ok and v.comparisons[-1].differences


# ------------------------------------------------------------------------------ round trips


@pytest.mark.parametrize("name", ["kafka-3.4_cooler-SAI", "cp-kafka-3.6_rjmfernandes", "kafka-3.7.0_ldipoc",
                                  "kafka-4.1_dkoh12", "kafka-4.2_induswargods"])
def test_lossless_downgrades_of_real_images_round_trip(name: str) -> None:
    image = load_path(ORACLE / name, catalog=CATALOG).image
    v = verify_roundtrip(image, catalog=CATALOG)
    assert v.ok, v
    identical = [t for t in v.trips if t.outcome == "identical"]
    assert identical
    # every downgrade Kafka calls lossless is lossless for the data too
    assert all(t.outcome == "identical" for t in v.trips if not t.catalog_lossy)
