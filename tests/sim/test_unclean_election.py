"""unclean.leader.election.enable, release by release: a KRaft controller before 3.9 never reads
it (a partition whose ISR is gone stays offline); from 3.9 (KAFKA-12670) the topic's value, else
the active controller's dynamic config, else the cluster's, elects a live replica uncleanly when
a broker event leaves the partition without a leader, and the controller also looks every
unclean.leader.election.interval.ms, so a config set later takes effect."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.sim import SimConfig, Simulation

UNCLEAN = {"unclean.leader.election.enable": "true"}
INTERVAL_MS = 20_000


def _partition(sim: Simulation) -> tuple[tuple[int, ...], tuple[int, ...], int, int]:
    p = sim.image(sim.leader()).topics.get_topic_by_name("t").partitions[0]
    return tuple(p.replicas), tuple(p.isr), p.leader, p.leader_recovery_state


def _offline(directory: Path, release: str) -> tuple[Simulation, int, int]:
    """A cluster whose one partition lost its only in-sync replica: its ISR is the stopped
    leader, its follower (out of sync) is back. (sim, old leader, follower)."""
    sim = Simulation.create(directory, controllers=1, brokers=2, release=release, seed=3,
                            config=SimConfig(unclean_leader_election_interval_ms=INTERVAL_MS))
    sim.create_topics(1, 1, 2, names=["t"])
    replicas, _, leader, _ = _partition(sim)
    follower = next(r for r in replicas if r != leader)
    sim.stop(follower)  # controlled shutdown: the follower leaves the ISR
    sim.crash(leader)
    sim.run(15_000)  # the leader's session expires: no leader, the ISR still names it
    assert _partition(sim)[1:3] == ((leader,), -1)
    return sim, leader, follower


@pytest.mark.parametrize("release, elected", [("3.8", False), ("3.9", True), ("4.0", True)])
def test_a_topic_config_elects_a_live_replica_when_its_broker_returns_from_3_9(
        tmp_path: Path, release: str, elected: bool) -> None:
    sim, _, follower = _offline(tmp_path / "c", release)
    with sim:
        sim.alter_topic_config("t", UNCLEAN)
        sim.start(follower)
        sim.wait(30_000)
        _, isr, leader, recovery = _partition(sim)
        if elected:
            assert (leader, isr, recovery) == (follower, (follower,), 1)  # RECOVERING: alone, it asks nothing more
        else:
            sim.run(3 * INTERVAL_MS)
            assert leader == -1
        assert all(r.ok for r in sim.invariants())


@pytest.mark.parametrize("release, elected", [("3.8", False), ("3.9", True)])
def test_a_config_set_while_a_partition_is_offline_takes_effect_at_the_controllers_next_look(
        tmp_path: Path, release: str, elected: bool) -> None:
    sim, _, follower = _offline(tmp_path / "c", release)
    with sim:
        sim.start(follower)
        sim.wait(30_000)
        assert _partition(sim)[2] == -1  # (no config yet: nobody may lead)
        sim.alter_topic_config("t", UNCLEAN)
        sim.run(INTERVAL_MS // 2)
        assert _partition(sim)[2] == -1  # (not before the look)
        sim.run(INTERVAL_MS)
        assert (_partition(sim)[2] == follower) == elected
        assert all(r.ok for r in sim.invariants())


@pytest.mark.parametrize("node", [None, 1])
def test_the_controllers_own_or_the_cluster_wide_broker_config_stands_in_for_the_topics(
        tmp_path: Path, node: int | None) -> None:
    """The lookup of 3.9's ConfigurationControlManager: topic, the active controller's own
    dynamic config (node 1 here), the cluster's; a topic's own false wins over both."""
    sim, _, follower = _offline(tmp_path / "c", "3.9")
    with sim:
        sim.alter_topic_config("t", {"unclean.leader.election.enable": "false"})
        sim.alter_broker_config(node, UNCLEAN)
        sim.start(follower)
        sim.run(2 * INTERVAL_MS)
        assert _partition(sim)[2] == -1
        sim.alter_topic_config("t", {}, ["unclean.leader.election.enable"])
        sim.run(2 * INTERVAL_MS)
        assert _partition(sim)[2] == follower


def test_a_look_stops_at_its_limit_and_the_next_follows_at_once(tmp_path: Path, monkeypatch) -> None:
    """maybeElectUncleanLeaders writes at most MAX_ELECTIONS_PER_IMBALANCE changes (here 2) and
    then looks again 10 ms later, not a whole interval later."""
    from kraftsim.controller import leader_election as rules

    monkeypatch.setattr(rules, "MAX_ELECTIONS_PER_IMBALANCE", 2)
    with Simulation.create(tmp_path / "c", controllers=1, brokers=2, release="3.9", seed=3,
                           config=SimConfig(unclean_leader_election_interval_ms=INTERVAL_MS)) as sim:
        sim.create_topics(1, 5, 2, names=["t"])
        sim.stop(3)  # every ISR shrinks to broker 2...
        sim.crash(2)  # ...which goes: five partitions without a leader
        sim.run(15_000)
        sim.start(3)
        sim.wait(30_000)
        assert all(p.leader == -1 for p in sim.image(1).topics.get_topic_by_name("t").partitions.values())
        sim.alter_topic_config("t", UNCLEAN)
        sim.run(INTERVAL_MS + 1_000)  # the next look elects two, the two after it (10 ms apart) three
        assert [p.leader for p in sim.image(1).topics.get_topic_by_name("t").partitions.values()] == [3] * 5
