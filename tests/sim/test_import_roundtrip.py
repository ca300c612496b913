"""A property: importing a node's copy of a cluster kraftsim made gives back that cluster's
shape (ids, roles, voters, releases, finalized levels), whatever its mix of combined nodes,
controllers and brokers and its release; a cluster whose metadata cannot say its software
(only dedicated controllers before 3.7, which do not register) is refused until --release."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kraftsim.sim import Simulation
from kraftsim.sim.importing import ImportRefused, import_cluster
from kraftsim.sim.node.simnode import node_directory
from kraftsim.versions import release_name_key

RELEASES = ["3.5.2", "3.6.2", "3.7.2", "3.9.2", "4.1.2"]  # each line's newest patch: what an import infers


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(combined=st.integers(0, 2), controllers=st.integers(0, 2), brokers=st.integers(0, 2),
       release=st.sampled_from(RELEASES), source=st.integers(0, 5))
def test_import_gives_back_the_cluster_it_was_taken_from(combined: int, controllers: int, brokers: int,
                                                         release: str, source: int) -> None:
    if combined + controllers == 0:
        controllers = 1
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        with Simulation.create(base / "made", combined=combined, controllers=controllers, brokers=brokers,
                               release=release, seed=3, durable=False) as sim:
            shape = [(n.id, n.roles) for n in sim.nodes()]
            finalized = sim.finalized()
        src = node_directory(base / "made", 1 + source % len(shape))
        registers = combined + brokers > 0 or release_name_key(release) >= (3, 7, 0)
        if not registers:
            with pytest.raises(ImportRefused, match="--release"):
                import_cluster([src], base / "imported")
            return
        result = import_cluster([src], base / "imported")
        summary = result.summary()
        assert [(n["id"], tuple(n["roles"])) for n in summary["nodes"]] == shape
        assert summary["voters"] == [i for i, roles in shape if "controller" in roles]
        assert [n["release"] for n in summary["nodes"]] == [release] * len(shape)
        assert summary["finalized"] == finalized
