"""A partition reassignment carried through the simulation as in Kafka: the controller writes
the union with adding and removing replicas, the new replicas fetch from the leader, the
leader's AlterPartition adds them to its ISR one at a time, and the controller then completes
the reassignment (replicas = the target, the removed replicas out of the ISR, a new leader when
the old one was removed). A cancel goes back to the original replicas. Every node agrees and
the invariants hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.sim import ReassignTarget, Simulation, reassign_partitions
from tests.image.helpers import read_entries


def _partition(sim: Simulation, pid: int = 0, node: int | None = None):
    topic = sim.image(node if node is not None else sim.leader()).topics.get_topic_by_name("t")
    return topic.partitions[pid]


def _changes(directory: Path) -> list[dict]:
    """The data of every PartitionChangeRecord of partition 0 that changes its replicas or ISR."""
    out = []
    for segment in sorted((directory / "node-1" / "__cluster_metadata-0").glob("*.log")):
        for entry in read_entries(segment):
            m = entry.message
            if entry.record_type.name == "PartitionChangeRecord" and (m.isr is not None or m.replicas is not None):
                out.append(entry.to_json()["data"])
    return out


@pytest.mark.parametrize("release", ["3.9", "4.4"])
def test_a_reassignment_completes_once_the_new_replicas_are_in_sync(tmp_path: Path, release: str) -> None:
    with Simulation.create(tmp_path / "c", controllers=1, brokers=6, release=release, seed=7) as sim:
        sim.create_topics(1, 1, 3, names=["t"])
        before = _partition(sim)
        target = tuple(b for b in range(2, 8) if b not in before.replicas)
        out = reassign_partitions(sim, [ReassignTarget("t", 0, target)])
        assert out.failure is None and out.lines == ["Successfully started partition reassignment for t-0"]
        sim.wait(60_000)
        p = _partition(sim)
        assert (p.replicas, set(p.isr), p.adding_replicas, p.removing_replicas) == (target, set(target), (), ())
        assert p.leader in target
        assert all(_partition(sim, 0, n) == p for n in range(2, 8))
        assert all(r.ok for r in sim.invariants())
    changes = _changes(tmp_path / "c")
    start = next(c for c in changes if c.get("addingReplicas"))
    assert start["replicas"] == [*target, *sorted(before.replicas)]
    assert start["addingReplicas"] == sorted(target) and start["removingReplicas"] == sorted(before.replicas)
    done = changes[-1]
    assert done["replicas"] == list(target) and done["addingReplicas"] == [] and done["removingReplicas"] == []
    assert done["leader"] in target
    grown = [c["isr"] for c in changes[changes.index(start) + 1:-1] if "isr" in c]
    assert [len(isr) for isr in grown] == [4, 5]  # the leader adds one new replica per AlterPartition


def test_a_cancel_goes_back_to_the_original_replicas(tmp_path: Path) -> None:
    with Simulation.create(tmp_path / "c", controllers=1, brokers=4, release="4.4", seed=3) as sim:
        sim.create_topics(1, 1, 3, names=["t"])
        before = _partition(sim)
        new = next(b for b in range(2, 6) if b not in before.replicas)
        sim.stop(new)  # the new replica cannot catch up: the reassignment stays in progress
        target = (new, *before.replicas[1:])
        out = reassign_partitions(sim, [ReassignTarget("t", 0, target)])
        assert out.failure is None
        sim.run(5_000)
        p = _partition(sim)
        assert p.adding_replicas == (new,) and p.removing_replicas == (before.replicas[0],)
        out = reassign_partitions(sim, [ReassignTarget("t", 0, None)])
        assert out.failure is None and out.lines == ["Successfully cancelled partition reassignment for: t-0"]
        sim.run(5_000)
        p = _partition(sim)
        assert sorted(p.replicas) == sorted(before.replicas) and not p.adding_replicas and not p.removing_replicas
        assert set(p.isr) == set(before.replicas)
        out = reassign_partitions(sim, [ReassignTarget("t", 0, None)])
        assert out.failure == ("Error cancelling partition reassignment for:\n"
                               "t-0: No partition reassignment is in progress.")
        assert all(r.ok for r in sim.invariants())


def test_a_refused_plan_says_why_per_partition(tmp_path: Path) -> None:
    with Simulation.create(tmp_path / "c", controllers=1, brokers=3, release="4.4", seed=1) as sim:
        sim.create_topics(1, 1, 3, names=["t"])
        out = reassign_partitions(sim, [ReassignTarget("t", 0, (2, 9)), ReassignTarget("u", 0, (2,))])
        assert out.lines == [] and out.failure == (
            "Error reassigning partition(s):\n"
            "t-0: The manual partition assignment includes broker 9, but no such broker is registered.\n"
            "u-0: Unable to find a topic named u.")
