"""ListOffsets (`kafka-get-offsets`, `Admin.listOffsets`, a consumer resetting to the earliest or
latest offset), answered as a broker of the node's release answers it for partitions whose logs
are empty: a served cluster carries metadata only, so nothing was ever produced to a partition.

A partition is looked up in the node's own image: unknown there, UNKNOWN_TOPIC_OR_PARTITION; the
node is no replica of it, NOT_LEADER_OR_FOLLOWER; a CurrentLeaderEpoch other than -1 that is
older or newer than the partition's, FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH; a node that
does not lead it, NOT_LEADER_OR_FOLLOWER unless the request comes from a debugging tool
(ReplicaId -2), which a follower answers too. An empty log starts and ends at offset 0, and its
leader's leader-epoch cache holds one entry, the partition's leader epoch at offset 0 (a broker
writes its epoch there at the log end offset whenever it becomes leader in a new epoch, which
drops every entry at or after that offset). So:

- latest (-1): offset 0 and the partition's leader epoch;
- earliest (-2) and, without tiered storage, earliest local (-4, 3.5 on): offset 0 and the
  cached epoch;
- anything else (max timestamp -3, latest tiered -5, earliest pending upload -6, -4 before 3.5,
  any other timestamp): no offset found, answered as -1 (timestamp, offset and epoch).

From 3.9 a negative timestamp a version cannot ask for is UNSUPPORTED_VERSION
(TIMESTAMP_MIN_VERSION). A partition asked twice in one request is INVALID_REQUEST. Before 4.0 the
answer follows the request, each topic entry and partition in turn; from 4.0 the broker gathers
the partitions in a Scala mutable.HashMap and groups them by topic (`grouped_by_topic`).

v0 (3.x) lists the offsets of the log's segments older than a time (`_answer_v0`). Not carried
out: earliest offsets read from a follower (ReplicaId -2): its leader-epoch cache holds the
epochs it once led, which kraftsim does not keep; and v0 of a timestamp >= 0, which Kafka
answers from the modification time of the segment file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kraftsim.versions import release_name_key
from kraftsim.wire.handlers import Body, Handler, NotCarriedOut, code, release_of
from kraftsim.wire.scala_grouping import grouped_by_topic
from kraftsim.wire.served import Listener, ServedCluster

if TYPE_CHECKING:
    from kraftsim.image import MetadataImage, PartitionRegistration

LIST_OFFSETS_KEY = 2
#: ReplicaId of a consumer (the isolation level applies) and of a debugging tool (a follower answers).
CONSUMER_REPLICA_ID, DEBUGGING_REPLICA_ID = -1, -2
LATEST, EARLIEST, EARLIEST_LOCAL = -1, -2, -4
#: The first release that knows the earliest local timestamp (KIP-405's EARLIEST_LOCAL_TIMESTAMP):
#: before it, -4 is a time like any other (live 3.3.2 and 3.4.1).
EARLIEST_LOCAL_SINCE = (3, 5, 0)
#: A CurrentLeaderEpoch that fences nothing.
NO_EPOCH = -1
#: IsolationLevel ids Kafka knows (read uncommitted, read committed).
ISOLATION_LEVELS = (0, 1)
#: The lowest version that may ask for each special timestamp, checked from 3.9 on (4.2 adds
#: -6, KIP-1023); 3.7 and 3.8 look any timestamp up.
TIMESTAMP_MIN_VERSION = {-2: 1, -1: 1, -3: 7, -4: 8, -5: 9}
TIMESTAMP_MIN_VERSION_4_2 = {**TIMESTAMP_MIN_VERSION, -6: 11}


@dataclass(frozen=True)
class _Request:
    """What every partition of one ListOffsets request is judged by."""

    image: MetadataImage | None
    node_id: int
    release: tuple[int, ...]
    version: int
    replica_id: int
    isolation_level: int
    duplicates: frozenset[tuple[str, int]]

    def min_versions(self) -> dict[int, int] | None:
        """The timestamps' lowest versions the release checks (None: it checks none)."""
        if self.release < (3, 9, 0):
            return None
        return TIMESTAMP_MIN_VERSION_4_2 if self.release >= (4, 2, 0) else TIMESTAMP_MIN_VERSION


def _error(index: int, name: str) -> Body:
    return {"PartitionIndex": index, "ErrorCode": code(name), "Timestamp": -1, "Offset": -1}


def _found(index: int, offset: int, epoch: int | None) -> Body:
    """An offset found, with the leader epoch it carries (-1 when there is none)."""
    return {"PartitionIndex": index, "ErrorCode": 0, "Timestamp": -1, "Offset": offset,
            "LeaderEpoch": -1 if epoch is None else epoch}


def _readable(image: MetadataImage | None, node_id: int, replica_id: int, topic: str, index: int,
              current_epoch: int) -> PartitionRegistration | str:
    """The partition whose log the node reads for this request, or the error name of why it cannot."""
    t = image.topics.get_topic_by_name(topic) if image is not None else None
    p = t.partitions.get(index) if t is not None else None
    if p is None:
        return "UNKNOWN_TOPIC_OR_PARTITION"
    if node_id not in p.replicas:
        return "NOT_LEADER_OR_FOLLOWER"  # the topic exists, the node holds no replica of it
    if current_epoch != NO_EPOCH and current_epoch != p.leader_epoch:
        return "FENCED_LEADER_EPOCH" if current_epoch < p.leader_epoch else "UNKNOWN_LEADER_EPOCH"
    if p.leader != node_id and replica_id != DEBUGGING_REPLICA_ID:
        return "NOT_LEADER_OR_FOLLOWER"
    return p


def _answer(req: _Request, topic: str, partition: Mapping[str, Any]) -> Body:
    """One partition's answer (v1 on)."""
    index, timestamp = int(partition["PartitionIndex"]), int(partition["Timestamp"])
    if (topic, index) in req.duplicates:
        return _error(index, "INVALID_REQUEST")
    lowest = req.min_versions()
    if lowest is not None and timestamp < 0 and req.version < lowest.get(timestamp, req.version + 1):
        return _error(index, "UNSUPPORTED_VERSION")
    if req.replica_id == CONSUMER_REPLICA_ID and req.isolation_level not in ISOLATION_LEVELS:
        return _error(index, "UNKNOWN_SERVER_ERROR")  # (IsolationLevel.forId's refusal, caught per partition)
    p = _readable(req.image, req.node_id, req.replica_id, topic, index,
                  int(partition.get("CurrentLeaderEpoch", NO_EPOCH)))
    if isinstance(p, str):
        return _error(index, p)
    if timestamp == LATEST:
        return _found(index, 0, p.leader_epoch)
    if timestamp == EARLIEST or (timestamp == EARLIEST_LOCAL and req.release >= EARLIEST_LOCAL_SINCE):
        if p.leader != req.node_id:
            raise NotCarriedOut("ListOffsets of the earliest offset from a follower (ReplicaId -2)")
        return _found(index, 0, p.leader_epoch)
    return _found(index, -1, None)  # no record, so no offset at or after any time


def list_offsets(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, Any]) -> Body:
    """Every partition asked for, as the module docstring says; v0 as `_answer_v0`."""
    topics = list(body.get("Topics", []))
    if version == 0:
        return {"Topics": [{"Name": t["Name"], "Partitions": [_answer_v0(served, listener, body, t["Name"], p)
                                                              for p in t.get("Partitions", [])]} for t in topics]}
    seen: set[tuple[str, int]] = set()
    duplicates: set[tuple[str, int]] = set()
    for t in topics:
        for p in t.get("Partitions", []):
            key = (t["Name"], int(p["PartitionIndex"]))
            (duplicates if key in seen else seen).add(key)
    release = release_name_key(release_of(served, listener))
    isolation = int(body.get("IsolationLevel", 0))
    if release >= (4, 0, 0) and topics and isolation not in ISOLATION_LEVELS:
        # read before any partition: the whole request fails, as Kafka answers an exception
        return {"Topics": [{"Name": t["Name"], "Partitions": [_error(int(p["PartitionIndex"]), "UNKNOWN_SERVER_ERROR")
                                                              for p in t.get("Partitions", [])]} for t in topics]}
    req = _Request(served.sim.image(listener.node_id), listener.node_id, release, version,
                   int(body.get("ReplicaId", CONSUMER_REPLICA_ID)), isolation, frozenset(duplicates))
    if release >= (4, 0, 0):
        answers = {(t["Name"], int(p["PartitionIndex"])): _answer(req, t["Name"], p)
                   for t in topics for p in t.get("Partitions", [])}  # (a repeated partition answered once)
        return {"Topics": grouped_by_topic(answers)}
    return {"Topics": [{"Name": t["Name"], "Partitions": [_answer(req, t["Name"], p) for p in t.get("Partitions", [])]}
                       for t in topics]}


def _answer_v0(served: ServedCluster, listener: Listener, body: Mapping[str, Any], topic: str,
               partition: Mapping[str, Any]) -> Body:
    """v0 (3.x): the offsets of the segments older than a time, newest first, at most MaxNumOffsets
    of them. An empty log has one segment, at offset 0: latest and earliest find it, a time before
    it (any timestamp below -2, which 3.9 refuses as UNSUPPORTED_VERSION instead) finds none."""
    index, timestamp = int(partition["PartitionIndex"]), int(partition["Timestamp"])
    if timestamp < EARLIEST and release_name_key(release_of(served, listener)) >= (3, 9, 0):
        return {"PartitionIndex": index, "ErrorCode": code("UNSUPPORTED_VERSION"), "OldStyleOffsets": []}
    p = _readable(served.sim.image(listener.node_id), listener.node_id,
                  int(body.get("ReplicaId", CONSUMER_REPLICA_ID)), topic, index, NO_EPOCH)
    if isinstance(p, str):
        return {"PartitionIndex": index, "ErrorCode": code(p), "OldStyleOffsets": []}
    if timestamp >= 0:
        raise NotCarriedOut("ListOffsets v0 of a timestamp (answered from a segment file's modification time)")
    found = [0] if timestamp in (LATEST, EARLIEST) else []
    wanted = int(partition.get("MaxNumOffsets", 1))
    if min(wanted, len(found)) < 0:  # (an array of that size cannot be made: Kafka's handler fails on it)
        return {"PartitionIndex": index, "ErrorCode": code("UNKNOWN_SERVER_ERROR"), "OldStyleOffsets": []}
    return {"PartitionIndex": index, "ErrorCode": 0, "OldStyleOffsets": found[:wanted]}


HANDLERS: dict[int, Handler] = {LIST_OFFSETS_KEY: list_offsets}
