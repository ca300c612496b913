"""TopicsImage.write: each topic's TopicRecord followed by its PartitionRecords, topics in
the order Kafka's topics map holds them. The hot loop of a large snapshot: one record per
partition, built positionally and with shared lists where the caller only reads them."""

from __future__ import annotations

from typing import Any, Callable, Iterator

from kraftsim.image.components.partition import MIGRATING_BY_COUNT
from kraftsim.image.components.topics import TopicImage, TopicsImage
from kraftsim.image.intern import MIGRATING
from kraftsim.image.writer.kafka_order import topic_order
from kraftsim.image.writer.loss import PARTITION_ELR, PARTITION_ELR_DISABLED, REPLICA_DIRECTORIES
from kraftsim.image.writer.target import WriteTarget
from kraftsim.protocol.entries import Payload
from kraftsim.protocol.primitives import Uuid

#: Leading fields of TopicRecord and PartitionRecord, in schema order (see positional_constructor).
TOPIC_RECORD_FIELDS = ("name", "topic_id")
PARTITION_RECORD_FIELDS = ("partition_id", "topic_id", "replicas", "isr", "removing_replicas", "adding_replicas",
                           "leader", "leader_recovery_state", "leader_epoch", "partition_epoch", "directories")


def positional_constructor(cls: Any, fields: tuple[str, ...]) -> Callable[..., Any]:
    """A function building `cls` from values of `fields`, in that order.

    It is `cls` itself when its fields begin with `fields`: a msgspec Struct is built about
    twice as fast from positional arguments as from keywords, which matters once per
    partition. A record class laid out otherwise (a user catalog's schema) gets keywords.
    """
    if tuple(getattr(cls, "__struct_fields__", ())[:len(fields)]) == fields:
        return cls  # type: ignore[no-any-return]

    def by_name(*values: object) -> object:
        return cls(**dict(zip(fields, values)))

    return by_name


class SharedLists(dict[tuple[int, ...], list[int]]):
    """tuple -> one list equal to it, made on first use (the read_only mode of write_image)."""

    def __missing__(self, key: tuple[int, ...]) -> list[int]:
        value = self[key] = list(key)
        return value


def all_migrating(directories: tuple[Uuid, ...]) -> bool:
    """Every directory is MIGRATING (what a record without directories says).

    The interned MIGRATING tuples are recognised by identity, without a loop."""
    n = len(directories)
    if n < len(MIGRATING_BY_COUNT) and directories is MIGRATING_BY_COUNT[n]:
        return True
    return all(d == MIGRATING for d in directories)


def _topic_id(t: TopicImage) -> Uuid:
    return t.id


def write(topics: TopicsImage, target: WriteTarget) -> Iterator[Payload]:
    if not topics.by_id:
        return
    tr, trv = target.record("TopicRecord")
    pr, prv = target.record("PartitionRecord")
    dirs_ok, elr_fits = target.holds(REPLICA_DIRECTORIES), target.holds(PARTITION_ELR)
    topic_record = positional_constructor(tr.cls, TOPIC_RECORD_FIELDS)
    partition_record = positional_constructor(pr.cls, PARTITION_RECORD_FIELDS)
    new_tuple = tuple.__new__  # Payload(...) without its Python-level __new__: one call less per record
    as_list: Callable[[tuple[Any, ...]], list[Any]] = SharedLists().__getitem__ if target.read_only else list
    lose, elr_on = target.lose, target.elr_on
    for t in topic_order(list(topics.sorted_topics()), _topic_id, target.line.topics_map):
        tid = t.id
        yield new_tuple(Payload, (tr, trv, topic_record(t.name, tid)))
        for pid, p in t.sorted_partitions():
            if dirs_ok:
                directories = as_list(p.directories)
            else:
                directories = []
                if not all_migrating(p.directories):
                    lose(REPLICA_DIRECTORIES, f"topic {t.name} partition {pid}", ("topics", tid, pid, "directories"))
            m = partition_record(pid, tid, as_list(p.replicas), as_list(p.isr), as_list(p.removing_replicas),
                                 as_list(p.adding_replicas), p.leader, p.leader_recovery_state, p.leader_epoch,
                                 p.partition_epoch, directories)
            if p.elr or p.last_known_elr:
                where = f"topic {t.name} partition {pid}"
                if not elr_on:
                    lose(PARTITION_ELR_DISABLED, where, ("topics", tid, pid, "elr"))
                elif not elr_fits:
                    lose(PARTITION_ELR, where, ("topics", tid, pid, "elr"))
                else:  # written only when non-empty
                    if p.elr:
                        m.eligible_leader_replicas = list(p.elr)
                    if p.last_known_elr:
                        m.last_known_elr = list(p.last_known_elr)
            yield new_tuple(Payload, (pr, prv, m))
