"""Partition leaders add followers back to their ISRs (AlterPartition), as Kafka's leaders do
once a follower that left fetches again: after a restart, after a roll, after an unclean
election (which is marked recovered first), and not while the follower cannot reach its
leader; then the active controller gives preferred replicas their leaderships back by itself
(auto.leader.rebalance.enable). Every node agrees and the invariants hold."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftsim.controller import ControllerResult, ReplayState
from kraftsim.protocol.primitives import Uuid
from kraftsim.sim import Simulation, leader_election
from kraftsim.sim.engine.isr import IsrExpansion
from kraftsim.sim.engine.written import describing, written
from kraftsim.versions import default_catalog
from tests.controller.conftest import broker, feature_level, payload
from tests.image.helpers import read_entries

BROKERS = (2, 3, 4)


def _isrs(sim: Simulation, node: int | None = None) -> dict[int, tuple[tuple[int, ...], tuple[int, ...], int]]:
    topic = sim.image(node if node is not None else sim.leader()).topics.get_topic_by_name("t")
    return {i: (tuple(p.replicas), tuple(p.isr), p.leader) for i, p in topic.sorted_partitions()}


def _isr_changes(directory: Path) -> list[tuple[int, list[int]]]:
    """(partition, new ISR) of every PartitionChangeRecord that sets an ISR, in log order."""
    out = []
    for segment in sorted((directory / "node-1" / "__cluster_metadata-0").glob("*.log")):
        for entry in read_entries(segment):
            if entry.record_type.name == "PartitionChangeRecord" and entry.message.isr is not None:
                out.append((entry.message.partition_id, list(entry.message.isr)))
    return out


def test_a_restarted_broker_is_added_back_one_partition_change_at_a_time(tmp_path: Path) -> None:
    with Simulation.create(tmp_path / "c", controllers=1, brokers=3, release="3.9", seed=2) as sim:
        sim.create_topics(1, 4, 3, names=["t"])
        sim.stop(3)  # controlled shutdown: it leaves every ISR
        assert all(3 not in isr for _, isr, _ in _isrs(sim).values())
        sim.start(3)
        sim.wait(60_000)
        assert all(isr == tuple(sorted(isr, key=lambda b: (b == 3,))) and set(isr) == set(replicas)
                   for replicas, isr, _ in _isrs(sim).values())  # back, appended after the others
        assert all(_isrs(sim, n) == _isrs(sim) for n in BROKERS)
        assert all(r.ok for r in sim.invariants())
    changes = _isr_changes(tmp_path / "c")
    back = [(pid, isr) for pid, isr in changes if isr and isr[-1] == 3 and len(isr) == 3]
    assert sorted(pid for pid, _ in back) == [0, 1, 2, 3]  # one record per partition that took it back


def test_after_a_roll_every_isr_is_whole_and_preferred_leaders_can_be_elected(tmp_path: Path) -> None:
    with Simulation.create(tmp_path / "c", controllers=1, brokers=3, release="3.9", seed=2) as sim:
        sim.create_topics(1, 6, 3, names=["t"])
        sim.roll("4.0", "brokers")
        sim.wait(60_000)
        assert all(set(isr) == set(replicas) for replicas, isr, _ in _isrs(sim).values())
        out = leader_election(sim)
        assert out.failure is None and (out.lines == [] or out.lines[0].startswith("Successfully completed"))
        assert all(leader == replicas[0] for replicas, _, leader in _isrs(sim).values())


def test_a_follower_cut_off_from_its_leader_is_added_only_once_it_can_fetch(tmp_path: Path) -> None:
    with Simulation.create(tmp_path / "c", controllers=1, brokers=2, release="3.9", seed=3) as sim:
        sim.create_topics(1, 1, 2, names=["t"])
        replicas, _, leader = _isrs(sim)[0]
        follower = next(r for r in replicas if r != leader)
        sim.stop(follower)
        sim.partition([[leader], [1, follower]])  # the follower reaches the controller, not its leader
        sim.start(follower)
        sim.run(20_000)
        assert _isrs(sim)[0][1] == (leader,)
        sim.heal()
        sim.wait(60_000)
        assert _isrs(sim)[0][1] == (leader, follower)


def test_an_uncleanly_elected_leader_is_recovered_with_the_first_follower_it_takes_back(tmp_path: Path) -> None:
    with Simulation.create(tmp_path / "c", controllers=1, brokers=3, release="3.9", seed=4) as sim:
        sim.create_topics(1, 1, 3, names=["t"])
        replicas, _, _ = _isrs(sim)[0]
        for b in replicas:  # each goes in turn: the last one is the ISR's last member
            sim.crash(b)
            sim.run(20_000)
        first_back = replicas[0]
        sim.start(first_back)
        sim.run(20_000)
        assert _isrs(sim)[0][2] == -1
        assert leader_election(sim, "unclean").failure is None
        topic = sim.image(sim.leader()).topics.get_topic_by_name("t")
        assert topic.partitions[0].leader == first_back
        sim.run(20_000)  # alone, the leader asks nothing: the partition stays RECOVERING (live 3.9.2)
        p = sim.image(sim.leader()).topics.get_topic_by_name("t").partitions[0]
        assert (p.leader_recovery_state, p.isr) == (1, (first_back,))
        sim.start([b for b in replicas if b != first_back])
        sim.wait(60_000)
        topic = sim.image(sim.leader()).topics.get_topic_by_name("t")
        p = topic.partitions[0]
        assert (p.leader_recovery_state, set(p.isr)) == (0, set(replicas))
    recovery = [(e.message.leader_recovery_state, e.message.isr)
                for segment in sorted((tmp_path / "c" / "node-1" / "__cluster_metadata-0").glob("*.log"))
                for e in read_entries(segment)
                if e.record_type.name == "PartitionChangeRecord" and e.message.leader_recovery_state != -1]
    assert [state for state, _ in recovery] == [1, 0]  # elected RECOVERING; recovered in one record...
    assert len(recovery[1][1]) == 2 and recovery[1][1][0] == first_back  # ...adding the first follower back


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(st.sampled_from(["crash", "stop"]), st.sampled_from(BROKERS)), min_size=1,
                      max_size=4))
def test_once_every_broker_runs_again_every_partition_with_a_leader_has_a_whole_isr(
        tmp_path_factory, steps: list[tuple[str, int]]) -> None:
    directory = Path(tmp_path_factory.mktemp("isr")) / "c"
    with Simulation.create(directory, controllers=1, brokers=3, release="4.0", seed=5) as sim:
        sim.create_topics(1, 4, 2, names=["t"])
        for kind, broker in steps:
            if kind == "crash":
                sim.crash(broker)
            else:
                sim.stop(broker)
            sim.run(12_000)
            sim.start(broker)
            sim.run(3_000)
        sim.wait(60_000)
        for replicas, isr, leader in _isrs(sim).values():
            if leader != -1:
                assert set(isr) == set(replicas), _isrs(sim)
        assert all(_isrs(sim, n) == _isrs(sim) for n in BROKERS)
        assert all(r.ok for r in sim.invariants()), [r for r in sim.invariants() if not r.ok]


def _leaders_preferred(sim: Simulation) -> bool:
    return all(leader == replicas[0] for replicas, _, leader in _isrs(sim).values())


def test_the_controller_gives_leaderships_back_to_preferred_replicas_by_itself(tmp_path: Path) -> None:
    """auto.leader.rebalance.enable (on by default): within leader.imbalance.check.interval.seconds
    of a roll every partition is led by its first replica again; switched off, nothing moves."""
    from kraftsim.sim import SimConfig

    for enabled in (True, False):
        config = SimConfig(auto_leader_rebalance_enable=enabled)
        with Simulation.create(tmp_path / f"c-{enabled}", controllers=1, brokers=3, release="3.9", seed=2,
                               config=config) as sim:
            sim.create_topics(1, 6, 3, names=["t"])
            sim.roll("4.0", "brokers")
            sim.wait(60_000)
            assert not _leaders_preferred(sim)  # the roll moved leaderships off each broker in turn
            sim.run(config.leader_imbalance_check_interval_ms)
            assert _leaders_preferred(sim) == enabled, _isrs(sim)
            assert all(r.ok for r in sim.invariants())


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(st.sampled_from(["crash", "stop", "start", "run"]), st.sampled_from((2, 3, 4, 5))),
                      min_size=1, max_size=6))
def test_setting_aside_partitions_that_cannot_move_writes_what_trying_them_all_writes(
        tmp_path_factory, monkeypatch, steps: list[tuple[str, int]]) -> None:
    """The balancing sets aside the partitions whose preferred election changed nothing, until
    what that answer depends on changes: the controller's log is byte for byte the one written
    by trying every imbalanced partition each time, as Kafka does (small batches, often)."""
    from kraftsim.controller import leader_election as rules
    from kraftsim.sim import SimConfig
    from kraftsim.sim.engine.balance import LeaderBalance

    monkeypatch.setattr(rules, "MAX_ELECTIONS_PER_IMBALANCE", 2)
    config = SimConfig(leader_imbalance_check_interval_ms=1_500)
    logs = []
    for set_aside in (True, False):
        monkeypatch.setattr(LeaderBalance, "set_aside", set_aside)
        directory = Path(tmp_path_factory.mktemp("balance")) / "c"
        with Simulation.create(directory, controllers=1, brokers=4, release="3.9", seed=7, config=config) as sim:
            sim.create_topics(2, 6, 3, names=["t", "u"])
            for action, broker in steps:
                running = sim.engine.member(broker).running
                if action == "crash" and running:
                    sim.crash(broker)
                elif action == "stop" and running:
                    sim.stop(broker)
                elif action == "start" and not running:
                    sim.start(broker)
                sim.run(4_000)
            sim.run(10_000)
        segments = sorted((directory / "node-1" / "__cluster_metadata-0").glob("*.log"))
        logs.append([s.read_bytes() for s in segments])
    assert logs[0] == logs[1]


class _Engine:
    """What IsrExpansion asks of the Engine, around a controller's ReplayState: every broker
    runs, the log ends where the state's image does, nothing is sent. The test hands it what
    the Engine would (`describing`, `written`)."""

    def __init__(self, state: ReplayState) -> None:
        self.state = state
        self.net = SimpleNamespace(send=lambda msg: None)
        self.sched = SimpleNamespace(after=lambda *args: None)
        self.config = SimpleNamespace(replica_fetch_wait_max_ms=500, request_timeout_ms=30_000)
        self.controller_id = 1
        self.now = 0

    def member(self, node_id: int) -> Any:
        return SimpleNamespace(id=node_id, running=True, lifecycle_gen=0)

    def leader_member(self) -> Any:
        return SimpleNamespace(node=object(), log=SimpleNamespace(log_end_offset=self.state.image.provenance.last_contained_offset + 1))

    def reachable(self, a: int, b: int) -> bool:
        return True

    def execute(self, rule: Any) -> None:
        return None


def _partition(pid: int, isr: list[int]) -> Any:
    return payload("PartitionRecord", 2, topic_id=_TOPIC, partition_id=pid, replicas=[2, 3], isr=isr, leader=2,
                   leader_epoch=0, partition_epoch=0)


_TOPIC = Uuid(b"\x07" * 16)


@pytest.mark.parametrize("back_in_isr", [True, False])
def test_a_broker_made_eligible_wakes_the_leaders_of_what_lacks_it_after_the_write(back_in_isr: bool) -> None:
    """A write that unfences broker 3 and, in the same write, puts it back in a partition's ISR
    (as an ELR member's return does) leaves nothing for the leader to add: no leader is woken.
    A partition that still lacks it after the write wakes its leader."""
    state = ReplayState(default_catalog())
    state.replay_batch([feature_level("metadata.version", 21), broker(2, {}, fenced=False), broker(3, {}),
                        payload("TopicRecord", name="t", topic_id=_TOPIC), _partition(0, [2]), _partition(1, [2, 3])],
                       base_offset=0, epoch=1, timestamp=0)
    engine = _Engine(state)
    isr = IsrExpansion(engine)  # type: ignore[arg-type]
    isr.reset(state.image, describing(state.replicas, state.image))
    state.replicas.take_changes()
    assert not isr.settling()  # (broker 3 is fenced: nothing to add)
    write = [payload("BrokerRegistrationChangeRecord", 2, broker_id=3, broker_epoch=10, fenced=-1)]
    if back_in_isr:
        write.append(payload("PartitionChangeRecord", 2, topic_id=_TOPIC, partition_id=0, isr=[2, 3]))
    state.replay_batch(write, base_offset=6, epoch=1, timestamp=0)
    isr.written(written(ControllerResult(tuple(write)), state.image, state.replicas))
    assert isr.settling() is not back_in_isr
