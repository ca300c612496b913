"""A replay from the log's start stands on a shadow's equal image and adopts its runs.

SnapshotMatchesLog replays a node's log from offset 0 (`replay_image(..., use_snapshots=False,
share=...)`). A shadow that started from a snapshot file stands on an image object of its own,
so the replay from offset 0 finds no run kept on its image there; where a kept run starts at
its offset and the two images are equal (metadata, provenance, raft state) it stands on the
run's start image and adopts the run (`RangeShare.rebase_onto`). Where they differ it replays
the batches itself, so its result never takes what a wrong start image gave.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kraftsim.image import image_digest
from kraftsim.sim import Simulation
from kraftsim.sim.engine.invariants import replay_image, replay_loader
from kraftsim.sim.engine.range_share import RangeShare, loader_offset
from tests.sim.sim_helpers import failed, scratch
from tests.sim.test_deep_checks_incremental import _without_last_partition


def _cluster(base: Path) -> tuple[Simulation, Any, Path, int, int]:
    """A cluster whose node 1 holds a snapshot at offset `at` and a log from offset 0 to `end`."""
    sim = Simulation.create(base / "c", controllers=3, brokers=1, release="4.0", seed=5, durable=False)
    sim.create_topics(3, 2)
    path = next(p for p in sim.snapshot([1]))
    sim.create_topics(2, 2)
    sim.create_topics(1, 1)
    node = sim.engine.member(1).node
    assert node is not None and node.log is not None and node.log.log_start_offset == 0
    at = max(s.end_offset for s in node.log.snapshot_ids())
    end = node.applied_offset + 1
    assert 0 < at < end
    return sim, node, path, at, end


def _shadow_then_full(node: Any, at: int, end: int) -> tuple[RangeShare, Any, Any]:
    """A shadow from the node's snapshot to `end`, then a replay from offset 0 sharing its runs."""
    share = RangeShare(keep=64)  # (no snapshot stops: the replay from offset 0 ends a commit where the run starts)
    shadow = replay_loader(node, end, share=share)
    assert shadow is not None and loader_offset(shadow.image) == end
    assert share.run_starts(node.software) == {at}  # (the shadow's run, from its snapshot image)
    share.replayed = share.adopted = 0
    full = replay_loader(node, end, use_snapshots=False, share=share)
    assert full is not None
    return share, shadow, full


def test_a_replay_from_the_start_rebases_on_an_equal_shadow_image_and_adopts_its_run() -> None:
    with scratch() as base:
        sim, node, _, at, end = _cluster(base)
        share, shadow, full = _shadow_then_full(node, at, end)
        plain = replay_image(node, end, use_snapshots=False)
        batches = sum(1 for fb in node.log.batches(0) if fb.batch.base_offset < end)
        after = sum(1 for fb in node.log.batches(0) if at <= fb.batch.base_offset < end)
        sim.close()
    assert share.rebased_runs == 1
    assert full.image is shadow.image  # (the shadow's run, adopted)
    assert share.adopted == after and share.replayed == batches - after
    assert image_digest(full.image) == image_digest(plain)


def test_an_equal_pair_is_compared_once() -> None:
    with scratch() as base:
        sim, node, _, at, end = _cluster(base)
        share, shadow, full = _shadow_then_full(node, at, end)
        compared: list[int] = []
        image_type = type(shadow.image)
        eq = image_type.__eq__

        def counting(a: object, b: object) -> bool:
            compared.append(1)
            return bool(eq(a, b))
        image_type.__eq__ = counting  # type: ignore[method-assign, assignment]
        try:  # (a second replay from offset 0 reaches the first one's image at `at` by adopting)
            again = replay_loader(node, end, use_snapshots=False, share=share)
        finally:
            image_type.__eq__ = eq  # type: ignore[method-assign]
        sim.close()
    assert again is not None and again.image is shadow.image
    assert share.rebased_runs == 2 and compared == []


def test_a_shadow_on_a_different_image_is_not_followed() -> None:
    with scratch() as base:
        sim, node, path, at, end = _cluster(base)
        (base / "w").mkdir()
        path.write_bytes(_without_last_partition(path, base / "w"))  # (the shadow starts from a wrong image)
        share, shadow, full = _shadow_then_full(node, at, end)
        plain = replay_image(node, end, use_snapshots=False)
        batches = sum(1 for fb in node.log.batches(0) if fb.batch.base_offset < end)
        sim.close()
    assert share.rebased_runs == 0 and share.adopted == 0 and share.replayed == batches
    assert image_digest(full.image) == image_digest(plain) != image_digest(shadow.image)


def test_after_a_roll_the_snapshot_check_adopts_the_restarted_shadows_runs() -> None:
    # (a roll starts every shadow again from its node's snapshot, under the new release: the
    # replay from offset 0 under that release finds no run on its own images)
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=3, brokers=3, release="3.9", seed=7, durable=False)
        for _ in range(3):
            sim.create_topics(20, 3)
        sim.snapshot()
        sim.roll("4.0")
        for _ in range(6):
            sim.create_topics(20, 3)
        checker = sim.engine.checker
        share = checker.shadow_share
        replayed, adopted, replays = share.replayed, share.adopted, checker.log_replays
        sim.snapshot()
        ok = not failed(sim)
        sim.close()
    assert ok and checker.log_replays == replays + 1
    assert share.rebased_runs == 1
    assert share.adopted - adopted > 5 * (share.replayed - replayed)  # (measured: 102 adopted, 15 replayed; 0 and 117 without)
