"""Kafka's KRaft metadata files, byte for byte: log segments, snapshots, bootstrap.checkpoint,
meta.properties, quorum-state and leader-epoch-checkpoint.

The modules each hold one file kind; `kafka-storage` is split as Kafka splits it
(storage_tool, formatter, bootstrap_builder, scram_parser, dynamic_voters, server_config,
format_common). This package re-exports the public API: import from `kraftsim.storage`.
"""

from kraftsim.storage.batchfile import (
    MAX_BATCH_SIZE_BYTES, BatchAccumulator, Clock, FileBatch, RecordBatchTooLarge, as_clock, decode_file_batch,
    iter_file_batches, replay_clock,
)
from kraftsim.storage.bootstrap import (
    BootstrapMetadata, bootstrap_bytes, bootstrap_from_records, read_bootstrap, read_bootstrap_dir, write_bootstrap,
)
from kraftsim.storage.bootstrap_builder import api_message_and_version_string, java_struct_string
from kraftsim.storage.dynamic_voters import DynamicVoter, parse_dynamic_voters
from kraftsim.storage.format_common import FormatterError, default_clock
# Java's HashMap order and Uuid.randomUuid live in kraftsim.javacompat; these names stay for existing callers.
from kraftsim.javacompat import hash_map_order as java_hash_order, random_uuid
from kraftsim.storage.formatter import (
    DYNAMIC_METADATA_VOTER_DIRECTORY, FormatOptions, FormatResult, FormattedDirectory, format_directories,
)
from kraftsim.storage.scram_parser import scram_record
from kraftsim.storage.server_config import ServerConfig, read_server_config
from kraftsim.storage.storage_tool import storage_format, storage_info
from kraftsim.storage.leader_epoch import (
    leader_epoch_text, parse_leader_epoch_checkpoint, read_leader_epoch_checkpoint, write_leader_epoch_checkpoint,
)
from kraftsim.storage.log import DEFAULT_SEGMENT_BYTES, EpochEntry, MetadataLog
from kraftsim.storage.meta_properties import (
    MetaProperties, MetaPropertiesFile, meta_properties_text, read_meta_properties, write_meta_properties,
)
from kraftsim.storage.names import (
    BOOTSTRAP_FILE, BOOTSTRAP_SNAPSHOT_ID, METADATA_DIR_NAME, PathKind, SnapshotId, SnapshotName, SnapshotState,
    classify_path, parse_segment_name, parse_snapshot_name, segment_file_name, snapshot_file_name,
)
from kraftsim.storage.quorum_state import QuorumState, parse_quorum_state, read_quorum_state, write_quorum_state
from kraftsim.storage.recovery import RecoveryAction, RecoveryKind
from kraftsim.storage.retention import (
    RetentionPlan, SegmentInfo, SnapshotInfo, apply_retention, describe_log, plan_retention,
)
from kraftsim.storage.segment import IndexEntry, LogSegment
from kraftsim.storage.snapshot import (
    SNAPSHOT_APPEND_RECORDS, SnapshotFile, SnapshotWriter, latest_snapshot, list_snapshots, read_snapshot,
    read_snapshot_header, write_snapshot,
)
from kraftsim.storage.view import (
    MetadataLogView, iter_file_entries, iter_segment_batches, metadata_dir_of, metadata_files, segment_paths,
)

from types import ModuleType as _ModuleType

__all__ = sorted(n for n, v in globals().items() if not n.startswith("_") and not isinstance(v, _ModuleType))
