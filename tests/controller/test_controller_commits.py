"""Loaders adopting the active controller's replay (kraftsim.sim.node.controller_commits)
change no result: the same files and timeline as each software replaying every batch itself,
and the deep invariants (which replay every node's own files) stay quiet."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings, strategies as st
import pytest

from kraftsim.image import TopicsImage
from kraftsim.sim import Simulation
from kraftsim.sim.node.controller_commits import ControllerCommits
from tests.sim.sim_helpers import failed, scratch, tree_digest


def _run(base: Path, name: str, seed: int, topics: int, partitions: int) -> tuple[str, list[str], int, int]:
    """Created on 3.9, controllers rolled to 4.0, a snapshot, brokers rolled, more topics.
    (directory digest, timeline, batches the loaders replayed, batches kept from the controller)."""
    made: list[ControllerCommits] = []
    sim = Simulation.create(base / name, controllers=3, brokers=3, release="3.9", seed=seed, durable=False)
    lines: list[str] = []
    sim.subscribe(lambda e: lines.append(repr(e)))
    made.append(sim.engine.controller.observer)  # type: ignore[union-attr,arg-type]
    sim.create_topics(topics, partitions)
    sim.roll("4.0", "controllers")
    sim.snapshot()
    sim.roll("4.0", "brokers")
    made.append(sim.engine.controller.observer)  # type: ignore[union-attr,arg-type]
    sim.create_topics(3, partitions, prefix="more-")
    sim.run(3_000)
    assert not failed(sim)
    replayed = sim.engine.share.replayed
    sim.close()
    return tree_digest(base / name), lines, replayed, sum(o.kept for o in made if o is not None)


@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 50), topics=st.integers(1, 12), partitions=st.integers(1, 4))
def test_adopting_the_controllers_replay_changes_no_result(seed: int, topics: int, partitions: int) -> None:
    with scratch() as base:
        fast = _run(base, "fast", seed, topics, partitions)
        with pytest.MonkeyPatch.context() as mp:  # the plain path: every software replays each batch
            mp.setattr(ControllerCommits, "replayed", lambda self, *a: None)
            mp.setattr(ControllerCommits, "prepare", lambda self, *a: None)
            slow = _run(base, "slow", seed, topics, partitions)
    assert fast[:2] == slow[:2]
    assert fast[3] > 0 and slow[3] == 0
    assert fast[2] < slow[2]


def test_a_wrong_kept_image_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """A controller result kept with a wrong image (no topics) is named by the deep invariants."""
    keep = ControllerCommits.replayed

    def wrong(self, raw, records, base_offset, epoch, before, delta, state):  # type: ignore[no-untyped-def]
        image = state.image
        state.image = image.__class__(**{**{f: getattr(image, f) for f in image.__struct_fields__},
                                         "topics": TopicsImage()})
        try:
            keep(self, raw, records, base_offset, epoch, before, delta, state)
        finally:
            state.image = image

    monkeypatch.setattr(ControllerCommits, "replayed", wrong)
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=3, brokers=2, release="4.0", seed=1, durable=False)
        sim.create_topics(4, 2)
        sim.run(3_000)
        assert failed(sim)
        sim.close()
