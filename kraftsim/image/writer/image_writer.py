"""The image writer: an image as the records of a snapshot at a given metadata.version.

Order (Kafka's MetadataImage.write, kafka-facts §6.4): features (the metadata.version
FeatureLevelRecord first, at version 0, then the other finalized features); on the 3.x
writer line a ZkMigrationStateRecord when the MV supports migration; brokers, then
controllers; each topic's TopicRecord followed by its PartitionRecords; configs; client
quotas; producer ids; ACLs; SCRAM credentials; delegation tokens; then records of types the
image does not model. Where Kafka iterates a hash map (features, registrations and their
lists, topics, config keys, quotas) the order is Kafka's (kafka_order.py); elsewhere entities
are sorted by key. Record versions come from the catalog.

Each component writes itself (writer/components, one module per component, as Kafka's
FeaturesImage.write, ClusterImage.write, ...); this module resolves the target and calls
them in that order. Every case where the target MV cannot represent something is one of
loss.py's rules and goes through the loss handler with Kafka's loss string. Version rules all come from the catalog's
capabilities and record gates; which release line's writer to imitate comes from the
catalog's policies (`snapshot_zk_migration_state`, `elr_fields_gate`) or `writer_line`.
"""

from __future__ import annotations

from itertools import chain
from typing import Iterator, Mapping

from kraftsim.image.image import COMPONENTS, MetadataImage
from kraftsim.image.writer.components import WRITERS
from kraftsim.image.writer.components.topics import TopicValues, write_values as write_topic_values
from kraftsim.image.writer.loss import LossHandler, raise_on_loss
from kraftsim.image.writer.target import (
    WRITER_3X, WRITER_4X, WriterLine, WriteTarget, elr_written, resolve_writer_line,
)
from kraftsim.protocol.batch_io import encode_values
from kraftsim.protocol.entries import Payload
from kraftsim.protocol.registry import Registry
from kraftsim.versions import Catalog, MVLike, default_catalog

__all__ = ["WRITER_3X", "WRITER_4X", "TopicValues", "WriterLine", "iter_image_records", "iter_image_values",
           "registry_for", "resolve_writer_line", "write_image"]

_WRITERS_IN_ORDER = tuple(WRITERS[name] for name in COMPONENTS)


def registry_for(catalog: Catalog) -> Registry:
    """Kept for callers not yet moved to `catalog.record_registry()`, which it calls."""
    return catalog.record_registry()


def iter_image_records(image: MetadataImage, metadata_version: MVLike, catalog: Catalog | None = None, *,
                       elr_enabled: bool | None = None, loss_handler: LossHandler | None = None,
                       writer_line: WriterLine | str | None = None,
                       registry: Registry | None = None, read_only: bool = False,
                       config_type_hashes: Mapping[int, int] | None = None,
                       config_entry_ranks: Mapping[tuple[int, str], int] | None = None) -> Iterator[Payload]:
    """The records of `image` written at `metadata_version`, lazily (see write_image).

    `read_only=True` is for callers that only read the records (encode them into a
    snapshot, replay them): the replica, ISR and directory lists of the PartitionRecords
    are then shared, one list per distinct value, instead of fresh for every partition.
    A snapshot writer holds a whole batch of records (8 MiB, ~75,000 of them) before it
    encodes them; without fresh lists to allocate, keep and free, writing a
    1,000,000-partition snapshot takes about a quarter less time. Never modify such records.
    """
    return chain.from_iterable(_component_writes(
        image, metadata_version, catalog, elr_enabled=elr_enabled, loss_handler=loss_handler,
        writer_line=writer_line, registry=registry, read_only=read_only,
        config_type_hashes=config_type_hashes, config_entry_ranks=config_entry_ranks))


def _component_writes(image: MetadataImage, metadata_version: MVLike, catalog: Catalog | None, *,
                      elr_enabled: bool | None, loss_handler: LossHandler | None,
                      writer_line: WriterLine | str | None, registry: Registry | None, read_only: bool,
                      config_type_hashes: Mapping[int, int] | None,
                      config_entry_ranks: Mapping[tuple[int, str], int] | None) -> Iterator[Iterator[Payload]]:
    """Each component's records, as its writer yields them; the target is resolved on first use,
    so a bad metadata.version is raised when the records are read, not when they are asked for.
    (Chained in C: a record passes through its component's generator only.)"""
    target = _target(image, metadata_version, catalog, elr_enabled=elr_enabled, loss_handler=loss_handler,
                     writer_line=writer_line, registry=registry, read_only=read_only,
                     config_type_hashes=config_type_hashes, config_entry_ranks=config_entry_ranks)
    for name, write in zip(COMPONENTS, _WRITERS_IN_ORDER):
        yield write(getattr(image, name), target)


def _target(image: MetadataImage, metadata_version: MVLike, catalog: Catalog | None, *,
            elr_enabled: bool | None, loss_handler: LossHandler | None, writer_line: WriterLine | str | None,
            registry: Registry | None, read_only: bool, config_type_hashes: Mapping[int, int] | None,
            config_entry_ranks: Mapping[tuple[int, str], int] | None) -> WriteTarget:
    cat = catalog if catalog is not None else default_catalog()
    mv = cat.metadata_version(metadata_version)
    line = resolve_writer_line(writer_line, cat)
    return WriteTarget(
        catalog=cat, mv=mv, line=line, registry=registry if registry is not None else cat.record_registry(),
        handle=loss_handler if loss_handler is not None else raise_on_loss,
        elr_on=elr_written(elr_enabled, line, image.features, cat, mv), read_only=read_only,
        config_type_hashes=config_type_hashes, config_entry_ranks=config_entry_ranks)


def iter_image_values(image: MetadataImage, metadata_version: MVLike, catalog: Catalog | None = None, *,
                      elr_enabled: bool | None = None, loss_handler: LossHandler | None = None,
                      writer_line: WriterLine | str | None = None, registry: Registry | None = None,
                      topic_values: TopicValues | None = None) -> Iterator[list[bytes]]:
    """The records of `iter_image_records` as their framed values (`encode_values`), in
    lists of consecutive records: what a snapshot writer encodes anyway, for writers that
    need nothing else. `topic_values` keeps the topics' values from one write to the next
    (topics.TopicValues): a partition that is the same object as at the last write is not
    encoded again."""
    target = _target(image, metadata_version, catalog, elr_enabled=elr_enabled, loss_handler=loss_handler,
                     writer_line=writer_line, registry=registry, read_only=True, config_type_hashes=None,
                     config_entry_ranks=None)
    for name, write in zip(COMPONENTS, _WRITERS_IN_ORDER):
        if name == "topics":
            yield from write_topic_values(image.topics, target, topic_values)
        else:
            payloads = list(write(getattr(image, name), target))
            if payloads:
                yield encode_values(payloads)


def write_image(image: MetadataImage, metadata_version: MVLike, catalog: Catalog | None = None, *,
                elr_enabled: bool | None = None, loss_handler: LossHandler | None = None,
                writer_line: WriterLine | str | None = None, registry: Registry | None = None,
                config_type_hashes: Mapping[int, int] | None = None,
                config_entry_ranks: Mapping[tuple[int, str], int] | None = None) -> list[Payload]:
    """The records of `image` at `metadata_version`, in Kafka's order, as Payloads.

    `metadata_version`: a level, a version string or a MetadataVersion of `catalog`.
    `elr_enabled`: write ELR fields (when non-empty); None derives it as the writer line
    does (4.x: finalized eligible.leader.replicas.version >= 1; 3.x: the MV's elr gate).
    `loss_handler`: called with a Loss for every dropped item; the default raises
    UnwritableMetadataException with Kafka's text; pass a LossReport to collect instead.
    `writer_line`: "3.x", "4.x", a release name, a WriterLine, or None for the catalog's.
    `config_type_hashes`: {resource type: identity hash of its ConfigResource.Type constant}
    in the JVM whose snapshot to reproduce; they decide Kafka's order of config resources,
    which are otherwise written sorted by (type, name) (see kafka_order.py).
    `config_entry_ranks`: with `config_type_hashes`, {(type, name): when the resource entered
    that JVM's map} (kafka_order.config_entry_ranks of the records the process replayed):
    resources that share a HashMap bucket are then written in that order, as Kafka's map
    keeps them, instead of by name. Every resource of the image needs a rank.
    """
    return list(iter_image_records(image, metadata_version, catalog, elr_enabled=elr_enabled,
                                   loss_handler=loss_handler, writer_line=writer_line, registry=registry,
                                   config_type_hashes=config_type_hashes, config_entry_ranks=config_entry_ranks))
