"""What an image writer drops when the target metadata.version cannot represent it.

Kafka's writer calls `handleLoss(String)` with a short summary ("the online log directories
of one or more brokers") and by default throws. kraftsim's writer calls a loss handler with
a `Loss` that also names the kind of data and the exact entity, so a what-if can list
everything a downgrade would drop, not just Kafka's first summary string.

- `raise_on_loss` (the default) raises UnwritableMetadataException with Kafka's text at the
  first loss Kafka would report.
- `LossReport` collects every Loss; `report.summaries()` gives Kafka's strings.

A Loss with `kafka_reported=False` is data Kafka drops *silently* (ELR fields when the ELR
feature is off); the default handler lets it pass, as Kafka does, but a report lists it.
`path` locates the dropped data in the image, so tests (and tools) can compute "the image
minus what was reported" independently of the writer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Sequence

from kraftsim.image.errors import UnwritableMetadataException, unwritable_text


@dataclass(frozen=True)
class Loss:
    """One dropped item."""

    kind: str  # what was dropped, e.g. "broker log dirs"
    entity: str  # whose, e.g. "broker 1"
    summary: str  # Kafka's loss string (or kraftsim's, where Kafka has none)
    metadata_version: str  # the version string of the target metadata.version
    path: tuple[object, ...] = ()  # where in the image: ("cluster", "brokers", 1, "directories")
    kafka_reported: bool = True
    version_text: str = "metadata.version"  # how the writer's release names the version in its text

    @property
    def kafka_text(self) -> str:
        """Kafka's UnwritableMetadataException message for this loss."""
        return unwritable_text(self.metadata_version, self.summary, self.version_text)

    @property
    def text(self) -> str:
        return f"{self.kind}: {self.entity}"


def split_loss_text(text: str) -> tuple[str, str]:
    """(kind, entity) of a `Loss.text` line, as results and reports carry them."""
    kind, _, entity = text.partition(": ")
    return kind, entity


LossHandler = Callable[[Loss], None]


def raise_on_loss(loss: Loss) -> None:
    """Kafka's default: any reportable loss is fatal."""
    if loss.kafka_reported:
        raise UnwritableMetadataException(loss.metadata_version, loss.summary, loss.version_text)


@dataclass(frozen=True)
class LossRule:
    """One kind of data a target metadata.version may be unable to hold: the capability it
    needs (None: decided elsewhere, e.g. by a record type's gate or a feature), and what a
    Loss of it says."""

    kind: str
    summary: str  # Kafka's loss string (kraftsim's where Kafka has none); "" when built per image
    capability: str | None = None
    kafka_reported: bool = True


# What each image component can lose, in Kafka's writing order (the writers in
# writer/components name these; nothing else decides what a metadata.version cannot hold).
FEATURE_LEVELS = LossRule("feature level", "", "metadata_version_record")
BROKER_IN_CONTROLLED_SHUTDOWN = LossRule("broker in-controlled-shutdown state",
                                         "the inControlledShutdown state of one or more brokers",
                                         "in_controlled_shutdown")
BROKER_MIGRATING_ZK = LossRule("broker isMigratingZkBroker state",
                               "the isMigratingZkBroker state of one or more brokers", "migration")
BROKER_LOG_DIRS = LossRule("broker log dirs", "the online log directories of one or more brokers",
                           "directory_assignment")
BROKER_CORDONED_LOG_DIRS = LossRule("broker cordoned log dirs", "the cordoned log directories of one or more brokers",
                                    "cordoned_log_dirs")
CONTROLLER_REGISTRATION = LossRule("controller registration", "controller registration data",
                                   "controller_registration")
REPLICA_DIRECTORIES = LossRule("replica directory assignment",
                               "the directory assignment state of one or more replicas", "directory_assignment")
#: ELR fields when the ELR feature is off: Kafka drops them without a word.
PARTITION_ELR_DISABLED = LossRule("partition ELR (ELR disabled)",
                                  "the eligible leader replicas of one or more partitions", kafka_reported=False)
PARTITION_ELR = LossRule("partition ELR", "the eligible leader replicas of one or more partitions", "elr")
SCRAM_CREDENTIALS = LossRule("SCRAM credential", "", "scram")
DELEGATION_TOKENS = LossRule("delegation token", "", "delegation_tokens")


def feature_levels_summary(names: Iterable[str]) -> str:
    """Kafka's text for finalized features a metadata.version without FeatureLevelRecord drops."""
    return "feature flag(s): " + ", ".join(sorted(names))


def scram_summary(users: Iterable[tuple[str, str]]) -> str:
    """Kafka's ScramImage loss string, `ScramImage({MECH:user, user},{...})`, from
    (mechanism enum name, user) pairs in writing order; mechanisms in the given order."""
    by_mechanism: dict[str, list[str]] = {}
    for mechanism, user in users:
        by_mechanism.setdefault(mechanism, []).append(user)
    text = "ScramImage({"
    for mechanism, names in by_mechanism.items():
        text += f"{mechanism}:" + ", ".join(names) + "},{"
    return text + "})"


def delegation_tokens_summary(token_ids: Iterable[str]) -> str:
    """Kafka's DelegationTokenImage loss string."""
    return "DelegationTokenImage(" + ", ".join(token_ids) + ")"


def unwritable_record_type(name: str) -> LossRule:
    """Records of a type the image does not model, whose gate the target metadata.version is below."""
    return LossRule(f"{name} record", f"records of type {name}")


@dataclass
class LossReport:
    """A loss handler that records every dropped item (use it as `loss_handler=report`)."""

    items: list[Loss] = field(default_factory=list)

    def __call__(self, loss: Loss) -> None:
        self.items.append(loss)

    def __len__(self) -> int:
        return len(self.items)

    def __bool__(self) -> bool:
        return bool(self.items)

    def __iter__(self) -> Iterator[Loss]:
        return iter(self.items)

    @property
    def lossless(self) -> bool:
        return not self.items

    def summaries(self) -> list[str]:
        """Kafka's loss strings, each once, in the order first met."""
        return self._reported_once(lambda loss: loss.summary)

    def kafka_texts(self) -> list[str]:
        """Kafka's whole UnwritableMetadataException message for each of `summaries()`."""
        return self._reported_once(lambda loss: loss.kafka_text)

    def _reported_once(self, text: Callable[[Loss], str]) -> list[str]:
        """`text` of each loss Kafka reports, each once, in the order first met."""
        return list(dict.fromkeys(text(loss) for loss in self.items if loss.kafka_reported))

    def by_kind(self) -> dict[str, list[str]]:
        """Entities per kind of loss, in writing order."""
        out: dict[str, list[str]] = {}
        for loss in self.items:
            out.setdefault(loss.kind, []).append(loss.entity)
        return out

    def lines(self) -> list[str]:
        """One line per dropped item: `<kind>: <entity>`."""
        return [loss.text for loss in self.items]

    def text(self) -> str:
        if not self.items:
            return "nothing was lost"
        return "\n".join(self.lines())


#: The entity of a partition's loss (`image_writer` names them so): the topic is the group.
_PARTITION_ENTITY = re.compile(r"topic (?P<topic>\S+) partition \d+")


def _natural(text: str) -> list[object]:
    """topic-2 before topic-10."""
    return [int(part) if part.isdecimal() else part for part in re.split(r"([0-9]+)", text)]  # ("²" is a digit)


@dataclass(frozen=True)
class LossGroup:
    """The items of one kind of loss, and for partitions of one topic: what an operator
    reads first (how much, of what, where) before the item list."""

    kind: str
    topic: str | None  # None: items that are not a topic's partitions (brokers, users, ...)
    entities: tuple[str, ...]

    @property
    def count(self) -> int:
        return len(self.entities)


#: A summary of losses (downgrade-report's text, the HTML report's tables) names this many
#: topics per kind, the biggest, before "and N more topic(s)"...
TOPICS_SHOWN = 10
#: ...and this many items of a kind that is not per topic (brokers, users) before "and N more".
ITEMS_SHOWN = 5


def named_items(entities: Sequence[str], limit: int = ITEMS_SHOWN) -> list[str]:
    """The first `limit` entities, then "and N more" for the rest."""
    return list(entities) if len(entities) <= limit else [*entities[:limit], f"and {len(entities) - limit} more"]


def largest_topics(groups: list[LossGroup], limit: int = TOPICS_SHOWN) -> list[LossGroup]:
    """The `limit` topic groups with the most items, kept in their given order: what a
    summary shows before "and N more topic(s)"."""
    chosen = set(sorted(range(len(groups)), key=lambda i: -groups[i].count)[:limit])
    return [g for i, g in enumerate(groups) if i in chosen]


def group_losses(items: Iterable[tuple[str, str]]) -> list[LossGroup]:
    """(kind, entity) pairs grouped by kind (in the order first met) and, for a partition's
    loss, by topic (in natural name order, after the kind's other items)."""
    kinds: dict[str, dict[str | None, list[str]]] = {}
    for kind, entity in items:
        match = _PARTITION_ENTITY.fullmatch(entity)
        kinds.setdefault(kind, {}).setdefault(match["topic"] if match else None, []).append(entity)
    out = []
    for kind, topics in kinds.items():
        order = sorted(topics, key=lambda t: (t is not None, _natural(t or "")))
        out += [LossGroup(kind, topic, tuple(sorted(topics[topic], key=_natural))) for topic in order]
    return out
