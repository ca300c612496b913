"""Per-role raft state in the event engine: a role's state object exists exactly while the
role holds (LeaderState for the leader, ElectionState for a prospective or candidate voter,
FollowerState for a following voter), through elections, crashes, partitions and restarts;
a new leadership starts from a new LeaderState."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kraftsim.sim import Simulation
from kraftsim.sim.engine.events import Message
from kraftsim.sim.engine.member import CANDIDATE, FOLLOWER, LEADER, PROSPECTIVE, Member
from tests.sim.sim_helpers import scratch


def _role_state_problems(members: list[Member]) -> list[str]:
    out = []
    for m in members:
        has = (m.leading is not None, m.election is not None, m.following is not None)
        want = (m.role == LEADER, m.role in (PROSPECTIVE, CANDIDATE), m.role == FOLLOWER)
        if has != want:
            out.append(f"node {m.id} is {m.role} with (leading, election, following) present = {has}")
    return out


def _checked_after_every_message(sim: Simulation, seen: list[str], roles: set[str]) -> None:
    """Wrap the engine's dispatch table so that every member's role state is checked after
    each message is handled (timers change roles too; the next message sees that)."""
    engine = sim.engine

    def wrap(handler: Callable[[Member, Message], None]) -> Callable[[Member, Message], None]:
        def checked(m: Member, msg: Message) -> None:
            handler(m, msg)
            members = engine.ordered()
            roles.update(x.role for x in members)
            seen.extend(_role_state_problems(members))
        return checked

    engine.handlers = {kind: wrap(h) for kind, h in engine.handlers.items()}


@pytest.mark.parametrize("release", ["3.9.1", "4.1"])  # without and with pre-vote (KIP-996)
def test_a_role_state_exists_exactly_while_its_role_holds(release: str) -> None:
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=3, brokers=2, release=release, seed=7, durable=False)
        problems: list[str] = []
        roles: set[str] = set()
        _checked_after_every_message(sim, problems, roles)
        first = sim.leader()
        assert first is not None
        sim.crash([first])
        sim.wait(30_000)
        sim.start([first])
        second = sim.leader()
        assert second is not None
        sim.partition([[second]])
        sim.run(4_000)
        sim.heal()
        sim.wait(30_000)
        final = sim.engine.ordered()
        sim.close()
    assert problems == []
    assert _role_state_problems(final) == []
    assert {LEADER, FOLLOWER, CANDIDATE} <= roles  # (the elections above went through candidacy)
    if release == "4.1":
        assert PROSPECTIVE in roles


def test_a_new_leadership_starts_from_new_leader_state() -> None:
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=3, release="4.1", seed=3, durable=False)
        old = sim.engine.member(sim.leader() or -1)
        before = old.leading
        assert before is not None and before.matched
        sim.crash([old.id])
        assert old.leading is None and old.election is None and old.following is None
        sim.wait(30_000)
        sim.start([old.id])
        sim.wait(10_000)
        new = sim.engine.member(sim.leader() or -1)
        assert new.id != old.id
        assert new.leading is not None and new.leading is not before
        assert old.following is not None  # it restarted and follows the new leader
        # what DescribeQuorum shows of the old leader comes from the new leader's state
        assert new.fetched_at(old.id) >= 0 and new.replica_end(old.id) >= 0
        assert old.fetched_at(new.id) == -1 and old.replica_end(new.id) == -1  # a follower knows nothing of it
        sim.close()
