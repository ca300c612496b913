"""Kafka's KRaft metadata files, byte for byte: log segments, snapshots, bootstrap.checkpoint,
meta.properties, quorum-state and leader-epoch-checkpoint.

The modules each hold one file kind; `kafka-storage` is split as Kafka splits it
(storage_tool, formatter, bootstrap_builder, scram_parser, dynamic_voters, server_config,
format_common). This package re-exports the public API: import from `kraftsim.storage`.

The re-exports load on first use, so that a command reading one segment does not load the
formatter and everything it needs (start-up time of `kraftsim log dump`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kraftsim.lazy import exports

#: Every public name, by the module (of this package) that defines it.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "batchfile": (
        "MAX_BATCH_SIZE_BYTES", "BatchAccumulator", "Clock", "FileBatch", "RecordBatchTooLarge", "as_clock",
        "decode_file_batch", "iter_file_batches", "replay_clock",
    ),
    "bootstrap": (
        "BootstrapMetadata", "bootstrap_bytes", "bootstrap_from_records", "read_bootstrap", "read_bootstrap_dir",
        "write_bootstrap",
    ),
    "bootstrap_builder": ("api_message_and_version_string", "java_struct_string"),
    "damage": ("DamagedLog", "LoadLimit", "check_snapshot_epoch", "load_limit", "segment_batches"),
    "dirlock": ("cluster_lock", "locked_directory_around"),
    "dynamic_voters": ("DynamicVoter", "parse_dynamic_voters"),
    "format_common": ("FormatterError", "assign_directory_id", "default_clock"),
    "formatter": (
        "DYNAMIC_METADATA_VOTER_DIRECTORY", "FormatOptions", "FormatResult", "FormattedDirectory",
        "format_directories",
    ),
    "leader_epoch": (
        "leader_epoch_text", "parse_leader_epoch_checkpoint", "read_leader_epoch_checkpoint",
        "write_leader_epoch_checkpoint",
    ),
    "log": ("DEFAULT_SEGMENT_BYTES", "EpochEntry", "MetadataLog"),
    "meta_properties": (
        "MetaProperties", "MetaPropertiesFile", "meta_properties_text", "read_meta_properties",
        "write_meta_properties",
    ),
    "names": (
        "BOOTSTRAP_FILE", "BOOTSTRAP_SNAPSHOT_ID", "MAX_TOPIC_NAME_LENGTH", "METADATA_DIR_NAME", "PathKind", "SnapshotId",
        "SnapshotName", "internal_topics", "topic_name_error",
        "SnapshotState", "classify_path", "parse_segment_name", "parse_snapshot_name", "segment_file_name",
        "snapshot_file_name",
    ),
    "quorum_state": ("QuorumState", "parse_quorum_state", "read_quorum_state", "write_quorum_state"),
    "recovery": ("Damage", "RecoveryAction", "RecoveryKind"),
    "retention": ("RetentionPlan", "SegmentInfo", "SnapshotInfo", "apply_retention", "describe_log", "plan_retention"),
    "safepath": ("SymlinkRefused", "check_output", "check_writable", "refuse_symlinks", "safe_file_name"),
    "scram_parser": ("scram_record",),
    "segment": ("IndexEntry", "LogSegment"),
    "server_config": ("ServerConfig", "read_server_config", "unstable_versions_enabled", "validate_node_configs",
                      "group_coordinator_config", "OFFSETS_TOPIC_PARTITIONS", "OFFSETS_TOPIC_REPLICATION_FACTOR",
                      "STANDARD_AUTHORIZER"),
    "snapshot": (
        "SNAPSHOT_APPEND_RECORDS", "SnapshotFile", "SnapshotWriter", "latest_snapshot", "list_snapshots",
        "read_snapshot", "read_snapshot_header", "write_snapshot",
    ),
    "storage_tool": ("storage_format", "storage_info"),
    "view": (
        "MetadataLogView", "iter_file_entries", "iter_segment_batches", "metadata_dir_of", "metadata_files",
        "segment_paths",
    ),
}
#: Names kept for existing callers, defined elsewhere: Java's HashMap order and
#: Uuid.randomUuid live in kraftsim.javacompat.
_ELSEWHERE: dict[str, tuple[str, str]] = {
    "java_hash_order": ("kraftsim.javacompat", "hash_map_order"),
    "random_uuid": ("kraftsim.javacompat", "random_uuid"),
}
_MODULE_OF = {name: (f"kraftsim.storage.{module}", name) for module, names in _EXPORTS.items() for name in names}
_MODULE_OF.update(_ELSEWHERE)

__all__ = sorted(_MODULE_OF)

if TYPE_CHECKING:
    # The same names as mypy sees them (the `as` marks each a re-export); at run time each
    # loads on first use through __getattr__ below.
    from kraftsim.storage.batchfile import (
        BatchAccumulator as BatchAccumulator, Clock as Clock, FileBatch as FileBatch, MAX_BATCH_SIZE_BYTES as
        MAX_BATCH_SIZE_BYTES, RecordBatchTooLarge as RecordBatchTooLarge, as_clock as as_clock, decode_file_batch as
        decode_file_batch, iter_file_batches as iter_file_batches, replay_clock as replay_clock,
    )
    from kraftsim.storage.bootstrap import (
        BootstrapMetadata as BootstrapMetadata, bootstrap_bytes as bootstrap_bytes, bootstrap_from_records as
        bootstrap_from_records, read_bootstrap as read_bootstrap, read_bootstrap_dir as read_bootstrap_dir,
        write_bootstrap as write_bootstrap,
    )
    from kraftsim.storage.bootstrap_builder import (
        api_message_and_version_string as api_message_and_version_string, java_struct_string as java_struct_string,
    )
    from kraftsim.storage.damage import (
        DamagedLog as DamagedLog, LoadLimit as LoadLimit, check_snapshot_epoch as check_snapshot_epoch, load_limit
        as load_limit, segment_batches as segment_batches,
    )
    from kraftsim.storage.dirlock import cluster_lock as cluster_lock
    from kraftsim.storage.dirlock import locked_directory_around as locked_directory_around
    from kraftsim.storage.dynamic_voters import (
        DynamicVoter as DynamicVoter, parse_dynamic_voters as parse_dynamic_voters,
    )
    from kraftsim.storage.format_common import (
        FormatterError as FormatterError, assign_directory_id as assign_directory_id, default_clock as default_clock,
    )
    from kraftsim.storage.formatter import (
        DYNAMIC_METADATA_VOTER_DIRECTORY as DYNAMIC_METADATA_VOTER_DIRECTORY, FormatOptions as FormatOptions,
        FormatResult as FormatResult, FormattedDirectory as FormattedDirectory, format_directories as
        format_directories,
    )
    from kraftsim.storage.leader_epoch import (
        leader_epoch_text as leader_epoch_text, parse_leader_epoch_checkpoint as parse_leader_epoch_checkpoint,
        read_leader_epoch_checkpoint as read_leader_epoch_checkpoint, write_leader_epoch_checkpoint as
        write_leader_epoch_checkpoint,
    )
    from kraftsim.storage.log import (
        DEFAULT_SEGMENT_BYTES as DEFAULT_SEGMENT_BYTES, EpochEntry as EpochEntry, MetadataLog as MetadataLog,
    )
    from kraftsim.storage.meta_properties import (
        MetaProperties as MetaProperties, MetaPropertiesFile as MetaPropertiesFile, meta_properties_text as
        meta_properties_text, read_meta_properties as read_meta_properties, write_meta_properties as
        write_meta_properties,
    )
    from kraftsim.storage.names import (
        BOOTSTRAP_FILE as BOOTSTRAP_FILE, BOOTSTRAP_SNAPSHOT_ID as BOOTSTRAP_SNAPSHOT_ID,
        internal_topics as internal_topics, MAX_TOPIC_NAME_LENGTH as
        MAX_TOPIC_NAME_LENGTH, METADATA_DIR_NAME as METADATA_DIR_NAME, PathKind as PathKind, SnapshotId as
        SnapshotId, SnapshotName as SnapshotName, SnapshotState as SnapshotState, classify_path as classify_path,
        parse_segment_name as parse_segment_name, parse_snapshot_name as parse_snapshot_name, segment_file_name as
        segment_file_name, snapshot_file_name as snapshot_file_name, topic_name_error as topic_name_error,
    )
    from kraftsim.storage.quorum_state import (
        QuorumState as QuorumState, parse_quorum_state as parse_quorum_state, read_quorum_state as
        read_quorum_state, write_quorum_state as write_quorum_state,
    )
    from kraftsim.storage.recovery import (
        Damage as Damage, RecoveryAction as RecoveryAction, RecoveryKind as RecoveryKind,
    )
    from kraftsim.storage.retention import (
        RetentionPlan as RetentionPlan, SegmentInfo as SegmentInfo, SnapshotInfo as SnapshotInfo, apply_retention as
        apply_retention, describe_log as describe_log, plan_retention as plan_retention,
    )
    from kraftsim.storage.safepath import (
        SymlinkRefused as SymlinkRefused, check_output as check_output, check_writable as check_writable,
        refuse_symlinks as refuse_symlinks, safe_file_name as safe_file_name,
    )
    from kraftsim.storage.scram_parser import scram_record as scram_record
    from kraftsim.storage.segment import IndexEntry as IndexEntry, LogSegment as LogSegment
    from kraftsim.storage.server_config import (
        OFFSETS_TOPIC_PARTITIONS as OFFSETS_TOPIC_PARTITIONS, OFFSETS_TOPIC_REPLICATION_FACTOR as
        OFFSETS_TOPIC_REPLICATION_FACTOR, STANDARD_AUTHORIZER as STANDARD_AUTHORIZER, ServerConfig as ServerConfig, group_coordinator_config as
        group_coordinator_config, read_server_config as read_server_config, unstable_versions_enabled as
        unstable_versions_enabled, validate_node_configs as validate_node_configs,
    )
    from kraftsim.storage.snapshot import (
        SNAPSHOT_APPEND_RECORDS as SNAPSHOT_APPEND_RECORDS, SnapshotFile as SnapshotFile, SnapshotWriter as
        SnapshotWriter, latest_snapshot as latest_snapshot, list_snapshots as list_snapshots, read_snapshot as
        read_snapshot, read_snapshot_header as read_snapshot_header, write_snapshot as write_snapshot,
    )
    from kraftsim.storage.storage_tool import storage_format as storage_format, storage_info as storage_info
    from kraftsim.storage.view import (
        MetadataLogView as MetadataLogView, iter_file_entries as iter_file_entries, iter_segment_batches as
        iter_segment_batches, metadata_dir_of as metadata_dir_of, metadata_files as metadata_files, segment_paths as
        segment_paths,
    )
    from kraftsim.javacompat import hash_map_order as java_hash_order
    from kraftsim.javacompat import random_uuid as random_uuid

__getattr__ = exports(__name__, _MODULE_OF)
