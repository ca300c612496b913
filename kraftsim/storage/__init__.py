"""Kafka's KRaft metadata files, byte for byte: log segments, snapshots, bootstrap.checkpoint,
meta.properties, quorum-state and leader-epoch-checkpoint.

The modules each hold one file kind; `kafka-storage` is split as Kafka splits it
(storage_tool, formatter, bootstrap_builder, scram_parser, dynamic_voters, server_config,
format_common). This package re-exports the public API: import from `kraftsim.storage`.

The re-exports load on first use, so that a command reading one segment does not load the
formatter and everything it needs (start-up time of `kraftsim log dump`).
"""

from __future__ import annotations

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
    "dirlock": ("cluster_lock",),
    "dynamic_voters": ("DynamicVoter", "parse_dynamic_voters"),
    "format_common": ("FormatterError", "default_clock"),
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
        "SnapshotName", "topic_name_error",
        "SnapshotState", "classify_path", "parse_segment_name", "parse_snapshot_name", "segment_file_name",
        "snapshot_file_name",
    ),
    "quorum_state": ("QuorumState", "parse_quorum_state", "read_quorum_state", "write_quorum_state"),
    "recovery": ("Damage", "RecoveryAction", "RecoveryKind"),
    "retention": ("RetentionPlan", "SegmentInfo", "SnapshotInfo", "apply_retention", "describe_log", "plan_retention"),
    "safepath": ("SymlinkRefused", "check_output", "check_writable", "refuse_symlinks", "safe_file_name"),
    "scram_parser": ("scram_record",),
    "segment": ("IndexEntry", "LogSegment"),
    "server_config": ("ServerConfig", "read_server_config", "unstable_versions_enabled", "validate_unstable_configs"),
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


__getattr__ = exports(__name__, _MODULE_OF)
