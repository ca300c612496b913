"""What replaying records reads of a node's software, and when two softwares replay them alike.

What a replay reads of its software, all of it (kraftsim.image: MetadataLoader,
MetadataDelta, FeaturesDelta, ConfigurationsDelta; SimNode._unsupported_in): the record registry that decodes the bytes
(records, versions, opaque types, decode errors); the metadata.version handling (KIP-778's
split and rewrite at a metadata.version change, done with the catalog); for a
FeatureLevelRecord of metadata.version the catalog's level (`mv_from_level`, or its
refusal), of kraft.version whether the release keeps it in the image; for a ConfigRecord
the release's replay filter; for a PartitionChangeRecord the release's merge of directories
(3.7.0 alone: policy partition_change_directories); for every finalized level (FeatureLevelRecord,
KRaftVersionRecord) whether the node supports it (the adopter asks itself: `BatchReads.levels`).
Every other record replays alike whatever the release: cluster, topic and partition,
producer id, ACL, quota, SCRAM, token and transaction records, control records (the raft
state, compared as for one software), and the provenance and manifest come from the batch.

The commit share (a batch adopted across softwares) and the snapshot share (a snapshot's
load adopted across softwares) both ask `replays_alike` of the records they would replay.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Iterable, NamedTuple, Sequence

from kraftsim.image import KRAFT_VERSION
from kraftsim.protocol.entries import LogEntry, Payload
from kraftsim.versions import FEATURE_NAME as MV_NAME, Catalog, VersionsError


class Replayer(NamedTuple):
    """What of a node's software its loader's replay reads (see the module docstring)."""

    catalog: Catalog
    registry: object  # (the protocol Registry the batch is decoded with: compared by identity)
    kip_778: bool


class BatchReads(NamedTuple):
    """What of its software a batch's replay reads: its FeatureLevelRecords and
    KRaftVersionRecords as (record type, feature, level) in record order, and whether it
    holds a ConfigRecord. Most batches read nothing (`NEUTRAL`)."""

    levels_set: tuple[tuple[str, str, int], ...] = ()
    configs: bool = False
    partition_changes: bool = False

    def levels(self) -> Iterable[tuple[str, int]]:
        """The (feature, level) pairs a node checks it supports before applying the batch,
        in order (SimNode._unsupported_in: kraft.version as its KRaftVersionRecord says,
        never as a FeatureLevelRecord)."""
        return ((f, lv) for t, f, lv in self.levels_set if t == "KRaftVersionRecord" or f != KRAFT_VERSION)


NEUTRAL = BatchReads()
PARTITION_CHANGES = BatchReads(partition_changes=True)


#: The record types whose replay reads the software (see the module docstring), but for
#: PartitionChangeRecord, which only the merge policy reads (most batches hold one).
READ_TYPES = frozenset({"FeatureLevelRecord", "KRaftVersionRecord", "ConfigRecord"})
CHANGE = "PartitionChangeRecord"
_record_type = attrgetter("record_type")


def record_type_names(records: Sequence[LogEntry | Payload]) -> set[str]:
    """The names of the record types in `records`: the types gathered in C first (a batch
    of a million-partition cluster holds up to 100,000 records, mostly of one type)."""
    return {t.name for t in set(map(_record_type, records))}


def reads_of_types(names: set[str]) -> BatchReads:
    """What a batch of records of these types, none of READ_TYPES, reads of the software."""
    return PARTITION_CHANGES if CHANGE in names else NEUTRAL


def batch_reads(records: Iterable[LogEntry | Payload]) -> BatchReads:
    """What replaying `records` (one batch's, decoded) reads of the software."""
    if isinstance(records, (list, tuple)):
        names = record_type_names(records)
        if READ_TYPES.isdisjoint(names):
            return reads_of_types(names)
    levels: list[tuple[str, str, int]] = []
    configs = changes = False
    for r in records:
        name = r.record_type.name
        if name == "FeatureLevelRecord":
            levels.append((name, r.message.name, r.message.feature_level))
        elif name == "KRaftVersionRecord":
            levels.append((name, KRAFT_VERSION, r.message.k_raft_version))
        elif name == "ConfigRecord":
            configs = True
        elif name == CHANGE:
            changes = True
    if not (levels or configs):
        return PARTITION_CHANGES if changes else NEUTRAL
    return BatchReads(tuple(levels), configs, changes)


def replays_alike(a: Replayer, b: Replayer, reads: BatchReads) -> bool:
    """Whether a batch reading `reads` replays under `b` as under `a` from the same loader
    state (the adopting node still checks it supports `reads.levels()`)."""
    if a.registry is not b.registry or a.kip_778 != b.kip_778:
        return False
    if reads.configs and a.catalog.config_replay_filter() != b.catalog.config_replay_filter():
        return False
    if reads.partition_changes and \
            a.catalog.policy("partition_change_directories") != b.catalog.policy("partition_change_directories"):
        return False
    for kind, feature, level in reads.levels_set:
        if kind != "FeatureLevelRecord":
            continue
        if feature == MV_NAME:
            if a.kip_778:
                return False  # (KIP-778's handling rewrites the image with its catalog)
            try:
                if a.catalog.mv_from_level(level).level != b.catalog.mv_from_level(level).level:
                    return False
            except VersionsError:
                return False
        elif feature == KRAFT_VERSION and \
                a.catalog.keeps_kraft_version_feature() != b.catalog.keeps_kraft_version_feature():
            return False
    return True


__all__ = ["NEUTRAL", "PARTITION_CHANGES", "READ_TYPES", "BatchReads", "Replayer", "batch_reads", "reads_of_types",
           "record_type_names", "replays_alike"]
