"""A node's process that ends lets go of its loader, image and publishers at once.

The loader, its snapshot generator and the node refer to each other; left so, a stopped
node's state waits for a full run of the cycle collector, which a long run seldom makes
(kraftsim.gcpause), and at a million partitions that is hundreds of MB held for nothing.
With the collector off, nothing of the node may outlive its end.
"""

from __future__ import annotations

import gc
import weakref

import pytest

from kraftsim.sim import Simulation
from tests.sim.sim_helpers import scratch


@pytest.mark.parametrize("end", ["stop", "crash"])
def test_an_ended_node_is_freed_without_the_cycle_collector(end):
    with scratch() as d:
        sim = Simulation.create(d / "c", controllers=1, brokers=3, release="3.9.0")
        try:
            sim.create_topics(6, 3)
            node = sim.engine.members[2].node
            assert node is not None and node.loader is not None and node.generator is not None
            held = {"node": weakref.ref(node), "loader": weakref.ref(node.loader),
                    "generator": weakref.ref(node.generator), "emitter": weakref.ref(node.generator.emitter)}
            del node
            gc.collect()
            gc.disable()
            try:
                getattr(sim, end)([2])
                alive = sorted(name for name, ref in held.items() if ref() is not None)
            finally:
                gc.enable()
            assert alive == []
            sim.start([2])  # (and it starts again as before)
            sim.run(3_000)
            assert sim.engine.members[2].node is not None and sim.engine.members[2].node.image is not None
        finally:
            sim.close()
