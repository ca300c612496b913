"""The per-message and per-operation shortcuts give what the long way gives.

The engine's dispatch drops a message whose ends are partitioned when it lands (the network
hands it over directly), quorum-state's bytes are made once per distinct state, a message's
default fields are its own, and an operation changes the collector's threshold once.
"""

from __future__ import annotations

import gc

from hypothesis import given, settings
from hypothesis import strategies as st

from kraftsim.sim import Simulation
from kraftsim.sim.engine.events import Message
from kraftsim.sim.node.format import clock_text
from kraftsim.sim.node.voters import quorum_state, quorum_state_bytes
from tests.sim.sim_helpers import scratch


def _probe_drops(partition_before_arrival: bool) -> list[dict]:
    """Send a probe from node 1 to node 2 while they reach each other; partition node 1 away
    before it lands (or not); the drops of the probe the timeline shows."""
    with scratch() as base:
        sim = Simulation.create(base / "p", controllers=3, brokers=0, release="4.1", seed=3, durable=False)
        events: list = []
        sim.subscribe(events.append)
        e = sim.engine
        e.net.send(Message(1, 2, "probe", e.members[1].epoch))
        if partition_before_arrival:
            e.net.partition([[1]])
        e.run_until(e.now + 200)
        sim.close()
    return [x.details for x in events if x.kind == "drop" and x.details.get("message") == "probe"]


def test_a_message_that_lands_across_a_partition_is_dropped_by_the_engine() -> None:
    """The network hands a landing message to the engine's dispatch directly; the dispatch
    drops it, naming the partition, when its ends no longer reach each other."""
    drops = _probe_drops(True)
    assert [(d["to"], d["why"]) for d in drops] == [(2, "partitioned")]
    assert _probe_drops(False) == []


def test_a_message_default_data_is_its_own() -> None:
    a, b = Message(1, 2, "x", 0), Message(1, 2, "x", 0)
    a.data["k"] = 1
    assert b.data == {} and Message(1, 2, "x", 0).data == {}


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2), st.one_of(st.none(), st.integers(0, 9)), st.integers(0, 50),
       st.one_of(st.none(), st.integers(0, 9)), st.lists(st.integers(1, 9), min_size=1, max_size=5, unique=True))
def test_quorum_state_bytes_are_the_writers_bytes(kraft_version: int, leader: int | None, epoch: int,
                                                  voted: int | None, voters: list[int]) -> None:
    """Made or remembered, the bytes are those of write_quorum_state for that very state (the
    examples share one memory, so a key that left out a field would answer another state's)."""
    vs = tuple(sorted(voters))
    fresh = quorum_state(kraft_version, leader=leader, epoch=epoch, voted=voted, voters=vs).text().encode("utf-8")
    assert quorum_state_bytes(kraft_version, leader, epoch, voted, vs) == fresh
    assert quorum_state_bytes(kraft_version, leader, epoch, voted, vs) == fresh


def test_quorum_state_bytes_tell_every_field_apart() -> None:
    base = dict(kraft_version=0, leader=1, epoch=4, voted=2, voters=(1, 2, 3))
    variants = [base, {**base, "leader": None}, {**base, "leader": 3}, {**base, "epoch": 5}, {**base, "voted": None},
                {**base, "voters": (1, 2, 3, 4)}, {**base, "kraft_version": 1}]
    got = [quorum_state_bytes(v["kraft_version"], v["leader"], v["epoch"], v["voted"], v["voters"]) for v in variants]
    assert len(set(got)) == len(variants)
    for v, b in zip(variants, got):
        assert b == quorum_state(v["kraft_version"], leader=v["leader"], epoch=v["epoch"], voted=v["voted"],
                                 voters=v["voters"]).text().encode("utf-8")


def test_an_operation_changes_the_collector_threshold_once(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Simulation.run raises the young threshold for its events and its deep invariants as a
    whole, and puts it back after: two changes, not one pair per part."""
    import kraftsim.gcpause as collector

    calls: list[tuple[int, ...]] = []
    real = gc.set_threshold

    def counting(*t: int) -> None:
        calls.append(t)
        real(*t)

    saved = gc.get_threshold()
    with scratch() as base:
        sim = Simulation.create(base / "g", controllers=3, brokers=1, release="4.1", seed=1, durable=False)
        try:
            gc.set_threshold(700, *saved[1:])
            monkeypatch.setattr(collector.gc, "set_threshold", counting)
            sim.run(2_000)
            assert calls == [(collector.YOUNG, max(saved[1], collector.MIDDLE), *saved[2:]), (700, *saved[1:])]
        finally:
            monkeypatch.undo()
            gc.set_threshold(*saved)
            sim.close()


def test_the_running_event_is_named_by_its_number_label_node_and_time() -> None:
    """Both event loops keep the running event's heap entry and number for the invariants'
    texts: an event is named as the one it is, in the loop with a stop test and without."""
    with scratch() as base:
        sim = Simulation.create(base / "n", controllers=3, brokers=1, release="4.1", seed=4, durable=False)
        e = sim.engine
        for stop in (None, lambda: False):
            t = e.now + 1_234
            seen: list[str] = []
            e.sched.at(t, "probe", 7, lambda: seen.append(e.current_event))
            e.run_until(t, stop)
            assert seen == [f"event #{e.events_run} (probe on node 7 at {clock_text(t)})"]  # as every command prints time
        sim.close()


def _catch_up_states(base, name: str) -> tuple[list[tuple], list[str]]:  # type: ignore[no-untyped-def]
    """After every operation of a run with restarts: each running node's loader as the
    invariants and publishers see it; and the timeline."""
    from kraftsim.image import image_digest
    from kraftsim.sim import SimConfig

    sim = Simulation.create(base / name, controllers=3, brokers=3, release="4.1", seed=6, durable=False,
                            config=SimConfig(message_loss=0.02))
    lines: list[str] = []
    sim.subscribe(lambda e: lines.append(repr(e)))
    states: list[tuple] = []

    def look() -> None:
        for m in sim.engine.ordered():
            ld = m.node.loader if m.node is not None else None
            if ld is not None:
                states.append((m.id, ld.publishes, ld.publish_count, ld.last_offset, ld.kraft_version,
                               ld.has_seen_record, image_digest(ld.image), ld.image.provenance))

    sim.create_topics(10, 3)
    for k in range(6):
        victim = sim.leader() if k % 2 == 0 else 4 + k % 3
        sim.crash([victim])
        sim.run(3_000)
        sim.start([victim])
        look()
        sim.run(4_000)
        look()
    sim.close()
    return states, lines


def test_catch_up_adoptions_held_back_leave_what_adopting_each_leaves(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A restarted node adopts the commits it catches up on; those that publish nothing are
    held back until the next one (SimNode._adopt_unparsed). Adopting every one at once
    instead gives the same loaders after every operation and the same timeline; and the
    held-back path was taken."""
    from kraftsim.image.loader.metadata_loader import MetadataLoader

    superseded = [0]
    real = MetadataLoader.adopt_superseded

    def counted(self) -> None:  # type: ignore[no-untyped-def]
        superseded[0] += 1
        real(self)

    monkeypatch.setattr(MetadataLoader, "adopt_superseded", counted)
    with scratch() as base:
        held = _catch_up_states(base, "held")
        assert superseded[0] > 0
        monkeypatch.setattr(MetadataLoader, "publishes_nothing_at", lambda self, offset: False)
        each = _catch_up_states(base, "each")
    assert held == each


def test_an_unforced_state_file_write_is_atomic_writes() -> None:
    """write_if_changed without fsync leaves what atomic_write leaves (bytes, mode, no
    temporary, a leftover temporary replaced), and fails with its text."""
    import os

    import pytest

    from kraftsim.errors import KraftsimError
    from kraftsim.sim.node.state_files import write_if_changed
    from kraftsim.storage.fileio import atomic_write

    with scratch() as base:
        for data in (b"", b"x", b'{"leaderId":1}' * 300):
            a, b = base / "a", base / "b"
            (base / "b.tmp").write_bytes(b"stale")
            atomic_write(a, data, fsync=False)
            write_if_changed(b, data, fsync=False)
            assert b.read_bytes() == a.read_bytes() == data
            assert os.stat(b).st_mode == os.stat(a).st_mode
            assert sorted(p.name for p in base.iterdir()) == ["a", "b"]
        texts = []
        for write in (lambda p: atomic_write(p, b"x", fsync=False), lambda p: write_if_changed(p, b"x", fsync=False)):
            with pytest.raises(KraftsimError) as err:
                write(base / "missing" / "quorum-state")
            texts.append(str(err.value))
        assert texts[0] == texts[1]


def test_parked_fetches_answered_together_get_what_each_alone_gets() -> None:
    """Fetches answered at one moment share the list of batches found for their offset; each
    answer is the one the fetch would get on its own, whatever the offsets."""
    with scratch() as base:
        sim = Simulation.create(base / "s", controllers=3, brokers=2, release="4.1", seed=8, durable=False)
        sim.create_topics(5, 3)
        sim.run(3_000)
        e = sim.engine
        leader = e.members[sim.leader()]
        ends = [x.last_offset + 1 for x in leader.node.log.active_segment.entries]
        offsets = [ends[-1], ends[-3], ends[-3], 0, ends[-2], ends[-1], ends[-2]]
        fetches = [Message(4 + k % 2, leader.id, "fetch", leader.epoch, {"offset": o, "last_epoch": 0, "voter": False})
                   for k, o in enumerate(offsets)]
        sent: list = []
        real = e.net.send
        e.net.send = sent.append  # type: ignore[method-assign]
        try:
            for f in fetches:
                e.fetcher.serve_fetch(leader, f)
            alone = [[b.raw for b in x.data["batches"]] for x in sent]
            sent.clear()
            served: dict = {}
            for f in fetches:
                e.fetcher.serve_fetch(leader, f, served)
            together = [[b.raw for b in x.data["batches"]] for x in sent]
        finally:
            e.net.send = real  # type: ignore[method-assign]
        sim.close()
    assert together == alone and len({len(x) for x in alone}) >= 3
