"""KRaft replication under faults, in the spirit of Kafka's RaftEventSimulationTest: each
scenario over 100 seeds, the invariants checked after every event (a failure names it)."""

from __future__ import annotations

from kraftsim.image import image_digest
from kraftsim.sim import SimConfig, Simulation
from tests.sim.sim_helpers import over_seeds


def _caught_up(sim: Simulation) -> None:
    """Every running node applied what the leader committed and holds the same image."""
    leader = sim.leader()
    assert leader is not None
    digests = {image_digest(sim.image(n.id)) for n in sim.nodes() if n.state == "running"}
    assert len(digests) == 1


def test_leader_crashing_repeatedly() -> None:
    def scenario(sim: Simulation) -> None:
        leaders = []
        for _ in range(3):
            sim.wait(30_000)
            leader = sim.leader()
            leaders.append(leader)
            sim.crash([leader])
            sim.wait(30_000)
            assert sim.leader() not in (None, leader)  # the two others elect one of them
            sim.start([leader])
        sim.wait(30_000)
        _caught_up(sim)

    over_seeds(scenario)


def test_two_of_three_partition_and_heal() -> None:
    def scenario(sim: Simulation) -> None:
        sim.wait(30_000)
        old = sim.leader()
        others = [n.id for n in sim.nodes() if n.id != old]
        sim.partition([[old], others])
        sim.run(6_000)
        # the majority side elects a leader; the old one resigns (check-quorum, 4.1)
        assert sim.leader() in others
        assert sim.engine.member(old).role != "leader"
        sim.heal()
        sim.wait(30_000)
        _caught_up(sim)

    over_seeds(scenario)


def test_minority_cannot_commit() -> None:
    """Before check-quorum (3.6) the isolated old leader keeps its role but commits nothing."""
    def scenario(sim: Simulation) -> None:
        sim.wait(30_000)
        old = sim.leader()
        before = sim.engine.member(old).high_watermark
        sim.partition([[old]])
        sim.run(5_000)
        m = sim.engine.member(old)
        assert m.role == "leader" and m.high_watermark == before
        sim.heal()
        sim.wait(30_000)
        _caught_up(sim)

    over_seeds(scenario, seeds=range(20), release="3.6")


def test_all_nodes_killed_and_restarted() -> None:
    def scenario(sim: Simulation) -> None:
        sim.wait(30_000)
        sim.run(sim.seed % 700)
        sim.crash("all")
        assert sim.leader() is None
        sim.start("all")
        sim.wait(30_000)
        _caught_up(sim)

    over_seeds(scenario)


def test_follower_disk_wiped() -> None:
    def scenario(sim: Simulation) -> None:
        sim.wait(30_000)
        follower = next(n.id for n in sim.nodes() if n.id != sim.leader())
        sim.stop([follower])
        sim.run(1_000)
        sim.disk_fault([follower], "wipe")
        sim.start([follower])
        sim.wait(30_000)
        _caught_up(sim)
        assert sim.engine.member(follower).log.log_end_offset >= sim.engine.member(sim.leader()).high_watermark

    over_seeds(scenario)


def test_message_loss_on_every_link() -> None:
    def scenario(sim: Simulation) -> None:
        sim.run(8_000)
        sim.wait(60_000)
        _caught_up(sim)

    over_seeds(scenario, config=SimConfig(message_loss=0.1))


def test_torn_tail_is_cut_at_start_and_refetched() -> None:
    def scenario(sim: Simulation) -> None:
        sim.wait(30_000)
        node = next(n.id for n in sim.nodes() if n.id != sim.leader())
        sim.stop([node])
        end = sim.engine.member(node).state  # noqa: F841 (the node is down; its files are what counts)
        sim.disk_fault([node], "torn-tail")
        seen = []
        sim.subscribe(lambda e: seen.append(e) if e.kind == "recovery" and e.node == node else None)
        sim.start([node])
        assert seen, "start-up recovery cut nothing"
        sim.wait(30_000)
        _caught_up(sim)

    over_seeds(scenario, seeds=range(30))


def test_roll_37_to_41_and_mv_upgrade_under_faults() -> None:
    """The active controller dies at a seeded moment of a roll 3.7 -> 4.1; the leader is cut
    off while metadata.version is upgraded. Every seed ends on 4.1 with the MV finalized."""
    def scenario(sim: Simulation) -> None:
        sim.inject(sim.seed * 97 % 3000, "crash")
        sim.roll("4.1")
        sim.start("all")
        sim.inject(sim.seed * 61 % 400, "partition")
        sim.inject(sim.seed * 61 % 400 + 3000, "heal")
        lines = sim.features("upgrade", metadata="4.1")
        assert lines[-1] == "metadata.version was upgraded to 27."
        sim.wait(30_000)
        assert sim.metadata_version() == 27
        assert {n.release for n in sim.nodes()} == {"4.1"}
        _caught_up(sim)

    over_seeds(scenario, release="3.7", brokers=2)


def test_every_invariant_after_every_event() -> None:
    """The deep invariants (images and snapshots against a replay of the log) after every
    single event, not only after each operation, through a crash and a partition."""
    def scenario(sim: Simulation) -> None:
        sim.engine.deep_every_event = True
        sim.create_topics(2, 2)
        sim.crash([sim.leader()])
        sim.wait(30_000)
        sim.start("all")
        sim.partition([[sim.leader()]])
        sim.run(3_000)
        sim.heal()
        sim.wait(30_000)
        _caught_up(sim)

    over_seeds(scenario, seeds=range(3), brokers=1)


def test_check_quorum_and_pre_vote_are_release_policies(tmp_path) -> None:
    """The raft gates are catalog data: a hypothetical release that inherits 4.4 but turns
    pre-vote and check-quorum off elects without pre-votes, and a leader cut off from every
    voter does not resign (as before 3.7)."""
    catalog = tmp_path / "next.toml"
    catalog.write_text('[[releases]]\nname = "4.9.0"\ninherits = "4.4"\nlatest_production = "4.4-IV2"\n'
                       'policies = { raft_check_quorum = "off", raft_pre_vote = "off" }\n')
    for release, pre_votes, resigns in (("4.4", True, True), ("4.9", False, False)):
        events: list = []
        sim = Simulation.create(tmp_path / release, controllers=3, release=release, seed=5, durable=False,
                                catalog=str(catalog), on_event=events.append)
        leader = sim.leader()
        sim.partition([[leader]])
        sim.run(6_000)
        phases = {e.details.get("phase") for e in events if e.kind == "election"}
        assert ("pre-vote" in phases) is pre_votes, release
        assert any(e.kind == "resign" and e.node == leader for e in events) is resigns, release
        sim.heal()
        sim.wait(30_000)
        assert all(r.ok for r in sim.invariants())
        sim.close()
