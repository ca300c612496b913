"""ImageMatchesLog's per-event form (on by default) catches a drifting image at the event
that caused it, before the full replay after the operation; and sharing commit results
across nodes keeps every node's image equal to a replay of its own log."""

from __future__ import annotations

from kraftsim.image import MetadataLoader, image_digest
from kraftsim.sim import Simulation
from kraftsim.sim.engine.invariants import replay_image
from tests.sim.sim_helpers import failed, scratch


def test_a_loader_that_skips_a_batch_is_caught_at_that_event() -> None:
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=3, brokers=1, release="4.1", seed=2, durable=False)
        node = sim.engine.member(4).node
        original, original_adopt = MetadataLoader.handle_commit, MetadataLoader.adopt
        seen: list[str] = []
        sim.subscribe(lambda e: seen.append(e.details["detail"]) if e.kind == "invariant" else None)

        def skip(loader, last_offset: int) -> bool:  # type: ignore[no-untyped-def]
            if loader is node.loader and sim.engine.current_event != "start" and not seen:
                loader._last_offset = last_offset  # counted as applied, never replayed
                return True
            return False

        def lossy(self, batches, **kw):  # type: ignore[no-untyped-def]
            batches = list(batches)
            if not skip(self, batches[-1].last_offset):
                original(self, batches, **kw)

        def lossy_adopt(self, delta, image, manifest, **kw):  # type: ignore[no-untyped-def]
            if not skip(self, manifest.provenance.last_contained_offset):
                original_adopt(self, delta, image, manifest, **kw)

        MetadataLoader.handle_commit, MetadataLoader.adopt = lossy, lossy_adopt  # type: ignore[method-assign]
        try:
            sim.create_topics(2, 1)
        finally:
            MetadataLoader.handle_commit, MetadataLoader.adopt = original, original_adopt  # type: ignore
        bad = failed(sim)
        sim.close()
    assert [r.name for r in bad] == ["ImageMatchesLog"]
    # Named at the event (before the operation's full check): the event, the node, the offsets.
    assert seen and seen[0].startswith("event #") and "node 4's image ends at offset" in seen[0]


def test_truncating_below_what_a_node_applied_is_caught() -> None:
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=3, release="4.1", seed=3, durable=False)
        follower = next(m for m in sim.engine.ordered() if m.id != sim.leader())
        applied = follower.applied
        sim.engine.fetcher.truncate(follower, applied - 2, "a broken rule injected by the test")
        bad = failed(sim)
        sim.close()
    # Committed data is lost too (ConsistentCommittedData); the image outruns the log (ImageMatchesLog).
    image = {r.name: r for r in bad}["ImageMatchesLog"]
    assert f"node {follower.id} truncates its log to offset {applied - 2}, but its image holds the records up " \
           f"to offset {applied}" in image.detail


def test_nodes_sharing_commits_still_match_their_own_logs() -> None:
    """After a roll and crashes, each node's image equals a replay of its own files, and the
    nodes of one release did share commit results."""
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=3, brokers=2, release="3.9", seed=4, durable=False)
        sim.create_topics(20, 3)
        sim.roll("4.1")
        sim.crash([sim.leader()])
        sim.wait(30_000)
        sim.start("all")
        sim.wait(30_000)
        assert sim.engine.share.adopted > sim.engine.share.replayed
        for m in sim.engine.ordered():
            node = m.node
            assert node is not None
            expected = replay_image(node, node.applied_offset + 1)
            assert expected is not None and image_digest(expected) == image_digest(node.image), m.id
        assert not failed(sim)
        sim.close()


def test_a_deposed_leaders_batches_are_allowed_above_a_followers_high_watermark_only() -> None:
    """Raft lets a follower hold a deposed leader's uncommitted batches, even at offsets the new
    leader has committed, until it learns the new epoch; a high watermark over them is a bug."""
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=3, brokers=1, release="4.1", seed=349, durable=False)
        sim.partition([[2]])  # controller 2 led epoch 1; 1 wins epoch 2 and commits offsets 13-16 anew
        sim.run(3525)
        sim.heal()
        sim.run(491)  # the broker has fetched epoch 1's batches 13-16 from controller 2
        broker = sim.engine.member(4)
        held = [(fb.batch.base_offset, fb.batch.partition_leader_epoch) for fb in broker.log.batches(13)]
        assert held[0] == (13, 1) and broker.high_watermark == 13 and sim.engine.checker.committed_end > 13
        assert not failed(sim)  # allowed: above its own high watermark
        sim.engine.raft.set_high_watermark(broker, sim.engine.checker.committed_end)  # a broken rule, injected here
        bad = failed(sim)
        sim.close()
    assert [r.name for r in bad] == ["ConsistentCommittedData"]
    assert "node 4 holds a batch at offsets 13-13 (epoch 1) that differs from the committed batch at offsets " \
           "13-13 (epoch 2)" in bad[0].detail
