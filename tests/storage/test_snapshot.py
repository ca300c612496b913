"""Snapshot files: names, Kafka's batch layout, exact rewrites of real snapshots, and the reader's checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.errors import KraftsimError, LogFileError
from kraftsim.protocol.batch import parse_batch, split_batches
from kraftsim.protocol.entries import Payload, encode_control_batch, encode_data_batch
from kraftsim.protocol.framing import encode_metadata_record
from kraftsim.storage import (
    BatchAccumulator, MetadataLog, RecordBatchTooLarge, SnapshotId, SnapshotState, SnapshotWriter, list_snapshots,
    parse_snapshot_name, read_snapshot, read_snapshot_header, replay_clock, snapshot_file_name, write_snapshot,
)
from kraftsim.storage.batchfile import records_size
from kraftsim.storage.names import parse_segment_name, segment_file_name
from kraftsim.storage.recovery import RecoveryKind

from tests.storage.conftest import REGISTRY, config_payload, feature_payload, noop_payload, oracle_paths, rel

SNAPSHOTS = [p for p in oracle_paths("*.checkpoint") if p.name != "bootstrap.checkpoint"]


# ---------------------------------------------------------------------------- names


def test_snapshot_names() -> None:
    sid = SnapshotId(12345, 7)
    assert snapshot_file_name(sid) == "00000000000000012345-0000000007.checkpoint"
    assert parse_snapshot_name("00000000000000012345-0000000007.checkpoint") == (sid, SnapshotState.FROZEN)
    assert parse_snapshot_name("00000000000000012345-0000000007.checkpoint.deleted") == (sid, SnapshotState.DELETED)
    assert parse_snapshot_name("00000000000000012345-0000000007-8243761.checkpoint.part") == (sid, SnapshotState.PART)
    for other in ("00000000000000012345.log", "00000000000000012345.index", "00000000000000012345.timeindex",
                  "00000000000000012345.snapshot", "leader-epoch-checkpoint", "partition.metadata",
                  "bootstrap.checkpoint", "0000000000012345-0000000007.checkpoint",
                  "00000000000000012345-0000000007.checkpointx", "00000000000000012345_0000000007.checkpoint"):
        assert parse_snapshot_name(other) is None, other
    assert segment_file_name(7) == "00000000000000000007.log"
    assert parse_segment_name("00000000000000000007.log") == 7
    assert parse_segment_name("00000000000000000007.index") is None
    assert parse_segment_name("7.log") is None


# ---------------------------------------------------------------------------- real snapshots


@pytest.mark.parametrize("path", SNAPSHOTS, ids=rel)
def test_oracle_snapshot_rewritten_byte_identically(path: Path, tmp_path: Path) -> None:
    snap = read_snapshot(path)
    assert snap.snapshot_id is not None
    extra_header = [Payload(e.record_type, e.version, e.message) for e in snap.header_entries[1:]]
    out = write_snapshot(tmp_path, snap.snapshot_id, snap.payloads(),
                         last_contained_log_timestamp=snap.last_contained_log_timestamp,
                         time_ms=replay_clock(snap.batch_timestamps), header_records=extra_header)
    assert out.name == path.name
    assert out.read_bytes() == path.read_bytes()


@pytest.mark.parametrize("path", SNAPSHOTS, ids=rel)
def test_oracle_snapshot_layout(path: Path) -> None:
    snap = read_snapshot(path)
    batches = [fb.batch for fb in snap.batches]
    assert batches[0].base_offset == 0
    assert all(b.partition_leader_epoch == snap.snapshot_id.epoch for b in batches)
    assert all(a.next_offset == b.base_offset for a, b in zip(batches, batches[1:]))
    assert batches[0].is_control and batches[-1].is_control
    assert not any(b.is_control for b in batches[1:-1])
    # every batch is stamped with the clock when it was started: not the header's timestamp
    assert all(b.base_timestamp == b.max_timestamp for b in batches)
    assert snap.batch_timestamps == sorted(snap.batch_timestamps)
    assert snap.last_contained_log_timestamp <= batches[0].base_timestamp
    assert read_snapshot_header(path) == snap.header


# ---------------------------------------------------------------------------- writer


def test_part_file_then_rename(tmp_path: Path) -> None:
    sid = SnapshotId(100, 3)
    w = SnapshotWriter(tmp_path, sid, last_contained_log_timestamp=99, time_ms=1000)
    w.append([feature_payload("metadata.version", 21)])
    [part] = list(tmp_path.iterdir())
    assert part.name.startswith("00000000000000000100-0000000003-") and part.name.endswith(".checkpoint.part")
    assert parse_snapshot_name(part.name) == (sid, SnapshotState.PART)
    assert list_snapshots(tmp_path) == []
    path = w.freeze()
    assert [p.name for p in tmp_path.iterdir()] == ["00000000000000000100-0000000003.checkpoint"]
    assert not (path.stat().st_mode & 0o222)  # frozen snapshots are made read-only
    assert list_snapshots(tmp_path) == [sid]
    with pytest.raises(KraftsimError, match="already frozen"):
        w.append([noop_payload()])


def test_crash_before_rename_leaves_no_checkpoint_and_recovery_reports_the_part(tmp_path: Path) -> None:
    w = SnapshotWriter(tmp_path, SnapshotId(5, 1), last_contained_log_timestamp=1, time_ms=2)
    w.append([feature_payload("metadata.version", 21)])
    # the process dies here: no footer, no fsync, no rename
    part = w.temp_path
    assert [p.name for p in tmp_path.iterdir()] == [part.name]
    assert list_snapshots(tmp_path) == []
    with MetadataLog.open(tmp_path, read_only=True) as log:
        [action] = log.recovery
        assert action.kind is RecoveryKind.DELETE_FILE and action.path == str(part) and not action.applied
        assert log.snapshot_ids() == []
    assert part.exists()
    with MetadataLog.open(tmp_path) as log:
        assert log.recovery[0].applied and log.recovery[0].path == str(part)
    assert not part.exists()
    assert not any(p.name.endswith(".checkpoint") for p in tmp_path.iterdir())


def test_leaving_the_writer_unfrozen_deletes_the_part(tmp_path: Path) -> None:
    with SnapshotWriter(tmp_path, SnapshotId(5, 1), last_contained_log_timestamp=1, time_ms=2) as w:
        w.append([noop_payload()])
    assert list(tmp_path.iterdir()) == []


def test_an_existing_snapshot_is_not_overwritten(tmp_path: Path) -> None:
    write_snapshot(tmp_path, SnapshotId(5, 1), [noop_payload()], last_contained_log_timestamp=1, time_ms=2)
    with pytest.raises(KraftsimError, match="already exists"):
        SnapshotWriter(tmp_path, SnapshotId(5, 1), last_contained_log_timestamp=1, time_ms=2)


def test_contents_are_deterministic(tmp_path: Path) -> None:
    records = [config_payload(i % 50, name=f"k{i}") for i in range(3000)]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = write_snapshot(tmp_path / "a", SnapshotId(10, 2), records, last_contained_log_timestamp=7, time_ms=123)
    b = write_snapshot(tmp_path / "b", SnapshotId(10, 2), records, last_contained_log_timestamp=7, time_ms=123)
    assert a.read_bytes() == b.read_bytes()
    snap = read_snapshot(a)
    assert [e.message for e in snap.data_entries()] == [p.message for p in records]
    # 3000 small records fit in 8 MiB: Kafka merges the 1024-record appends into one batch
    assert [fb.batch.records_count for fb in snap.batches] == [1, 3000, 1]


def test_header_batch_carries_kraft_version_and_voters(tmp_path: Path) -> None:
    kv = REGISTRY["KRaftVersionRecord"]
    voters = REGISTRY["VotersRecord"]
    header_records = [Payload(kv, 0, kv.new(version=0, k_raft_version=1)), Payload(voters, 0, voters.new(version=0))]
    path = write_snapshot(tmp_path, SnapshotId(0, 0), [], last_contained_log_timestamp=0, time_ms=9,
                          header_records=header_records)
    snap = read_snapshot(path)
    assert [e.type_name for e in snap.header_entries] == ["SNAPSHOT_HEADER", "KRAFT_VERSION", "KRAFT_VOTERS"]
    assert [fb.batch.records_count for fb in snap.batches] == [3, 1]
    assert [fb.batch.base_offset for fb in snap.batches] == [0, 3]
    with pytest.raises(KraftsimError, match="not a control record"):
        SnapshotWriter(tmp_path, SnapshotId(1, 0), last_contained_log_timestamp=0, time_ms=0,
                       header_records=[noop_payload()])


# ---------------------------------------------------------------------------- batch forming


def _value_len(p: Payload) -> int:
    return len(encode_metadata_record(p.record_type, p.message, p.version))


def _batches(acc: BatchAccumulator) -> list:
    return [parse_batch(b) for b in acc.drain(force=True)]


def test_appends_merge_until_the_batch_would_exceed_the_limit() -> None:
    rec = config_payload(100)
    one = records_size([_value_len(rec)], 0)
    clock = iter(range(1000, 2000))
    acc = BatchAccumulator(epoch=4, clock=lambda: next(clock), max_batch_bytes=61 + 10 * one + 5)
    for _ in range(25):
        acc.append([rec])
    batches = _batches(acc)
    assert [b.records_count for b in batches] == [10, 10, 5]
    assert all(b.size <= 61 + 10 * one + 5 for b in batches)
    assert [b.base_offset for b in batches] == [0, 10, 20]
    assert [b.base_timestamp for b in batches] == [1000, 1001, 1002]  # one clock reading per started batch
    assert all(b.partition_leader_epoch == 4 for b in batches)


def test_an_append_never_splits_across_batches() -> None:
    rec = config_payload(100)
    one = records_size([_value_len(rec)], 0)
    acc = BatchAccumulator(epoch=0, clock=lambda: 0, max_batch_bytes=61 + 10 * one + 5)
    acc.append([rec] * 6)
    acc.append([rec] * 6)  # does not fit with the first six: starts a new batch
    acc.append([rec] * 4)  # fits with the second six
    assert [b.records_count for b in _batches(acc)] == [6, 10]
    with pytest.raises(RecordBatchTooLarge, match=r"^The total record\(s\) size of \d+ exceeds the maximum allowed "
                                                  r"batch size of \d+$"):
        acc.append([rec] * 11)


def test_snapshot_data_batches_follow_the_size_limit(tmp_path: Path) -> None:
    records = [config_payload(1000, name=f"k{i}") for i in range(50)]
    path = write_snapshot(tmp_path, SnapshotId(50, 1), records, last_contained_log_timestamp=0, time_ms=0,
                          append_records=4, max_batch_bytes=10_000)
    counts = [fb.batch.records_count for fb in read_snapshot(path).batches]
    assert counts[0] == 1 and counts[-1] == 1 and sum(counts[1:-1]) == 50
    assert all(c % 4 == 0 for c in counts[1:-2])  # cuts fall between whole appends
    assert all(fb.batch.size <= 10_000 for fb in read_snapshot(path).batches)


# ---------------------------------------------------------------------------- reader checks


def _write(tmp_path: Path, *batches: bytes) -> Path:
    path = tmp_path / snapshot_file_name(SnapshotId(9, 1))
    path.write_bytes(b"".join(batches))
    return path


def _header(offset: int = 0) -> bytes:
    rt = REGISTRY["SnapshotHeaderRecord"]
    return encode_control_batch(offset, [Payload(rt, 0, rt.new(version=0, last_contained_log_timestamp=5))],
                                epoch=1, timestamp=6)


def _footer(offset: int) -> bytes:
    rt = REGISTRY["SnapshotFooterRecord"]
    return encode_control_batch(offset, [Payload(rt, 0, rt.new(version=0))], epoch=1, timestamp=6)


def test_first_batch_must_be_a_control_batch(tmp_path: Path) -> None:
    path = _write(tmp_path, encode_data_batch(0, [noop_payload()], epoch=1, timestamp=0), _footer(1))
    with pytest.raises(LogFileError, match="First batch is not a control batch with at least one record$"):
        read_snapshot(path)
    with pytest.raises(LogFileError, match="First batch is not a control batch"):
        read_snapshot(_write(tmp_path))


def test_first_control_record_must_be_a_snapshot_header(tmp_path: Path) -> None:
    path = _write(tmp_path, _footer(0), _footer(1))
    with pytest.raises(LogFileError, match=r"First control record is not a snapshot header \(SNAPSHOT_FOOTER\)$") as e:
        read_snapshot(path)
    assert e.value.path == str(path) and e.value.base_offset == 0


def test_the_footer_must_end_the_snapshot(tmp_path: Path) -> None:
    path = _write(tmp_path, _header(), encode_data_batch(1, [noop_payload()], epoch=1, timestamp=0))
    with pytest.raises(LogFileError, match="snapshot footer") as e:
        read_snapshot(path)
    assert e.value.base_offset == 1


def test_a_corrupt_snapshot_names_file_offset_and_position(tmp_path: Path) -> None:
    good = _header() + encode_data_batch(1, [noop_payload()], epoch=1, timestamp=0) + _footer(2)
    data = bytearray(good)
    second = [s for s in split_batches(good)][1]
    data[second.position + len(second.data) - 1] ^= 0x01
    path = _write(tmp_path, bytes(data))
    with pytest.raises(LogFileError, match=r"Record is corrupt \(stored crc = ") as e:
        read_snapshot(path)
    assert (e.value.base_offset, e.value.position) == (1, second.position)


@pytest.mark.parametrize("records", [1, 3000])  # (3000: a data batch past the size whose CRC is taken over a view)
def test_a_snapshot_read_by_its_path_fails_and_reads_as_its_bytes_given_whole(tmp_path: Path, records: int) -> None:
    """read_snapshot reads a path batch by batch, and bytes given to it whole: the same batches
    for a whole file, the same error (text, base offset, position) for a cut or corrupt one."""
    good = _header() + encode_data_batch(1, [noop_payload()] * records, epoch=1, timestamp=0) + _footer(1 + records)
    data_end = [s for s in split_batches(good)][1]
    flipped = bytearray(good)
    flipped[data_end.position + len(data_end.data) - 1] ^= 0x01
    variants = [good, bytes(flipped)] + [good[:n] for n in (5, 40, data_end.position + 30, len(good) - 3)]
    for i, data in enumerate(variants):
        path = tmp_path / f"{i}" / "00000000000000000009-0000000001.checkpoint"
        path.parent.mkdir()
        path.write_bytes(data)
        outcomes = []
        for given in (None, data):
            try:
                snap = read_snapshot(path, data=given)
            except LogFileError as e:
                outcomes.append((str(e), e.base_offset, e.position))
            else:
                outcomes.append([(fb.position, fb.batch.raw) for fb in snap.batches])
        assert outcomes[0] == outcomes[1]
        assert isinstance(outcomes[0], list) == (i == 0)


def test_classify_path_refuses_what_it_does_not_know(tmp_path: Path) -> None:
    from kraftsim.storage import PathKind, classify_path, metadata_files

    with pytest.raises(KraftsimError, match="no such file or directory"):
        classify_path(tmp_path / "missing")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(KraftsimError, match="not a metadata file"):
        classify_path(tmp_path / "notes.txt")
    with pytest.raises(KraftsimError, match="neither a __cluster_metadata-0 directory"):
        classify_path(tmp_path)
    md = tmp_path / "copy-of-metadata"
    md.mkdir()
    write_snapshot(md, SnapshotId(3, 1), [noop_payload()], last_contained_log_timestamp=0, time_ms=0)
    assert classify_path(md) is PathKind.METADATA_DIR  # recognised by its contents, whatever its name
    assert metadata_files(md) == [(PathKind.SNAPSHOT, md / "00000000000000000003-0000000001.checkpoint")]


def test_an_append_that_completes_a_batch_is_drained_as_its_own_batch(tmp_path: Path) -> None:
    """Kafka's RecordsSnapshotWriter drains as soon as a batch is complete, and the drain closes the
    batch the overflowing append opened: full, one append, full, one append, ... (seen in the file
    Kafka 4.2's writer made of a 1,000,000-partition image: batches of 71,680 and 1,024 records)."""
    from kraftsim.protocol.batch import RECORD_BATCH_OVERHEAD
    from kraftsim.protocol.batch_io import encode_values

    records = [noop_payload() for _ in range(40)]
    three_appends = RECORD_BATCH_OVERHEAD + records_size([len(v) for v in encode_values(records[:12])], 0)
    path = write_snapshot(tmp_path, SnapshotId(40, 1), records, last_contained_log_timestamp=0, time_ms=0,
                          append_records=4, max_batch_bytes=three_appends, registry=REGISTRY)
    counts = [fb.batch.records_count for fb in read_snapshot(path, REGISTRY).batches]
    # header; 3 appends fill a batch, the 4th overflows it and is drained alone; again; the last 2; footer
    assert counts == [1, 12, 4, 12, 4, 8, 1]
