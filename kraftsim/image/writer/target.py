"""What an image is written to: a metadata.version of a catalog, the Kafka release line
whose writer to imitate, and where losses go.

Every component writer (writer/components) receives one WriteTarget and asks it which
record versions to write, whether the metadata.version holds a kind of data (the rules
of loss.py), and reports what it drops through it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from kraftsim.image.components.features import FeaturesImage
from kraftsim.image.writer.kafka_order import HASH_MAP, PERSISTENT
from kraftsim.image.writer.loss import Loss, LossHandler, LossRule
from kraftsim.protocol.registry import Registry, RecordType
from kraftsim.versions import Catalog, MetadataVersion


@dataclass(frozen=True)
class WriterLine:
    """Which Kafka line's image writer to imitate where the lines differ (kafka-facts §9)."""

    name: str
    zk_migration_state_record: bool  # 3.x: ZkMigrationStateRecord after the features
    elr_gate: str  # "metadata.version" (3.x/C0) or "feature" (4.x)
    topics_map: str = PERSISTENT  # "persistent" (3.6+) or "hash_map" (3.3-3.5): the topics' order
    broker_features_rehashed: bool = False  # 3.x: a broker's features in HashMap order, not the record's
    version_text: str = "metadata.version"  # its loss text's name for the version ("metadata version" 3.4-3.7)

    @classmethod
    def from_catalog(cls, catalog: Catalog) -> "WriterLine":
        """The line the catalog's release follows, read from its policies."""
        return cls(
            name=f"release {catalog.release.name}",
            zk_migration_state_record=catalog.policy("snapshot_zk_migration_state") == "write",
            elr_gate=catalog.policy("elr_fields_gate"),
            topics_map=catalog.policy("image_topics_map"),
            broker_features_rehashed=catalog.policy("broker_features_order") == HASH_MAP,
            version_text=catalog.policy("unwritable_version_text"),
        )


WRITER_3X = WriterLine("3.x", zk_migration_state_record=True, elr_gate="metadata.version",
                       broker_features_rehashed=True)
WRITER_4X = WriterLine("4.x", zk_migration_state_record=False, elr_gate="feature")


def resolve_writer_line(writer_line: WriterLine | str | None, catalog: Catalog) -> WriterLine:
    """None: the catalog's release line; "3.x"/"4.x"; or a release name such as "3.6"."""
    if writer_line is None:
        return WriterLine.from_catalog(catalog)
    if isinstance(writer_line, WriterLine):
        return writer_line
    if writer_line == "3.x":
        return WRITER_3X
    if writer_line == "4.x":
        return WRITER_4X
    return WriterLine.from_catalog(catalog.at_release(writer_line))


@dataclass(frozen=True)
class WriteTarget:
    """One write of an image: the catalog and metadata.version, the writer line, the record
    registry, the loss handler, and the caller's options (see write_image)."""

    catalog: Catalog
    mv: MetadataVersion
    line: WriterLine
    registry: Registry
    handle: LossHandler
    elr_on: bool = False  # ELR fields are written at all (see elr_written)
    read_only: bool = False
    config_type_hashes: Mapping[int, int] | None = None
    config_entry_ranks: Mapping[tuple[int, str], int] | None = None

    def supports(self, capability: str) -> bool:
        return self.catalog.supports(capability, self.mv)

    def holds(self, rule: LossRule) -> bool:
        """The metadata.version can write what `rule` is about (a rule without a capability: always)."""
        return rule.capability is None or self.catalog.supports(rule.capability, self.mv)

    def record(self, name: str) -> tuple[RecordType, int]:
        """A record type of the registry and the version the metadata.version writes it at."""
        return self.registry[name], self.catalog.record_version(name, self.mv)

    def lose(self, rule: LossRule, entity: str, path: tuple[object, ...], summary: str = "") -> None:
        """Report one dropped item (`summary`: Kafka's text when the rule's depends on the image)."""
        self.handle(Loss(rule.kind, entity, summary or rule.summary, self.mv.version, path, rule.kafka_reported,
                         self.line.version_text))


def elr_written(elr_enabled: bool | None, line: WriterLine, features: FeaturesImage, catalog: Catalog,
                mv: MetadataVersion) -> bool:
    """Whether ELR fields are written at all: the caller's choice, else the writer line's gate
    (4.x: the eligible.leader.replicas.version feature; 3.x: the metadata.version)."""
    if elr_enabled is not None:
        return elr_enabled
    if line.elr_gate == "feature":
        return features.is_elr_enabled()
    return catalog.supports("elr", mv)
