"""Voters that are down still count with what their disks hold: a fetch a voter sent before
it crashed may reach the leader and commit what the voter had flushed (Kafka's leader counts
the fetch offset, which a follower flushed before fetching). The invariant checks the
voter's disk, not whether its process runs, and still catches data a disk fault lost."""

from __future__ import annotations

from kraftsim.sim import SimEvent, Simulation
from tests.sim.sim_helpers import failed, scratch


def _crash_with_fetch_in_flight(base, *, wipe: bool) -> tuple[Simulation, list[SimEvent]]:
    """Three controllers and two brokers on 3.7; voter 1 stops, then voter 3 crashes 5 ms after
    it sent a fetch (the steps of the regression scenario committed-without-majority.toml)."""
    events: list[SimEvent] = []
    sim = Simulation.create(base / "c", controllers=3, brokers=2, release="3.7", seed=0, durable=False,
                            on_event=events.append)
    sim.stop([5])
    sim.stop([1])
    sim.run(10000)
    sim.stop([4])
    sim.run(36)
    sim.crash([3])
    if wipe:
        sim.disk_fault([3], "wipe")
    sim.run(100)
    return sim, events


def _commit_after_crash(events: list[SimEvent]) -> tuple[SimEvent, SimEvent]:
    crash = next(e for e in events if e.kind == "crash" and e.node == 3)
    commit = next(e for e in events[events.index(crash):] if e.kind == "commit" and e.node == 2)
    return crash, commit


def test_fetch_of_a_crashed_voter_commits_what_its_disk_holds() -> None:
    with scratch() as base:
        sim, events = _crash_with_fetch_in_flight(base, wipe=False)
        try:
            crash, commit = _commit_after_crash(events)
            assert crash.details["unflushed_offsets_lost"] == 0
            # the leader moved its high watermark to voter 3's durable end after voter 3 went down
            assert commit.details["high_watermark"] == crash.details["log_end_offset"]
            assert failed(sim) == []
        finally:
            sim.close()


def test_commit_on_data_a_wiped_voter_lost_breaks_the_invariant() -> None:
    with scratch() as base:
        sim, events = _crash_with_fetch_in_flight(base, wipe=True)
        try:
            crash, commit = _commit_after_crash(events)
            assert commit.details["high_watermark"] == crash.details["log_end_offset"]
            broken = {r.name: r.detail for r in failed(sim)}
            assert "ConsistentCommittedData" in broken
            assert "only voters [2] of [1, 2, 3] hold them" in broken["ConsistentCommittedData"]
        finally:
            sim.close()
