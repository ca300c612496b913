"""MetadataDelta: records replayed on top of a base image, then applied into a new image.

As Kafka's MetadataDelta: one delta per component, created on first use; `apply()` reuses
every component no record touched. `finish_snapshot()` turns the delta into a full
replacement (what a snapshot load is): whatever the base held and the replayed records did
not mention is removed.

Records of types the image does not model (a user catalog's record types) go to the
opaque component. Begin/End/AbortTransactionRecord are refused with Kafka's `Unknown
metadata record type` text: the loader consumes them before they reach a delta.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Protocol, TypeVar

from kraftsim.errors import KraftsimError
from kraftsim.image.components.acls import AclsDelta
from kraftsim.image.bulk import replay_records
from kraftsim.image.components.cluster import ClusterDelta
from kraftsim.image.components.configs import ConfigurationsDelta, DroppedConfigs
from kraftsim.image.errors import MetadataReplayError
from kraftsim.image.components.features import FeaturesDelta
from kraftsim.gcpause import collector_paused
from kraftsim.image.image import EMPTY_IMAGE, MetadataImage
from kraftsim.image.components.opaque import OpaqueDelta
from kraftsim.image.components.partition import MERGE_RULES
from kraftsim.image.components.producer_ids import ProducerIdsDelta
from kraftsim.image.provenance import MetadataProvenance
from kraftsim.image.components.quotas import ClientQuotasDelta
from kraftsim.image.components.scram import ScramDelta
from kraftsim.image.components.tokens import DelegationTokensDelta
from kraftsim.image.components.topics import TopicsDelta, TopicsImage
from kraftsim.protocol.entries import LogEntry, Payload, PrebuiltPartition
from kraftsim.versions import Catalog, default_catalog

#: What a delta replays: a record read from a log, or one to write.
RecordLike = LogEntry | Payload
#: What `replay_all` also takes: a PartitionRecord the decoder built into its registration
#: (a loader replaying a snapshot: loading.load_snapshot, over `loader_batches()`).
BulkRecord = RecordLike | PrebuiltPartition

#: Record types the loader handles; a delta refuses them.
TRANSACTION_RECORDS = frozenset({"BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord"})
#: Record types replay accepts and ignores.
NO_OP_RECORDS = frozenset({"NoOpRecord", "ZkMigrationStateRecord"})


_C = TypeVar("_C")
_C_co = TypeVar("_C_co", covariant=True)


class _Applies(Protocol[_C_co]):
    """A component's delta: its new image on `apply()`."""

    def apply(self) -> _C_co: ...


class MetadataDelta:
    """Changes on top of `image`. Not thread-safe; use once, then `apply()`."""

    def __init__(self, image: MetadataImage = EMPTY_IMAGE, catalog: Catalog | None = None, *,
                 dropped_configs: DroppedConfigs | None = None):
        """`dropped_configs` counts the ConfigRecords the catalog's release ignores on replay."""
        self.image = image
        self.catalog = catalog if catalog is not None else default_catalog()
        self._dropped_configs = dropped_configs
        self._features: FeaturesDelta | None = None
        self._cluster: ClusterDelta | None = None
        self._topics: TopicsDelta | None = None
        self._configs: ConfigurationsDelta | None = None
        self._quotas: ClientQuotasDelta | None = None
        self._producer_ids: ProducerIdsDelta | None = None
        self._acls: AclsDelta | None = None
        self._scram: ScramDelta | None = None
        self._tokens: DelegationTokensDelta | None = None
        self._opaque: OpaqueDelta | None = None
        self._settled: TopicsImage | None = None  # the topics `apply()` gave, once `settle` let go of the changes
        self.records_replayed = 0

    # --- lazily created component deltas

    @property
    def features(self) -> FeaturesDelta:
        if self._features is None:
            self._features = FeaturesDelta(self.image.features, self.catalog)
        return self._features

    @property
    def cluster(self) -> ClusterDelta:
        if self._cluster is None:
            self._cluster = ClusterDelta(self.image.cluster)
        return self._cluster

    @property
    def topics(self) -> TopicsDelta:
        if self._topics is None:
            if self._settled is not None:
                raise MetadataReplayError("the topic changes of this delta were let go (MetadataDelta.settle)")
            self._topics = TopicsDelta(self.image.topics,
                                       MERGE_RULES[self.catalog.policy("partition_change_directories")])
        return self._topics

    @property
    def configs(self) -> ConfigurationsDelta:
        if self._configs is None:
            self._configs = ConfigurationsDelta(self.image.configs, self.catalog.config_replay_filter(),
                                                self._dropped_configs)
        return self._configs

    @property
    def client_quotas(self) -> ClientQuotasDelta:
        if self._quotas is None:
            self._quotas = ClientQuotasDelta(self.image.client_quotas)
        return self._quotas

    @property
    def producer_ids(self) -> ProducerIdsDelta:
        if self._producer_ids is None:
            self._producer_ids = ProducerIdsDelta(self.image.producer_ids)
        return self._producer_ids

    @property
    def acls(self) -> AclsDelta:
        if self._acls is None:
            self._acls = AclsDelta(self.image.acls)
        return self._acls

    @property
    def scram(self) -> ScramDelta:
        if self._scram is None:
            self._scram = ScramDelta(self.image.scram)
        return self._scram

    @property
    def delegation_tokens(self) -> DelegationTokensDelta:
        if self._tokens is None:
            self._tokens = DelegationTokensDelta(self.image.delegation_tokens)
        return self._tokens

    @property
    def opaque(self) -> OpaqueDelta:
        if self._opaque is None:
            self._opaque = OpaqueDelta(self.image.opaque)
        return self._opaque

    def metadata_version_changed(self) -> int | None:
        """The metadata.version level a FeatureLevelRecord set in this delta, if any."""
        return None if self._features is None else self._features.metadata_version_change

    # --- replay

    def replay(self, record: RecordLike) -> None:
        """Replay a LogEntry or a Payload (anything with record_type and message)."""
        record_type = record.record_type
        name = record_type.name
        handler = _HANDLERS.get(name)
        if handler is not None:
            handler(self, record.message)
        elif name in NO_OP_RECORDS:
            pass
        elif name in TRANSACTION_RECORDS or getattr(record, "control", False) or record_type.schema.kind != "metadata":
            raise MetadataReplayError(f"Unknown metadata record type {record_type.type_name}")
        else:
            self.opaque.replay(record_type, record.version, record.message)
        self.records_replayed += 1

    def replay_all(self, records: Iterable[BulkRecord],
                   on_error: Callable[[BulkRecord, KraftsimError], None] | None = None, *,
                   skip_control: bool = False) -> "MetadataDelta":
        """Replay every record in order: the same as `replay()` on each, in less time.

        TopicRecords and PartitionRecords, almost all of a snapshot, skip the per-record
        dispatch (bulk.py); every other record goes through `replay()`. The cycle
        collector is paused meanwhile (gcpause.py).

        `on_error(record, error)`: called when a record fails to replay; the record is
        skipped and replay goes on (what the loader does). Without it the error propagates.
        Errors raised by `records` itself (reading, decoding) always propagate. When
        `on_error` is called, `records_replayed` counts the records replayed before the failed one.

        `skip_control`: control records (a snapshot's header and footer) are left out, not refused.
        """
        with collector_paused():
            replay_records(self, records, on_error, skip_control=skip_control)
        return self

    def _remove_topic(self, m: object) -> None:
        name = self.topics.replay_remove_topic(m)
        self.configs.delete_topic(name)

    # --- finishing

    def finish_snapshot(self) -> None:
        """Remove whatever the base image holds that the replayed records did not mention."""
        self.features.finish_snapshot()
        self.cluster.finish_snapshot()
        self.topics.finish_snapshot()
        self.configs.finish_snapshot()
        self.client_quotas.finish_snapshot()
        self.producer_ids.finish_snapshot()
        self.acls.finish_snapshot()
        self.scram.finish_snapshot()
        self.delegation_tokens.finish_snapshot()
        self.opaque.finish_snapshot()

    def settle(self, applied: MetadataImage) -> None:
        """Let go of the topic changes of a delta already applied (giving `applied`) and
        published, which is kept only to be handed to more publishers (a commit another
        loader adopts).

        Why: a commit's delta holds a dict of changed partitions per changed topic (at a
        million partitions a broker restart changes 200,000), alive as long as the commit is
        kept, while the applied image holds the same registrations. Publishers read a
        delta's `image` and `metadata_version_changed()`, which stay, and `apply()` still
        gives `applied`'s topics. Reading `topics` afterwards (or replaying into the delta)
        is refused rather than answered with an empty delta."""
        if self._topics is not None and self._topics.changed:
            self._settled = applied.topics
            self._topics = None

    def apply(self, provenance: MetadataProvenance | None = None) -> MetadataImage:
        """The new image; components no record touched are the base image's own objects."""
        base = self.image

        def pick(delta: _Applies[_C] | None, current: _C) -> _C:
            return current if delta is None else delta.apply()

        return MetadataImage(
            provenance=base.provenance if provenance is None else provenance,
            features=pick(self._features, base.features),
            cluster=pick(self._cluster, base.cluster),
            topics=self._settled if self._settled is not None else pick(self._topics, base.topics),
            configs=pick(self._configs, base.configs),
            client_quotas=pick(self._quotas, base.client_quotas),
            producer_ids=pick(self._producer_ids, base.producer_ids),
            acls=pick(self._acls, base.acls),
            scram=pick(self._scram, base.scram),
            delegation_tokens=pick(self._tokens, base.delegation_tokens),
            opaque=pick(self._opaque, base.opaque),
        )


_HANDLERS: dict[str, Callable[[MetadataDelta, Any], object]] = {
    "RegisterBrokerRecord": lambda d, m: d.cluster.replay_register_broker(m),
    "UnregisterBrokerRecord": lambda d, m: d.cluster.replay_unregister_broker(m),
    "FenceBrokerRecord": lambda d, m: d.cluster.replay_fence(m, True),
    "UnfenceBrokerRecord": lambda d, m: d.cluster.replay_fence(m, False),
    "BrokerRegistrationChangeRecord": lambda d, m: d.cluster.replay_registration_change(m),
    "RegisterControllerRecord": lambda d, m: d.cluster.replay_register_controller(m),
    "UnregisterControllerRecord": lambda d, m: d.cluster.replay_unregister_controller(m),
    "TopicRecord": lambda d, m: d.topics.replay_topic(m),
    "PartitionRecord": lambda d, m: d.topics.replay_partition(m),
    "PartitionChangeRecord": lambda d, m: d.topics.replay_partition_change(m),
    "RemoveTopicRecord": MetadataDelta._remove_topic,
    "ClearElrRecord": lambda d, m: d.topics.replay_clear_elr(m),
    "ConfigRecord": lambda d, m: d.configs.replay_config(m),
    "FeatureLevelRecord": lambda d, m: d.features.replay_feature_level(m.name, m.feature_level),
    "ClientQuotaRecord": lambda d, m: d.client_quotas.replay_client_quota(m),
    "ProducerIdsRecord": lambda d, m: d.producer_ids.replay_producer_ids(m),
    "AccessControlEntryRecord": lambda d, m: d.acls.replay_acl(m),
    "RemoveAccessControlEntryRecord": lambda d, m: d.acls.replay_remove_acl(m),
    "UserScramCredentialRecord": lambda d, m: d.scram.replay_credential(m),
    "RemoveUserScramCredentialRecord": lambda d, m: d.scram.replay_remove_credential(m),
    "DelegationTokenRecord": lambda d, m: d.delegation_tokens.replay_token(m),
    "RemoveDelegationTokenRecord": lambda d, m: d.delegation_tokens.replay_remove_token(m),
}

def image_from_records(records: Iterable[RecordLike], *, base: MetadataImage = EMPTY_IMAGE, catalog: Catalog | None = None,
                       provenance: MetadataProvenance | None = None, snapshot: bool = False) -> MetadataImage:
    """Replay `records` on `base` in one delta (finish_snapshot first when `snapshot`)."""
    delta = MetadataDelta(base, catalog)
    delta.replay_all(records)
    if snapshot:
        delta.finish_snapshot()
    return delta.apply(provenance)
