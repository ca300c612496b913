"""Combined nodes (`process.roles=broker,controller`) under crashes, over 100 seeds: a
3-node combined cluster whose active controller crashes, restarts, and crashes again in the
middle of a roll and of a metadata.version upgrade. The cheap invariants are checked after
every event, the deep ones (images and snapshots against a replay of the log) after every
operation, and for a few seeds after every single event. A crash hits both roles of a node
at once: its broker is fenced and registers again with a new incarnation."""

from __future__ import annotations

import random

from kraftsim.image import image_digest
from kraftsim.sim import Simulation
from tests.sim.sim_helpers import SEEDS, over_seeds

#: Seeds whose every event also runs the deep invariants (slow: they replay files).
DEEP_EVERY_EVENT = {0, 37, 74}
#: metadata.version 4.0-IV3, what `features upgrade --metadata 4.0` finalizes.
MV_4_0 = 25


def _settled(sim: Simulation) -> None:
    sim.start("all")
    sim.wait(60_000)
    nodes = sim.nodes()
    assert [n.state for n in nodes] == ["running"] * 3 and not any(n.fenced for n in nodes)
    assert len({image_digest(sim.image(n.id)) for n in nodes}) == 1  # type: ignore[arg-type]


def _fired(sim: Simulation) -> bool:
    """Every injected fault has happened (none is left waiting in the scheduler)."""
    return not any(label.startswith("inject") for label in sim.engine.sched.labels())


def _crashes_rolls_and_upgrades(sim: Simulation) -> None:
    rng = random.Random(f"combined:{sim.seed}")
    sim.engine.deep_every_event = sim.seed in DEEP_EVERY_EVENT
    assert [n.roles for n in sim.nodes()] == [("broker", "controller")] * 3
    sim.create_topics(2, 2)
    # the active controller crashes: its broker goes with it; the two others elect a leader
    old = sim.leader()
    assert old is not None
    sim.crash([old])
    sim.wait(30_000)
    assert sim.leader() not in (None, old)
    assert next(n for n in sim.nodes() if n.id == old).state == "crashed"
    before = sim.engine.member(old).state.incarnation
    sim.start([old])
    _settled(sim)
    assert sim.engine.member(old).state.incarnation != before  # a new process registers anew
    # a roll to 4.0, with the active controller crashing somewhere in it (the shortest of these
    # rolls takes 12.8 s: a 3.9 controller takes a cleanly stopped broker back at once, as Kafka 3.x)
    sim.inject(rng.randrange(0, 12_000), "crash")
    sim.roll("4.0")
    assert _fired(sim), "the crash did not land inside the roll"
    _settled(sim)
    assert {n.release for n in sim.nodes()} == {"4.0"}
    # the metadata.version upgrade, with the active controller crashing as it starts (the tool
    # retries against the new leader, as kafka-features' admin client does)
    sim.inject(rng.randrange(0, 25), "crash")
    lines = sim.features("upgrade", metadata="4.0")
    assert _fired(sim), "the crash did not land inside the upgrade"
    assert lines[-1] == f"metadata.version was upgraded to {MV_4_0}."
    _settled(sim)
    assert sim.metadata_version() == MV_4_0
    sim.create_topics(1, 3, prefix="after-")
    _settled(sim)


def test_combined_three_nodes_with_crashes_over_seeds() -> None:
    assert len(SEEDS) >= 100
    over_seeds(_crashes_rolls_and_upgrades, controllers=0, combined=3, release="3.9")
