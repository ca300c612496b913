"""`bootstrap.checkpoint`: the records a new cluster starts from (metadata.version and features).

(From Kafka 4.4 they are in the zero checkpoint instead; `read_bootstrap_dir` reads both.)

The file sits in the root of every formatted log directory. It has a snapshot's layout
with epoch 0: a header batch (LastContainedLogTimestamp 0), the records, a footer batch.
Kafka's BatchFileWriter appends the records one by one, so they share one data batch
while it fits in 8 MiB; each batch's timestamp is the clock when the batch is started.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple, Sequence

from kraftsim.errors import KraftsimError, LogFileError
from kraftsim.protocol.entries import LogEntry, Payload
from kraftsim.protocol.registry import Registry, default_registry
from kraftsim.storage.batchfile import (
    MAX_BATCH_SIZE_BYTES, BatchAccumulator, Clock, as_clock,
)
from kraftsim.storage.fileio import atomic_write
from kraftsim.storage.names import (
    BOOTSTRAP_FILE, BOOTSTRAP_SNAPSHOT_ID, BOOTSTRAP_TMP_FILE, METADATA_DIR_NAME, snapshot_file_name,
)
from kraftsim.storage.snapshot import control_payload, read_snapshot

METADATA_VERSION_FEATURE = "metadata.version"


class BootstrapMetadata(NamedTuple):
    """The bootstrap records, the metadata.version level they set, and where they came from."""

    records: list[LogEntry]
    metadata_version_level: int
    source: str

    def payloads(self) -> list[Payload]:
        return [Payload(e.record_type, e.version, e.message) for e in self.records]

    def feature_levels(self) -> dict[str, int]:
        """Every FeatureLevelRecord's level by feature name (the last record of a name wins)."""
        return {e.message.name: e.message.feature_level for e in self.records if e.record_type.name == "FeatureLevelRecord"}


def bootstrap_from_records(records: list[LogEntry], source: str) -> BootstrapMetadata:
    """Kafka's BootstrapMetadata.fromRecords: the last metadata.version FeatureLevelRecord wins; none is an error."""
    level: int | None = None
    for e in records:
        if e.record_type.name == "FeatureLevelRecord" and e.message.name == METADATA_VERSION_FEATURE:
            level = e.message.feature_level
    if level is None:
        raise KraftsimError(
            f"No FeatureLevelRecord for {METADATA_VERSION_FEATURE} was found in the bootstrap metadata from {source}"
        )
    return BootstrapMetadata(records, level, source)


def read_bootstrap(path: Path | str, registry: Registry | None = None) -> BootstrapMetadata:
    """Read a bootstrap.checkpoint: the records of its non-control batches, checked as Kafka does,
    and read as the snapshot it is (header first, footer last, offsets from 0 without gap,
    every batch at epoch 0), so that a damaged file is refused rather than half read."""
    p = Path(path)
    snap = read_snapshot(p, registry)
    wrong = next((fb for fb in snap.batches if fb.batch.partition_leader_epoch != BOOTSTRAP_SNAPSHOT_ID.epoch), None)
    if wrong is not None:
        raise LogFileError(str(p), wrong.batch.base_offset, f"batch epoch {wrong.batch.partition_leader_epoch}, but "
                           f"a bootstrap file's batches carry epoch {BOOTSTRAP_SNAPSHOT_ID.epoch}", wrong.position)
    records: list[LogEntry] = list(snap.data_entries())
    return bootstrap_from_records(records, f"the binary bootstrap metadata file: {p}")


def read_bootstrap_dir(log_dir: Path | str, registry: Registry | None = None) -> BootstrapMetadata | None:
    """The bootstrap of a formatted log directory, or None when it has none (Kafka then
    bootstraps at the latest production metadata.version: a versions-layer decision).

    Kafka 4.4's format (KIP-1170) puts the bootstrap records into the zero checkpoint
    `__cluster_metadata-0/00000000000000000000-0000000000.checkpoint`; a 4.4 node reads them
    there first, and a bootstrap.checkpoint written by an older tool after that. A zero
    checkpoint without data records (a dynamic quorum formatted before 4.4) holds none."""
    zero = Path(log_dir) / METADATA_DIR_NAME / snapshot_file_name(BOOTSTRAP_SNAPSHOT_ID)
    if zero.is_file():
        records = list(read_snapshot(zero, registry).data_entries())
        if records:
            return bootstrap_from_records(records, f"the bootstrap snapshot {zero}")
    p = Path(log_dir) / BOOTSTRAP_FILE
    return read_bootstrap(p, registry) if p.exists() else None


def bootstrap_bytes(records: Sequence[Payload], *, time_ms: int | Clock, registry: Registry | None = None,
                    max_batch_bytes: int = MAX_BATCH_SIZE_BYTES) -> bytes:
    """The exact bytes Kafka's BatchFileWriter writes for these records and clock."""
    registry = registry or default_registry()
    acc = BatchAccumulator(epoch=0, clock=as_clock(time_ms), max_batch_bytes=max_batch_bytes)
    acc.append_control([control_payload(registry, "SnapshotHeaderRecord", version=0, last_contained_log_timestamp=0)])
    for p in records:
        acc.append([p])  # BatchFileWriter appends one record at a time
    acc.append_control([control_payload(registry, "SnapshotFooterRecord", version=0)])
    return b"".join(acc.drain(force=True))


def write_bootstrap(log_dir: Path | str, records: Sequence[Payload], *, time_ms: int | Clock,
                    registry: Registry | None = None, fsync: bool = True) -> Path:
    """Write `<log_dir>/bootstrap.checkpoint` through `bootstrap.checkpoint.tmp` and an atomic move."""
    d = Path(log_dir)
    if not d.is_dir():
        raise KraftsimError(f"No such directory as {d}")
    data = bootstrap_bytes(records, time_ms=time_ms, registry=registry)
    tmp = d / BOOTSTRAP_TMP_FILE
    if tmp.exists():
        os.unlink(tmp)
    target = d / BOOTSTRAP_FILE
    atomic_write(target, data, tmp_path=tmp, fsync=fsync)
    return target
