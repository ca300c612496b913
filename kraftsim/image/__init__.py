"""kraftsim.image: metadata images and deltas, the loader, snapshots, the image writer.

    from kraftsim.image import MetadataDelta, MetadataImage, write_image, image_digest

    delta = MetadataDelta(MetadataImage())          # or any base image
    for entry in entries: delta.replay(entry)       # LogEntry or Payload
    image = delta.apply(provenance)                 # untouched components are reused
    records = write_image(image, "3.9-IV0", catalog, loss_handler=LossReport())

The layout follows Kafka's `org.apache.kafka.image` (lower rows know nothing of higher):

  pmap, intern, canonical, provenance, errors
               persistent hash map, shared per-partition values, canonical bytes,
               MetadataProvenance, the layer's errors
  components/  one image component and its delta each: features, cluster, topics
               (+ partition), configs, quotas, producer_ids, acls, scram, tokens, opaque
  image        MetadataImage
  delta        MetadataDelta: replay dispatch, finish_snapshot, apply
  bulk         replay_all's fast path for snapshot loads (topic and partition records)
  writer/      image_writer (an image as records at a metadata.version), loss (what a
               lossy write drops), mv_change (the image rewritten at a new MV)
  loader/      metadata_loader (MetadataLoader), loading (files into images), replay
               (a user's load request checked, then loaded), summary (what a load gives)
  publisher/   snapshot_generator, snapshot_emitter, snapshot_copies, snapshot_create
  verification/ digest, diff, verify (replay verification), report (its results and text)
  synthetic    synthetic cluster states for what-ifs and benchmarks

Every name other packages use is exported here; import it from `kraftsim.image`.
"""

from kraftsim.image.pmap import PMap
from kraftsim.image.provenance import EMPTY_PROVENANCE, MetadataProvenance
from kraftsim.image.errors import (
    ImageError,
    MetadataReplayError,
    UnsupportedMetadataVersionError,
    UnwritableMetadataException,
)
from kraftsim.image.components.acls import AclsImage, StandardAcl
from kraftsim.image.components.cluster import (
    BrokerRegistration,
    ClusterImage,
    ControllerRegistration,
    Endpoint,
    FeatureRange,
)
from kraftsim.image.components.configs import (
    BROKER,
    BROKER_LOGGER,
    CLIENT_METRICS,
    ConfigurationsImage,
    DroppedConfigs,
    GROUP,
    resource_type_name,
    TOPIC,
)
from kraftsim.image.components.features import ELR_FEATURE, features_from, FeaturesImage, KRAFT_VERSION
from kraftsim.image.components.opaque import key_text, OpaqueImage, OpaqueRecord
from kraftsim.image.components.partition import NO_LEADER, PartitionRegistration, RECOVERED, RECOVERING, registration_from_record
from kraftsim.image.components.producer_ids import ProducerIdsImage
from kraftsim.image.components.quotas import (
    MATCH_DEFAULT, MATCH_EXACT, MATCH_SPECIFIED, ClientQuotasImage, describe_quotas, entity_text, QuotaFilterError,
)
from kraftsim.image.components.scram import (describe_scram_users, mechanism_name, MECHANISMS, ScramCredential,
                                             ScramImage)
from kraftsim.image.components.tokens import DelegationToken, DelegationTokensImage
from kraftsim.image.components.topics import TopicImage, TopicsImage
from kraftsim.image.image import EMPTY_IMAGE, MetadataImage
from kraftsim.image.delta import image_from_records, MetadataDelta
from kraftsim.image.writer.image_writer import (
    iter_image_records,
    registry_for,
    write_image,
    WRITER_3X,
    WRITER_4X,
    WriterLine,
)
from kraftsim.image.writer.kafka_order import config_entry_ranks, node_id_order
from kraftsim.image.writer.target import elr_written, resolve_writer_line
from kraftsim.image.writer.loss import (ITEMS_SHOWN, TOPICS_SHOWN, Loss, LossGroup, LossReport, group_losses,
                                       largest_topics, named_items, raise_on_loss, split_loss_text)
from kraftsim.image.writer.mv_change import affected_components, MetadataVersionChange, rewrite_at_metadata_version
from kraftsim.image.loader.loading import (committed_batches, load_path, load_snapshot, LoadResult,
                                          SnapshotChoice, starts_without_snapshot)
from kraftsim.image.loader.metadata_loader import (
    AbortHandling,
    CommittedBatch,
    LoaderFault,
    LogDeltaManifest,
    Manifest,
    MetadataLoader,
    MvChangeHandling,
    SnapshotManifest,
    TransactionState,
)
from kraftsim.image.loader.replay import LoadRequestError, replay_path
from kraftsim.image.loader.summary import (
    TEXT_LIMIT, broker_state, configs_dropped_line, image_summary, load_summary, mv_names, summary_lines,
)
from kraftsim.image.publisher.snapshot_create import (
    advertised_metadata_version, advertised_ranges, create_snapshot, infer_release as infer_writer_release,
    output_problem as snapshot_output_problem, release_for_level, snapshot_contents,
)
from kraftsim.image.publisher.snapshot_emitter import (
    EmitResult,
    kraft_header_records,
    loader_header_records,
    RetentionSettings,
    SnapshotCreationError,
    SnapshotEmitter,
)
from kraftsim.image.publisher.snapshot_copies import SnapshotCopies
from kraftsim.image.publisher.snapshot_generator import (
    BUILDER_DEFAULTS,
    SHARED_SERVER_DEFAULTS,
    SnapshotFault,
    SnapshotGenerator,
    SnapshotTriggers,
)
from kraftsim.image.verification.diff import ABSENT, Change, diff_images, diff_text, show
from kraftsim.image.verification.digest import (
    DigestCache, component_digests, image_digest, image_digest_with_provenance, image_digests,
)
from kraftsim.image.verification.report import render_directory, render_replicas, render_roundtrip
from kraftsim.image.verification.verify import (
    snapshots_against_log,
    verify_directory,
    verify_replicas,
    verify_roundtrip,
)

__all__ = [
    "NO_LEADER",
    "ITEMS_SHOWN",
    "TOPICS_SHOWN",
    "LoadRequestError",
    "TEXT_LIMIT",
    "broker_state",
    "configs_dropped_line",
    "image_summary",
    "load_summary",
    "mv_names",
    "replay_path",
    "summary_lines",
    "ABSENT",
    "AbortHandling",
    "AclsImage",
    "BROKER",
    "BROKER_LOGGER",
    "BUILDER_DEFAULTS",
    "BrokerRegistration",
    "CLIENT_METRICS",
    "Change",
    "ClientQuotasImage",
    "QuotaFilterError",
    "ClusterImage",
    "CommittedBatch",
    "ConfigurationsImage",
    "ControllerRegistration",
    "DelegationToken",
    "DelegationTokensImage",
    "DigestCache",
    "DroppedConfigs",
    "ELR_FEATURE",
    "EMPTY_IMAGE",
    "EMPTY_PROVENANCE",
    "Endpoint",
    "FeatureRange",
    "FeaturesImage",
    "GROUP",
    "ImageError",
    "KRAFT_VERSION",
    "LoadResult",
    "LoaderFault",
    "LogDeltaManifest",
    "Loss",
    "LossGroup",
    "LossReport",
    "MECHANISMS",
    "Manifest",
    "MetadataDelta",
    "MetadataImage",
    "MetadataLoader",
    "MetadataProvenance",
    "MetadataReplayError",
    "MetadataVersionChange",
    "MvChangeHandling",
    "OpaqueImage",
    "OpaqueRecord",
    "PMap",
    "PartitionRegistration",
    "ProducerIdsImage",
    "RECOVERED",
    "RECOVERING",
    "RetentionSettings",
    "SHARED_SERVER_DEFAULTS",
    "ScramCredential",
    "ScramImage",
    "SnapshotChoice",
    "SnapshotCopies",
    "SnapshotCreationError",
    "EmitResult",
    "SnapshotEmitter",
    "SnapshotFault",
    "SnapshotGenerator",
    "SnapshotManifest",
    "SnapshotTriggers",
    "StandardAcl",
    "TOPIC",
    "TopicImage",
    "TopicsImage",
    "TransactionState",
    "UnsupportedMetadataVersionError",
    "UnwritableMetadataException",
    "WRITER_3X",
    "WRITER_4X",
    "WriterLine",
    "affected_components",
    "committed_batches",
    "component_digests",
    "config_entry_ranks",
    "node_id_order",
    "create_snapshot",
    "diff_images",
    "diff_text",
    "describe_quotas",
    "MATCH_DEFAULT",
    "MATCH_EXACT",
    "MATCH_SPECIFIED",
    "describe_scram_users",
    "entity_text",
    "features_from",
    "image_digest",
    "image_digests",
    "image_digest_with_provenance",
    "image_from_records",
    "iter_image_records",
    "elr_written",
    "resolve_writer_line",
    "key_text",
    "largest_topics",
    "named_items",
    "kraft_header_records",
    "load_path",
    "load_snapshot",
    "starts_without_snapshot",
    "loader_header_records",
    "mechanism_name",
    "group_losses",
    "raise_on_loss",
    "registration_from_record",
    "registry_for",
    "release_for_level",
    "infer_writer_release",
    "advertised_metadata_version",
    "advertised_ranges",
    "render_directory",
    "render_replicas",
    "render_roundtrip",
    "resource_type_name",
    "rewrite_at_metadata_version",
    "show",
    "snapshot_contents",
    "snapshot_output_problem",
    "snapshots_against_log",
    "split_loss_text",
    "verify_directory",
    "verify_replicas",
    "verify_roundtrip",
    "write_image",
]
