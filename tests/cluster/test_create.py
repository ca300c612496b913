"""`kraftsim cluster create` and `status`: what a new simulated cluster writes, and that it is
what Kafka writes (formatting, raft's first epoch, activation, registrations, unfencing)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.storage import read_bootstrap, read_meta_properties, read_quorum_state
from kraftsim.storage.leader_epoch import read_leader_epoch_checkpoint
from tests.cluster.conftest import (
    MV, assert_cluster_sound, create, data, describe, directory_id, node_dirs, ok, records, run, status, tree_bytes,
)


def test_a_new_3_7_cluster_logs_what_kafka_logs(tmp_path: Path, capsys) -> None:
    d = tmp_path / "c"
    out = create(capsys, d, "--controllers", "3", "--brokers", "2", "--release", "3.7", "--seed", "11")
    assert f"[node 1] Formatting {d / 'node-1'} with metadata.version 3.7-IV4." in out  # 3.7 names no directory kind
    assert "Node 1 is the active controller in epoch 1." in out
    st = status(capsys, d)
    cluster_id = st["cluster_id"]
    for node in node_dirs(d):
        meta = read_meta_properties(node / "meta.properties").meta
        assert (meta.cluster_id, meta.node_id) == (cluster_id, int(node.name.split("-")[1]))
        assert read_bootstrap(node / "bootstrap.checkpoint").feature_levels() == {MV: 19}

    entries = records(d / "node-1")
    first = entries[0]
    # Raft's first batch: LeaderChangeMessage v0, every voter, the leader and one more granting.
    assert first.control and first.record_type.name == "LeaderChangeMessage" and first.epoch == 1
    assert first.message.leader_id == 1
    assert [v.voter_id for v in first.message.voters] == [1, 2, 3]
    # Which voter's grant arrives first is a race (seeded); a majority of three is two.
    granting = [v.voter_id for v in first.message.granting_voters]
    assert len(granting) == 2 and 1 in granting and granting == sorted(granting)
    # 3.7's activation: the bootstrap transaction with ZkMigrationStateRecord(NONE).
    assert [e.record_type.name for e in entries[1:5]] == [
        "BeginTransactionRecord", "FeatureLevelRecord", "ZkMigrationStateRecord", "EndTransactionRecord"]
    assert entries[1].message.name == "Bootstrap records"
    # Controllers register (KIP-919, 3.7-IV0+); brokers register fenced with their directory and are unfenced.
    # (each registers as soon as its loader publishes 3.7-IV4: the order is a race)
    assert sorted(e.message.controller_id for e in data(d / "node-1", "RegisterControllerRecord")) == [1, 2, 3]
    brokers = data(d / "node-1", "RegisterBrokerRecord")
    assert [(e.message.broker_id, e.version, e.message.fenced) for e in brokers] == [(4, 3, True), (5, 3, True)]
    for e in brokers:
        assert e.message.broker_epoch == e.offset  # the controller's next write offset
        assert [str(u) for u in e.message.log_dirs] == [directory_id(d / f"node-{e.message.broker_id}")]
        assert [(f.name, f.min_supported_version, f.max_supported_version) for f in e.message.features] == [
            (MV, 1, 19)]
    unfence = data(d / "node-1", "BrokerRegistrationChangeRecord")
    assert [(e.version, e.message.broker_id, e.message.fenced) for e in unfence] == [(0, 4, -1), (0, 5, -1)]

    # Every replica is the leader's log, byte for byte; raft's files say who leads.
    logs = {(n / "__cluster_metadata-0" / "00000000000000000000.log").read_bytes() for n in node_dirs(d)}
    assert len(logs) == 1
    qs = read_quorum_state(d / "node-4" / "__cluster_metadata-0")
    assert (qs.leader_id, qs.leader_epoch, qs.current_voters) == (1, 1, (1, 2, 3))
    assert read_leader_epoch_checkpoint(d / "node-5" / "__cluster_metadata-0" / "leader-epoch-checkpoint") == [(1, 0)]

    assert (st["leader"], st["epoch"], st["finalized"]) == (1, 1, {MV: 19})
    assert {n["log_end_offset"] for n in st["nodes"]} == {len(entries)}
    assert [n["registration"]["broker"]["fenced"] for n in st["nodes"] if "broker" in n["roles"]] == [False, False]
    assert_cluster_sound(capsys, d)

    # An idle active controller writes a NoOpRecord every metadata.max.idle.interval.ms (500 ms).
    # (`create` may end sooner than that: brokers are unfenced some 50 ms after they register.)
    ok(capsys, "cluster", "run", str(d), "--ms", "1000")
    assert len(data(d / "node-1", "NoOpRecord")) >= 1


def test_registrations_list_features_in_kafkas_order(tmp_path: Path, capsys) -> None:
    """The order Kafka's 4.1 nodes advertise features in (as in the oracle's 4.1 log)."""
    d = tmp_path / "c"
    create(capsys, d, "--controllers", "1", "--brokers", "1", "--release", "4.1")
    for rec in ("RegisterControllerRecord", "RegisterBrokerRecord"):
        (e,) = data(d / "node-1", rec)
        assert [f.name for f in e.message.features] == [
            "group.version", "transaction.version", "eligible.leader.replicas.version", "kraft.version", MV,
            "share.version"]
    # 4.1 bootstraps ELR, so activation adds the cluster-level min.insync.replicas inside the transaction.
    names = [e.record_type.name for e in records(d / "node-1")[1:9]]
    assert names == ["BeginTransactionRecord"] + ["FeatureLevelRecord"] * 4 + ["ConfigRecord", "EndTransactionRecord",
                                                                              "RegisterControllerRecord"]


def test_release_version_and_features_are_kafka_storage_formats(tmp_path: Path, capsys) -> None:
    d = tmp_path / "c"
    create(capsys, d, "--controllers", "1", "--brokers", "1", "--release", "4.1", "--release-version", "4.0-IV1",
           "--feature", "group.version=0")
    assert read_bootstrap(d / "node-2" / "bootstrap.checkpoint").feature_levels() == {MV: 23}
    assert status(capsys, d)["finalized"] == {MV: 23}

    bad = tmp_path / "bad"
    code, _, err = run(capsys, "cluster", "create", bad, "--controllers", "1", "--release", "3.9",
                       "--feature", "eligible.leader.replicas.version=1")
    assert code == 1
    assert "Unsupported feature: eligible.leader.replicas.version. Supported features are: kraft.version" in err
    assert not bad.exists()  # nothing half-made is left behind

    # A target that cannot hold a new cluster is invalid input (exit 2), with nothing written.
    code, _, err = run(capsys, "cluster", "create", d, "--controllers", "1", "--release", "4.1")
    assert code == 2 and "already exists and is not an empty directory" in err
    before = sorted(p.name for p in d.iterdir())
    code, _, err = run(capsys, "cluster", "create", d / "inner", "--controllers", "1", "--release", "4.1")
    assert code == 2 and f"lies inside the cluster directory {d.resolve()}" in err
    assert sorted(p.name for p in d.iterdir()) == before


def _interrupted(*args: object, **kwargs: object) -> None:
    raise KeyboardInterrupt  # (Ctrl-C; SIGTERM is kraftsim's Terminated, a KeyboardInterrupt)


@pytest.mark.parametrize("engine", ["events", "ticks"])
@pytest.mark.parametrize("where", ["new", "empty", "nested"])
def test_an_interrupted_create_takes_back_what_it_made(tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch,
                                                       where: str, engine: str) -> None:
    """Ctrl-C while the nodes settle, their folders written: the directory create made (with
    the folders above it it made) is removed, or one that was there empty is emptied again,
    so the same command runs again (before, a directory without cluster.json was left that
    neither `status` nor `create` would take)."""
    from kraftsim.sim.engine.core import Engine
    from kraftsim.sim.ticks.cluster import SimCluster

    d = tmp_path / "a" / "b" / "c" if where == "nested" else tmp_path / "c"
    if where == "empty":
        d.mkdir()
    with monkeypatch.context() as m:
        m.setattr(Engine, "run_until", _interrupted)
        m.setattr(SimCluster, "settle", _interrupted)
        code, _, err = run(capsys, "cluster", "create", d, "--controllers", "3", "--brokers", "2", "--release", "4.0",
                           "--engine", engine)
    assert (code, err.splitlines()[-1]) == (130, "kraftsim: interrupted")
    assert list(tmp_path.iterdir()) == ([d] if where == "empty" else [])
    assert where != "empty" or not any(d.iterdir())
    create(capsys, d, "--controllers", "1", "--release", "4.0", "--engine", engine)
    assert (d / "cluster.json").is_file()


def test_an_interrupted_scenario_run_keeps_no_half_made_cluster(tmp_path: Path, capsys,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """`scenario run --keep DIR` makes its cluster the same way: interrupted, DIR is not left."""
    from kraftsim.sim.engine.core import Engine

    f = tmp_path / "s.toml"
    f.write_text('name = "s"\n[cluster]\ncontrollers = 1\nrelease = "4.0"\n', encoding="utf-8")
    keep = tmp_path / "kept"
    with monkeypatch.context() as m:
        m.setattr(Engine, "run_until", _interrupted)
        code, _, err = run(capsys, "scenario", "run", f, "--keep", keep)
    assert (code, err.splitlines()[-1]) == (130, "kraftsim: interrupted") and not keep.exists()
    code, out, err = run(capsys, "scenario", "run", f, "--keep", keep)
    assert code == 0 and (keep / "cluster.json").is_file(), out + err


def test_same_seed_and_commands_give_the_same_bytes(tmp_path: Path, capsys) -> None:
    trees = []
    for name, seed in (("a", "3"), ("b", "3"), ("c", "4")):
        d = tmp_path / name
        create(capsys, d, "--controllers", "2", "--brokers", "1", "--release", "3.7", "--seed", seed,
               "--policy", "kip-778")
        ok(capsys, "cluster", "roll", d, "--release", "4.0", "--nodes", "3")
        ok(capsys, "features", "--cluster", d, "downgrade", "--metadata", "3.6-IV2", "--unsafe")
        ok(capsys, "cluster", "roll", d, "--release", "4.0")
        ok(capsys, "features", "--cluster", d, "upgrade", "--metadata", "4.0-IV3")
        trees.append(tree_bytes(d))
    assert trees[0] == trees[1]
    assert any(name.endswith(".checkpoint") and "__cluster_metadata-0" in name for name in trees[0])
    assert trees[0]["cluster.json"] != trees[2]["cluster.json"]  # another seed, another cluster id


def test_describe_asks_a_node_apiversions_as_kip_1022_says(tmp_path: Path, capsys) -> None:
    """The tool asks one node ApiVersions at the highest version both know. A 3.8 tool knows
    v3 only, so a 4.0 broker leaves out every range starting at 0 (KIP-1022); a 4.2 tool gets
    them all. The 4.2 tool prints a 3.9 node's metadata.version minimum 1 as `UNKNOWN 1`, a 3.9
    tool as `3.0-IV1`. Without --release the tool is the newest release running (4.0), as an
    operator mid-roll runs the new installation's tools."""
    d = tmp_path / "c"
    create(capsys, d, "--controllers", "1", "--brokers", "2", "--release", "3.9")
    ok(capsys, "cluster", "roll", d, "--release", "4.0", "--nodes", "3")
    old = describe(capsys, d, "--release", "4.2", "describe", "--node-id", "2")
    assert sorted(old) == ["kraft.version", MV]
    assert old[MV] == {"SupportedMinVersion": "UNKNOWN 1", "SupportedMaxVersion": "3.9-IV0",
                       "FinalizedVersionLevel": "3.9-IV0", "Epoch": old[MV]["Epoch"]}
    new = describe(capsys, d, "--release", "4.2", "describe", "--node-id", "3")
    # a 3.9 tool knows no level above 21; the cluster's newest release (4.0) knows 25
    assert describe(capsys, d, "--release", "3.9", "describe", "--node-id", "3")[MV]["SupportedMaxVersion"] \
        == "UNKNOWN 25"
    assert describe(capsys, d, "--node-id", "3")[MV]["SupportedMaxVersion"] == "4.0-IV3"
    assert sorted(new) == ["eligible.leader.replicas.version", "group.version", "kraft.version", MV,
                           "transaction.version"]
    assert new["kraft.version"]["FinalizedVersionLevel"] == "0"
    assert new[MV]["SupportedMinVersion"] == "3.3-IV3" and new[MV]["SupportedMaxVersion"] == "4.0-IV3"
    # The epoch is the last offset the node's image holds.
    st = status(capsys, d)
    assert int(new[MV]["Epoch"]) == st["nodes"][2]["finalized_epoch"] == st["nodes"][2]["applied_offset"]
    # An old tool (ApiVersions v3) sees only the ranges that do not start at 0.
    old_tool = describe(capsys, d, "--release", "3.8", "describe", "--node-id", "3")
    assert sorted(old_tool) == [MV]
    assert old_tool[MV]["SupportedMinVersion"] == "3.3-IV3"
    out = ok(capsys, "features", "--cluster", d, "--release", "3.9", "describe", "--node-id", "2")
    assert "SupportedMinVersion: 3.0-IV1\t" in out
    newest = ok(capsys, "features", "--cluster", d, "describe", "--node-id", "2")  # the newest release running
    assert "SupportedMinVersion: UNKNOWN 1\t" in newest and newest == ok(
        capsys, "features", "--cluster", d, "--release", "4.0", "describe", "--node-id", "2")
    code, _, err = run(capsys, "features", "--cluster", d, "describe")  # mid-roll it says whose tool answered
    assert (code, err) == (0, "[cluster] kafka-features of Kafka 4.0 (the newest release running in the cluster)\n")
    code, _, err = run(capsys, "features", "--cluster", d, "describe", "--node-id", "9")
    assert code == 2 and "the cluster has no node 9" in err  # invalid input


ORACLE_LOGS = {  # release → a real log of a node of that release (see ../shared/oracle/README.md)
    "3.7": "kafka-3.7.0_ldipoc", "3.9": "cp-kafka-3.9_weebee", "4.0": "kafka-4.0_kurizma",
    "4.1": "kafka-4.1_dkoh12", "4.2": "kafka-4.2_induswargods",
}


def _oracle_log(oracle_dir: Path, folder: str) -> list:
    from kraftsim.storage import MetadataLog
    with MetadataLog.open(oracle_dir / folder / "__cluster_metadata-0", read_only=True) as log:
        return list(log.entries())


def test_nodes_advertise_what_real_nodes_of_their_release_advertise(oracle_dir: Path, tmp_path: Path, capsys) -> None:
    """Ranges and their order in RegisterBrokerRecord/RegisterControllerRecord, release by release."""
    for release, folder in ORACLE_LOGS.items():
        real = _oracle_log(oracle_dir, folder)
        d = tmp_path / release
        create(capsys, d, "--controllers", "1", "--brokers", "1", "--release", release)
        ours = records(d / "node-1")
        for rec in ("RegisterControllerRecord", "RegisterBrokerRecord"):
            want = next(e for e in real if e.record_type.name == rec)
            got = next(e for e in ours if e.record_type.name == rec)
            assert got.version == want.version, (release, rec)
            assert [(f.name, f.min_supported_version, f.max_supported_version) for f in got.message.features] == [
                (f.name, f.min_supported_version, f.max_supported_version) for f in want.message.features], (
                release, rec)


def test_a_new_cluster_begins_as_a_real_one_of_its_release(oracle_dir: Path, tmp_path: Path, capsys) -> None:
    """Raft's LeaderChangeMessage, then activation's records, field for field (single voter)."""
    for release in ("3.7", "4.0", "4.1", "4.2"):
        real = _oracle_log(oracle_dir, ORACLE_LOGS[release])
        d = tmp_path / release
        create(capsys, d, "--controllers", "1", "--release", release)
        ours = records(d / "node-1")
        end = next(i for i, e in enumerate(real) if e.record_type.name == "EndTransactionRecord")
        view = [(e.control, e.to_json()["type"], e.version, e.to_json()["data"]) for e in real[:end + 1]]
        assert [(e.control, e.to_json()["type"], e.version, e.to_json()["data"]) for e in ours[:end + 1]] == view
        assert ours[end + 1].record_type.name == "RegisterControllerRecord"


@pytest.mark.parametrize("where", ["through-a-file", "symlink-loop", "name-too-long"])
def test_a_directory_that_cannot_be_made_is_refused_as_bad_input(tmp_path: Path, capsys, where: str) -> None:
    """A path through a file, a symbolic link loop or a name too long for the file system is the
    user's input, not a bug: one line naming the path and why, exit 2 (was exit 70, an
    "internal error" from the OS error), and nothing made."""
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    d = {"through-a-file": tmp_path / "a-file" / "c" / "d", "symlink-loop": tmp_path / "loop1",
         "name-too-long": tmp_path / ("é" * 200)}[where]
    before = sorted(p.name for p in tmp_path.iterdir())
    code, out, err = run(capsys, "cluster", "create", d, "--controllers", "1", "--release", "3.9")
    assert code == 2, (out, err)
    assert len(err.strip().splitlines()) == 1 and str(d) in err and "internal error" not in err
    reason = {"through-a-file": "Not a directory", "symlink-loop": "Too many levels of symbolic links",
              "name-too-long": "File name too long"}[where]
    assert reason in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before
