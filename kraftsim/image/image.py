"""MetadataImage: the whole metadata state at one point of the log, as an immutable value.

One field per Kafka image component, plus `opaque` for record types the image does not
model, plus the provenance. Components are shared between successive images whenever a
delta did not touch them, and inside components the persistent maps share everything a
delta did not change.
"""

from __future__ import annotations

import msgspec

from kraftsim.image.components.acls import EMPTY_ACLS, AclsImage
from kraftsim.image.components.cluster import EMPTY_CLUSTER, ClusterImage
from kraftsim.image.components.configs import EMPTY_CONFIGS, ConfigurationsImage
from kraftsim.image.components.features import EMPTY_FEATURES, FeaturesImage
from kraftsim.image.components.opaque import EMPTY_OPAQUE, OpaqueImage
from kraftsim.image.components.producer_ids import EMPTY_PRODUCER_IDS, ProducerIdsImage
from kraftsim.image.provenance import EMPTY_PROVENANCE, MetadataProvenance
from kraftsim.image.components.quotas import EMPTY_CLIENT_QUOTAS, ClientQuotasImage
from kraftsim.image.components.scram import EMPTY_SCRAM, ScramImage
from kraftsim.image.components.tokens import EMPTY_DELEGATION_TOKENS, DelegationTokensImage
from kraftsim.image.components.topics import EMPTY_TOPICS, TopicsImage

COMPONENTS = ("features", "cluster", "topics", "configs", "client_quotas", "producer_ids", "acls", "scram",
              "delegation_tokens", "opaque")


class MetadataImage(msgspec.Struct, frozen=True, gc=False):
    """Everything a node knows from the metadata log. Compare images with ==, digest() or diff()."""

    provenance: MetadataProvenance = EMPTY_PROVENANCE
    features: FeaturesImage = EMPTY_FEATURES
    cluster: ClusterImage = EMPTY_CLUSTER
    topics: TopicsImage = EMPTY_TOPICS
    configs: ConfigurationsImage = EMPTY_CONFIGS
    client_quotas: ClientQuotasImage = EMPTY_CLIENT_QUOTAS
    producer_ids: ProducerIdsImage = EMPTY_PRODUCER_IDS
    acls: AclsImage = EMPTY_ACLS
    scram: ScramImage = EMPTY_SCRAM
    delegation_tokens: DelegationTokensImage = EMPTY_DELEGATION_TOKENS
    opaque: OpaqueImage = EMPTY_OPAQUE

    def is_empty(self) -> bool:
        """Kafka's isEmpty(): every component empty (the cluster counts brokers only)."""
        return all(getattr(self, c).is_empty() for c in COMPONENTS)

    def same_content(self, other: "MetadataImage") -> bool:
        """Equal metadata, whatever the provenance."""
        return all(getattr(self, c) == getattr(other, c) for c in COMPONENTS)

    def with_provenance(self, provenance: MetadataProvenance) -> "MetadataImage":
        return msgspec.structs.replace(self, provenance=provenance)

    @property
    def metadata_version(self) -> int | None:
        """The finalized metadata.version level, None if none is finalized."""
        return self.features.metadata_version

    def summary(self) -> dict[str, object]:
        """Counts per component, for logs and tests."""
        return {
            "metadata.version": self.features.metadata_version,
            "features": dict(self.features.finalized),
            "brokers": sorted(self.cluster.brokers),
            "controllers": sorted(self.cluster.controllers),
            "topics": len(self.topics.by_id),
            "partitions": self.topics.partition_count(),
            "config resources": len(self.configs.resources),
            "client quota entities": len(self.client_quotas.entities),
            "next producer id": self.producer_ids.next_producer_id,
            "acls": len(self.acls.acls),
            "scram credentials": len(self.scram.credentials),
            "delegation tokens": len(self.delegation_tokens.tokens),
            "opaque records": len(self.opaque.records),
        }


EMPTY_IMAGE = MetadataImage()
