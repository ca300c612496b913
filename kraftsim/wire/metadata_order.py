"""The order a broker lists the topics of a Metadata answer in, per release: every topic, or the
topics a request names (by name or, from v12, by id).

Kafka's KafkaApis keeps the asked names in a Scala immutable Set: up to four distinct names it
lists them in the order asked, beyond four in the order of the Set's hash trie. The topics it
knows come first, in that order; then the names it does not know. Up to 4.3 those are a Scala
Set again (the asked order, or the trie's order of the unknown names alone); from 4.4 a
java.util.HashSet copied from the asked names. A name the broker goes on to create (automatic
topic creation) is answered after the names it cannot create, in the order of the creation
manager's hash map (Scala's mutable.HashMap up to 4.3, Java's HashMap from 4.4). Topics asked
by id: the ids it does not know first, in the asked ids' Set order, then the topics it knows,
their names as a Set built from those ids. Every topic: in a Scala mutable.HashSet's order.
Measured against live 3.7.2, 4.0.2 and 4.4.0 nodes (tests/conformance/test_serve_vs_kafka.py).

A topic's partitions: up to 4.2 the metadata cache (Scala) maps the topic's partitions into a
Scala mutable.HashSet of the answer's partition entries, so they come in the order of those
entries' hash codes (every field of the entry, as the generated MetadataResponsePartition
hashes them); from 4.3 (the cache in Java) in the partition map's order, by partition index.
Brokers (Metadata, DescribeCluster) and a controller's list of controllers: in the order of the
ClusterImage's map of them (`cluster_map_order`).
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from kraftsim.javacompat import (
    hash_map_order, hash_set_copy_capacity, int_hash, int_list_hash, scala_hash_map_order,
    scala_immutable_hash_map_order, sized_capacity, string_hash, uuid_hash,
)
from kraftsim.protocol.primitives import Uuid
from kraftsim.versions import release_name_key

K = TypeVar("K")


class _Registration(Protocol):
    @property
    def id(self) -> int: ...


R = TypeVar("R", bound=_Registration)

#: The most elements a Scala immutable Set keeps in the order they were added (Set1 to Set4).
_SMALL_SET = 4
#: The first release whose KafkaApis copies the unknown names into a java.util.HashSet.
_JAVA_UNKNOWN_SET = (4, 4, 0)
#: The first release whose metadata cache is written in Java (it lists partitions by index).
_JAVA_METADATA_CACHE = (4, 3, 0)


def _name_hash(name: str | None) -> int:
    return 0 if name is None else string_hash(name)


def _scala_set(keys: Sequence[K], hash_of: Callable[[K], int]) -> list[K]:
    """The iteration order of a Scala immutable Set built from `keys` (`toSet`)."""
    distinct = list(dict.fromkeys(keys))
    return distinct if len(distinct) <= _SMALL_SET else scala_immutable_hash_map_order(distinct, hash_of)


def all_topics_order(names: Sequence[str]) -> list[str]:
    """The order a broker lists every topic in (a Metadata request of none), in every release:
    its KafkaApis splits the metadata cache's names into a Scala mutable.HashSet."""
    return scala_hash_map_order(names, string_hash)


def cluster_map_order(registrations: Iterable[R]) -> list[R]:
    """Registrations by node id in the order of Kafka's ClusterImage map of them: ClusterDelta
    puts them into a `new HashMap<>(size)`, so by id modulo the table a map of that many grows
    to (live 3.7.2 and 4.4.0 list brokers 2, 3 and 4 as 4, 2, 3; 6 to 9 as 8, 9, 6, 7). Ids of
    one bucket come in ascending order (Kafka: in the order they were put, which follows earlier
    images' maps); a table left larger by nodes since unregistered is not modelled."""
    by_id = {r.id: r for r in registrations}
    return [by_id[i] for i in hash_map_order(sorted(by_id), int_hash, initial=sized_capacity(len(by_id)))]


def partitions_order(release: str, partitions: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """A topic's Metadata partition entries (by index, every field set as the broker sets it
    whatever the request's version) in the order `release` lists them."""
    if release_name_key(release) >= _JAVA_METADATA_CACHE:
        return list(partitions)
    return scala_hash_map_order(partitions, _partition_entry_hash)


def _partition_entry_hash(p: Mapping[str, Any]) -> int:
    """MetadataResponsePartition.hashCode (its fields in schema order), as its 32 bits."""
    h = 0
    for field in (p["ErrorCode"], p["PartitionIndex"], p["LeaderId"], p["LeaderEpoch"]):
        h = (31 * h + field) & 0xFFFFFFFF
    for nodes in (p["ReplicaNodes"], p["IsrNodes"], p["OfflineReplicas"]):
        h = (31 * h + int_list_hash(nodes)) & 0xFFFFFFFF
    return h


def named_topics_order(release: str, asked: Sequence[str | None], known: Container[str | None],
                       creatable: Callable[[str | None], bool] | None = None) -> tuple[list[str | None], list[str | None]]:
    """(the known names, the unknown names) of a Metadata request of names `asked`, each in the
    order `release` answers them. `creatable`, when the broker creates unknown topics, tells the
    names it would create (the others, which it cannot, come first)."""
    order = _scala_set(asked, _name_hash)
    found = [n for n in order if n in known]
    java_sets = release_name_key(release) >= _JAVA_UNKNOWN_SET
    if java_sets:
        copied = hash_map_order(order, _name_hash, initial=hash_set_copy_capacity(len(order)))
        missing = [n for n in copied if n not in known]
    else:
        missing = [n for n in order if n not in known]
        if len(order) > _SMALL_SET:
            missing = scala_immutable_hash_map_order(missing, _name_hash)
    if creatable is None:
        return found, missing
    can_create = {n: creatable(n) for n in missing}
    to_create = [n for n in missing if can_create[n]]
    to_create = (hash_map_order if java_sets else scala_hash_map_order)(to_create, _name_hash)
    return found, [n for n in missing if not can_create[n]] + to_create


def topic_ids_order(asked: Sequence[Uuid], name_of: Callable[[Uuid], str | None]) -> tuple[list[str], list[Uuid]]:
    """(the known topics' names, the unknown ids) of a Metadata request of ids `asked`, in the
    order a broker answers them (the same in every release)."""
    ids = _scala_set(asked, uuid_hash)
    unknown = [i for i in ids if name_of(i) is None]
    names = [n for i in ids if (n := name_of(i)) is not None]
    if len(ids) > _SMALL_SET:  # (a hash trie's flatMap builds a hash trie, however few it holds)
        names = scala_immutable_hash_map_order(names, string_hash)
    return names, unknown
