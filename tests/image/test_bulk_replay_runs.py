"""bulk.py's runs of PartitionChangeRecords, PartitionRecords and TopicRecords replayed in C
(`_speedups.br_replay_run`) give exactly what the Python loop gives: deltas, images,
layouts, errors (with the record each is reported for) and `records_replayed` counts, on
lists, on decoded entries and on one-pass iterators, with records of two registries mixed."""

from __future__ import annotations

import contextlib
from typing import Any, Iterable

import pytest
from hypothesis import given, settings, strategies as st

from kraftsim.errors import KraftsimError
from kraftsim.image import MetadataDelta, MetadataImage, PartitionRegistration, image_digest, intern
from kraftsim.image import bulk
from kraftsim.image.pmap import CHUNK_BITS, ChunkMap
from kraftsim.protocol import fastpath
from kraftsim.protocol.entries import Payload
from kraftsim.protocol.registry import Registry, builtin_schema_dir, iter_schema_files, load_schema_file
from tests.image.helpers import REGISTRY, rec, replay
from tests.image.test_apply_fast_paths import change_records, commit_records, wide_commit_records
from tests.image.test_bulk_replay import TOPIC_IDS, as_entries, record_lists

RUN = fastpath.try_bulk_replay_run()
pytestmark = pytest.mark.skipif(RUN is None, reason="the C fast path is off or not built")

#: A second registry: the same record names, other RecordType objects and message classes.
OTHER = Registry(load_schema_file(p) for p in iter_schema_files([builtin_schema_dir()]))


def in_other_registry(p: Payload) -> Payload:
    rt = OTHER[p.record_type.name]
    return Payload(rt, p.version, rt.new(**{f: getattr(p.message, f) for f in p.message.__struct_fields__}))


def run_replay(base: MetadataImage, records: Iterable[Any], skip_errors: bool) -> tuple[MetadataDelta, list]:
    d = MetadataDelta(base)
    errors: list = []
    if skip_errors:
        d.replay_all(records, on_error=lambda r, e: errors.append((r, type(e), str(e), d.records_replayed)))
    else:
        try:
            d.replay_all(records)
        except KraftsimError as e:
            errors.append((None, type(e), str(e), d.records_replayed))
    return d, errors


def check_c_equals_python(base: MetadataImage, records: list, skip_errors: bool, one_pass: bool) -> None:
    with fastpath.pure_python():
        assert fastpath.try_bulk_replay_run() is None
        dp, ep = run_replay(base, iter(records) if one_pass else records, skip_errors)
    dc, ec = run_replay(base, iter(records) if one_pass else records, skip_errors)
    assert len(ec) == len(ep)
    for (rc, *c), (rp, *p) in zip(ec, ep):
        assert rc is rp and c == p  # the same record reported, same error, same count
    assert dc.records_replayed == dp.records_replayed
    assert dict(dc.topics.changed.items()).keys() == dict(dp.topics.changed.items()).keys()
    for tid, td in dc.topics.changed.items():
        assert td.changes == dp.topics.changed[tid].changes
        assert list(td.changes) == list(dp.topics.changed[tid].changes)  # same insertion order
    ic, ip = dc.apply(), dp.apply()
    assert ic == ip and image_digest(ic) == image_digest(ip)
    assert list(ic.topics.by_id.items()) == list(ip.topics.by_id.items())


def mixed(records: list[Payload], flags: list[bool]) -> list[Payload]:
    return [in_other_registry(r) if f else r for r, f in zip(records, flags + [False] * len(records))]


@settings(max_examples=200, deadline=None)
@given(wide_commit_records(), st.lists(st.booleans(), max_size=80), st.booleans(), st.booleans(), st.booleans())
def test_change_runs_in_c_equal_the_python_loop(setup_and_changes, flags, skip_errors, one_pass, entries) -> None:
    """Changes to existing and missing partitions of wide base topics (many chunks), topics
    created and removed mid-run, records of another registry, changes the C merge declines."""
    setup, changes = setup_and_changes
    base = replay(setup)
    records = mixed(changes, flags)
    check_c_equals_python(base, as_entries(changes) if entries else records, skip_errors, one_pass)
    check_c_equals_python(MetadataImage(), setup + records, skip_errors, one_pass)


@settings(max_examples=200, deadline=None)
@given(commit_records() | record_lists(), st.lists(st.booleans(), max_size=60), st.booleans(), st.booleans(),
       st.booleans())
def test_partition_runs_in_c_equal_the_python_loop(recs, flags, on_base, skip_errors, one_pass) -> None:
    """PartitionRecords of every shape (the C builder declines the rare ones), mixed with
    change records, topic records, removals and records that fail."""
    base = replay([rec("TopicRecord", name="a", topic_id=TOPIC_IDS[0]),
                   rec("PartitionRecord", topic_id=TOPIC_IDS[0], partition_id=0, replicas=[1, 2], isr=[1],
                       leader=1, eligible_leader_replicas=[2])]) if on_base else MetadataImage()
    check_c_equals_python(base, mixed(recs, flags), skip_errors, one_pass)
    check_c_equals_python(base, as_entries(recs), skip_errors, one_pass)


@settings(max_examples=100, deadline=None)
@given(st.lists(change_records(), max_size=30))
def test_runs_of_any_change_records_on_a_full_base(changes) -> None:
    base = replay([rec("TopicRecord", name=n, topic_id=t) for n, t in zip("abc", TOPIC_IDS)]
                  + [rec("PartitionRecord", topic_id=t, partition_id=p, replicas=[1, 2, 3], isr=[1, 2, 3], leader=1)
                     for t in TOPIC_IDS for p in range(4)])
    for skip in (False, True):
        check_c_equals_python(base, changes, skip, False)


def wide_base(n: int = 40) -> MetadataImage:
    t = TOPIC_IDS[0]
    return replay([rec("TopicRecord", name="a", topic_id=t)]
                  + [rec("PartitionRecord", topic_id=t, partition_id=p, replicas=[1, 2, 3], isr=[1, 2, 3],
                         leader=1, leader_epoch=p, partition_epoch=3 * p) for p in reversed(range(n))])


def test_each_change_lands_on_its_own_partition() -> None:
    """The C run reads a base partition through its ChunkMap layout (partitions stored in
    reverse id order, over several chunks) and stores the merge under the record's id: a
    store into the wrong partition, or a merge of the wrong base, changes the epochs seen."""
    base = wide_base()
    t = TOPIC_IDS[0]
    intern.ints((1, 2))
    pids = [0, 39, 8, 7, 9, 31, 16, 17, 8]
    changes = [rec("PartitionChangeRecord", topic_id=t, partition_id=p, isr=[1, 2], leader=2).message for p in pids]
    d = MetadataDelta(base)
    state: list[Any] = [None, {}, {}, (), None, {}, 0]
    td = d.topics.change_target(changes[0])
    seen: list[Any] = []

    def to_change(m: Any) -> tuple[Any, ...]:
        seen.append(m.partition_id)
        return (td.changes, *ChunkMap.layout_of(td.image.partitions))

    records = [Payload(REGISTRY["PartitionChangeRecord"], 0, m) for m in changes]
    it = iter(records[1:])
    end = object()
    assert RUN is not None
    got = RUN(records[0], it, state, REGISTRY["PartitionChangeRecord"], REGISTRY["PartitionRecord"], to_change,
              lambda m: pytest.fail("no partition records here"), end, CHUNK_BITS, REGISTRY["TopicRecord"],
              lambda m: pytest.fail("no topic records here"))
    assert got is end and state[-1] == len(records) and seen == [0]  # (the target looked up once)
    parts = base.topics.get_topic(t).partitions
    for p in set(pids):
        k = pids.count(p)  # (each change bumps both epochs by one)
        assert td.changes[p] == PartitionRegistration(
            intern.ints((1, 2, 3)), intern.migrating(3), intern.ints((1, 2)), leader=2, leader_epoch=p + k,
            partition_epoch=3 * p + k)
        assert parts[p].leader_epoch == p  # (the base is untouched)
    assert sorted(td.changes) == sorted(set(pids))


def test_the_run_stops_at_the_record_it_does_not_finish() -> None:
    """It hands back the record it stopped at (another type, a missing partition, a merge the
    C declines) with the count of the records it replayed; the Python loop goes on from there."""
    base = wide_base(4)
    t = TOPIC_IDS[0]
    pcr = REGISTRY["PartitionChangeRecord"]
    ok = Payload(pcr, 0, pcr.new(topic_id=t, partition_id=1, leader=3))
    missing = Payload(pcr, 0, pcr.new(topic_id=t, partition_id=9, leader=3))
    declined = Payload(pcr, 0, pcr.new(topic_id=t, partition_id=1, replicas=[1, 2]))
    other = rec("NoOpRecord")
    d = MetadataDelta(base)
    td = d.topics.change_target(ok.message)

    def to_change(m: Any) -> tuple[Any, ...]:
        return (td.changes, *ChunkMap.layout_of(td.image.partitions))

    assert RUN is not None
    for stop in (missing, declined, other):
        state: list[Any] = [None, {}, {}, (), None, {}, 0]
        got = RUN(ok, iter([ok, stop, ok]), state, pcr, REGISTRY["PartitionRecord"], to_change, to_change,
                  bulk._END, CHUNK_BITS, REGISTRY["TopicRecord"], to_change)
        assert got is stop and state[-1] == 2 and state[0] == t and state[1] is td.changes


def test_an_error_of_the_record_source_mid_run_propagates_with_the_count() -> None:
    """A generator that fails after some change records: the error is the source's (not
    handed to on_error) and `records_replayed` counts the records the C run replayed."""
    base = wide_base(4)
    t = TOPIC_IDS[0]

    def source() -> Any:
        for p in (0, 1, 2):
            yield rec("PartitionChangeRecord", topic_id=t, partition_id=p, leader=3)
        raise KraftsimError("cannot read the next batch")

    counts = []
    for pure in (True, False):
        d = MetadataDelta(base)
        seen: list = []
        with fastpath.pure_python() if pure else contextlib.nullcontext():
            with pytest.raises(KraftsimError, match="cannot read"):
                d.replay_all(source(), on_error=lambda r, e: seen.append(e))
        assert seen == []
        counts.append((d.records_replayed, sorted(d.topics.changed[t].changes)))
    assert counts[0] == counts[1] == (3, [0, 1, 2])


def test_a_topic_record_mid_run_ends_the_cached_change_target() -> None:
    """A TopicRecord re-creating a topic between its change records: the later changes go to
    the new topic (or fail: it has no such partition yet), never to the old topic's dict."""
    t1, t2 = TOPIC_IDS[0], TOPIC_IDS[1]
    topic = lambda t, n="a": rec("TopicRecord", name=n, topic_id=t)  # noqa: E731
    part = lambda t, p=0: rec("PartitionRecord", topic_id=t, partition_id=p, replicas=[1, 2], isr=[1, 2],  # noqa: E731
                              leader=1)
    change = lambda t, p=0, leader=2: rec("PartitionChangeRecord", topic_id=t, partition_id=p,  # noqa: E731
                                          leader=leader)
    cases = [
        [topic(t1), part(t1), change(t1), topic(t1), change(t1)],
        [topic(t1), part(t1), change(t1), topic(t1), part(t1), change(t1, leader=1)],
        [topic(t1), part(t1), part(t1, 1), change(t1, 1), topic(t2, "b"), change(t1, 1), topic(t1), change(t1, 1)],
    ]
    for case in cases:
        for base in (MetadataImage(), replay([topic(t1), part(t1), part(t1, 1)])):
            for skip in (False, True):
                check_c_equals_python(base, case, skip, False)


def test_an_interrupt_in_a_callback_propagates_and_an_error_is_a_decline() -> None:
    """A KeyboardInterrupt raised while the run calls back into Python (Ctrl-C lands in the
    first bytecode after a long C stretch) propagates with the state written back; it is
    never taken for a decline and lost. An Exception there is a decline: the record comes
    back for the Python loop to replay and meet the error itself."""
    base = wide_base(4)
    t = TOPIC_IDS[0]
    pcr = REGISTRY["PartitionChangeRecord"]
    first = Payload(pcr, 0, pcr.new(topic_id=t, partition_id=1, leader=3))
    d = MetadataDelta(base)
    td = d.topics.change_target(first.message)
    assert RUN is not None

    def failing(error: BaseException) -> Any:
        def to_change(m: Any) -> tuple[Any, ...]:
            raise error
        return to_change

    state: list[Any] = [None, {}, {}, (), None, {}, 0]
    with pytest.raises(KeyboardInterrupt):
        RUN(first, iter([]), state, pcr, REGISTRY["PartitionRecord"], failing(KeyboardInterrupt()), None,
            bulk._END, CHUNK_BITS, REGISTRY["TopicRecord"], None)
    assert state == [None, {}, {}, (), None, {}, 0]
    got = RUN(first, iter([]), state, pcr, REGISTRY["PartitionRecord"], failing(ValueError("no")), None,
              bulk._END, CHUNK_BITS, REGISTRY["TopicRecord"], None)
    assert got is first and state[-1] == 0 and td.changes == {}


def test_a_topic_met_again_takes_the_layout_its_delta_keeps(monkeypatch: pytest.MonkeyPatch) -> None:
    """The C run asks TopicsDelta.change_layout once per topic of a delta, however many batches
    (replay_all calls) switch back to it; a topic re-created in between is asked afresh."""
    from kraftsim.image.components.topics import TopicsDelta
    from tests.image.test_bulk_replay import FULL_BASE, NAMES

    asked: list[Any] = []
    real = TopicsDelta.change_layout

    def counted(self: TopicsDelta, r: Any) -> Any:
        asked.append(r.topic_id)
        return real(self, r)

    monkeypatch.setattr(TopicsDelta, "change_layout", counted)
    t1, t2 = TOPIC_IDS[0], TOPIC_IDS[1]
    change = lambda t, p: rec("PartitionChangeRecord", topic_id=t, partition_id=p, leader=2)  # noqa: E731
    batches = [[change(t1, 0), change(t2, 0)], [change(t1, 1), change(t2, 1), change(t1, 2)],
               [rec("TopicRecord", name=NAMES[0], topic_id=t1),
                rec("PartitionRecord", topic_id=t1, partition_id=0, replicas=[1, 2], isr=[1, 2], leader=1),
                change(t2, 2), change(t1, 0)]]
    bulk.replay_records(MetadataDelta(FULL_BASE), [change(t1, 3)], None)  # (record types seen: the rest in C)
    asked.clear()
    d = MetadataDelta(FULL_BASE)
    for b in batches:
        d.replay_all(b)
    assert asked == [t1, t2, t1]
    slow = MetadataDelta(FULL_BASE)
    for r in (r for b in batches for r in b):
        slow.replay(r)
    assert d.apply() == slow.apply()
