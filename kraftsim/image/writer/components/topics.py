"""TopicsImage.write: each topic's TopicRecord followed by its PartitionRecords, topics in
the order Kafka's topics map holds them. The hot loop of a large snapshot: one record per
partition, built positionally and with shared lists where the caller only reads them."""

from __future__ import annotations

from dataclasses import replace
from itertools import chain
from typing import Any, Callable, Iterable, Iterator, Mapping, NamedTuple

from kraftsim.image.components.partition import MIGRATING_BY_COUNT, PartitionRegistration
from kraftsim.image.components.topics import TopicImage, TopicsImage
from kraftsim.image.intern import MIGRATING
from kraftsim.image.pmap import ChunkMap
from kraftsim.image.writer.kafka_order import topic_order
from kraftsim.image.writer.loss import PARTITION_ELR, PARTITION_ELR_DISABLED, REPLICA_DIRECTORIES, Loss
from kraftsim.image.writer.target import WriteTarget
from kraftsim.protocol.batch_io import encode_values
from kraftsim.protocol.entries import Payload
from kraftsim.protocol.fastpath import try_changed_positions, try_partition_values, try_write_topics
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


class _Records:
    """What writing one topic's records at a target needs, resolved once per write."""

    def __init__(self, target: WriteTarget) -> None:
        self.target = target
        self.topic_type, self.topic_version = target.record("TopicRecord")
        self.partition_type, self.partition_version = target.record("PartitionRecord")
        self.dirs_ok, self.elr_fits = target.holds(REPLICA_DIRECTORIES), target.holds(PARTITION_ELR)
        self.topic_record = positional_constructor(self.topic_type.cls, TOPIC_RECORD_FIELDS)
        self.partition_record = positional_constructor(self.partition_type.cls, PARTITION_RECORD_FIELDS)
        self.as_list: Callable[[tuple[Any, ...]], list[Any]] = (SharedLists().__getitem__ if target.read_only
                                                                 else list)
        self.template: Payload | None = None  # a PartitionRecord for the C path to fill (see values)

    def signature(self) -> tuple[object, ...]:
        """Everything besides the topic and its partitions that decides their records' bytes."""
        t = self.target
        return (self.topic_type, self.topic_version, self.partition_type, self.partition_version, self.dirs_ok,
                self.elr_fits, t.elr_on)

    def topic(self, t: TopicImage) -> Payload:
        return Payload(self.topic_type, self.topic_version, self.topic_record(t.name, t.id))

    def partitions(self, t: TopicImage, items: Iterable[tuple[int, PartitionRegistration]]) -> Iterator[Payload]:
        """The PartitionRecords of `items` (partitions of `t`), reporting what the target cannot hold."""
        pr, prv, dirs_ok, elr_fits = self.partition_type, self.partition_version, self.dirs_ok, self.elr_fits
        partition_record, as_list = self.partition_record, self.as_list
        new_tuple = tuple.__new__  # Payload(...) without its Python-level __new__: one call less per record
        lose, elr_on = self.target.lose, self.target.elr_on
        tid = t.id
        for pid, p in items:
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

    def partition_template(self, t: TopicImage) -> Payload:
        """The PartitionRecord the C code fills for each partition it encodes (one per write)."""
        if self.template is None:
            self.template = Payload(self.partition_type, self.partition_version, self.partition_record(
                -1, t.id, [], [], [], [], -1, 0, -1, -1, []))
        return self.template

    def values(self, t: TopicImage, pids: list[int] | None, regs: list[PartitionRegistration],
               positions: list[int] | None = None) -> list[bytes]:
        """The framed values of `partitions(t, zip(pids, regs))` (`pids` None: 0..n-1), of
        those at `positions` only when given.

        In one C call when every partition is the usual case (no ELR, directories the
        target holds): it fills one record per partition and frames it, where the loop
        above builds a record and copies every tuple. Anything else (a loss to report, an
        odd value) gets the loop, the one definition of the records."""
        if regs:
            fast = try_partition_values(self.partition_template(t), t.id, pids, regs, positions, self.dirs_ok)
            if fast is not None:
                return fast
        at = range(len(regs)) if positions is None else positions
        return encode_values(list(self.partitions(t, [(i if pids is None else pids[i], regs[i]) for i in at])))


def _ordered(topics: TopicsImage, target: WriteTarget) -> list[TopicImage]:
    return topic_order(list(topics.sorted_topics()), _topic_id, target.line.topics_map)


def write(topics: TopicsImage, target: WriteTarget) -> Iterator[Payload]:
    if not topics.by_id:
        return
    records = _Records(target)
    for t in _ordered(topics, target):
        yield records.topic(t)
        yield from records.partitions(t, t.sorted_partitions())


#: A topic's registrations in record order: a list, or a dense ChunkMap's chunks (see _Written).
Registrations = list[PartitionRegistration] | tuple[tuple[PartitionRegistration, ...], ...]


class _Written(NamedTuple):
    """One topic as the last write encoded it: per partition (in record order) its id, its
    registration object and an equal one from another image (or the same), and the
    records' values, its TopicRecord's first.

    For a dense ChunkMap (`pids` None) the registrations are its chunks and the twins
    tuples cut as they are (a twins tuple is the chunk itself when it holds the same
    objects): the C path then passes over a chunk the new image shares with this one
    without a look inside, and keeping it takes no reference per partition (see
    _speedups.c tw_changed). Otherwise both are lists."""

    name: str
    partitions: Mapping[int, PartitionRegistration]
    pids: list[int] | None  # None: 0..n-1, in that order (a dense ChunkMap: no list to build or compare)
    registrations: Registrations
    twins: Registrations  # per partition, one equal to its registration (see changed_positions)
    values: list[bytes]  # the TopicRecord's value, then each PartitionRecord's


class TopicValues:
    """The encoded records of the topics of the last write, for the next write to reuse.

    Why: at a million partitions a node writes a snapshot after every broker event, and
    between two writes most partitions are the same registration object (images are
    persistent: an unchanged partition keeps its object). A record's bytes are a function
    of the registration's value, its topic and partition ids, and the target's record
    types, versions and ELR and directory rules (`signature`), so a partition whose
    registration is the one the last write saw at the same place takes the value written
    then: the same object (no look at it), or an equal one (nodes that loaded different
    snapshots hold equal registrations in different objects, and write in turn). Only the
    last write's topics are kept (what the new image no longer holds is dropped), so the
    values cost one image's records at most; a topic whose records reported a loss is not
    kept (its losses must be reported again). A cache serves one write at a time.
    """

    def __init__(self) -> None:
        self.signature: tuple[object, ...] | None = None
        self.topics: dict[Uuid, _Written] = {}
        #: The topics' order at the last write: (by-name map, topics map kind, topic ids).
        self.order: tuple[object, str, list[Uuid]] | None = None
        #: Partition records encoded and reused, over every write (what tests and benchmarks read).
        self.encoded = 0
        self.reused = 0

    def clear(self) -> None:
        self.signature, self.topics, self.order = None, {}, None


def _ordered_as_before(topics: TopicsImage, target: WriteTarget, cache: TopicValues) -> list[TopicImage]:
    """`_ordered`, from the order the cache kept when the topics' names and ids are those
    of the last write (the image's by-name map is the same object): the order is a
    function of the names and ids alone, and topics change far more often than they come
    and go."""
    key = (topics.by_name, target.line.topics_map)
    kept = cache.order
    if kept is not None and kept[0] is key[0] and kept[1] == key[1] and len(kept[2]) == len(topics.by_id):
        # (the kept ids are distinct and as many as the map's: found, they are all its topics)
        by_id = topics.by_id
        try:
            return [by_id[tid] for tid in kept[2]]
        except KeyError:
            pass
    ordered = _ordered(topics, target)
    cache.order = (topics.by_name, target.line.topics_map, [t.id for t in ordered])
    return ordered


def changed_positions(new: list[Any], old: list[Any], twins: list[Any]) -> tuple[list[int], list[Any]]:
    """The positions where `new` holds a registration that is neither the same object as
    `old`'s there, nor as its twin's (`twins[i]`: a registration equal to `old[i]`, from
    another node's image), nor equal to it: the partitions to encode again. Also the twins
    for `new`. (Nodes that loaded different snapshots hold equal registrations in
    different objects and write in turn: with the twins, their writes tell unchanged
    partitions by identity alone, without reading the registrations.) In C when it is built."""
    fast = try_changed_positions(new, old, twins)
    if fast is not None:
        return fast
    todo, out = [], []
    for i, (x, y, z) in enumerate(zip(new, old, twins, strict=True)):
        if x is y:
            out.append(z)
        elif x is z or x == y:
            out.append(y)
        else:
            todo.append(i)
            out.append(x)
    return todo, out


def _sorted_apart(t: TopicImage) -> tuple[list[int], list[PartitionRegistration]]:
    items = t.sorted_partitions()
    return [pid for pid, _ in items], [p for _, p in items]


def _ids_and_registrations(parts: ChunkMap[int, PartitionRegistration]) -> tuple[list[int], list[PartitionRegistration]]:
    """A topic's partition ids and registrations in id order, without a tuple per partition."""
    if parts.is_ascending():
        return list(parts), list(parts.values())
    ids = sorted(parts)
    return ids, [parts[i] for i in ids]


def _layout(t: TopicImage) -> tuple[list[int] | None, list[PartitionRegistration]]:
    """`t`'s partition ids (None for 0..n-1 in order: the usual topic, told by its ChunkMap's
    shared positions without a look at the ids) and registrations, in id order."""
    parts = t.partitions
    if isinstance(parts, ChunkMap):
        if parts.dense_chunks() is not None:
            return None, list(parts.values())
        return _ids_and_registrations(parts)
    return _sorted_apart(t)


def _kept_in_c(records: _Records, ordered: list[TopicImage], start: int, kept: dict[Uuid, _Written],
               fresh: dict[Uuid, _Written], out: list[bytes]) -> tuple[int, int, int] | None:
    """write_values' loop from `ordered[start]` in one C call, for as long as each topic is
    of the usual kinds: kept whole (the same partitions object, as the loop below), or a
    dense ChunkMap kept as chunks of the same lengths whose changed partitions are all of
    the usual case (compared chunk by chunk, the changed ones encoded as records.values
    does, into the kept values in place: write_values drops the kept topic). What the loop
    below makes (the same values and twins, see changed_positions); where it stopped (the
    loop below takes that topic, reporting any loss), and how many partitions it encoded
    and reused. None when the C path is off. Why: at a million partitions a write meets
    20,000 topics, most changed in a few partitions, and a turn of the Python loop cost
    about as much as the C comparison and encoding of a topic's changed partitions."""
    return try_write_topics(ordered, start, kept, fresh, out, _Written, ChunkMap,
                            records.partition_template(ordered[start]), records.dirs_ok)


def _flat(regs: Registrations) -> list[PartitionRegistration]:
    return regs if isinstance(regs, list) else list(chain.from_iterable(regs))


def _kept(t: TopicImage, pids: list[int] | None, regs: list[PartitionRegistration],
          twins: list[PartitionRegistration], values: list[bytes]) -> _Written:
    """What the Python path of write_values keeps of `t` (`_Written`'s forms)."""
    chunks = t.partitions.dense_chunks() if pids is None and isinstance(t.partitions, ChunkMap) else None
    if chunks is None:
        return _Written(t.name, t.partitions, pids, regs, twins, values)
    if twins is regs:  # (written afresh: each registration its own twin)
        return _Written(t.name, t.partitions, None, chunks, chunks, values)
    cut, at = [], 0
    for c in chunks:
        cut.append(tuple(twins[at:at + len(c)]))
        at += len(c)
    return _Written(t.name, t.partitions, None, chunks, tuple(cut), values)


def write_values(topics: TopicsImage, target: WriteTarget, cache: TopicValues | None = None) -> Iterator[list[bytes]]:
    """`write`'s records as their framed values (`encode_values`), in lists of consecutive
    records, reusing what `cache` kept from the last write (see TopicValues); the cache then
    holds this write's values. Same records, same losses, same order as `write`.

    All topics' values come as one list: a list per topic cost each of the 20,000 topics of
    a million partitions two yields and a turn of the snapshot writer's grouping loop, where
    a kept topic is now one list extension."""
    if cache is None:
        cache = TopicValues()
    if not topics.by_id:
        cache.clear()
        return
    losses = [0]

    def counted(loss: Loss) -> None:
        losses[0] += 1
        target.handle(loss)

    records = _Records(replace(target, handle=counted))
    signature = records.signature()
    kept = cache.topics if cache.signature == signature else {}
    fresh: dict[Uuid, _Written] = {}
    cache.signature, cache.topics = None, {}  # (a write that stops half way leaves nothing half kept)
    out: list[bytes] = []
    encoded = reused = 0
    ordered = _ordered_as_before(topics, target, cache)
    at, in_c = 0, bool(kept)
    while at < len(ordered):
        if in_c:  # the usual topics in one C call, up to the first other one (see _kept_in_c)
            run = _kept_in_c(records, ordered, at, kept, fresh, out)
            if run is None:
                in_c = False
            else:
                at, encoded_in_c, reused_in_c = run
                encoded += encoded_in_c
                reused += reused_in_c
                if at == len(ordered):
                    break
        t = ordered[at]
        at += 1
        tid, parts = t.id, t.partitions
        old = kept.get(tid)
        if old is not None and old.partitions is parts and old.name == t.name:
            fresh[tid] = old  # the same partitions object: the same records
            reused += len(old.values) - 1
            out += old.values
            continue
        before = losses[0]
        pids, regs = _layout(t)
        if old is not None and old.name == t.name and old.pids == pids and len(old.values) == len(regs) + 1:
            values = old.values.copy()
            todo, twins = changed_positions(regs, _flat(old.registrations), _flat(old.twins))
            changed = len(todo)
            if todo:
                made = records.values(t, pids, regs, todo)
                for i, v in zip(todo, made):
                    values[i + 1] = v
        else:
            twins = regs
            values = encode_values([records.topic(t)])
            values += records.values(t, pids, regs)
            changed = len(regs)
        encoded += changed
        reused += len(regs) - changed
        if losses[0] == before:
            fresh[tid] = _kept(t, pids, regs, twins, values)
        out += values
    cache.encoded += encoded
    cache.reused += reused
    yield out
    cache.signature, cache.topics = signature, fresh
