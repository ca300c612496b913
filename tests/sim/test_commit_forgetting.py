"""The engine lets go of shared commits no node can replay again, and that changes no result.

A node (re)starts from its newest snapshot, so a kept commit of a batch ending below every
node's newest snapshot is only memory (at a million partitions, gigabytes). The engine drops
those after each operation and settle (`Engine.forget_commits_below_snapshots`); while a
node is down, its newest snapshot is only on its disk, so nothing goes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.sim import Simulation
from kraftsim.sim.engine.core import Engine
from tests.sim.sim_helpers import failed, scratch, tree_digest


def _kept_ends(sim: Simulation) -> list[int]:
    """The last offsets of the kept commits known by offset."""
    return [k[1][1] for k in sim.engine.share.kept() if type(k[1]) is tuple]


def _newest_snapshots(sim: Simulation) -> list[int]:
    ends = []
    for n in sim.nodes():
        snap = sim.engine.fetcher.latest_snapshot(sim.engine.member(n.id))
        ends.append(0 if snap is None else snap.end_offset)
    return ends


def test_commits_below_every_newest_snapshot_go_and_the_rest_stay() -> None:
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=3, brokers=3, release="4.0", seed=5, durable=False)
        sim.create_topics(8, 2)
        before = _kept_ends(sim)
        sim.snapshot()
        low = min(_newest_snapshots(sim))
        after_snapshot = _kept_ends(sim)
        sim.create_topics(4, 2, prefix="later-")
        later = _kept_ends(sim)
        assert not failed(sim)
        sim.close()
    assert low > 0 and any(end < low for end in before)
    assert all(end >= low for end in after_snapshot + later)
    assert any(end > low for end in later)  # (commits after the snapshot are kept)


def test_nothing_goes_while_a_node_is_down() -> None:
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=3, brokers=3, release="4.0", seed=5, durable=False)
        sim.create_topics(8, 2)
        sim.stop(4)
        kept = len(_kept_ends(sim))
        sim.snapshot([n.id for n in sim.nodes() if n.id != 4])
        assert sim.engine.forget_commits_below_snapshots() == 0
        assert len(_kept_ends(sim)) >= kept
        sim.start(4)
        sim.run(3_000)
        sim.snapshot()
        low = min(_newest_snapshots(sim))
        ends = _kept_ends(sim)
        assert not failed(sim)
        sim.close()
    assert all(end >= low for end in ends)  # (once it is back, they go)


def _rolled(base: Path, name: str) -> tuple[str, list[str]]:
    sim = Simulation.create(base / name, controllers=3, brokers=4, release="3.9", seed=3, durable=False)
    lines: list[str] = []
    sim.subscribe(lambda e: lines.append(repr(e)))
    sim.create_topics(30, 4)
    sim.roll("4.0", "controllers")
    sim.snapshot()
    sim.create_topics(6, 2, prefix="after-")
    sim.roll("4.0", "brokers")
    sim.run(3_000)
    assert not failed(sim)
    sim.close()
    return tree_digest(base / name), lines


def test_forgetting_changes_no_file_and_no_event(monkeypatch: pytest.MonkeyPatch) -> None:
    with scratch() as base:
        forgetting = _rolled(base, "forgetting")
        monkeypatch.setattr(Engine, "forget_commits_below_snapshots", lambda self: 0)
        keeping = _rolled(base, "keeping")
    assert forgetting == keeping
