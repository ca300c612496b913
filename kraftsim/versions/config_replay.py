"""Which replayed ConfigRecords a release keeps (Kafka 4.3 on, KAFKA-19851).

From 4.3 a node's image and controller ignore a ConfigRecord whose config the node's own
code does not define, so a cluster upgraded from 3.x stops carrying configs Kafka removed
(a topic's message.format.version, message.timestamp.difference.max.ms, ...). The names
each release defines are data (data/replay_configs.toml, printed by the released jars);
this is the rule over them.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ConfigReplayFilter:
    """Kafka's DefaultSupportedConfigChecker as data: every config of a `keep_all` resource
    type (BROKER) is kept, a config of a `listed` type (TOPIC, CLIENT_METRICS, GROUP) only
    when `names` holds it, and nothing of any other type (BROKER_LOGGER, unknown codes).
    Equal filters keep the same records, whichever release they belong to."""

    release: str = field(compare=False)
    keep_all: frozenset[str]
    names: tuple[tuple[str, frozenset[str]], ...]  # (listed resource type, its names), sorted by type

    def keeps(self, resource_type: str, name: str) -> bool:
        """Whether replay keeps a ConfigRecord setting or deleting `name` of a resource of
        `resource_type` (Kafka's name: "TOPIC", "BROKER", ...)."""
        if resource_type in self.keep_all:
            return True
        for rtype, defined in self.names:
            if rtype == resource_type:
                return name in defined
        return False
