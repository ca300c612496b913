"""The order Kafka's image writer iterates its maps in, so a snapshot's records and lists
come out in Kafka's order (byte for byte, not only as the same set).

Kafka's images keep most of their maps as java.util.HashMap, rebuilt by each delta: the
delta collects its changes in a `HashMap` (16 buckets, in record order), and `apply` puts
the old entries and then the changes into a fresh `new HashMap<>(oldSize)`. The order is
therefore a function of the keys' hash codes and of the order they arrived in, which
decides between keys that share a bucket. kraftsim's config and quota maps keep their keys
in arrival order, so those ties are Kafka's too; its other maps are canonical (sorted), and
their ties come out in key order. Topics live in a persistent hash map since Kafka 3.6
(pcollections, ordered by hash code); before, in a HashMap copied on every change. Config
resources are keyed by ConfigResource, whose hash code includes the identity hash of its
ConfigResource.Type enum constant (different in every JVM run), so Kafka's resource order
follows from the log only together with those hash codes: given them, kraftsim writes
Kafka's order; without them, resources sorted by (type, name).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Hashable, Iterable, Mapping, Sequence, TypeVar

from kraftsim.image.components.features import default_feature_order
from kraftsim.javacompat import (
    copy_capacity, hash_map_capacity, hash_map_order, hash_pmap_order, int_hash, sized_capacity, string_hash,
    uuid_hash,
)
from kraftsim.protocol.primitives import Uuid

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")

#: WriterLine.topics_map values (catalog policy `image_topics_map`).
PERSISTENT = "persistent"
HASH_MAP = "hash_map"


def delta_rebuilt_order(keys: Sequence[K], hash_of: Callable[[K], int]) -> list[K]:
    """A map one delta built: its changes HashMap (16 buckets) put into `new HashMap<>(0)`,
    i.e. hash_map_order(hash_map_order(keys, hash_of), hash_of, initial=1) in one sort."""
    if len(keys) < 2:
        return list(keys)
    last = hash_map_capacity(len(keys), 1) - 1
    first = hash_map_capacity(len(keys)) - 1
    spread = [(h ^ (h >> 16)) for h in map(hash_of, keys)]
    return [keys[i] for _, _, i in sorted((s & last, s & first, i) for i, s in enumerate(spread))]


@lru_cache(maxsize=4096)  # resources mostly hold the same few names in the same order
def _string_delta_order(names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(delta_rebuilt_order(names, string_hash))


def feature_order(names: Sequence[str], kept: Sequence[str] = ()) -> list[str]:
    """FeaturesImage.finalizedVersions (without metadata.version): the order the image kept
    from the deltas that built it (`kept`), else that of features which arrived together."""
    return list(kept) if kept else default_feature_order(names)


def config_key_order(keys: Sequence[str]) -> list[str]:
    """ConfigurationImage.data and ClientQuotaImage.quotas."""
    return list(_string_delta_order(tuple(keys)))


def broker_listener_order(names: Sequence[str]) -> list[str]:
    """BrokerRegistration.listeners: a HashMap from the record, copied into `new HashMap<>(size)`."""
    first = hash_map_order(names, string_hash)
    return hash_map_order(first, string_hash, initial=sized_capacity(len(first)))


def broker_feature_order(names: Sequence[str], *, rehashed: bool) -> list[str]:
    """BrokerRegistration.supportedFeatures: 3.x copies the record's HashMap (`new HashMap<>(m)`);
    Kafka 4.1 and 4.2 snapshots keep the record's order."""
    if not rehashed:
        return list(names)
    first = hash_map_order(names, string_hash)
    return hash_map_order(first, string_hash, initial=copy_capacity(len(first)))


def controller_list_order(names: Sequence[str]) -> list[str]:
    """ControllerRegistration.listeners and supportedFeatures: a HashMap built from the record."""
    return hash_map_order(names, string_hash)


def node_id_order(ids: Iterable[int]) -> list[int]:
    """ClusterImage.brokers / controllers, by Integer id (brokers 3 and 4: 4 first)."""
    return delta_rebuilt_order(sorted(ids), int_hash)


def topic_order(topics: Sequence[T], topic_id: Callable[[T], Uuid], topics_map: str) -> list[T]:
    """TopicsImage.topicsById: a persistent map (3.6+) or a HashMap rebuilt by each delta
    (3.5 and before); `topics` sorted by name, which decides between ids that share a bucket.
    The image does not keep when each topic was last put in Kafka's map, so name order stands
    for it: ids whose hash codes collide come out as Kafka's map holds topics created (or
    last changed) in name order, the later name first."""
    def hash_of(t: T) -> int:
        return uuid_hash(topic_id(t))
    if topics_map == PERSISTENT:
        return hash_pmap_order(topics, hash_of)
    return delta_rebuilt_order(topics, hash_of)


def config_resource_order(resources: Sequence[tuple[int, str]],
                          type_hashes: Mapping[int, int] | None) -> list[tuple[int, str]]:
    """ConfigurationsImage.data, keyed by ConfigResource (hashCode 31 * type.hashCode() +
    name.hashCode()); the delta's changes HashMap is put into a `new HashMap<>()`.
    `type_hashes`: the identity hash of each resource type's enum constant in the JVM that
    wrote the snapshot. Without a hash for every type present: `resources` as given."""
    if not type_hashes or any(t not in type_hashes for t, _ in resources):
        return list(resources)
    hashes = dict(type_hashes)

    def hash_of(r: tuple[int, str]) -> int:
        return (31 * hashes[r[0]] + string_hash(r[1])) & 0xFFFFFFFF
    return hash_map_order(hash_map_order(resources, hash_of), hash_of)


def config_entry_ranks(records: Iterable[tuple[str, Any]]) -> dict[tuple[int, str], int]:
    """When each config resource last entered ConfigurationsImage.data, as a rank (lower:
    earlier), from the (record type name, message) pairs one node replayed since its process
    started, each record taken as its own delta. A resource enters the map with its first
    config and leaves it when its last config is deleted (a ConfigRecord with a null value)
    or its topic is removed. Kafka's HashMap keeps the keys that share a bucket in this order."""
    held: dict[tuple[int, str], set[str]] = {}
    ranks: dict[tuple[int, str], int] = {}
    topic_names: dict[Uuid, str] = {}
    for rank, (name, m) in enumerate(records):
        if name == "ConfigRecord":
            key = (m.resource_type, m.resource_name)
            keys = held.setdefault(key, set())
            if m.value is not None:
                if not keys:
                    ranks[key] = rank
                keys.add(m.name)
            else:
                keys.discard(m.name)
                if not keys:
                    ranks.pop(key, None)
        elif name == "TopicRecord":
            topic_names[m.topic_id] = m.name
        elif name == "RemoveTopicRecord":
            topic = topic_names.pop(m.topic_id, None)
            if topic is not None:
                held.pop((TOPIC_RESOURCE, topic), None)
                ranks.pop((TOPIC_RESOURCE, topic), None)
    return ranks


#: ConfigResource.Type.TOPIC's id (the resource type of a topic's configs).
TOPIC_RESOURCE = 2


def quota_entity_hash(entity: Iterable[tuple[str, str | None]]) -> int:
    """ClientQuotaEntity.hashCode: Objects.hash(entries), entries a Map<String, String>."""
    h = sum(string_hash(t) ^ (0 if n is None else string_hash(n)) for t, n in entity)
    return (31 + h) & 0xFFFFFFFF


QuotaEntity = tuple[tuple[str, "str | None"], ...]


def quota_entity_order(entities: Sequence[QuotaEntity]) -> list[QuotaEntity]:
    """ClientQuotasImage.entities."""
    return delta_rebuilt_order(entities, quota_entity_hash)


def quota_entity_data_order(types: Sequence[str]) -> list[str]:
    """A ClientQuotaRecord's entity list: ClientQuotaEntity.entries, a HashMap built from a record."""
    return hash_map_order(types, string_hash)
