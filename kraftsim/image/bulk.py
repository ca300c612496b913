"""The fast path of MetadataDelta.replay_all, for snapshot loads and other long runs of records.

Why: a snapshot of 1,000,000 partitions is 1,000,000 PartitionRecords and 100,000
TopicRecords. Through `replay()` each PartitionRecord costs about ten Python calls
(dispatch table, component property, topic lookup, conversion, interning); here it costs
one loop iteration: the record goes straight into its topic's dict of changed partitions
(kept while consecutive records name the same topic, as a snapshot's do), and the common
shape of a registration is built inline (interned replica and ISR tuples, directories
given or MIGRATING, no reassignment, no ELR). Anything else, including every case that
raises, goes through `registration_from_record` or `replay()`, the one definition of the
semantics; tests/image/test_bulk_replay.py checks that both paths give equal images on
random record lists.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Protocol

from kraftsim.errors import KraftsimError
from kraftsim.image import intern
from kraftsim.image.components.partition import (
    MIGRATING_BY_COUNT, RECOVERED, RECOVERING, PartitionRegistration, registration_from_record,
)
from kraftsim.image.components.topics import TopicsDelta

ErrorHandler = Callable[[Any, KraftsimError], None]


class Replayable(Protocol):
    """What this fast path needs of a MetadataDelta (delta.py imports this module, not the reverse)."""

    records_replayed: int

    @property
    def topics(self) -> TopicsDelta: ...

    def replay(self, record: Any) -> object: ...


def replay_records(delta: Replayable, records: Iterable[Any], on_error: ErrorHandler | None) -> None:
    """Replay `records` into `delta`, in order, as `delta.replay` would (see the module doc)."""
    topics: TopicsDelta | None = None  # the TopicsDelta, once a topic or partition record is seen
    partition_type = topic_type = None  # the RecordTypes, once seen (records may mix registries)
    last_topic: object = None  # the topic id whose dict `changes` is; None: look it up
    changes: dict[int, PartitionRegistration] = {}
    done = 0
    slow = registration_from_record
    new = PartitionRegistration
    find_ints, find_uuids, migrating = intern.find_ints, intern.find_uuids, MIGRATING_BY_COUNT
    max_migrating = len(migrating)
    empty = intern.EMPTY
    try:
        for r in records:
            try:
                rt = r.record_type
                if rt is partition_type:
                    m = r.message
                    tid = m.topic_id
                    if tid is not last_topic and tid != last_topic:
                        changes = topics.partition_changes(m)  # type: ignore[union-attr]
                        last_topic = tid
                    # the common shape inline; anything else (or a first sight) the full conversion
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
                last_topic = None
                if rt is topic_type:
                    m = r.message
                    changes = topics.replay_topic(m)  # type: ignore[union-attr]
                    last_topic = m.topic_id
                    done += 1
                    continue
                name = rt.name
                if name == "PartitionRecord" or name == "TopicRecord":  # this one the slow way; later ones fast
                    topics = delta.topics
                    if name == "PartitionRecord":
                        partition_type = rt
                    else:
                        topic_type = rt
                delta.replay(r)
            except KraftsimError as e:
                if on_error is None:
                    raise
                on_error(r, e)
    finally:
        delta.records_replayed += done
