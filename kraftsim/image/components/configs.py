"""Dynamic configuration: (resource type, resource name) -> {config name: value}.

ConfigRecord with a null value deletes the key; a resource with no keys left is removed.
RemoveTopicRecord removes the topic's configs (MetadataDelta calls `delete_topic`).
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

import msgspec

from kraftsim.image.components.keyed import REMOVE, NestedDelta
from kraftsim.image.pmap import PMap, stable_hash

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

    resources: PMap = msgspec.field(default_factory=lambda: PMap(stable_hash))

    def config(self, resource_type: int, name: str) -> Mapping[str, str]:
        return self.resources.get((resource_type, name)) or {}

    def is_empty(self) -> bool:
        return not self.resources

    def sorted_resources(self) -> Iterator[tuple[tuple[int, str], Mapping[str, str]]]:
        return iter(self.resources.sorted_items())


EMPTY_CONFIGS = ConfigurationsImage()


RESOURCE_TYPE_CODES = {name: code for code, name in RESOURCE_TYPE_NAMES.items()}


class ConfigurationsDelta:
    """`dropped`: (resource type, config name) pairs the node's release ignores on replay
    (configs Kafka removed; Catalog.configs_dropped_on_replay)."""

    def __init__(self, image: ConfigurationsImage, dropped: frozenset[tuple[int, str]] = frozenset()):
        self.image = image
        self._d = NestedDelta(image.resources)
        self._dropped = dropped

    def replay_config(self, r: Any) -> None:
        if self._dropped and (r.resource_type, r.name) in self._dropped:
            return
        self._d.set((r.resource_type, r.resource_name), r.name, REMOVE if r.value is None else r.value)

    def delete_topic(self, topic_name: str) -> None:
        self._d.delete_all((TOPIC, topic_name))

    def finish_snapshot(self) -> None:
        self._d.finish_snapshot()

    def apply(self) -> ConfigurationsImage:
        resources = self._d.apply()
        return self.image if resources is self.image.resources else ConfigurationsImage(resources)

