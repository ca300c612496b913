"""Dynamic configuration: (resource type, resource name) -> {config name: value}.

ConfigRecord with a null value deletes the key; a resource with no keys left is removed.
RemoveTopicRecord removes the topic's configs (MetadataDelta calls `delete_topic`).
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

import msgspec

from kraftsim.image.components.keyed import REMOVE, NestedDelta
from kraftsim.image.pmap import PMap, stable_hash
from kraftsim.versions import ConfigReplayFilter

TOPIC = 2
BROKER = 4
BROKER_LOGGER = 8
CLIENT_METRICS = 16
GROUP = 32
RESOURCE_TYPE_NAMES = {TOPIC: "TOPIC", BROKER: "BROKER", BROKER_LOGGER: "BROKER_LOGGER",
                       CLIENT_METRICS: "CLIENT_METRICS", GROUP: "GROUP"}


def resource_type_name(t: int) -> str:
    return RESOURCE_TYPE_NAMES.get(t, f"UNKNOWN({t})")


class ConfigurationsImage(msgspec.Struct, frozen=True, gc=False):
    """Config resources and their key/value maps (read-only mappings)."""

    resources: PMap[tuple[int, str], Mapping[str, str]] = msgspec.field(default_factory=lambda: PMap(stable_hash))

    def config(self, resource_type: int, name: str) -> Mapping[str, str]:
        return self.resources.get((resource_type, name)) or {}

    def is_empty(self) -> bool:
        return not self.resources

    def sorted_resources(self) -> Iterator[tuple[tuple[int, str], Mapping[str, str]]]:
        return iter(self.resources.sorted_items())


EMPTY_CONFIGS = ConfigurationsImage()


class DroppedConfigs:
    """The ConfigRecords a replay ignored because the node's release does not define their
    config (Kafka 4.3 on), counted by (resource type name, config name): what a load says it
    dropped instead of hiding it."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str], int] = {}

    def add(self, resource_type: str, name: str) -> None:
        key = (resource_type, name)
        self.counts[key] = self.counts.get(key, 0) + 1

    @property
    def records(self) -> int:
        return sum(self.counts.values())

    def by_config(self) -> dict[str, int]:
        """"TYPE name" → records dropped, sorted by type then name."""
        return {f"{t} {n}": c for (t, n), c in sorted(self.counts.items())}

    def __bool__(self) -> bool:
        return bool(self.counts)


class ConfigurationsDelta:
    """`keeps`: the node's release's filter of replayed configs (Catalog.config_replay_filter:
    from Kafka 4.3 a config its code does not define is ignored); None keeps all. What it
    ignores is counted in `dropped` when given."""

    def __init__(self, image: ConfigurationsImage, keeps: ConfigReplayFilter | None = None,
                 dropped: DroppedConfigs | None = None):
        self.image = image
        self._d = NestedDelta(image.resources)
        self._keeps = keeps
        self._dropped = dropped

    def replay_config(self, r: Any) -> None:
        if self._keeps is not None:
            rtype = resource_type_name(r.resource_type)
            if not self._keeps.keeps(rtype, r.name):
                if self._dropped is not None:
                    self._dropped.add(rtype, r.name)
                return
        self._d.set((r.resource_type, r.resource_name), r.name, REMOVE if r.value is None else r.value)

    def delete_topic(self, topic_name: str) -> None:
        self._d.delete_all((TOPIC, topic_name))

    def finish_snapshot(self) -> None:
        self._d.finish_snapshot()

    def apply(self) -> ConfigurationsImage:
        resources = self._d.apply()
        return self.image if resources is self.image.resources else ConfigurationsImage(resources)

