"""create_snapshot on small logs written here: the KRaft header records of a dynamic quorum,
the release inferred from registrations, and Kafka's refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.errors import KraftsimError
from kraftsim.image import create_snapshot, release_for_level, snapshot_contents
from kraftsim.protocol.entries import Payload
from kraftsim.protocol.primitives import Uuid
from kraftsim.storage import BOOTSTRAP_SNAPSHOT_ID, MetadataLog, read_snapshot, write_snapshot
from kraftsim.versions import default_catalog
from tests.conftest import ORACLE
from tests.replay.logs import REGISTRY, rec

CATALOG = default_catalog()
VOTERS = REGISTRY["VotersRecord"]
KRAFT = REGISTRY["KRaftVersionRecord"]


def _voters(*ids: int) -> object:
    n = VOTERS.nested
    return VOTERS.new(version=0, voters=[n["Voter"](
        voter_id=i, voter_directory_id=Uuid(bytes([i]) * 16),
        endpoints=[n["Endpoint"](name="CONTROLLER", host=f"c{i}", port=9093)],
        k_raft_version_feature=n["KRaftVersionFeature"](min_supported_version=0, max_supported_version=1))
        for i in ids])


def _broker(broker_id: int, max_mv: int) -> Payload:
    rb = REGISTRY["RegisterBrokerRecord"]
    return rec(CATALOG, 21, "RegisterBrokerRecord", broker_id=broker_id, broker_epoch=5,
               incarnation_id=Uuid(bytes([broker_id + 1]) * 16), fenced=False,
               end_points=[rb.nested["BrokerEndpoint"](name="PLAINTEXT", host="b", port=9092, security_protocol=0)],
               features=[rb.nested["BrokerFeature"](name="metadata.version", min_supported_version=1,
                                                    max_supported_version=max_mv)])


def _mv(level: int) -> Payload:
    return rec(CATALOG, level, "FeatureLevelRecord", name="metadata.version", feature_level=level)


def test_kraft_header_records_follow_the_log(tmp_path: Path) -> None:
    d = tmp_path / "__cluster_metadata-0"
    with MetadataLog.open(d, fsync=False) as log:
        log.append_records([Payload(KRAFT, 0, KRAFT.new(version=0, k_raft_version=1)), Payload(VOTERS, 0, _voters(1))],
                           epoch=1, timestamp=10, control=True)
        log.append_records([_mv(21), _broker(1, 21)], epoch=1, timestamp=11)
        log.append_records([Payload(VOTERS, 0, _voters(1, 2))], epoch=2, timestamp=12, control=True)
        log.append_records([rec(CATALOG, 21, "NoOpRecord")], epoch=2, timestamp=13)
    early, _ = create_snapshot(d, 4, out=tmp_path, fsync=False)
    late, _ = create_snapshot(d, 6, out=tmp_path, fsync=False)
    for path, voter_ids, epoch in ((early, [1], 1), (late, [1, 2], 2)):
        s = read_snapshot(path)
        assert [e.type_name for e in s.header_entries] == ["SNAPSHOT_HEADER", "KRAFT_VERSION", "KRAFT_VOTERS"]
        assert s.header_entries[1].message.k_raft_version == 1
        assert [v.voter_id for v in s.header_entries[2].message.voters] == voter_ids
        assert s.epoch == epoch


def test_kraft_header_records_from_the_zero_checkpoint(tmp_path: Path) -> None:
    """A dynamic quorum formatted with kafka-storage: the 0-0 checkpoint holds the voters."""
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    write_snapshot(d, BOOTSTRAP_SNAPSHOT_ID, [], last_contained_log_timestamp=0, time_ms=0, fsync=False,
                   header_records=[Payload(KRAFT, 0, KRAFT.new(version=0, k_raft_version=1)),
                                   Payload(VOTERS, 0, _voters(3))])
    with MetadataLog.open(d, fsync=False) as log:
        log.append_records([_mv(21), _broker(3, 21)], epoch=1, timestamp=11)
    out = tmp_path / "out"
    out.mkdir()
    s = read_snapshot(create_snapshot(d, 2, out=out, fsync=False)[0])
    assert [e.type_name for e in s.header_entries] == ["SNAPSHOT_HEADER", "KRAFT_VERSION", "KRAFT_VOTERS"]
    assert [v.voter_id for v in s.header_entries[2].message.voters] == [3]


def test_static_quorum_has_only_the_header(tmp_path: Path) -> None:
    d = tmp_path / "__cluster_metadata-0"
    with MetadataLog.open(d, fsync=False) as log:
        log.append_records([_mv(14), _broker(1, 14)], epoch=3, timestamp=7)
    s = read_snapshot(create_snapshot(d, 2, out=tmp_path, fsync=False)[0])
    assert [e.type_name for e in s.header_entries] == ["SNAPSHOT_HEADER"]
    assert (s.snapshot_id, s.last_contained_log_timestamp) == ((2, 3), 7)


# A release is named as Kafka names it; patch releases that advertise the same (one entry, or
# entries of their own as 4.2.0, 4.2.1 and 4.2.2) cannot be told apart, and the newest stands for them.
@pytest.mark.parametrize("max_mv,release,zk", [(8, "3.4.1", True), (14, "3.6.2", True), (21, "3.9.2", True),
                                               (25, "4.0.2", False), (29, "4.2.2", False), (30, "4.3.1", False),
                                               (33, "4.4.0", False)])
def test_the_writer_is_the_release_the_registrations_advertise(tmp_path: Path, max_mv: int, release: str,
                                                               zk: bool) -> None:
    d = tmp_path / "__cluster_metadata-0"
    with MetadataLog.open(d, fsync=False) as log:
        log.append_records([_mv(8), _broker(1, max_mv)], epoch=1, timestamp=1)
    c = snapshot_contents(d, 2, catalog=CATALOG)
    assert c.release == release
    assert c.release_reason == f"the registered nodes advertise metadata.version up to {max_mv}"
    assert ("ZkMigrationStateRecord" in [p.record_type.name for p in c.records]) is zk


def test_release_for_levels_between_releases() -> None:
    assert release_for_level(CATALOG, 11).name == "3.5.2"
    assert release_for_level(CATALOG, 12).name == "3.6.2"  # an unstable level of 3.6
    assert release_for_level(CATALOG, 31).name == "4.3.1"  # 4.3 lists 4.4-IV0 as a testing level
    assert release_for_level(CATALOG, 99).name == CATALOG.releases[-1].name


def test_refusals(tmp_path: Path) -> None:
    d = tmp_path / "__cluster_metadata-0"
    with MetadataLog.open(d, fsync=False) as log:
        log.append_records([_mv(14), _broker(1, 14), rec(CATALOG, 14, "NoOpRecord")], epoch=1, timestamp=1)
        log.append_records([rec(CATALOG, 14, "NoOpRecord")], epoch=2, timestamp=2)
    with pytest.raises(KraftsimError, match=r"Cannot create snapshot at offset \(1\) because it is not batch aligned. "
                                            r"The batch containing the requested offset has a base offset of \(0\)"):
        create_snapshot(d, 1, out=tmp_path, fsync=False)
    with pytest.raises(KraftsimError, match="greater than the end of the log"):
        create_snapshot(d, 5, out=tmp_path, fsync=False)
    with pytest.raises(KraftsimError, match="already exists"):
        create_snapshot(d, 4, out=tmp_path, fsync=False)
        create_snapshot(d, 4, out=tmp_path, fsync=False)
    path = tmp_path / "00000000000000000004-0000000002.checkpoint"
    assert read_snapshot(path).snapshot_id == (4, 2)


@pytest.mark.skipif(not ORACLE.is_dir(), reason="../shared/oracle is not present")
def test_the_writer_replays_configs_as_its_own_release() -> None:
    """A snapshot writer of release R holds the image a node of R rebuilt: written as 4.4, a
    3.6 log loses the topic configs 4.4 does not define (and says so); written as the
    inferred writer (3.6), it keeps them, whatever release the reading catalog follows."""
    directory = ORACLE / "cp-kafka-3.6_rjmfernandes" / "__cluster_metadata-0"
    removed = "message.timestamp.difference.max.ms"

    def names(contents) -> set[str]:
        return {p.message.name for p in contents.records if p.record_type.name == "ConfigRecord"}

    as_44 = snapshot_contents(directory, 7752, release="4.4", catalog=CATALOG.at_release("3.6"))
    assert removed not in names(as_44)
    assert as_44.configs_dropped is not None and f"TOPIC {removed}" in as_44.configs_dropped["configs"]
    inferred = snapshot_contents(directory, 7752, catalog=CATALOG)
    assert CATALOG.find_release(inferred.release).line == "3.6"
    assert removed in names(inferred) and inferred.configs_dropped is None
