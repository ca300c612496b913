"""A recording's `[cluster]` counts the nodes `cluster create` made (`created_nodes`) by the
layout `cluster create` gives them (`created_roles`): whatever was added later is left to
`add-node` steps, never counted into the shape."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, strategies as st

from kraftsim.sim import BROKER, CONTROLLER, Simulation, created_roles
from kraftsim.wire.recording import created_nodes

KINDS = ((BROKER, CONTROLLER), (CONTROLLER,), (BROKER,))


@dataclass(frozen=True)
class _Node:
    id: int
    roles: tuple[str, ...]


@dataclass
class _Cluster:
    """What `created_nodes` reads of a simulation: its nodes."""

    listed: list[_Node]

    def nodes(self) -> list[_Node]:
        return self.listed


@given(combined=st.integers(0, 3), controllers=st.integers(0, 3), brokers=st.integers(0, 4),
       added=st.lists(st.sampled_from(KINDS), max_size=4))
def test_the_created_nodes_are_told_apart_from_those_added_later(combined, controllers, brokers, added):
    made = created_roles(combined=combined, controllers=controllers, brokers=brokers)
    nodes = [_Node(i, roles) for i, roles in made.items()]
    next_id = len(nodes) + 1
    for roles in added:
        nodes.append(_Node(next_id, roles))
        next_id += 1
    found = created_nodes(_Cluster(nodes))  # type: ignore[arg-type]
    # every created node is found; an added node is counted only where cluster create would
    # have made it too (a broker added after the brokers reads as one more created broker)
    assert found[:len(made)] == nodes[:len(made)]
    shape = created_roles(combined=sum(n.roles == KINDS[0] for n in found),
                          controllers=sum(n.roles == KINDS[1] for n in found),
                          brokers=sum(n.roles == KINDS[2] for n in found))
    assert shape == {n.id: n.roles for n in found}
    rest = nodes[len(found):]
    assert not rest or shape != {n.id: n.roles for n in found + rest[:1]}


def test_cluster_create_numbers_its_nodes_by_the_layout(tmp_path):
    with Simulation.create(tmp_path / "c", combined=1, controllers=2, brokers=2, release="3.9.0",
                           durable=False) as sim:
        assert {n.id: n.roles for n in sim.nodes()} == created_roles(combined=1, controllers=2, brokers=2)
        assert {n.id: n.roles for n in sim.nodes()} == {1: (BROKER, CONTROLLER), 2: (CONTROLLER,),
                                                        3: (CONTROLLER,), 4: (BROKER,), 5: (BROKER,)}
