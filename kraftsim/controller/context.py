"""ControllerContext: everything a controller rule may read when it decides.

Rules are pure functions of a context and a request (see `result.py`). The context holds
the committed metadata image plus the few facts that are not in the log: who this
controller is and what its software supports, the static voter list, the next offset a
write would get (Kafka uses it as the new broker epoch), the raft layer's kraft.version,
the virtual time, and the controller's static configuration.

`registry_of` and `metadata_version_of` are what every rule module reads from a context
besides the image: the record types of its catalog and its metadata.version.
"""

from __future__ import annotations

from typing import Mapping

import msgspec

from kraftsim.controller.replica_index import ReplicaIndex
from kraftsim.image import EMPTY_IMAGE, MetadataImage
from kraftsim.protocol.registry import Registry
from kraftsim.versions import Catalog, MetadataVersion, default_catalog

#: A supported range as nodes advertise it: (min, max), inclusive.
Range = tuple[int, int]
#: The config key of `ControllerConfig.min_insync_replicas` (topic, cluster and broker level).
MIN_INSYNC_REPLICAS = "min.insync.replicas"


class ControllerConfig(msgspec.Struct, frozen=True):
    """Static configuration of a controller (server.properties values it acts on)."""

    cluster_id: str = ""
    #: `min.insync.replicas` as statically configured (written as a cluster-level config
    #: when ELR is enabled and none is set).
    min_insync_replicas: int = 1
    default_replication_factor: int = 1
    num_partitions: int = 1
    #: broker.session.timeout.ms
    broker_session_timeout_ms: int = 9000
    #: metadata.max.idle.interval.ms (NoOpRecord cadence)
    max_idle_interval_ms: int = 500
    #: Behaviour chosen beyond Kafka's default (e.g. "kip-778"); empty = Kafka's behaviour.
    policies: frozenset[str] = frozenset()


class ControllerContext(msgspec.Struct, frozen=True):
    """The state a controller decision is made against. Build a new one per decision."""

    node_id: int
    #: This controller's software: feature name → supported (min, max). metadata.version included.
    supported: Mapping[str, Range]
    image: MetadataImage = EMPTY_IMAGE
    catalog: Catalog = msgspec.field(default_factory=default_catalog)
    config: ControllerConfig = ControllerConfig()
    #: `controller.quorum.voters` ids; empty for a dynamic quorum.
    static_voters: tuple[int, ...] = ()
    #: The offset the next appended record will get.
    next_write_offset: int = 0
    #: The raft layer's finalized kraft.version.
    kraft_version: int = 0
    #: Virtual time, milliseconds.
    now_ms: int = 0
    #: Partitions by replica role, kept by the controller's replay (answers only while it
    #: describes `image`'s topics; see `replica_index`). None: rules scan the image.
    replicas: ReplicaIndex | None = None

    @property
    def metadata_version(self) -> int | None:
        return self.image.metadata_version

    @property
    def finalized_level(self) -> int:
        """The metadata.version level, for rules that run only once it is finalized."""
        level = self.image.metadata_version
        if level is None:
            raise ValueError("no finalized metadata.version: activate the controller first")
        return level

    def has_policy(self, name: str) -> bool:
        return name in self.config.policies


def replica_index(ctx: ControllerContext) -> ReplicaIndex | None:
    """The context's index of partitions by replica role if it describes the context's image."""
    index = ctx.replicas
    return index if index is not None and index.ensure(ctx.image.topics) else None


def registry_of(ctx: ControllerContext) -> Registry:
    """The record types of the context's catalog (shipped ones plus a user catalog's)."""
    return ctx.catalog.record_registry()


def metadata_version_of(ctx: ControllerContext) -> MetadataVersion | None:
    """The finalized metadata.version as the catalog describes it; None before activation."""
    level = ctx.metadata_version
    return None if level is None else ctx.catalog.metadata_version(level)
