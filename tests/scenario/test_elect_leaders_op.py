"""The `elect-leaders` op (kafka-leader-election) on a simulated cluster: after any crashes and
restarts, an unclean election gives every partition with a live replica a leader from among
them, a preferred election answers each partition as Kafka's controller does, every node
agrees, and the invariants hold; the step's lines and failures are the tool's."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftsim.scenario.runner import run_scenario
from kraftsim.scenario.validate import ScenarioInvalid, parse_scenario
from kraftsim.sim import Simulation, leader_election

BROKERS = (2, 3, 4)


def _partitions(sim: Simulation, node: int | None = None) -> dict[int, tuple[int, tuple[int, ...], tuple[int, ...]]]:
    topic = sim.image(node if node is not None else sim.leader()).topics.get_topic_by_name("t")
    return {i: (p.leader, tuple(p.replicas), tuple(p.isr)) for i, p in topic.sorted_partitions()}


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(crashed=st.permutations(BROKERS).flatmap(lambda order: st.tuples(st.just(order), st.integers(1, 3))),
       back=st.sets(st.sampled_from(BROKERS)))
def test_an_unclean_election_leads_every_partition_that_has_a_live_replica(
        tmp_path_factory, crashed: tuple[tuple[int, ...], int], back: set[int]) -> None:
    order, count = crashed
    down = order[:count]
    directory = Path(tmp_path_factory.mktemp("elect")) / "c"
    with Simulation.create(directory, controllers=1, brokers=3, release="3.9", seed=4) as sim:
        sim.create_topics(1, 6, 2, names=["t"])
        for node in down:  # one at a time: each loses its leaderships while the others can take them
            sim.crash(node)
            sim.run(20_000)
        returning = sorted(back & set(down))
        if returning:
            sim.start(returning)
        sim.run(20_000)
        live = (set(BROKERS) - set(down)) | set(returning)
        before = _partitions(sim)
        out = leader_election(sim, "unclean")
        after = _partitions(sim)
        leaderless = {i for i, (leader, _, _) in before.items() if leader == -1}
        elected = {i for i in leaderless if set(before[i][1]) & live}
        hopeless = leaderless - elected  # every replica down: Kafka answers these, it leaves out only the led ones
        expected = [f"Successfully completed leader election (UNCLEAN) for partitions "
                    f"{', '.join(f't-{i}' for i in _hash_order(elected))}"] if elected else []
        expected += [f"Error completing leader election (UNCLEAN) for partition: t-{i}: org.apache.kafka.common.errors."
                     f"EligibleLeadersNotAvailableException: Eligible topic partition leaders are not available."
                     for i in _hash_order(hopeless)]
        assert out.lines == expected
        assert out.failure == (f"{len(hopeless)} replica(s) could not be elected" if hopeless else None)
        for i, (leader, replicas, isr) in after.items():
            if i in elected:
                assert leader in live and leader in replicas and isr == (leader,)
            else:
                assert after[i] == before[i]
        sim.wait(60_000)
        assert all(_partitions(sim, n) == _partitions(sim) for n in live)
        assert all(r.ok for r in sim.invariants()), [r for r in sim.invariants() if not r.ok]


def _hash_order(ids: set[int]) -> list[int]:
    """Partitions of topic "t" in the order of a Java HashSet of their TopicPartitions (small
    sets: by the bucket of 31 * (31 + id) + "t".hashCode())."""
    return sorted(ids, key=lambda i: ((31 * (31 + i) + ord("t")) ^ ((31 * (31 + i) + ord("t")) >> 16)) & 15)


def test_a_step_fails_with_the_tools_lines_and_expect_error_takes_them(tmp_path: Path) -> None:
    text = """
name = "elect"
[cluster]
controllers = 1
brokers = 2
release = "4.0"

[[step]]
op = "create-topics"
names = ["t"]
partitions = 2
replication_factor = 2

[[step]]
op = "elect-leaders"
partitions = { "t" = [1] }

[[step]]
op = "elect-leaders"
election_type = "unclean"
partitions = { "t" = [0], "u" = [3] }
expect_error = "Error completing leader election (UNCLEAN) for partition: u-3: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: No such topic as u"
"""
    result = run_scenario(parse_scenario(text, "elect.toml")).result
    assert all(s.ok for s in result.steps), [s for s in result.steps if not s.ok]
    assert result.steps[1].output == ["Valid replica already elected for partitions t-1"]


@pytest.mark.parametrize("release, passes", [("3.6.2", False), ("3.7.0", True), ("3.7.1", False)])
def test_a_failed_election_passes_where_the_releases_tool_exits_0(release: str, passes: bool) -> None:
    """On 3.7.0 the tool prints the partition it could not elect and exits 0 (KAFKA-16410): a
    script sees success, and so does the step, with the tool's lines as its output."""
    text = f"""
name = "elect"
[cluster]
controllers = 1
brokers = 2
release = "{release}"

[[step]]
op = "create-topics"
names = ["t"]
partitions = 1
replication_factor = 2

[[step]]
op = "elect-leaders"
partitions = {{ "t" = [5] }}
"""
    step = run_scenario(parse_scenario(text, "elect.toml")).result.steps[1]
    failed = ("Error completing leader election (PREFERRED) for partition: t-5: "
              "org.apache.kafka.common.errors.UnknownTopicOrPartitionException: No such partition as t-5")
    assert (step.ok, step.output, step.error) == ((True, [failed], None) if passes else (False, [], failed))


@pytest.mark.parametrize("partitions, expected", [
    ("{}", "expected at least one topic"),
    ("{ t = [] }", "expected at least one partition id"),
    ("{ t = [-1] }", "expected an integer >= 0"),
])
def test_bad_partitions_are_refused_before_anything_runs(partitions: str, expected: str) -> None:
    text = ("name = 'e'\n[cluster]\ncontrollers = 1\nbrokers = 1\nrelease = '4.0'\n"
            f"[[step]]\nop = 'elect-leaders'\npartitions = {partitions}\n")
    with pytest.raises(ScenarioInvalid, match=expected):
        parse_scenario(text, "e.toml")


def test_an_unknown_election_type_names_the_choices() -> None:
    text = ("name = 'e'\n[cluster]\ncontrollers = 1\nbrokers = 1\nrelease = '4.0'\n"
            "[[step]]\nop = 'elect-leaders'\nelection_type = 'random'\n")
    with pytest.raises(ScenarioInvalid, match="expected one of preferred, unclean"):
        parse_scenario(text, "e.toml")
