"""The fast path of MetadataDelta.replay_all, for snapshot loads and other long runs of records.

Why: a snapshot of 1,000,000 partitions is 1,000,000 PartitionRecords and 100,000
TopicRecords. Through `replay()` each PartitionRecord costs about ten Python calls
(dispatch table, component property, topic lookup, conversion, interning); here it costs
one loop iteration: the record goes straight into its topic's dict of changed partitions
(kept while consecutive records name the same topic, as a snapshot's do), and the common
shape of a registration is built inline (interned replica and ISR tuples, directories
given or MIGRATING, no reassignment, no ELR; in C where the extension is built,
`partition.fast_from_record`). Anything else, including every case that
raises, goes through `registration_from_record` or `replay()`, the one definition of the
semantics; tests/image/test_bulk_replay.py checks that both paths give equal images on
random record lists.

A commit is mostly PartitionChangeRecords (ISR and leader moves), and the loader hands
each run of plain records here too: a change record is merged straight into its topic's
dict of changed partitions (the topic's delta and its base partitions' ChunkMap layout kept
while consecutive records name it), two dict look-ups and one `PartitionRegistration.merge`
per record (its usual case in C: `partition.fast_merge`) instead of the five calls of `replay()`'s
way (tests/image/test_apply_fast_paths.py).

Where the C extension is built, each run of consecutive PartitionChangeRecords,
PartitionRecords and TopicRecords of those types is one C call (`fastpath.try_bulk_replay_run`): the same
steps per record, the topic switches calling back into TopicsDelta (but for a change
record's topic whose TopicDelta already keeps its `layout`, read in C); it hands back the
first record it does not finish (another type, a shape its builders decline, an error),
which this loop then replays, so every error and count is this loop's
(tests/image/test_bulk_replay_runs.py compares both).

A loader replaying a streamed snapshot hands over most PartitionRecords already built
(`entries.PrebuiltPartition`: the decoder read the bytes straight into the registration
`fast_from_record` would build); each goes into its topic's dict as it is, in the C run
or in this loop, its topic looked up as a PartitionRecord's
(tests/image/test_prebuilt_partitions.py).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Protocol

from kraftsim.errors import KraftsimError
from kraftsim.image import intern
from kraftsim.image.errors import MetadataReplayError
from kraftsim.image.components.partition import (
    MIGRATING_BY_COUNT, RECOVERED, RECOVERING, PartitionRegistration, fast_from_record, fast_merge,
    registration_from_record,
)
from kraftsim.image.components.topics import TopicsDelta
from kraftsim.image.pmap import CHUNK_BITS, CHUNK_MASK
from kraftsim.protocol.entries import PrebuiltPartition
from kraftsim.protocol.fastpath import try_bulk_replay_run

ErrorHandler = Callable[[Any, KraftsimError], None]


class Replayable(Protocol):
    """What this fast path needs of a MetadataDelta (delta.py imports this module, not the reverse)."""

    records_replayed: int

    @property
    def topics(self) -> TopicsDelta: ...

    def replay(self, record: Any) -> object: ...


def _no_shortcut(prev: PartitionRegistration, change: Any) -> None:
    """Without the C extension every change takes the release's merge (TopicsDelta.merge)."""
    return None


def replay_records(delta: Replayable, records: Iterable[Any], on_error: ErrorHandler | None, *,
                   skip_control: bool = False) -> None:
    """Replay `records` into `delta`, in order, as `delta.replay` would (see the module doc).

    `on_error(record, error)`: see MetadataDelta.replay_all; when it is called,
    `delta.records_replayed` counts every record replayed before the failed one.
    `skip_control`: leave control records out (a snapshot's header and footer) instead of
    refusing them."""
    topics: TopicsDelta | None = None  # the TopicsDelta, taken when a topic or partition record is first met
    # The RecordTypes of the fast paths, as last seen (records may mix registries: another
    # registry's type just takes the general path once, and is remembered from then on).
    partition_type, topic_type, change_type = _SEEN["PartitionRecord"], _SEEN["TopicRecord"], \
        _SEEN["PartitionChangeRecord"]
    last_topic: object = None  # the topic id whose dict `changes` is; None: look it up
    changes: dict[int, PartitionRegistration] = {}
    change_topic: object = None  # the topic id whose TopicDelta a PartitionChangeRecord went to last
    merged: dict[int, PartitionRegistration] = {}  # that TopicDelta's changes
    positions: Mapping[int, int] = {}  # and its base partitions' layout (ChunkMap.layout)
    chunks: tuple[tuple[PartitionRegistration, ...], ...] = ()
    chunk_bits, chunk_mask = CHUNK_BITS, CHUNK_MASK
    done = 0
    slow = registration_from_record
    new = PartitionRegistration
    merge = fast_merge if fast_merge is not None else _no_shortcut  # (None: the release's merge must run)
    from_record = fast_from_record
    find_ints, find_uuids, migrating = intern.find_ints, intern.find_uuids, MIGRATING_BY_COUNT
    max_migrating = len(migrating)
    empty = intern.EMPTY
    run = try_bulk_replay_run()  # (C: runs of change and partition records; None: this loop alone)
    state: list[Any] = []
    it = iter(records)
    prebuilt = PrebuiltPartition
    rt: Any
    if run is not None:
        def to_change(m: Any) -> tuple[Any, ...]:
            return delta.topics.change_layout(m)

        def to_partition(m: Any) -> dict[int, PartitionRegistration]:
            return delta.topics.partition_changes(m)

        def to_topic(m: Any) -> dict[int, PartitionRegistration]:
            return delta.topics.replay_topic(m)
    try:
        for r in it:
            if type(r) is prebuilt:  # (a PartitionRecord the decoder built: its registration goes in as it is)
                rt = prebuilt
            else:
                rt = r.record_type
            if run is not None:
                if rt is change_type or rt is partition_type or rt is topic_type or rt is prebuilt:  # the run in C, up to the record it left
                    if topics is None:
                        try:  # (the records of the run take it anyway; if they cannot, they fail in the callbacks)
                            topics = delta.topics
                        except KraftsimError:
                            pass
                    state[:] = change_topic, merged, positions, chunks, last_topic, changes, 0
                    try:
                        if topics is None:
                            r = run(r, it, state, change_type, partition_type, to_change, to_partition, _END,
                                    chunk_bits, topic_type, to_topic, None)
                        else:  # (the TopicsDelta's own methods: one Python call a topic, not three)
                            r = run(r, it, state, change_type, partition_type, topics.change_layout,
                                    topics.partition_changes, _END, chunk_bits, topic_type, topics.replay_topic,
                                    topics.changed)
                    finally:
                        change_topic, merged, positions, chunks, last_topic, changes, n = state
                        done += n
                    if r is _END:
                        break
                    rt = prebuilt if type(r) is prebuilt else r.record_type
            try:
                if rt is change_type:  # (a commit's usual record: one dict lookup and a merge)
                    m = r.message
                    tid = m.topic_id
                    if tid is not change_topic and tid != change_topic:
                        if topics is None:
                            topics = delta.topics
                        merged, positions, chunks = topics.change_layout(m)
                        change_topic = tid
                    pid = m.partition_id
                    prev = merged.get(pid)
                    if prev is None:  # (the base's partition, read in place: ChunkMap.get inlined)
                        i = positions.get(pid)
                        if i is None:
                            raise MetadataReplayError(f"Unable to find partition {tid}:{pid}")
                        prev = chunks[i >> chunk_bits][i & chunk_mask]
                    p = merge(prev, m)
                    merged[pid] = p if p is not None else delta.topics.merge(prev, m)
                    done += 1
                    continue
                if rt is partition_type or rt is prebuilt:
                    m = r if rt is prebuilt else r.message  # (a PrebuiltPartition names its topic as its record did)
                    tid = m.topic_id
                    if tid is not last_topic and tid != last_topic:
                        if topics is None:
                            topics = delta.topics
                        changes = topics.partition_changes(m)
                        last_topic = tid
                    if rt is prebuilt:  # (its registration goes in as it is)
                        changes[m.partition_id] = m.registration
                        done += 1
                        continue
                    if from_record is not None:  # (C: the common shape, else None: the full conversion)
                        p = from_record(m)
                        changes[m.partition_id] = p if p is not None else slow(m)
                        done += 1
                        continue
                    # (pure Python) the common shape inline; anything else the full conversion
                    reps, x, lrs = m.replicas, m.isr, m.leader_recovery_state
                    if (reps and x and (lrs == RECOVERED or lrs == RECOVERING)
                            and not (m.removing_replicas or m.adding_replicas
                                     or m.eligible_leader_replicas or m.last_known_elr)):
                        replicas = find_ints(tuple(reps))
                        isr = replicas if x == reps else find_ints(tuple(x))
                        d = m.directories
                        if d:
                            dirs = find_uuids(tuple(d)) if len(d) == len(reps) else None
                        else:
                            n = len(reps)
                            dirs = migrating[n] if n < max_migrating else None
                        if replicas and isr and dirs:
                            changes[m.partition_id] = new(replicas, dirs, isr, empty, empty, m.leader, lrs,
                                                          m.leader_epoch, m.partition_epoch, empty, empty)
                            done += 1
                            continue
                    changes[m.partition_id] = slow(m)
                    done += 1
                    continue
                last_topic = change_topic = None  # (any other record may start or remove a topic)
                if rt is topic_type:
                    m = r.message
                    if topics is None:
                        topics = delta.topics
                    changes = topics.replay_topic(m)
                    last_topic = m.topic_id
                    done += 1
                    continue
                if skip_control and r.control:
                    continue
                name = rt.name
                if name in _SEEN:  # this one the general way; later ones fast
                    _SEEN[name] = rt
                    if name == "PartitionRecord":
                        partition_type = rt
                    elif name == "TopicRecord":
                        topic_type = rt
                    else:
                        change_type = rt
                delta.replay(r)
            except KraftsimError as e:
                if on_error is None:
                    raise
                delta.records_replayed += done
                done = 0
                on_error(r, e)
    finally:
        delta.records_replayed += done


#: The record types replay_records replays without `delta.replay`: the last one seen of each name.
_SEEN: dict[str, Any] = {"PartitionRecord": None, "TopicRecord": None, "PartitionChangeRecord": None}
#: What the C run answers when the records are exhausted.
_END = object()
