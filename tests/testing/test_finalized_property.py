"""FinalizedLevelSupported (kraftsim.testing.properties.unsupported_finalized) on a node that
joins while cut off from the quorum: it has not learned the finalized level, so it serves
nothing at it and the property holds; once healed it learns the level and, its software
unable to apply it, stops, as Kafka's node does."""

from __future__ import annotations

from pathlib import Path

from kraftsim.errors import KraftsimError
from kraftsim.sim import Simulation
from kraftsim.testing import properties
from kraftsim.versions import default_catalog


def test_a_node_added_while_cut_off_is_not_held_to_a_level_it_has_not_learned(tmp_path: Path) -> None:
    catalog = default_catalog()
    sim = Simulation.create(tmp_path / "cluster", controllers=3, brokers=2, release="3.8.1", seed=0)
    try:
        sim.partition([[1, 2, 3]])
        try:
            new = sim.add_node("controller", "3.7.2")
        except KraftsimError:  # "not stable": it cannot reach the quorum
            new = max(n.id for n in sim.nodes())
        node = {n.id: n for n in sim.nodes()}[new]
        assert sim.metadata_version() == 20 and node.state == "running"
        assert 20 not in range(*catalog.at_release("3.7.2").supported_features()["metadata.version"])
        assert properties.unsupported_finalized(sim, catalog) is None
        sim.heal()
        try:
            sim.run(30_000)
        except KraftsimError:
            pass
        node = {n.id: n for n in sim.nodes()}[new]
        assert node.state != "running"  # it fetched metadata.version 20, which 3.7.2 cannot apply
        assert properties.unsupported_finalized(sim, catalog) is None
    finally:
        sim.close()
