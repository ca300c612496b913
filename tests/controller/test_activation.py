"""Activation records (kafka-facts 5.6) against the first batches of real Kafka logs, plus the
partial-transaction, failover and idle NoOpRecord rules."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from kraftsim.controller.activation import (
    ZK_STATE_POLICY, ActivationError, activation_records, default_bootstrap, maybe_noop, noop_due, noop_records,
    writes_zk_migration_state,
)
from kraftsim.controller.context import ControllerConfig
from kraftsim.storage import decode_file_batch, iter_file_batches, read_bootstrap
from tests.controller.conftest import ManualClock, bootstrap as boot, line, make_ctx, open_controller

MV = "metadata.version"


def fields(p) -> dict:
    return {k: v for k, v in msgspec.structs.asdict(p.message).items() if k != "_unknown"}


def shape(records) -> list[tuple[str, int, dict]]:
    return [(p.record_type.name, p.version, fields(p)) for p in records]


# ---------------------------------------------------------------------------- against real Kafka logs

# (oracle set, release line its software ran, whether Kafka wrote ZkMigrationStateRecord(NONE) at activation)
ORACLE_SETS = [
    ("kafka-3.4_cooler-SAI", "3.4", False),
    ("kafka-3.5.1_bitnami_pmatuan", "3.5", True),
    ("kafka-3.6.0_jeongrae", "3.6", True),
    ("kafka-3.7.0_ldipoc", "3.7", True),
    ("kafka-3.8.0_codecrafters", "3.8", True),
    ("cp-kafka-3.9_weebee", "3.9", True),
    ("kafka-4.0_kurizma", "4.0", False),
    ("kafka-4.1_dkoh12", "4.1", False),
    ("kafka-4.2_induswargods", "4.2", False),
]


def oracle_batches(folder: Path):
    path = folder / "__cluster_metadata-0" / "00000000000000000000.log"
    data = path.read_bytes()
    return data, list(iter_file_batches(str(path), data))


@pytest.mark.parametrize("name, release, kafka_wrote_zk", ORACLE_SETS)
def test_activation_matches_kafka_log(oracle_dir, tmp_path, name, release, kafka_wrote_zk):
    """LeaderChange plus activation batch, written by the controller with Kafka's epoch and
    timestamps, are the bytes Kafka wrote (3.4 atomic, 3.6+ in a transaction, 4.1+ with ELR)."""
    folder = oracle_dir / name
    data, batches = oracle_batches(folder)
    leader_change = decode_file_batch(batches[0])[0]
    assert leader_change.type_name == "LEADER_CHANGE"
    activation_batch = batches[1]
    bootstrap = read_bootstrap(folder / "bootstrap.checkpoint")
    cat = line(release)
    assert writes_zk_migration_state(cat, bootstrap.metadata_version_level) == kafka_wrote_zk

    clock = ManualClock(batches[0].batch.base_timestamp)
    qc = open_controller(tmp_path / "log", clock, cat, node_id=leader_change.message.leader_id,
                         epoch=batches[0].batch.partition_leader_epoch)
    qc.write_leader_change([v.voter_id for v in leader_change.message.voters])
    clock.now = activation_batch.batch.base_timestamp
    result = qc.activate(bootstrap)

    kafka = [(e.record_type.name, e.version, fields(e)) for e in decode_file_batch(activation_batch)]
    assert shape(result.records) == kafka
    end = activation_batch.position + activation_batch.batch.size
    assert (tmp_path / "log" / "00000000000000000000.log").read_bytes() == data[:end]


def test_zk_migration_state_follows_the_line_policy():
    # Kafka 3.5-3.9 write it on a de-novo cluster; 3.4 and 4.x do not.
    assert [dict(line(r).release.policies)[ZK_STATE_POLICY] for r in ("3.4", "3.5", "3.9", "4.0", "4.2")] == [
        "omit", "write", "write", "omit", "omit"]
    assert not writes_zk_migration_state(line("4.1"), 27)
    writing = line("3.8")
    assert writes_zk_migration_state(writing, 8) and not writes_zk_migration_state(writing, 7)
    result = activation_records(make_ctx(writing, levels={}), boot({MV: 11}))
    assert shape(result.records) == [("FeatureLevelRecord", 0, {"name": MV, "feature_level": 11}),
                                     ("ZkMigrationStateRecord", 0, {"zk_migration_state": 0})]
    assert result.response.message.endswith(
        "Setting the ZK migration state to NONE since this is a de-novo KRaft cluster.")


def test_bootstrap_records_keep_the_file_order(oracle_dir):
    bootstrap = read_bootstrap(oracle_dir / "kafka-4.2_induswargods" / "bootstrap.checkpoint")
    result = activation_records(make_ctx("4.2", levels={}), bootstrap)
    names = [p.message.name for p in result.records if p.record_type.name == "FeatureLevelRecord"]
    assert names == [MV, "eligible.leader.replicas.version", "group.version", "share.version",
                     "streams.version", "transaction.version"]


# ---------------------------------------------------------------------------- empty log


def test_transactional_bootstrap_is_not_atomic():
    result = activation_records(make_ctx("4.1", levels={}), boot({MV: 27, "group.version": 1}))
    assert not result.atomic
    assert shape(result.records) == [
        ("BeginTransactionRecord", 0, {"name": "Bootstrap records"}),
        ("FeatureLevelRecord", 0, {"name": MV, "feature_level": 27}),
        ("FeatureLevelRecord", 0, {"name": "group.version", "feature_level": 1}),
        ("EndTransactionRecord", 0, {}),
    ]
    assert result.response.message == (
        "Performing controller activation. The metadata log appears to be empty. Appending 2 bootstrap record(s) "
        "in metadata transaction at metadata.version 4.1-IV1 from bootstrap source 'test'.")


def test_bootstrap_below_3_6_iv1_is_one_atomic_batch():
    result = activation_records(make_ctx("4.1", levels={}), boot({MV: 12}))
    assert result.atomic
    assert shape(result.records) == [("FeatureLevelRecord", 0, {"name": MV, "feature_level": 12})]
    assert result.response.message == (
        "Performing controller activation. The metadata log appears to be empty. Appending 1 bootstrap record(s) "
        "at metadata.version 3.6-IV0 from bootstrap source 'test'.")
    assert not activation_records(make_ctx("4.1", levels={}), boot({MV: 13})).atomic


def test_elr_in_the_bootstrap_adds_the_cluster_min_insync_replicas():
    ctx = make_ctx("4.1", levels={}, config=ControllerConfig(min_insync_replicas=3))
    result = activation_records(ctx, boot({MV: 27, "eligible.leader.replicas.version": 1}))
    assert shape(result.records)[-2] == ("ConfigRecord", 0, {"resource_type": 4, "resource_name": "",
                                                             "name": "min.insync.replicas", "value": "3"})
    without = activation_records(ctx, boot({MV: 27, "eligible.leader.replicas.version": 0}))
    assert "ConfigRecord" not in [p.record_type.name for p in without.records]


def test_partial_bootstrap_transaction_is_aborted_and_written_again():
    result = activation_records(make_ctx("4.1", levels={}), boot({MV: 27}), transaction_start_offset=1)
    assert not result.atomic
    assert shape(result.records) == [
        ("AbortTransactionRecord", 0, {"reason": "Controller failover"}),
        ("BeginTransactionRecord", 0, {"name": "Bootstrap records"}),
        ("FeatureLevelRecord", 0, {"name": MV, "feature_level": 27}),
        ("EndTransactionRecord", 0, {}),
    ]
    assert result.response.message == (
        "Performing controller activation. Aborting partial bootstrap records transaction at offset 1. "
        "Re-appending 1 bootstrap record(s) in new metadata transaction at metadata.version 4.1-IV1 from "
        "bootstrap source 'test'.")


def test_partial_bootstrap_transaction_at_an_mv_without_transactions():
    with pytest.raises(ActivationError) as e:
        activation_records(make_ctx("4.1", levels={}), boot({MV: 12}), transaction_start_offset=0)
    assert str(e.value) == ("Detected partial bootstrap records transaction at 0, but the metadata.version 3.6-IV0 "
                            "does not support transactions. Cannot continue.")


# ---------------------------------------------------------------------------- non-empty log


def test_non_empty_log_writes_nothing_without_a_transaction():
    result = activation_records(make_ctx("4.1", levels={MV: 27}), boot({MV: 20}))
    assert result.ok and result.records == () and result.atomic
    assert result.response.message == "Performing controller activation."


def test_in_flight_transaction_is_aborted_on_failover():
    result = activation_records(make_ctx("4.1", levels={MV: 27}), boot({MV: 27}), transaction_start_offset=42)
    assert result.atomic
    assert shape(result.records) == [("AbortTransactionRecord", 0, {"reason": "Controller failover"})]
    assert result.response.message == \
        "Performing controller activation. Aborting in-progress metadata transaction at offset 42."


def test_in_flight_transaction_at_an_mv_without_transactions():
    with pytest.raises(ActivationError) as e:
        activation_records(make_ctx("3.4", levels={MV: 8}), boot({MV: 8}), transaction_start_offset=5)
    assert str(e.value) == ("Detected in-progress transaction at offset 5, but the metadata.version 3.4-IV0 "
                            "does not support transactions. Cannot continue.")


def test_default_bootstrap_is_the_lines_latest_production():
    for release, level in [("3.9", 21), ("4.0", 25), ("4.1", 27)]:
        b = default_bootstrap(make_ctx(release).catalog)
        assert b.metadata_version_level == level and b.source == "the default bootstrap"
        assert shape(b.payloads()) == [("FeatureLevelRecord", 0, {"name": MV, "feature_level": level})]


# ---------------------------------------------------------------------------- idle NoOpRecord


def test_noop_due():
    assert not noop_due(1499, 1000, 500)
    assert noop_due(1500, 1000, 500)
    assert not noop_due(10**9, 0, 0)  # metadata.max.idle.interval.ms=0 turns it off


def test_noop_record_and_its_gate():
    assert shape(noop_records(make_ctx("4.1")).records) == [("NoOpRecord", 0, {})]
    # 3.3-IV0 (level 4) predates NoOpRecord (3.3-IV1).
    assert noop_records(make_ctx("3.3", levels={MV: 4})).records == ()
    assert shape(noop_records(make_ctx("3.3", levels={MV: 5})).records) == [("NoOpRecord", 0, {})]


def test_maybe_noop_follows_the_configured_interval():
    ctx = make_ctx("4.1", now_ms=10_000, config=ControllerConfig(max_idle_interval_ms=2000))
    assert maybe_noop(ctx, 8_500) is None
    assert [p.record_type.name for p in maybe_noop(ctx, 8_000).records] == ["NoOpRecord"]
