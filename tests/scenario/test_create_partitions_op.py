"""The `create-partitions` op (kafka-topics --alter --partitions) on a simulated cluster: a
topic ends with the largest count asked that was an increase, every other request is refused
with Kafka's text and changes nothing, every node agrees, and the invariants hold."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftsim.sim import SimError, Simulation


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=st.integers(1, 4), counts=st.lists(st.integers(1, 9), min_size=1, max_size=5))
def test_a_topic_grows_to_each_increase_and_refuses_the_rest(tmp_path_factory, first: int, counts: list[int]) -> None:
    directory = Path(tmp_path_factory.mktemp("grow")) / "c"
    with Simulation.create(directory, controllers=1, brokers=3, release="3.9", seed=2) as sim:
        sim.create_topics(1, first, 2, names=["t"])
        have = first
        for count in counts:
            try:
                sim.create_partitions(["t"], count)
            except SimError as e:
                assert count <= have
                assert str(e) == (f"Topic already has {have} partition(s)." if count == have else
                                  f"The topic t currently has {have} partition(s); {count} would not be an increase.")
            else:
                assert count > have
                have = count
        sim.wait(30_000)
        for node in sim.nodes():
            topic = sim.image(node.id).topics.get_topic_by_name("t")
            assert sorted(i for i, _ in topic.sorted_partitions()) == list(range(have))
            assert {len(p.replicas) for _, p in topic.sorted_partitions()} == {2}
        assert all(r.ok for r in sim.invariants()), [r for r in sim.invariants() if not r.ok]
