"""Operating a simulated cluster: rolling upgrades and downgrades of the software, late and
incompatible nodes, KIP-778's reactions to unsupported levels and its lossy downgrade."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from kraftsim.controller.features import controller_record
from kraftsim.controller.result import accepted
from kraftsim.image import load_path
from kraftsim.sim.node.client_view import ClientView
from kraftsim.sim.ticks.cluster import SimCluster
from tests.cluster.conftest import (
    MV, assert_cluster_sound, cli, copy_of, create, data, describe, feature_records, node_dirs, ok, records,
    run, status, tree_bytes,
)

REFUSED_27 = ("Unable to register broker {id} because the controller returned error UNSUPPORTED_VERSION: Unable to "
              "register because the broker does not support finalized version 27 of metadata.version. The broker "
              "wants a version between 1 and 21, inclusive.")


def build_41(d: Path) -> None:
    cli("cluster", "create", d, "--controllers", "1", "--brokers", "2", "--release", "4.1")


@pytest.fixture
def at_41(prototypes, tmp_path) -> Path:
    return copy_of(prototypes("at_41_2b", build_41), tmp_path)


def test_roll_from_3_7_to_4_1_then_finalize_4_1(tmp_path: Path, capsys) -> None:
    d = tmp_path / "c"
    create(capsys, d, "--controllers", "3", "--brokers", "2", "--release", "3.7", "--seed", "2")
    first = status(capsys, d)["leader"]
    out = ok(capsys, "cluster", "roll", d, "--release", "4.1")
    # One node at a time: the controllers (the active one last), then the brokers.
    stops = [int(line.split()[2]) for line in out.splitlines() if line.startswith("Stopping node")]
    order = [c for c in (1, 2, 3) if c != first] + [first]
    assert stops == order + [4, 5]
    # The active controller's stop costs an epoch; one of the others leads it.
    assert any(f"Node {c} is the active controller in epoch 2." in out for c in order[:2])
    st = status(capsys, d)
    assert {n["release"] for n in st["nodes"]} == {"4.1"}
    assert st["finalized"] == {MV: 19}  # new software, same finalized levels
    # Each broker shut down cleanly, restarted with a new incarnation and was unfenced again.
    for broker in (4, 5):
        regs = [e for e in data(d / "node-1", "RegisterBrokerRecord") if e.message.broker_id == broker]
        assert len(regs) == 2 and regs[0].message.incarnation_id != regs[1].message.incarnation_id
        assert [f.max_supported_version for f in regs[1].message.features if f.name == MV] == [27]
        node = next(n for n in st["nodes"] if n["id"] == broker)
        assert node["registration"]["broker"] == {"epoch": regs[1].message.broker_epoch, "fenced": False,
                                                  "in_controlled_shutdown": False, "current_incarnation": True,
                                                  "incarnation": str(regs[1].message.incarnation_id)}
    # Every controller registered again with the new software's ranges.
    assert [e.message.controller_id for e in data(d / "node-1", "RegisterControllerRecord")][3:] == order

    out = ok(capsys, "features", "--cluster", d, "upgrade", "--release-version", "4.1")
    assert out.splitlines() == [
        "eligible.leader.replicas.version was upgraded to 1.", "group.version was upgraded to 1.",
        "kraft.version was upgraded to 1.", "metadata.version was upgraded to 27.",
        "transaction.version was upgraded to 2."]
    table = describe(capsys, d)
    assert {k: v["FinalizedVersionLevel"] for k, v in table.items()} == {
        "eligible.leader.replicas.version": "1", "group.version": "1", "kraft.version": "1", MV: "4.1-IV1",
        "share.version": "0", "transaction.version": "2"}
    # kraft.version lives in raft: a KRaftVersionRecord control batch, not a FeatureLevelRecord.
    assert [e.message.k_raft_version for e in data(d / "node-3", "KRaftVersionRecord")] == [1]
    assert "kraft.version" not in dict(feature_records(d / "node-3"))
    assert status(capsys, d)["finalized"]["kraft.version"] == 1
    assert_cluster_sound(capsys, d)


def test_a_broker_rolled_back_below_the_finalized_level_is_refused_and_stays_fenced(tmp_path: Path, capsys) -> None:
    # Formatted at 3.9-IV0, a level 3.9 knows (on a directory formatted at 4.1-IV1 a 3.9 node
    # stops before replay: tests/sim/test_bootstrap_start.py), then finalized at 4.1-IV1 (27).
    at_41 = tmp_path / "c"
    cli("cluster", "create", at_41, "--controllers", "1", "--brokers", "2", "--release", "4.1",
        "--release-version", "3.9-IV0")
    ok(capsys, "features", "--cluster", at_41, "upgrade", "--feature", "metadata.version=27")
    code, out, _ = run(capsys, "cluster", "roll", at_41, "--release", "3.9", "--nodes", "3")
    assert code == 1
    assert REFUSED_27.format(id=3) in out.splitlines()
    st = status(capsys, at_41)
    node = st["nodes"][2]
    assert node["running"] and node["release"] == "3.9"
    assert node["registration"]["broker"]["fenced"] and not node["registration"]["broker"]["current_incarnation"]
    assert node["note"] == REFUSED_27.format(id=3)
    # Its replica has the log (raft fetched it) but its software applies nothing past metadata.version 27.
    # (replication is asynchronous: the leader's latest idle NoOpRecord may still be in flight)
    assert st["nodes"][0]["log_end_offset"] - 1 <= node["log_end_offset"] > node["applied_offset"] + 1
    assert node["blocked"] == "finalized version 27 of metadata.version is outside the supported range 1-21"
    # The last records about broker 3: its controlled shutdown fenced it; nothing registered it again.
    about_3 = [e for e in records(at_41 / "node-1") if getattr(e.message, "broker_id", None) == 3]
    assert about_3[-1].record_type.name == "BrokerRegistrationChangeRecord" and about_3[-1].message.fenced == 1
    # The fenced old registration still counts for feature updates (facts §5.1, 4b).
    code, out, _ = run(capsys, "features", "--cluster", at_41, "downgrade", "--feature", "metadata.version=26")
    assert code == 0
    # Rolled forward again, it registers and is unfenced.
    out = ok(capsys, "cluster", "roll", at_41, "--release", "4.1", "--nodes", "3")
    assert "Broker 3 is unfenced." in out
    assert status(capsys, at_41)["nodes"][2]["blocked"] is None
    assert_cluster_sound(capsys, at_41)


def test_a_late_incompatible_broker_is_refused(at_41: Path, capsys) -> None:
    """KIP-584's story: a broker on old software comes up after the cluster finalized newer levels."""
    code, out, _ = run(capsys, "cluster", "add", at_41, "--broker", "--release", "3.9")
    assert code == 1
    assert REFUSED_27.format(id=4) in out.splitlines()
    assert status(capsys, at_41)["nodes"][3]["registration"] == {}
    code, out, _ = run(capsys, "cluster", "add", at_41, "--broker", "--release", "4.1", "--id", "9")
    assert code == 0 and "Broker 9 is unfenced." in out
    code, _, err = run(capsys, "cluster", "add", at_41, "--broker", "--release", "4.1", "--id", "9")
    assert code == 1 and "the cluster already has a node 9" in err


@pytest.mark.parametrize("engine", ["events", "ticks"])
def test_no_default_id_is_left_above_the_largest_node_id(engine: str, tmp_path: Path, capsys) -> None:
    """After node 2147483647 the default id (2147483648) is no int32: the add formatted a
    meta.properties no node could read, and kept the node, so `cluster status` failed forever."""
    d = tmp_path / "c"
    create(capsys, d, "--controllers", "1", "--release", "3.9", "--engine", engine)
    ok(capsys, "cluster", "add", d, "--broker", "--release", "3.9", "--id", "2147483647")
    def saved() -> dict[str, object]:  # cluster.json but the count of opens
        return {k: v for k, v in json.loads((d / "cluster.json").read_bytes()).items() if k != "opens"}

    state = saved()
    code, out, err = run(capsys, "cluster", "add", d, "--broker", "--release", "3.9")
    assert code == 1 and "Traceback" not in err
    assert ("no default node id is left: the highest id + 1 is 2147483648, above 2147483647, the largest node.id "
            "(an int32); give the new node a free id") in err
    assert saved() == state and not (d / "node-2147483648").exists()
    assert [n["id"] for n in status(capsys, d)["nodes"]] == [1, 2147483647]
    ok(capsys, "cluster", "add", d, "--broker", "--release", "3.9", "--id", "2")  # a free id still joins


def test_a_refused_format_leaves_the_cluster_as_it_was(tmp_path: Path, capsys) -> None:
    """A controller joining a static quorum was made a voter before its format: when the
    format refused (here a stray node-2 folder of another node), the saved cluster listed a
    voter that does not exist and lost its majority. The stray folder is the user's: kept."""
    d = tmp_path / "c"
    create(capsys, d, "--controllers", "1", "--release", "3.9")
    (d / "node-2").mkdir()
    (d / "node-2" / "meta.properties").write_bytes((d / "node-1" / "meta.properties").read_bytes())
    code, _, err = run(capsys, "cluster", "add", d, "--controller", "--release", "3.9")
    assert code == 1 and "Stored node id 1 doesn't match previous node id 2" in err
    st = status(capsys, d)
    assert (st["voters"], [n["id"] for n in st["nodes"]], st["health"]["healthy"]) == ([1], [1], True)
    assert [p.name for p in (d / "node-2").iterdir()] == ["meta.properties"]


def test_a_format_failing_half_way_leaves_no_node_folder(tmp_path: Path, capsys,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """What a refused format made of the node's folder is removed with it."""
    from kraftsim.errors import KraftsimError
    from kraftsim.sim import simulation

    def half_way(cluster_dir: Path, *args: object, **kwargs: object) -> None:
        (cluster_dir / "node-2" / "__cluster_metadata-0").mkdir(parents=True)
        raise KraftsimError("the disk is full")

    d = tmp_path / "c"
    create(capsys, d, "--controllers", "1", "--release", "3.9")
    monkeypatch.setattr(simulation, "format_node", half_way)
    code, _, err = run(capsys, "cluster", "add", d, "--controller", "--release", "3.9")
    assert (code, err.strip()) == (1, "the disk is full")
    assert not (d / "node-2").exists()
    assert status(capsys, d)["voters"] == [1]


def test_an_inactive_controller_meeting_an_unsupported_level_stops(tmp_path: Path, capsys) -> None:
    """Below 3.7-IV0 controllers' ranges are not checked (facts §5.1, 4e): a 3.6 controller
    then meets metadata.version 3.7-IV0 and stops, as KIP-778 says."""
    d = tmp_path / "c"
    create(capsys, d, "--controllers", "3", "--brokers", "1", "--release", "3.7", "--release-version", "3.6-IV2")
    assert not data(d / "node-1", "RegisterControllerRecord")  # no controller registrations below 3.7-IV0
    ok(capsys, "cluster", "roll", d, "--release", "3.6", "--nodes", "3")
    code, out, err = run(capsys, "features", "--cluster", d, "upgrade", "--metadata", "3.7-IV0")
    assert (code, out.splitlines()[-1]) == (0, "metadata.version was upgraded to 15.")
    assert ("Node 3 (controller, Kafka 3.6): finalized version 15 of metadata.version is outside the supported "
            "range 1-14; it stops.") in err
    st = status(capsys, d)
    assert [n["running"] for n in st["nodes"]] == [True, True, False, True]
    # The 3.7 controllers register now that metadata.version allows it.
    assert sorted(e.message.controller_id for e in data(d / "node-1", "RegisterControllerRecord")) == [1, 2]
    # Restarted on the same software, it cannot replay the log (Kafka's fatal replay error).
    code, out, _ = run(capsys, "cluster", "roll", d, "--release", "3.6", "--nodes", "3")
    assert code == 1
    assert ("Tried to apply FeatureLevelRecord FeatureLevelRecord(name='metadata.version', featureLevel=15), but "
            "this controller only supports versions 1-14") in out


def test_a_broker_unregisters_and_the_active_controller_resigns(tmp_path: Path) -> None:
    """Levels Kafka's checks would never let through, written straight into the log: a 4.0
    broker unregisters and stops, the 4.0 active controller resigns and stops, a 4.1
    controller takes over."""
    d = tmp_path / "c"
    lines: list[str] = []
    cluster = SimCluster.create(d, controllers=3, brokers=2, release="4.1", release_version="4.0-IV3",
                                emit=lines.append)
    cluster.roll("4.0", [1, 4])
    assert cluster.state.leader == 2 and cluster.state.epoch == 2
    cluster.restart(2)  # node 1 (4.0) leads from epoch 3
    assert cluster.state.leader == 1 and cluster.state.epoch == 3
    lines.clear()

    def share(ctx):
        return accepted([controller_record(ctx.catalog, ctx.metadata_version, "FeatureLevelRecord",
                                           name="share.version", feature_level=1)])

    cluster.execute(share)
    assert ("Node 1 (controller, Kafka 4.0): finalized version 1 of share.version, a feature its software does not "
            "support; it resigns and stops.") in lines
    assert "Node 2 is the active controller in epoch 4." in lines
    assert ("Node 4 (broker, Kafka 4.0): finalized version 1 of share.version, a feature its software does not "
            "support; it unregisters and stops.") in lines
    assert cluster.state.leader == 2
    assert [n.running for n in cluster.state.nodes] == [False, True, True, False, True]
    unreg = [e for e in records(d / "node-2") if e.record_type.name == "UnregisterBrokerRecord"]
    assert [e.message.broker_id for e in unreg] == [4]
    assert cluster.image().cluster.broker(4) is None
    cluster.save()
    cluster.close()


def test_kip_778_unsafe_lossy_downgrade_writes_the_lossy_snapshot(tmp_path: Path, capsys) -> None:
    d = tmp_path / "c"
    create(capsys, d, "--controllers", "2", "--brokers", "2", "--release", "3.7", "--policy", "kip-778")
    code, out, _ = run(capsys, "features", "--cluster", d, "downgrade", "--metadata", "3.6-IV2", "--unsafe")
    assert code == 0
    lines = out.splitlines()
    assert lines[:2] == ["metadata.version was downgraded to 14.",  # 3.x's tool prints no --metadata notice
                         "[kip-778] The metadata.version is changing from 3.7-IV4 to 3.6-IV2."]
    assert "[kip-778] Loss report: 4 item(s) that 3.6-IV2 cannot hold were dropped:" in lines
    # in the image writer's order, which is Kafka's: brokers in HashMap order of their ids (4 before 3)
    assert lines[-4:] == ["[kip-778]   broker log dirs: broker 4", "[kip-778]   broker log dirs: broker 3",
                          "[kip-778]   controller registration: controller 1",
                          "[kip-778]   controller registration: controller 2"]
    # Every node wrote the state before the change and the lossy image after it.
    offset = [e for e in records(d / "node-1") if e.record_type.name == "FeatureLevelRecord"][-1].offset
    for node in node_dirs(d):
        names = sorted(p.name for p in (node / "__cluster_metadata-0").glob("*.checkpoint"))
        assert names == [f"{offset:020d}-0000000001.checkpoint", f"{offset + 1:020d}-0000000001.checkpoint"]
        image = load_path(node).image
        assert image.metadata_version == 14
        assert not list(image.cluster.sorted_controllers())
        assert all(not b.directories for b in image.cluster.sorted_brokers())
    # The controller carries on from the lossy image: its next write is at 3.6-IV2's versions.
    ok(capsys, "cluster", "roll", d, "--release", "3.7", "--nodes", "4")
    regs = [e for e in data(d / "node-2", "RegisterBrokerRecord") if e.offset > offset]
    assert [(e.message.broker_id, e.version, list(e.message.log_dirs)) for e in regs] == [(4, 2, [])]
    assert_cluster_sound(capsys, d)


def test_without_the_policy_the_same_downgrade_is_refused(tmp_path: Path, capsys) -> None:
    d = tmp_path / "c"
    create(capsys, d, "--controllers", "1", "--release", "3.7")
    code, out, _ = run(capsys, "features", "--cluster", d, "downgrade", "--metadata", "3.6-IV2", "--unsafe")
    assert code == 1
    assert out.splitlines()[-1] == ("Could not downgrade metadata.version to 14. Invalid metadata.version "  # 3.x: no prefix
                                    "14. Unsafe metadata downgrade is not supported in this version.")
    assert not list((d / "node-1" / "__cluster_metadata-0").glob("*.checkpoint"))


def test_kip_778_reverse_dependencies_are_not_checked(tmp_path: Path, capsys) -> None:
    """Changing metadata.version checks no dependency (facts §5.2): under kip-778 an unsafe
    downgrade below ELR's metadata.version 23 leaves ELR finalized at 1."""
    d = tmp_path / "c"
    create(capsys, d, "--controllers", "1", "--brokers", "1", "--release", "4.1", "--policy", "kip-778")
    code, out, _ = run(capsys, "features", "--cluster", d, "downgrade", "--feature", "metadata.version=21", "--unsafe")
    assert code == 0 and out.splitlines()[0] == "metadata.version was downgraded to 21."
    assert "[kip-778] Loss report: nothing in this cluster's metadata had to be dropped." in out.splitlines()
    assert status(capsys, d)["finalized"] == {"eligible.leader.replicas.version": 1, "group.version": 1, MV: 21,
                                              "transaction.version": 2}
    assert_cluster_sound(capsys, d)


def test_a_new_leader_aborts_the_transaction_its_predecessor_left_open(tmp_path: Path, capsys) -> None:
    """Facts §5.6: activation on a log with an in-flight metadata transaction aborts it."""
    d = tmp_path / "c"
    cluster = SimCluster.create(d, controllers=3, brokers=1, release="4.1", emit=lambda line: None)

    def begin(ctx):
        return accepted([controller_record(ctx.catalog, ctx.metadata_version, "BeginTransactionRecord", name="test"),
                         controller_record(ctx.catalog, ctx.metadata_version, "FeatureLevelRecord",
                                           name="group.version", feature_level=0)], atomic=False)

    cluster.execute(begin)
    assert cluster.controller.transaction_start_offset is not None
    cluster.restart(1)  # the active controller goes away mid-transaction
    cluster.save()
    cluster.close()
    entries = records(d / "node-2")
    change = next(i for i, e in enumerate(entries) if e.record_type.name == "LeaderChangeMessage" and e.epoch == 2)
    after = entries[change + 1]
    assert (after.record_type.name, after.message.reason) == ("AbortTransactionRecord", "Controller failover")
    assert status(capsys, d)["finalized"]["group.version"] == 1  # the aborted change never happened
    assert_cluster_sound(capsys, d)


def test_the_client_view_over_brokers_of_mixed_releases(tmp_path: Path) -> None:
    """KIP-35 over simulated nodes: a client that asked every broker may only use the
    versions all of them serve, and keeps the finalized features of the highest epoch."""
    d = tmp_path / "c"
    cluster = SimCluster.create(d, controllers=1, brokers=2, release="3.9", emit=lambda line: None)
    cluster.roll("4.1", [3])
    view = ClientView()
    newest = cluster.nodes[3].api_versions(4)
    oldest = cluster.nodes[2].api_versions(3)
    assert view.observe(3, newest) and view.observe(2, oldest)
    for key, lo, hi in newest.api_keys:
        other = oldest.api_range(key)
        usable = view.usable_range(key)
        if other is None:
            assert usable.missing_on == (2,)
        else:
            assert (usable.min_version, usable.max_version) == (max(lo, other[0]), min(hi, other[1]))
    assert view.finalized.epoch == newest.finalized_features_epoch
    # An answer with a lower finalized epoch (a node still catching up) does not take the client back.
    older = msgspec.structs.replace(oldest, finalized_features_epoch=oldest.finalized_features_epoch - 5)
    view.observe(2, older)
    assert view.finalized.epoch == newest.finalized_features_epoch
    cluster.close()


def _read_only(d: Path) -> bool:
    """Make the folder `d` read-only for this process (root ignores mode bits: the immutable
    attribute then); False when neither can be done here."""
    import os
    import subprocess

    if os.geteuid() != 0:
        d.chmod(0o555)
        return True
    try:
        return subprocess.run(["chattr", "+i", str(d)], capture_output=True, timeout=30).returncode == 0
    except OSError:
        return False


def _writable_again(d: Path) -> None:
    import os
    import subprocess

    if os.geteuid() != 0:
        d.chmod(0o755)
    else:
        subprocess.run(["chattr", "-i", str(d)], capture_output=True, timeout=30)


def test_a_read_only_cluster_directory_is_refused_before_any_node_writes(tmp_path: Path, capsys) -> None:
    """The nodes' logs (in their own folders) took the new topic's records, then cluster.json
    could not be replaced: the cluster was left half of an operation on. Refused first now, with
    every file as it was; a read (`cluster status`) still works."""
    d = tmp_path / "c"
    ok(capsys, "cluster", "create", d, "--controllers", "1", "--brokers", "1", "--release", "3.9")
    before = tree_bytes(d)
    if not _read_only(d):
        pytest.skip("cannot make a folder read-only here")
    try:
        code, out, err = run(capsys, "topics", "--cluster", d, "create", "--prefix", "x")
        assert code == 1 and err == f"{d}: cannot write in the cluster directory (permission denied or read-only); " \
                                    "nothing was changed\n", (out, err)
        assert run(capsys, "cluster", "status", d)[0] == 0
    finally:
        _writable_again(d)
    after = tree_bytes(d)
    assert {k: v for k, v in after.items() if not k.endswith(".lock")} == \
        {k: v for k, v in before.items() if not k.endswith(".lock")}
