"""Where `kafka-storage format` puts the bootstrap records, as each release's tool does.

- Up to Kafka 4.3 (policy `format_layout` = "bootstrap-file"): `bootstrap.checkpoint` in every
  formatted directory; a dynamic metadata directory also gets the zero checkpoint
  `__cluster_metadata-0/00000000000000000000-0000000000.checkpoint` with the KRaft control
  records only.
- Kafka 4.4 (KIP-1170, "zero-checkpoint"): no `bootstrap.checkpoint`. On a node with the
  controller role the metadata log directory gets the zero checkpoint holding the snapshot
  header (with the KRaftVersion and voters records when kraft.version is 1 or more), the
  bootstrap records (metadata.version first) and the footer; every other directory, and
  every directory of a broker, gets meta.properties only. The layout follows the tool's
  release, not the metadata.version it formats with.

Reading both layouts is storage.bootstrap.read_bootstrap_dir's job.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from kraftsim.protocol.entries import Payload
from kraftsim.protocol.registry import Registry, default_registry
from kraftsim.storage.batchfile import Clock
from kraftsim.storage.bootstrap import write_bootstrap
from kraftsim.storage.dynamic_voters import DynamicVoter, voters_record
from kraftsim.storage.names import BOOTSTRAP_SNAPSHOT_ID, METADATA_DIR_NAME
from kraftsim.storage.snapshot import control_payload, write_snapshot
from kraftsim.versions import Catalog

BOOTSTRAP_FILE_LAYOUT = "bootstrap-file"
ZERO_CHECKPOINT_LAYOUT = "zero-checkpoint"


def layout_of(catalog: Catalog) -> str:
    """The layout the tool of `catalog`'s release writes."""
    return catalog.policy("format_layout")


def write_bootstrap_for(catalog: Catalog, path: Path, *, metadata_dir: bool, dynamic: bool, controller: bool,
                        records: Sequence[Payload], voters: Mapping[int, DynamicVoter], kraft_version: int, listener_name: str,
                        clock: Clock, registry: Registry, fsync: bool) -> Path | None:
    """Write one formatted directory's bootstrap files; returns the zero checkpoint, if written.

    `metadata_dir`: the directory is the node's metadata log directory; `dynamic`: it is a
    dynamic (KIP-853) metadata directory; `controller`: the node has the controller role."""
    if layout_of(catalog) == ZERO_CHECKPOINT_LAYOUT:
        if not (metadata_dir and controller):
            return None
        return write_zero_checkpoint(path, voters, kraft_version, listener_name, clock=clock, registry=registry,
                                     fsync=fsync, records=records, voters_when_empty=False)
    write_bootstrap(path, records, time_ms=clock, registry=registry, fsync=fsync)
    if dynamic:
        return write_zero_checkpoint(path, voters, kraft_version, listener_name, clock=clock, registry=registry,
                                     fsync=fsync)
    return None


def write_zero_checkpoint(log_dir: Path, voters: Mapping[int, DynamicVoter], kraft_version: int,
                          controller_listener_name: str, *, clock: Clock, registry: Registry | None = None,
                          fsync: bool = True, records: Sequence[Payload] = (), voters_when_empty: bool = True) -> Path:
    """Formatter.writeDynamicQuorumSnapshot: `__cluster_metadata-0/00000000000000000000-0000000000.checkpoint`
    holding SnapshotHeaderRecord (LastContainedLogTimestamp = now), KRaftVersionRecord and VotersRecord
    when kraft.version ≥ 1, then `records` (Kafka 4.4's bootstrap records; none before), and the footer."""
    registry = registry or default_registry()
    header: list[Payload] = []
    if kraft_version >= 1:
        header.append(control_payload(registry, "KRaftVersionRecord", version=0, k_raft_version=kraft_version))
        if voters or voters_when_empty:  # Kafka 4.4 leaves an empty voter set out (-N)
            header.append(voters_record(voters, controller_listener_name, registry))
    snap_dir = log_dir / METADATA_DIR_NAME
    snap_dir.mkdir(parents=True, exist_ok=True)
    last_contained = clock()
    return write_snapshot(snap_dir, BOOTSTRAP_SNAPSHOT_ID, list(records), last_contained_log_timestamp=last_contained,
                          time_ms=clock, header_records=header, registry=registry, fsync=fsync)
