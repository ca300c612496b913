"""QuorumController: commits decisions to a real metadata log that Kafka's tools would accept,
and its state is always what replaying that log from scratch gives."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kraftsim.cli.main import main as kraftsim_main
from kraftsim.controller.activation import ActivationError
from kraftsim.controller.context import ControllerConfig
from kraftsim.controller.features import FeatureUpdate, UpdateFeaturesRequest
from kraftsim.controller.quorum_controller import ControllerNotActive, replay_log
from kraftsim.errors import KraftsimError
from kraftsim.image import image_from_records, write_image
from kraftsim.image.delta import TRANSACTION_RECORDS
from kraftsim.image import load_path
from kraftsim.protocol.registry import default_registry
from kraftsim.protocol.scan import verify_bytes
from kraftsim.storage import MetadataLog, SnapshotId, write_snapshot
from tests.controller.conftest import (
    ManualClock, bootstrap, broker, commit, config, controller, feature_level, line, open_controller, payload,
)

MV = "metadata.version"
GV = "group.version"
KV = "kraft.version"


def req(*updates, validate_only=False) -> UpdateFeaturesRequest:
    return UpdateFeaturesRequest(tuple(FeatureUpdate(*u) for u in updates), validate_only)


def fresh_replay(qc):
    """The state a new controller gets from the bytes on disk."""
    qc.log.flush()
    with MetadataLog.open(qc.log.directory, read_only=True) as log:
        return replay_log(log, qc.catalog)


def assert_log_is_sound(qc) -> None:
    """Every segment passes `kraftsim log verify`'s checks, and the log replays to the controller's
    image both through the controller's own replay and through the MetadataLoader."""
    qc.log.flush()
    registry = default_registry()
    for seg in sorted(qc.log.directory.glob("*.log")):
        report = verify_bytes(seg.read_bytes(), registry)
        assert report.ok, [p.describe() for p in report.problems]
    state = fresh_replay(qc)
    assert state.image == qc.image
    assert state.transaction_start_offset == qc.transaction_start_offset
    assert state.kraft_version == qc.kraft_version
    # A broker's view: the MetadataLoader reading the same directory holds the same metadata.
    assert load_path(qc.log.directory, catalog=qc.catalog).image.same_content(qc.image)


def data_records(qc):
    """Every metadata record of the log except transaction markers (no aborted transactions here)."""
    return [e for e in qc.log.entries() if not e.control and e.record_type.name not in TRANSACTION_RECORDS]


#: What `kafka-storage format` writes for a new 4.1 cluster.
BOOTSTRAP_41 = {MV: 27, "eligible.leader.replicas.version": 1, GV: 1, "transaction.version": 2}


@pytest.fixture
def active(log_dir, clock):
    qc = open_controller(log_dir, clock, "4.1")
    qc.write_leader_change()
    qc.activate(bootstrap(BOOTSTRAP_41))
    return qc


def test_activation_on_an_empty_log_and_the_cli_accepts_the_log(active, log_dir, capsys):
    assert active.image.metadata_version == 27
    assert active.transaction_start_offset is None
    assert_log_is_sound(active)
    assert kraftsim_main(["log", "verify", str(log_dir)]) == 0
    assert "1 ok, 0 with problems" in capsys.readouterr().out


def test_execute_commits_and_replays(active):
    sup = line("4.1").supported_features()
    leo = active.log.log_end_offset
    result = active.execute(commit(broker(1, sup), broker(2, sup), controller(1, sup)))
    assert result.ok
    assert sorted(active.image.cluster.brokers) == [1, 2]
    # One atomic result is one batch.
    assert [b.batch.base_offset for b in active.log.batches(leo)] == [leo]
    assert active.image.provenance.last_contained_offset == leo + 2
    assert_log_is_sound(active)


def test_refused_operation_writes_nothing(active):
    active.execute(commit(broker(2, {MV: (7, 25)})))
    leo, image = active.log.log_end_offset, active.image
    result = active.update_features(req((MV, 26, 2)))  # broker 2 only supports 7-25 ... and 26 < 27
    assert result.error.message == "Invalid update version 26 for feature metadata.version. Broker 2 only supports versions 7-25"
    assert active.log.log_end_offset == leo and active.image is image


def test_update_features_commits_through_the_log(active):
    result = active.update_features(req((MV, 23, 2)))
    assert result.ok and active.image.metadata_version == 23
    result = active.update_features(req((GV, 0, 3), ("eligible.leader.replicas.version", 0, 2)))
    assert result.ok and active.image.features.finalized_map() == {"transaction.version": 2}
    assert active.update_features(req((MV, 27), validate_only=True)).ok
    assert active.image.metadata_version == 23
    assert_log_is_sound(active)


def test_nothing_runs_before_activation(log_dir, clock):
    qc = open_controller(log_dir, clock)
    with pytest.raises(ControllerNotActive):
        qc.execute(commit(feature_level(GV, 1)))
    with pytest.raises(ControllerNotActive):
        qc.maybe_write_noop()


def test_next_write_offset_is_the_log_end_offset(active):
    seen = []

    def rule(ctx):
        seen.append(ctx.next_write_offset)
        return commit()(ctx)

    active.execute(rule)
    assert seen == [active.log.log_end_offset]


def test_failover_aborts_the_in_flight_transaction(log_dir, clock):
    a = open_controller(log_dir, clock)
    a.write_leader_change()
    a.activate(bootstrap(BOOTSTRAP_41))
    begin_at = a.log.log_end_offset
    a.execute(commit(payload("BeginTransactionRecord", name="migration"), feature_level(GV, 0),
                     config("", "min.insync.replicas", "5"), atomic=False))
    # The transaction's records are held back until it ends.
    assert a.transaction_start_offset == begin_at
    assert a.image.features.level(GV) == 1 and a.image.configs.config(4, "")["min.insync.replicas"] == "1"
    before = a.image
    a.log.close()

    b = open_controller(log_dir, clock, epoch=2)
    assert b.transaction_start_offset == begin_at and b.image == before
    result = b.activate()
    assert [p.record_type.name for p in result.records] == ["AbortTransactionRecord"]
    assert result.records[0].message.reason == "Controller failover"
    assert b.transaction_start_offset is None
    assert b.image.same_content(before)
    assert [e.epoch for e in b.log.entries(b.log.log_end_offset - 1)] == [2]
    assert_log_is_sound(b)


def test_partial_bootstrap_transaction_is_written_again(log_dir, clock):
    with MetadataLog.open(log_dir, fsync=False) as log:
        log.append_records([payload("BeginTransactionRecord", name="Bootstrap records"), feature_level(MV, 27)],
                           epoch=1, timestamp=clock())
    qc = open_controller(log_dir, clock, epoch=2)
    assert qc.image.metadata_version is None and qc.transaction_start_offset == 0
    result = qc.activate()
    assert [p.record_type.name for p in result.records] == [
        "AbortTransactionRecord", "BeginTransactionRecord", "FeatureLevelRecord", "EndTransactionRecord"]
    assert qc.image.metadata_version == 27 and qc.transaction_start_offset is None
    assert_log_is_sound(qc)


def test_in_flight_transaction_without_transaction_support_cannot_activate(log_dir, clock):
    with MetadataLog.open(log_dir, fsync=False) as log:
        log.append_records([feature_level(MV, 12)], epoch=1, timestamp=clock())
        log.append_records([payload("BeginTransactionRecord", name="x"), feature_level(GV, 1)], epoch=1,
                           timestamp=clock())
    qc = open_controller(log_dir, clock, epoch=2)
    assert qc.image.metadata_version == 12 and qc.image.features.level(GV) == 0
    leo = qc.log.log_end_offset
    with pytest.raises(ActivationError) as e:
        qc.activate()
    assert str(e.value) == ("Detected in-progress transaction at offset 1, but the metadata.version 3.6-IV0 does "
                            "not support transactions. Cannot continue.")
    assert not qc.active and qc.log.log_end_offset == leo


def test_a_controller_cannot_lead_in_an_older_epoch(log_dir, clock):
    a = open_controller(log_dir, clock, epoch=5)
    a.write_leader_change()
    a.log.close()
    with pytest.raises(KraftsimError, match="cannot lead in epoch 4: the log already holds epoch 5"):
        open_controller(log_dir, clock, epoch=4)


def test_noop_records_at_the_idle_interval(active, clock):
    start = active.log.log_end_offset
    assert active.maybe_write_noop() is None
    clock.advance(499)
    assert active.maybe_write_noop() is None
    for _ in range(3):
        clock.advance(505)
        assert active.maybe_write_noop() is not None
    batches = list(active.log.batches(start))
    assert [b.batch.records_count for b in batches] == [1, 1, 1]
    assert [b.batch.base_timestamp for b in batches] == [clock.now - 1010, clock.now - 505, clock.now]
    assert [e.type_name for e in active.log.entries(start)] == ["NO_OP_RECORD"] * 3
    assert_log_is_sound(active)


def test_noop_interval_zero_writes_none(log_dir, clock):
    qc = open_controller(log_dir, clock, config=ControllerConfig(max_idle_interval_ms=0))
    qc.activate()
    clock.advance(10**6)
    assert qc.maybe_write_noop() is None


def test_kraft_version_upgrade_is_recorded_by_raft_then_the_controller(active):
    leo = active.log.log_end_offset
    result = active.update_features(req((KV, 1)))
    assert result.ok and active.kraft_version == 1
    entries = list(active.log.entries(leo))
    assert [(e.control, e.type_name) for e in entries] == [(True, "KRAFT_VERSION"), (False, "NO_OP_RECORD")]
    assert entries[0].message.k_raft_version == 1
    assert KV not in active.image.features.all_levels()
    assert_log_is_sound(active)
    # Refused upgrades and validate-only write no control record.
    leo = active.log.log_end_offset
    assert active.update_features(req((KV, 1), validate_only=True)).ok
    assert active.log.log_end_offset == leo


def test_non_atomic_results_split_only_at_the_batch_limit(log_dir, clock):
    qc = open_controller(log_dir, clock, max_batch_bytes=400)
    qc.activate()
    leo = qc.log.log_end_offset
    records = [config(str(i), "min.insync.replicas", str(i)) for i in range(20)]
    assert qc.execute(commit(*records, atomic=False)).ok
    sizes = [b.batch.size for b in qc.log.batches(leo)]
    assert len(sizes) > 1 and all(s <= 400 for s in sizes)
    assert sum(b.batch.records_count for b in qc.log.batches(leo)) == 20
    leo = qc.log.log_end_offset
    result = qc.execute(commit(*records, atomic=True))
    assert result.error.name == "RECORD_LIST_TOO_LARGE" and result.error.code == 18
    assert qc.log.log_end_offset == leo
    assert_log_is_sound(qc)


def test_a_non_atomic_result_that_fits_is_one_batch_and_a_split_fills_each_batch(log_dir, clock):
    qc = open_controller(log_dir, clock, max_batch_bytes=400)
    qc.activate()
    leo = qc.log.log_end_offset
    assert qc.execute(commit(*[config(str(i), "min.insync.replicas", "2") for i in range(3)], atomic=False)).ok
    assert [b.batch.records_count for b in qc.log.batches(leo)] == [3]
    leo = qc.log.log_end_offset
    assert qc.execute(commit(*[config(str(i), "min.insync.replicas", "2") for i in range(20)], atomic=False)).ok
    counts = [b.batch.records_count for b in qc.log.batches(leo)]
    assert len(counts) > 1 and all(c == counts[0] for c in counts[:-1]) and counts[-1] <= counts[0]


def test_replay_starts_from_the_latest_snapshot(log_dir, clock):
    qc = open_controller(log_dir, clock)
    qc.write_leader_change()
    qc.activate()
    assert qc.update_features(req((KV, 1))).ok
    sup = line("4.1").supported_features()
    qc.execute(commit(broker(1, sup), config("", "x", "1")))
    end = qc.log.log_end_offset
    # As Kafka does from kraft.version 1, the snapshot header carries the KRaftVersionRecord.
    header = [payload("KRaftVersionRecord", version=0, k_raft_version=1)]
    write_snapshot(log_dir, SnapshotId(end, 1), write_image(qc.image, 27, qc.catalog), header_records=header,
                   last_contained_log_timestamp=clock(), time_ms=clock(), fsync=False)
    qc.log.roll()
    qc.execute(commit(broker(2, sup)))
    deleted = qc.log.advance_log_start_offset(end)
    assert deleted and qc.log.log_start_offset == end  # the KRaftVersionRecord batch of the log is gone
    state = fresh_replay(qc)
    assert state.image.same_content(qc.image)
    assert sorted(state.image.cluster.brokers) == [1, 2]
    assert state.kraft_version == 1


# ---------------------------------------------------------------------------- property


#: Levels the requests draw: mostly inside the 4.1 controller's ranges, sometimes just outside.
FEATURES = {MV: (7, 27), GV: (0, 1), "transaction.version": (0, 2), "eligible.leader.replicas.version": (0, 1),
            "share.version": (0, 1), "streams.version": (0, 0), KV: (0, 1)}


@st.composite
def feature_requests(draw):
    updates = []
    for _ in range(draw(st.sampled_from([1, 1, 1, 2, 3]))):
        name = draw(st.sampled_from(sorted(FEATURES)))
        lo, hi = FEATURES[name]
        level = draw(st.one_of(st.integers(lo, hi), st.integers(lo, hi), st.integers(lo, hi), st.integers(-1, hi + 2)))
        kind = draw(st.sampled_from([1, 1, 1, 2, 2, 3, 3, 0, 5]))
        updates.append((name, level, kind))
    return req(*updates, validate_only=draw(st.sampled_from([False, False, False, True])))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests=st.lists(feature_requests(), min_size=1, max_size=8), kip778=st.booleans(),
       old_broker=st.booleans(), min_isr=st.integers(1, 3))
def test_any_update_sequence_keeps_the_image_equal_to_the_log(requests, kip778, old_broker, min_isr):
    cfg = ControllerConfig(min_insync_replicas=min_isr, policies=frozenset({"kip-778"} if kip778 else ()))
    with tempfile.TemporaryDirectory() as tmp:
        clock = ManualClock()
        qc = open_controller(Path(tmp) / "log", clock, "4.1", config=cfg)
        qc.write_leader_change()
        qc.activate(bootstrap(BOOTSTRAP_41))
        sup = line("4.1").supported_features()
        qc.execute(commit(broker(1, sup), broker(2, {MV: (7, 25)} if old_broker else sup),
                          config("1", "min.insync.replicas", "2")))
        for r in requests:
            before_image, before_leo, before_mv = qc.image, qc.log.log_end_offset, qc.image.metadata_version
            result = qc.update_features(r)
            clock.advance(7)
            if not result.ok or r.validate_only:
                assert qc.log.log_end_offset == before_leo and qc.image is before_image
            mv = qc.image.metadata_version
            if mv < before_mv and not kip778:
                assert not qc.catalog.is_lossy(before_mv, mv)
            for name, level in qc.image.features.all_levels().items():
                lo, hi = qc.supported.get(name, (0, 0))
                assert lo <= level <= hi
        assert_log_is_sound(qc)
        rebuilt = image_from_records(data_records(qc), catalog=qc.catalog)
        assert rebuilt.same_content(qc.image)
        qc.log.close()
