"""The Simulation API over the event engine: operations, Kafka's texts, determinism, the
invariants catching a broken rule, snapshots fetched by a wiped follower."""

from __future__ import annotations

import io
import json

import pytest

from kraftsim.image import image_digest
from kraftsim.sim import SimConfig, SimError, Simulation
from kraftsim.sim.engine.raft import Raft
from tests.sim.sim_helpers import failed, loader_drops_topic_commits, over_seeds, scratch, tree_digest


def _faulty_run(sim: Simulation) -> None:
    sim.create_topics(2, 3)
    leader = sim.leader()
    sim.crash([leader])
    sim.wait(30_000)
    sim.start([leader])
    sim.partition([[sim.leader()]])
    sim.run(4_000)
    sim.heal()
    sim.wait(30_000)


def test_same_seed_same_bytes_and_timeline() -> None:
    outputs = []
    for _ in range(2):
        with scratch() as base:
            out = io.StringIO()
            sim = Simulation.create(base / "c", controllers=3, brokers=2, release="4.1", seed=7, durable=False)
            sim.timeline_jsonl(out)
            _faulty_run(sim)
            sim.close()
            outputs.append((tree_digest(base / "c"), out.getvalue()))
    assert outputs[0][1].count("\n") > 100
    assert outputs[0] == outputs[1]
    first = json.loads(outputs[0][1].splitlines()[0])
    assert set(first) == {"time_ms", "node", "kind", "details"}


def test_different_seeds_explore_different_interleavings() -> None:
    """Who wins the election after the leader crashes is a race the seed decides."""
    winners = set()
    with scratch() as base:
        for seed in range(12):
            sim = Simulation.create(base / f"s{seed}", controllers=5, release="4.1", seed=seed, durable=False)
            sim.crash([sim.leader()])
            sim.wait(30_000)
            winners.add(sim.leader())
            sim.close()
    assert len(winners) >= 2


def test_a_broken_commit_rule_is_caught_and_names_the_event(monkeypatch: pytest.MonkeyPatch) -> None:
    """A leader that counts only itself commits without a majority; the invariants say so."""
    def commit_alone(self, m) -> None:  # type: ignore[no-untyped-def]
        if m.leading is not None and m.flushed_end > m.leading.epoch_start_offset \
                and (m.high_watermark or 0) < m.flushed_end:
            self.set_high_watermark(m, m.flushed_end)

    monkeypatch.setattr(Raft, "update_high_watermark", commit_alone)
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=3, release="4.1", seed=3, durable=False)
        sim.partition([[sim.leader()]])
        sim.run(3_000)
        bad = failed(sim)
        sim.close()
    assert bad and bad[0].name == "ConsistentCommittedData"
    assert "event #" in bad[0].detail and "only voters" in bad[0].detail


def test_broker_fencing_and_controlled_shutdown() -> None:
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=1, brokers=2, release="3.9", seed=1, durable=False)
        kinds = []
        sim.subscribe(lambda e: kinds.append((e.node, e.kind)))
        assert [n.fenced for n in sim.nodes() if "broker" in n.roles] == [False, False]
        sim.crash([3])  # its session expires: the controller fences it
        sim.run(12_000)
        assert (3, "fence") in kinds
        assert next(n for n in sim.nodes() if n.id == 3).fenced is True
        sim.start([3])
        sim.wait(30_000)
        assert (3, "unfence") in kinds
        sim.stop([2])
        assert (2, "controlled-shutdown") in kinds
        assert not failed(sim)
        sim.close()


def test_roll_and_mv_upgrade_with_a_crash_in_between() -> None:
    def scenario(sim: Simulation) -> None:
        sim.create_topics(3, 2)
        sim.roll("4.0", "controllers")
        sim.crash([sim.leader()])
        sim.wait(30_000)
        sim.start("all")
        sim.roll("4.1")
        lines = sim.features("upgrade", metadata="4.1")
        assert lines[-1] == "metadata.version was upgraded to 27."
        assert sim.metadata_version() == 27
        digests = {image_digest(sim.image(n.id)) for n in sim.nodes()}
        assert len(digests) == 1

    over_seeds(scenario, seeds=range(8), release="3.7", brokers=2)


def test_a_controller_that_cannot_replay_the_log_fails_with_kafkas_text() -> None:
    # Formatted at 4.0-IV1, a level 3.9 lists (as a placeholder), so the bootstrap file passes
    # and the replay refuses it.
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=3, release="4.1", release_version="4.0-IV1", seed=2,
                                durable=False)
        sim.stop([3])
        with pytest.raises(SimError, match="but this controller only supports versions"):
            sim.start([3], release="3.9")
        node = next(n for n in sim.nodes() if n.id == 3)
        assert node.state == "failed" and "FeatureLevelRecord" in node.detail
        sim.close()


def test_a_node_on_a_bootstrap_metadata_version_its_release_does_not_list_fails_before_replay() -> None:
    # 4.1 formats at 4.1-IV1 (27); 3.9 lists levels up to 23 (seen live: 3.9.1 on a 4.0.2 directory).
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=3, release="4.1", seed=2, durable=False)
        sim.stop([3])
        with pytest.raises(SimError, match="No MetadataVersion with feature level 27"):
            sim.start([3], release="3.9")
        node = next(n for n in sim.nodes() if n.id == 3)
        assert node.state == "failed" and node.detail == "No MetadataVersion with feature level 27"
        sim.close()


def test_wiped_follower_catches_up_by_fetching_a_snapshot() -> None:
    config = SimConfig(segment_bytes=2048, retention_bytes=0)
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=3, brokers=1, release="4.1", seed=5, config=config,
                                durable=False)
        leader = sim.leader()
        follower = next(n.id for n in sim.nodes() if n.id not in (leader, 4))
        sim.stop([follower])
        for _ in range(2):  # Kafka's retention deletes the log only up to the older of two snapshots
            sim.create_topics(20, 3)
            sim.run(3_000)
            assert sim.snapshot([leader])
        assert sim.engine.member(leader).log.log_start_offset > 0  # retention dropped the start of the log
        sim.disk_fault([follower], "wipe")
        fetched = []
        sim.subscribe(lambda e: fetched.append(e) if e.kind == "snapshot" and e.details.get("fetched") else None)
        sim.start([follower])
        sim.wait(30_000)
        assert [e.node for e in fetched] == [follower]
        assert image_digest(sim.image(follower)) == image_digest(sim.image(leader))
        assert not failed(sim)
        sim.close()


def test_reopen_continues_the_cluster() -> None:
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=3, brokers=1, release="4.0", seed=4)
        sim.create_topics(1, 1)
        sim.close()
        again = Simulation.open(base / "c")
        again.wait(30_000)
        assert again.image(4).topics.get_topic_by_name("topic-0") is not None
        again.roll("4.1")
        assert {n.release for n in again.nodes()} == {"4.1"}
        assert not failed(again)
        again.close()


def test_operations_refused_with_clear_texts() -> None:
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=1, brokers=1, release="4.1", seed=0, durable=False)
        with pytest.raises(SimError, match="needs it stopped"):
            sim.disk_fault([1], "wipe")
        with pytest.raises(SimError, match="no node 9"):
            sim.crash([9])
        with pytest.raises(SimError, match="Refusing to perform the requested downgrade"):
            sim.features("downgrade", metadata="3.9")
        sim.close()


def test_an_image_that_drifts_from_its_log_is_caught() -> None:
    """A node whose loader lost a batch (its image no longer follows its own log)."""
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=3, brokers=1, release="4.1", seed=1, durable=False)
        with loader_drops_topic_commits(sim.engine.member(4).node):
            sim.create_topics(1, 1)
        bad = failed(sim)
        sim.close()
    assert [r.name for r in bad] == ["ImageMatchesLog"]
    assert "node 4's image" in bad[0].detail


def test_combined_nodes_and_kip_778_downgrade() -> None:
    with scratch() as base:
        sim = Simulation.create(base / "c", combined=3, brokers=1, release="4.0", seed=1, policy="kip-778",
                                durable=False)
        assert [n.roles for n in sim.nodes()] == [("broker", "controller")] * 3 + [("broker",)]
        assert all(n.fenced is False for n in sim.nodes())
        sim.crash([sim.leader()])
        sim.wait(30_000)
        sim.start("all")
        sim.wait(30_000)  # node 1 caught up: a loader catching up applies the change inside one delta
        lines = sim.features("downgrade", metadata="3.9", unsafe=True)
        assert "metadata.version was downgraded to 21." in lines
        assert {r.node_id for r in sim.mv_changes()} == {1, 2, 3, 4}
        sim.wait(30_000)
        assert sim.metadata_version() == 21 and not failed(sim)
        sim.close()


def test_a_broker_rolled_below_the_finalized_level_is_refused_and_stays_fenced() -> None:
    # Formatted at 3.9-IV0, which 3.9 knows (a directory formatted at 4.1-IV1 would stop a
    # 3.9 node before replay: tests/sim/test_bootstrap_start.py), then finalized at 4.1-IV1.
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=1, brokers=2, release="4.1", release_version="3.9-IV0",
                                seed=1, durable=False)
        sim.features("upgrade", metadata="4.1-IV1")
        with pytest.raises(SimError, match="returned error UNSUPPORTED_VERSION: Unable to register because the broker "
                                           "does not support finalized version 27 of metadata.version"):
            sim.roll("3.9", [3])
        node = next(n for n in sim.nodes() if n.id == 3)
        assert (node.state, node.fenced) == ("running", True)
        assert sim.engine.member(3).node.blocked is not None  # it applies nothing past the level it lacks
        assert not failed(sim)
        sim.close()


def test_watching_changes_nothing() -> None:
    """A subscriber sees the run; it does not change it (same files with and without one)."""
    digests = []
    for watch in (False, True):
        with scratch() as base:
            sim = Simulation.create(base / "c", controllers=3, brokers=1, release="4.1", seed=11, durable=False)
            if watch:
                sim.subscribe(lambda e: None)
            _faulty_run(sim)
            sim.close()
            digests.append(tree_digest(base / "c"))
    assert digests[0] == digests[1]
