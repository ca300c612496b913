"""Topics and their partitions (Kafka's TopicsImage / TopicsDelta / TopicDelta).

TopicsImage keeps two persistent maps: topic id -> TopicImage and name -> topic id. A
delta that touches k topics rebuilds k TopicImages (each copies only its own partition
dict) and O(k) trie paths; the other topics, and the by-name map unless topics are
created or deleted, are shared with the previous image (see pmap.py for measurements).

Replay semantics, as Kafka's:
- TopicRecord starts the topic afresh (no partitions), even if the id existed.
- PartitionRecord replaces a partition; PartitionChangeRecord merges into it and fails for
  an unknown partition.
- RemoveTopicRecord of an unknown id fails; a topic created and removed in the same delta
  leaves no trace. The caller also removes the topic's configs (MetadataDelta).
- ClearElrRecord: a name is looked up among topics created in this delta first, then in
  the image (deleted topics skipped); unknown names fail. An empty name clears every
  topic that exists at that point of the delta.
"""

from __future__ import annotations

from operator import attrgetter
from types import MappingProxyType
from typing import Any, Callable, Iterator, Mapping

import msgspec

from kraftsim.image.errors import MetadataReplayError
from kraftsim.gcpause import collector_paused
from kraftsim.image.components.partition import PartitionRegistration, registration_from_record
from kraftsim.image.pmap import DELETE, ChunkMap, PMap, hash_str, hash_uuid
from kraftsim.protocol.primitives import Uuid

_NO_PARTITIONS: Mapping[int, PartitionRegistration] = MappingProxyType({})
#: A topic delta's changed partitions, and its base partitions' positions and value chunks.
#: A release's merge of a PartitionChangeRecord into a registration (partition.MERGE_RULES).
PartitionMerge = Callable[[PartitionRegistration, Any], PartitionRegistration]
ChangeLayout = tuple[dict[int, PartitionRegistration], Mapping[int, int], tuple[tuple[PartitionRegistration, ...], ...]]
_topic_name = attrgetter("name")
_ELR, _LAST_KNOWN_ELR = attrgetter("elr"), attrgetter("last_known_elr")


class TopicImage(msgspec.Struct, frozen=True, gc=False):
    """One topic: name, id and partitions by id (a read-only mapping)."""

    name: str
    id: Uuid
    partitions: Mapping[int, PartitionRegistration] = _NO_PARTITIONS

    def holds_elr(self) -> bool:
        """Whether any partition holds ELR fields (eligible or last known leader replicas):
        each field's truth tested in C over the partitions, with no Python step per partition
        (replays_alike asks this of every topic of a million-partition image)."""
        parts = self.partitions
        return any(map(_ELR, parts.values())) or any(map(_LAST_KNOWN_ELR, parts.values()))

    def sorted_partitions(self) -> list[tuple[int, PartitionRegistration]]:
        parts = self.partitions
        if isinstance(parts, ChunkMap):
            return parts.sorted_items()  # (no sort when the ids are in order, as they usually are)
        return sorted(parts.items())


class TopicsImage(msgspec.Struct, frozen=True, gc=False):
    """All topics, by id and by name."""

    by_id: PMap[Uuid, TopicImage] = msgspec.field(default_factory=lambda: PMap(hash_uuid))
    by_name: PMap[str, Uuid] = msgspec.field(default_factory=lambda: PMap(hash_str))

    def get_topic(self, topic_id: Uuid) -> TopicImage | None:
        return self.by_id.get(topic_id)

    def get_topic_by_name(self, name: str) -> TopicImage | None:
        tid = self.by_name.get(name)
        return None if tid is None else self.by_id.get(tid)

    def __len__(self) -> int:
        return len(self.by_id)

    def is_empty(self) -> bool:
        return not self.by_id

    def partition_count(self) -> int:
        return sum(len(t.partitions) for t in self.by_id.values())

    def holds_elr(self) -> bool:
        """Whether any partition of any topic holds ELR fields (`TopicImage.holds_elr`)."""
        return any(t.holds_elr() for t in self.by_id.values())

    def sorted_topics(self) -> Iterator[TopicImage]:
        """Topics by name, then id (deterministic output order)."""
        topics = list(self.by_id.values())
        if len({t.name for t in topics}) == len(topics):
            topics.sort(key=_topic_name)  # names are unique (the usual case): plain string keys sort fastest
        else:
            topics.sort(key=lambda t: (t.name, bytes(t.id)))
        return iter(topics)


EMPTY_TOPICS = TopicsImage()


def _no_partition(r: Any) -> MetadataReplayError:
    """The error of a PartitionChangeRecord `r` whose topic is not there."""
    return MetadataReplayError(f"Unable to find partition {r.topic_id}:{r.partition_id}")


class TopicDelta:
    """Partition changes of one topic; `image` is the base topic (or a fresh one).

    `apply()` gives the new TopicImage a ChunkMap that shares with the base topic's every
    chunk of partitions this delta did not change (a commit that changes one partition of a
    topic copies a few tuples, not the topic's whole partition map).
    """

    __slots__ = ("image", "fresh", "changes", "layout")

    def __init__(self, image: TopicImage, fresh: bool = False):
        self.image = image
        self.fresh = fresh  # created by a TopicRecord in this delta
        self.changes: dict[int, PartitionRegistration] = {}
        #: TopicsDelta.change_layout's answer for this topic, once asked (None before): made of
        #: `changes` and the base partitions' layout, none of which this delta ever replaces.
        self.layout: ChangeLayout | None = None

    @property
    def name(self) -> str:
        return self.image.name

    def writable_changes(self) -> dict[int, PartitionRegistration]:
        """`changes`, to be written (no applied image holds it)."""
        return self.changes

    def partition(self, partition_id: int) -> PartitionRegistration | None:
        p = self.changes.get(partition_id)
        return self.image.partitions.get(partition_id) if p is None else p

    def replay_partition_change(self, r: Any, merge: PartitionMerge = PartitionRegistration.merge) -> None:
        prev = self.partition(r.partition_id)
        if prev is None:
            raise MetadataReplayError(f"Unable to find partition {r.topic_id}:{r.partition_id}")
        self.writable_changes()[r.partition_id] = merge(prev, r)

    def clear_elr(self) -> None:
        changes = self.writable_changes()
        for pid, p in list(changes.items()):
            if p.has_elr():
                changes[pid] = p.clear_elr()
        for pid, p in self.image.partitions.items():
            if pid not in changes and p.has_elr():
                changes[pid] = p.clear_elr()

    def apply(self) -> TopicImage:
        if not self.changes and not self.fresh:
            return self.image
        base = self.image.partitions
        if base is _NO_PARTITIONS:  # (a topic created in this delta: asked first, as a snapshot's 100,000 are)
            parts = ChunkMap.of(self.changes)
        elif isinstance(base, ChunkMap):
            parts = base.updated(self.changes)
        else:
            parts = ChunkMap.of({**base, **self.changes} if base else self.changes)
        return TopicImage(self.image.name, self.image.id, parts)


class TopicsDelta:
    """Changes to topics since `image`."""

    def __init__(self, image: TopicsImage, merge: PartitionMerge = PartitionRegistration.merge):
        """`merge`: how the node's release merges a PartitionChangeRecord (partition.MERGE_RULES)."""
        self.image = image
        self.merge = merge
        self.changed: dict[Uuid, TopicDelta] = {}
        self.deleted: set[Uuid] = set()  # ids of the base image that are gone
        self.created: dict[str, Uuid] = {}  # names created by TopicRecords in this delta

    def _base_topic(self, topic_id: Uuid) -> TopicImage | None:
        """The base image's topic `topic_id`, unless this delta removed it."""
        return None if topic_id in self.deleted else self.image.by_id.get(topic_id)

    def _topic_delta(self, topic_id: Uuid) -> TopicDelta | None:
        """The delta of topic `topic_id` (made on first use); None when there is no such topic."""
        td = self.changed.get(topic_id)
        if td is None:
            base = self._base_topic(topic_id)
            if base is None:
                return None
            td = self.changed[topic_id] = TopicDelta(base)
        return td

    def partition_changes(self, r: Any) -> dict[int, PartitionRegistration]:
        """Where a PartitionRecord `r` goes: its topic's dict of changed partitions (for
        MetadataDelta.replay_all, which fills it directly)."""
        td = self._topic_delta(r.topic_id)
        if td is None:
            raise MetadataReplayError(f"Unable to find topic {r.topic_id} for partition {r.partition_id}")
        return td.writable_changes()

    def replay_topic(self, r: Any) -> dict[int, PartitionRegistration]:
        """Start the topic afresh; returns its (empty) dict of partition changes, for bulk replay."""
        tid = r.topic_id
        td = self.changed[tid] = TopicDelta(TopicImage(r.name, tid), True)  # (fresh; positional: 100,000 calls a snapshot)
        self.created[r.name] = tid
        return td.changes

    def replay_partition(self, r: Any) -> None:
        changes = self.partition_changes(r)  # the topic is looked up before the record is read
        changes[r.partition_id] = registration_from_record(r)

    def change_target(self, r: Any) -> TopicDelta:
        """The delta of the topic a PartitionChangeRecord `r` names (for replay_records, which
        merges into its `changes` directly); an error when there is no such topic."""
        td = self._topic_delta(r.topic_id)
        if td is None:
            raise _no_partition(r)
        return td

    def change_layout(self, r: Any) -> ChangeLayout:
        """change_target(r)'s dict of changed partitions and its base partitions' layout
        (ChunkMap.layout_of): what bulk replay keeps while change records name one topic.
        One call, not four, because the C run of bulk replay calls it at every topic switch
        (two million at a million partitions); kept as the TopicDelta's `layout`, which the C
        run reads itself for a topic met again (a loader's delta spans many batches)."""
        tid = r.topic_id
        td = self.changed.get(tid)
        if td is None:  # (_topic_delta's miss, inlined)
            base = self._base_topic(tid)
            if base is None:
                raise _no_partition(r)
            td = self.changed[tid] = TopicDelta(base)
        layout = td.layout
        if layout is None:
            positions, chunks = ChunkMap.layout_of(td.image.partitions)
            layout = td.layout = (td.changes, positions, chunks)
        return layout

    def replay_partition_change(self, r: Any) -> None:
        self.change_target(r).replay_partition_change(r, self.merge)

    def replay_remove_topic(self, r: Any) -> str:
        """Remove a topic; returns its name (so its configs can go too)."""
        tid = r.topic_id
        td = self.changed.pop(tid, None)
        if td is not None:
            name = td.name
            if tid in self.image.by_id:
                self.deleted.add(tid)
        else:
            base = self._base_topic(tid)
            if base is None:
                raise MetadataReplayError(f"Unable to delete topic with id {tid}: no such topic found.")
            name = base.name
            self.deleted.add(tid)
        if self.created.get(name) == tid:
            del self.created[name]
        return name

    def replay_clear_elr(self, r: Any) -> None:
        name = r.topic_name
        if name:
            tid = self.created.get(name)
            if tid is None:
                tid = self.image.by_name.get(name)
                if tid is not None and tid in self.deleted:
                    tid = None
            # a name created in this delta can be stale: its id was re-created under another name, then removed
            td = None if tid is None else self._topic_delta(tid)
            if td is None:
                raise MetadataReplayError(f"Unable to clear elr for topic with name {name}: no such topic found.")
            td.clear_elr()
            return
        for td in self.changed.values():
            td.clear_elr()
        for tid, topic in self.image.by_id.items():
            if tid in self.changed or tid in self.deleted:
                continue
            if topic.holds_elr():
                td = self.changed[tid] = TopicDelta(topic)
                td.clear_elr()

    def finish_snapshot(self) -> None:
        for tid in self.image.by_id:
            if tid not in self.changed:
                self.deleted.add(tid)

    def apply(self) -> TopicsImage:
        if not self.image.by_id:  # nothing to delete or rename: both maps are built in bulk
            if not self.changed:
                return self.image
            with collector_paused():
                topics = {tid: td.apply() for tid, td in self.changed.items()}
                names = {t.name: tid for tid, t in topics.items()}
                return TopicsImage(self.image.by_id.update(topics), self.image.by_name.update(names))
        by_id: dict[Uuid, TopicImage] = {}  # or DELETE
        by_name: dict[str, Uuid] = {}  # or DELETE
        base = self.image.by_id
        for tid in self.deleted:
            old = base.get(tid)
            if old is not None:
                by_id[tid] = DELETE
                by_name[old.name] = DELETE
        for tid, td in self.changed.items():
            topic = td.apply()
            if not td.fresh:  # (its image is the base's topic, neither removed nor renamed: no look-up)
                if topic is not td.image:
                    by_id[tid] = topic
                continue
            old = base.get(tid)
            if old is not None and old.name != topic.name and tid not in self.deleted:
                by_name.setdefault(old.name, DELETE)
            if topic is not old:
                by_id[tid] = topic
            if old is None or old.name != topic.name or tid in self.deleted:
                by_name[topic.name] = tid
        new_by_id = base.update(by_id)
        new_by_name = self.image.by_name.update(by_name)
        if new_by_id is base and new_by_name is self.image.by_name:
            return self.image
        return TopicsImage(new_by_id, new_by_name)
