"""Quorum membership changes (KIP-853) in the event simulator: adds and removes through the
leader, one at a time, committed as VotersRecords, with Kafka's refusals, under faults."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kraftsim.sim import SimError, Simulation
from kraftsim.sim.engine.invariants import disjoint_majorities
from kraftsim.storage import MetadataLog, decode_file_batch
from kraftsim.versions import default_catalog


def _voters_records(sim: Simulation, node: int) -> list[list[int]]:
    """The voter sets of the VotersRecords in a node's log, in log order."""
    registry = default_catalog().record_registry()
    out = []
    with MetadataLog.open(sim.log_dir(node), read_only=True) as log:
        for fb in log.batches():
            for e in decode_file_batch(fb, registry):
                if e.type_name == "KRAFT_VOTERS":
                    out.append(sorted(v.voter_id for v in e.message.voters))
    return out


def _ok(sim: Simulation) -> None:
    bad = [(r.name, r.detail) for r in sim.invariants() if not r.ok]
    assert not bad
    assert {r.name for r in sim.invariants()} >= {"NoDisjointMajorities", "VoterOfSeenSet"}


@pytest.fixture
def standalone(tmp_path: Path) -> Simulation:
    sim = Simulation.create(tmp_path / "c", controllers=1, brokers=1, release="4.0.0", dynamic_quorum=True,
                            durable=False)
    yield sim
    sim.close()


def test_grow_standalone_to_three_then_remove_the_leader(standalone: Simulation) -> None:
    sim = standalone
    # the first leader writes the bootstrap voter set into the log beside its LeaderChange
    assert _voters_records(sim, 1) == [[1]]
    assert sim.add_controller() == 3
    assert sim.add_controller() == 4
    assert sim.engine.voters == (1, 3, 4)
    # one voter per change, each committed before the next, on every replica's log
    for n in (1, 3, 4):
        assert _voters_records(sim, n) == [[1], [1, 3], [1, 3, 4]]
    qs = json.loads((sim.log_dir(3) / "quorum-state").read_text())
    assert qs["data_version"] == 1 and "currentVoters" not in qs
    sim.remove_controller(1)  # the active controller removes itself: it resigns once that commits
    assert sim.engine.voters == (3, 4) and sim.leader() in (3, 4)
    assert 1 in [o.node_id for o in sim.quorum_info().observers]
    sim.create_topics(1, 1)
    sim.wait(30_000)
    _ok(sim)


def test_refusals_have_kafkas_texts(standalone: Simulation) -> None:
    sim = standalone
    sim.add_controller()
    with pytest.raises(SimError, match=r"^The voter id for ReplicaKey\(id=3, directoryId=[\w-]{22}\) "
                                       r"is already part of the set of voters \[ReplicaKey\(id=1"):
        sim.add_controller(3)
    with pytest.raises(SimError, match=r"^Cannot remove voter ReplicaKey\(id=3, "
                                       r"directoryId=AAAAAAAAAAAAAAAAAAAAAQ\) from the set of voters"):
        sim.remove_controller(3, "AAAAAAAAAAAAAAAAAAAAAQ")
    # an id no node has: the leader answers as for any id outside the voter set (the tool sends it as given)
    with pytest.raises(SimError, match=r"^Cannot remove voter ReplicaKey\(id=99, "
                                       r"directoryId=AAAAAAAAAAAAAAAAAAAAAQ\) from the set of voters"):
        sim.remove_controller(99, "AAAAAAAAAAAAAAAAAAAAAQ")
    # a broker is no controller
    with pytest.raises(SimError, match="not a controller"):
        sim.add_controller(2)
    _ok(sim)


def test_static_quorum_refuses_with_kraft_version_0(tmp_path: Path) -> None:
    with Simulation.create(tmp_path / "s", controllers=3, release="4.0.0", durable=False) as sim:
        with pytest.raises(SimError, match="^Cluster doesn't support removing voter because "
                                           "the kraft.version feature is 0$"):
            sim.remove_controller(3)
        assert sim.engine.voters == (1, 2, 3)


@pytest.mark.parametrize("after_ms", [1, 8, 30, 45, 80])
def test_leader_crash_right_after_the_add_is_appended(tmp_path: Path, after_ms: int) -> None:
    """The leader dies with the new VotersRecord appended but maybe not committed: the next
    leader either holds it (and commits it) or not (and the voters stay as they were); the
    invariants hold either way and the cluster settles."""
    with Simulation.create(tmp_path / "c", controllers=3, release="4.0.0", dynamic_quorum=True,
                           durable=False) as sim:
        new = sim.add_node("controller", "4.0.0")
        sim.engine.run_until(sim.engine.now + 2_000)
        sim.inject(after_ms, "crash", "leader")
        try:
            sim.add_controller(new)
        except SimError as e:
            assert getattr(e, "error", None) == "REQUEST_TIMED_OUT"
        sim.run(1_000)
        assert any(m.status == "crashed" for m in sim.engine.ordered())  # the crash did land
        sim.start("all")
        sim.wait(60_000)
        assert sim.engine.voters in ((1, 2, 3), (1, 2, 3, new))
        _ok(sim)


def test_partition_of_the_new_voter_and_a_torn_tail(tmp_path: Path) -> None:
    """A voter just added is cut off, then loses the tail of its log: the three others still
    commit, and it catches up again when it comes back."""
    with Simulation.create(tmp_path / "c", controllers=3, brokers=1, release="4.0.0", dynamic_quorum=True,
                           durable=False) as sim:
        new = sim.add_controller()
        sim.partition([[new]])
        sim.create_topics(1, 1)
        sim.heal()
        sim.wait(60_000)
        sim.stop([new])
        sim.disk_fault([new], "torn-tail")
        sim.start([new])
        sim.wait(60_000)
        assert sim.engine.voters == (1, 2, 3, new)
        assert sim.quorum_info().voters[-1].lag(sim.quorum_info().leader) == 0
        _ok(sim)


@given(st.sets(st.integers(1, 6), min_size=1), st.sets(st.integers(1, 6), min_size=1))
def test_disjoint_majorities_matches_brute_force(a: set[int], b: set[int]) -> None:
    def majorities(s: set[int]) -> list[set[int]]:
        return [set(c) for c in itertools.combinations(sorted(s), len(s) // 2 + 1)]
    brute = any(not (x & y) for x in majorities(a) for y in majorities(b))
    assert disjoint_majorities(tuple(a), tuple(b)) == brute
    if len(a ^ b) <= 1:
        assert not brute  # one voter at a time never allows two disjoint majorities


def test_static_quorum_upgraded_to_kraft_version_1_then_grown(tmp_path: Path) -> None:
    """4.1+: kraft.version 0 -> 1 on a static quorum; the voters stay the configured ones
    across restarts (recorded with the upgrade, with directory ids), and the add follows."""
    with Simulation.create(tmp_path / "s", controllers=3, brokers=1, release="4.1", durable=False) as sim:
        sim.features("upgrade", features={"kraft.version": 1})
        assert sim.finalized()["kraft.version"] == 1
        sim.crash([2])
        sim.start([2])
        sim.wait(30_000)
        assert sim.voters() == (1, 2, 3) and sim.engine.member(2).voter
        assert sim.add_controller() == 5
        records = _voters_records(sim, 5)
        assert records == [[1, 2, 3], [1, 2, 3, 5]]  # the static set recorded with the upgrade, then the add
        assert all(v.directory_id != v.directory_id.ZERO for v in sim.quorum_info().voters)
        _ok(sim)


def test_kraft_version_upgrade_writes_the_voter_set_with_it(tmp_path: Path) -> None:
    """4.1+: the leader appends one control batch, KRaftVersionRecord(1) then the VotersRecord of
    the static voters with each voter's directory id, ahead of the controller's NoOpRecord
    (LeaderState.maybeAppendUpgradedKRaftVersion); every controller replicates it, before any
    voter change, and treats the recorded set as its voter set."""
    registry = default_catalog().record_registry()
    with Simulation.create(tmp_path / "s", controllers=3, brokers=1, release="4.1", durable=False) as sim:
        sim.features("upgrade", features={"kraft.version": 1})
        sim.wait(5_000)
        dirs = {v: sim.engine.directory_id_of(v) for v in (1, 2, 3)}
        for node in (1, 2, 3):
            with MetadataLog.open(sim.log_dir(node), read_only=True) as log:
                batches = [(fb.batch.is_control, list(decode_file_batch(fb, registry))) for fb in log.batches()]
            upgrade = [es for control, es in batches if control and any(e.type_name == "KRAFT_VERSION" for e in es)]
            assert len(upgrade) == 1
            kv, voters = upgrade[0]
            assert kv.type_name == "KRAFT_VERSION" and kv.message.k_raft_version == 1
            assert voters.type_name == "KRAFT_VOTERS"
            assert {v.voter_id: v.voter_directory_id for v in voters.message.voters} == dirs
            after = [es for _, es in batches for e in es if e.offset > voters.offset]
            assert after and after[0][0].type_name == "NO_OP_RECORD"  # the controller's record follows
            assert sim.engine.member(node).voters_offset == voters.offset
        assert _voters_records(sim, 1) == [[1, 2, 3]]
        _ok(sim)


def test_4_0_does_not_apply_a_kraft_version_upgrade(tmp_path: Path) -> None:
    """Kafka 4.0 answers the upgrade as done but stays at kraft.version 0: no change then."""
    with Simulation.create(tmp_path / "s", controllers=3, release="4.0.0", durable=False) as sim:
        sim.features("upgrade", features={"kraft.version": 1})
        with pytest.raises(SimError, match="kraft.version feature is 0"):
            sim.add_controller(release="4.0.0")


def test_3_9_prints_directory_ids_as_optionals(tmp_path: Path) -> None:
    """ReplicaKey.toString: Optional[...] on 3.9, the id itself from 4.0 (seen live on 4.3.1)."""
    with Simulation.create(tmp_path / "c", controllers=1, release="3.9", dynamic_quorum=True, durable=False) as sim:
        with pytest.raises(SimError, match=r"^Cannot remove voter ReplicaKey\(id=1, directoryId=Optional\[AAAAAAAAAAAAAAAAAAAAAQ\]\) "
                                           r"from the set of voters \[ReplicaKey\(id=1, directoryId=Optional\[[\w-]{22}\]\)\]$"):
            sim.remove_controller(1, "AAAAAAAAAAAAAAAAAAAAAQ")


def test_a_wiped_voter_comes_back_as_an_observer_with_a_new_directory_id(tmp_path: Path) -> None:
    """A wiped controller of a dynamic quorum is formatted again: a new directory id, so it is
    not the voter (id, directory id) the VotersRecord names. Started before its removal, it
    replicates as an observer, votes for no one and counts for no majority: with one of the
    two other voters down there is no leader."""
    with Simulation.create(tmp_path / "c", controllers=3, brokers=1, release="4.0.0", dynamic_quorum=True,
                           durable=False) as sim:
        e = sim.engine
        old = sim.directory_id(3)
        sim.crash([3])
        sim.disk_fault([3], "wipe")
        new = sim.directory_id(3)
        assert new is not None and new != old
        sim.start([3])
        sim.wait(30_000)
        m3 = e.member(3)
        assert m3.voters == (1, 2, 3) and not m3.voter and m3.role == "observer"
        assert m3.log.log_end_offset == e.leader_member().log.log_end_offset  # it caught up all the same
        info = sim.quorum_info()
        assert [(v.node_id, v.directory_id) for v in info.voters if v.node_id == 3] == [(3, old)]
        assert (3, new) in [(o.node_id, o.directory_id) for o in info.observers]
        leader = e.leader_member().id
        other = next(i for i in (1, 2) if i != leader)
        sim.crash([other])
        sim.run(30_000)
        assert e.leader_member() is None  # node 3 does not vote as its old self
        assert m3.voted is None and m3.epoch == e.member(leader).epoch  # it granted no vote in any epoch
        sim.start([other])
        sim.wait(30_000)
        assert e.leader_member() is not None
        sim.remove_controller(3)  # the voter's recorded directory id, as describe --replication shows it
        assert sim.voters() == (1, 2)
        assert sim.add_controller(3) == 3
        assert sim.voters() == (1, 2, 3) and e.member(3).voter
        assert [(v.node_id, v.directory_id) for v in sim.quorum_info().voters if v.node_id == 3] == [(3, new)]
        _ok(sim)


def test_a_wiped_static_voter_keeps_its_directory_id(tmp_path: Path) -> None:
    """Under kraft.version 0 the voters are ids alone: a wiped controller keeps meta.properties
    and is a voter again once it starts."""
    with Simulation.create(tmp_path / "c", controllers=3, brokers=1, release="4.0.0", durable=False) as sim:
        old = sim.directory_id(3)
        sim.crash([3])
        sim.disk_fault([3], "wipe")
        assert sim.directory_id(3) == old
        sim.start([3])
        sim.wait(30_000)
        assert sim.engine.member(3).voter
