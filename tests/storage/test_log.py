"""The metadata log directory: appends, rolling, reads by offset, truncation, and start-up recovery."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftsim.errors import KraftsimError, LogFileError
from kraftsim.protocol.batch import BatchSlice, split_batches
from kraftsim.protocol.entries import encode_data_batch
from kraftsim.storage import MetadataLog, RecoveryKind, segment_file_name
from kraftsim.storage.names import METADATA_DIR_NAME

from tests.storage.conftest import ORACLE, config_payload, needs_oracle, noop_payload, tree_fingerprint

# 109 batches, with the .index/.timeindex/partition.metadata/quorum-state files Kafka leaves beside them
SMALL_LOG_DIR = ORACLE / "kafka-3.8.0_codecrafters" / METADATA_DIR_NAME


def _batch(base: int, sizes: list[int], epoch: int = 1) -> bytes:
    return encode_data_batch(base, [config_payload(n, name=f"k{base}") for n in sizes], epoch=epoch, timestamp=base)


def _segments(d: Path) -> list[str]:
    return sorted(p.name for p in d.glob("*.log"))


# ---------------------------------------------------------------------------- appends and rolling


def test_a_new_directory_gets_an_empty_first_segment(tmp_path: Path) -> None:
    d = tmp_path / METADATA_DIR_NAME
    with MetadataLog.open(d, fsync=False) as log:
        assert log.log_end_offset == 0 and log.recovery == []
    assert _segments(d) == ["00000000000000000000.log"]
    assert (d / "00000000000000000000.log").stat().st_size == 0


def test_read_only_open_of_a_missing_directory_fails(tmp_path: Path) -> None:
    with pytest.raises(KraftsimError, match="not a directory"):
        MetadataLog.open(tmp_path / "nope", read_only=True)


def test_rolls_when_the_active_segment_would_exceed_the_limit(tmp_path: Path) -> None:
    batches = [_batch(0, [10, 10]), _batch(2, [10]), _batch(3, [200]), _batch(4, [10])]
    limit = len(batches[0]) + len(batches[1])  # the first two fit exactly
    with MetadataLog.open(tmp_path, segment_bytes=limit, fsync=False) as log:
        for b in batches:
            log.append(b)
        assert list(log.segments) == [0, 3, 4]
        assert log.log_end_offset == 5
    assert _segments(tmp_path) == [segment_file_name(0), segment_file_name(3), segment_file_name(4)]
    assert (tmp_path / segment_file_name(0)).read_bytes() == batches[0] + batches[1]
    assert (tmp_path / segment_file_name(3)).read_bytes() == batches[2]  # bigger than the limit: alone in its segment


def test_append_checks_offsets_and_bytes(tmp_path: Path) -> None:
    with MetadataLog.open(tmp_path, fsync=False) as log:
        with pytest.raises(KraftsimError, match="log end offset is 0"):
            log.append(_batch(5, [1]))
        entry = log.append(_batch(5, [1]), assign_offset=True)
        assert (entry.base_offset, log.log_end_offset) == (0, 1)
        assert log.read(0).batch.base_offset == 0
        bad = bytearray(_batch(1, [1]))
        bad[-1] ^= 1
        with pytest.raises(KraftsimError, match="Record is corrupt"):
            log.append(bytes(bad))
        with pytest.raises(KraftsimError, match="length field"):
            log.append(_batch(1, [1]) + _batch(2, [1]))
        log.append_records([noop_payload(), noop_payload()], epoch=3, timestamp=10)
        assert log.log_end_offset == 3
        assert [e.offset for e in log.entries()] == [0, 1, 2]


def test_read_only_log_refuses_changes(tmp_path: Path) -> None:
    MetadataLog.open(tmp_path, fsync=False).close()
    with MetadataLog.open(tmp_path, read_only=True) as log:
        for change in (lambda: log.append(_batch(0, [1])), lambda: log.truncate_to(0), log.roll):
            with pytest.raises(KraftsimError, match="read-only"):
                change()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batch_sizes=st.lists(st.lists(st.integers(0, 300), min_size=1, max_size=4), min_size=1, max_size=25),
    segment_bytes=st.integers(100, 1500),
    cut=st.floats(0, 1.2),
)
def test_append_roll_read_truncate_reopen(tmp_path_factory: pytest.TempPathFactory, batch_sizes: list[list[int]],
                                          segment_bytes: int, cut: float) -> None:
    d = tmp_path_factory.mktemp("log")
    written: list[bytes] = []
    with MetadataLog.open(d, segment_bytes=segment_bytes, fsync=False) as log:
        for sizes in batch_sizes:
            raw = _batch(log.log_end_offset, sizes)
            log.append(raw)
            written.append(raw)
        leo = log.log_end_offset
        assert leo == sum(len(s) for s in batch_sizes)
        for seg in log.segments.values():  # a segment exceeds the limit only when it holds a single batch
            assert seg.size <= segment_bytes or len(seg) == 1
        assert [fb.batch.raw for fb in log.batches()] == written
        offset = 0
        for raw in written:  # every offset reads back the batch that holds it
            n = len(log.read(offset).batch.records())
            for o in range(offset, offset + n):
                assert log.read(o).batch.raw == raw
            offset += n

    with MetadataLog.open(d, segment_bytes=segment_bytes, fsync=False, validate="all") as log:
        assert log.recovery == [] and log.log_end_offset == leo
        assert [fb.batch.raw for fb in log.batches()] == written
        target = int(leo * cut)
        log.truncate_to(target)
        kept = []
        next_offset = 0
        for raw, sizes in zip(written, batch_sizes):
            if next_offset + len(sizes) - 1 >= target:
                break
            kept.append(raw)
            next_offset += len(sizes)
        assert [fb.batch.raw for fb in log.batches()] == kept
        assert log.log_end_offset == (next_offset if target < leo else leo)
        assert all(base <= max(target, 0) for base in log.segments)

    with MetadataLog.open(d, segment_bytes=segment_bytes, fsync=False, validate="all") as log:
        assert log.recovery == []
        assert [fb.batch.raw for fb in log.batches()] == kept
        log.append(_batch(log.log_end_offset, [5]))  # the log goes on from the truncation point
        assert log.log_end_offset == (next_offset if target < leo else leo) + 1


def test_truncate_below_the_log_start_empties_the_log(tmp_path: Path) -> None:
    with MetadataLog.open(tmp_path, segment_bytes=200, fsync=False) as log:
        for i in range(6):
            log.append(_batch(i, [100]))
        log.advance_log_start_offset(3)
        assert log.log_start_offset == 3
        assert min(log.segments) <= 3
        log.truncate_to(1)
        assert (log.log_start_offset, log.log_end_offset, list(log.segments)) == (1, 1, [1])
    assert _segments(tmp_path) == [segment_file_name(1)]


# ---------------------------------------------------------------------------- recovery


@pytest.fixture
def small_log(tmp_path: Path) -> Path:
    if not SMALL_LOG_DIR.is_dir():
        pytest.skip("../shared/oracle is not present")
    d = tmp_path / METADATA_DIR_NAME
    shutil.copytree(SMALL_LOG_DIR, d)
    return d


@needs_oracle
def test_torn_tail_recovery_at_every_cut_of_the_last_batch(small_log: Path) -> None:
    seg = small_log / segment_file_name(0)
    data = seg.read_bytes()
    slices = [s for s in split_batches(data) if isinstance(s, BatchSlice)]
    last = slices[-1]
    with MetadataLog.open(SMALL_LOG_DIR, read_only=True) as whole:
        full_leo = whole.log_end_offset
    assert last.position + len(last.data) == len(data)
    for k in range(1, len(last.data)):  # every length from one byte to one byte short of whole
        torn = data[: last.position + k]
        seg.write_bytes(torn)
        with MetadataLog.open(small_log, read_only=True) as log:  # read-only: reported, nothing changed
            [action] = log.recovery
            assert action.kind is RecoveryKind.TRUNCATE and not action.applied
            assert (action.path, action.position, action.bytes_cut) == (str(seg), last.position, k)
            assert action.base_offset == (last.base_offset if k >= 8 else None)
            assert "torn batch" in action.reason
            assert log.log_end_offset == last.base_offset
        assert seg.read_bytes() == torn
        with MetadataLog.open(small_log, fsync=False) as log:  # writable: cut back to the last whole batch
            assert [a.applied for a in log.recovery] == [True]
            assert log.log_end_offset == last.base_offset
            assert "truncated" in log.recovery[0].describe()
        assert seg.read_bytes() == data[: last.position]
        with MetadataLog.open(small_log, fsync=False) as log:
            assert log.recovery == []
            log.append(last.data)
            assert log.log_end_offset == full_leo
        assert seg.read_bytes() == data


@needs_oracle
def test_a_corrupt_last_batch_is_cut_and_reported(small_log: Path) -> None:
    seg = small_log / segment_file_name(0)
    data = bytearray(seg.read_bytes())
    last = [s for s in split_batches(bytes(data)) if isinstance(s, BatchSlice)][-1]
    data[last.position + 30] ^= 0xFF  # inside the CRC-covered part
    seg.write_bytes(bytes(data))
    before = tree_fingerprint(small_log)
    with MetadataLog.open(small_log, read_only=True) as log:
        [action] = log.recovery
        assert action.reason.startswith("Record is corrupt (stored crc = ")
        assert (action.position, action.bytes_cut, action.base_offset) == (last.position, len(last.data), last.base_offset)
    assert tree_fingerprint(small_log) == before
    with MetadataLog.open(small_log) as log:
        assert log.log_end_offset == last.base_offset
    assert seg.stat().st_size == last.position


def test_corruption_in_an_older_segment_is_found_with_validate_all(tmp_path: Path) -> None:
    with MetadataLog.open(tmp_path, segment_bytes=300, fsync=False) as log:
        for i in range(8):
            log.append(_batch(i, [120]))
        bases = list(log.segments)
    assert len(bases) >= 3
    victim = tmp_path / segment_file_name(bases[1])
    data = bytearray(victim.read_bytes())
    data[-1] ^= 0x55
    victim.write_bytes(bytes(data))
    with MetadataLog.open(tmp_path, read_only=True, fsync=False) as log:  # default: only the last segment's CRCs
        assert log.recovery == []
        with pytest.raises(LogFileError, match=r"Record is corrupt") as e:
            list(log.batches())
        assert e.value.path == str(victim)
    with MetadataLog.open(tmp_path, read_only=True, validate="all") as log:
        kinds = [a.kind for a in log.recovery]
        assert kinds[0] is RecoveryKind.TRUNCATE and set(kinds[1:]) == {RecoveryKind.DELETE_SEGMENT}
        assert len(kinds) == len(bases) - 1
        assert all(not a.applied for a in log.recovery)
    assert len(_segments(tmp_path)) == len(bases)
    with MetadataLog.open(tmp_path, validate="all") as log:
        assert list(log.segments) == bases[:2]
    assert len(_segments(tmp_path)) == 2


def test_stray_files_are_reported_and_removed(tmp_path: Path) -> None:
    MetadataLog.open(tmp_path, fsync=False).close()
    for name in ("00000000000000000005-0000000001-123.checkpoint.part",
                 "00000000000000000005-0000000001.checkpoint.deleted", "00000000000000000000.log.deleted"):
        (tmp_path / name).write_bytes(b"x")
    (tmp_path / "00000000000000000000.index").write_bytes(b"ignored")
    with MetadataLog.open(tmp_path, read_only=True) as log:
        assert sorted(Path(a.path).name for a in log.recovery) == sorted(
            ["00000000000000000005-0000000001-123.checkpoint.part", "00000000000000000005-0000000001.checkpoint.deleted",
             "00000000000000000000.log.deleted"])
    with MetadataLog.open(tmp_path) as log:
        assert all(a.applied for a in log.recovery)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["00000000000000000000.index", "00000000000000000000.log"]


def test_a_log_that_starts_late_needs_a_snapshot(tmp_path: Path) -> None:
    (tmp_path / segment_file_name(10)).write_bytes(_batch(10, [1]))
    with MetadataLog.open(tmp_path, read_only=True) as log:
        assert log.log_start_offset == 10 and "Inconsistent snapshot state" in log.warnings[0]
    with pytest.raises(KraftsimError, match="Inconsistent snapshot state: there must be a snapshot at an offset"):
        MetadataLog.open(tmp_path)


def test_a_badly_named_segment_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "foo.log").write_bytes(b"")
    with pytest.raises(KraftsimError, match="not a log segment name"):
        MetadataLog.open(tmp_path, read_only=True)


# ---------------------------------------------------------------------------- replicas share index entries


def test_replicas_share_equal_index_entries_and_each_keeps_its_own_index(tmp_path: Path) -> None:
    """Two replicas of one log (appended to, and one opened again from its files) hold the same
    index entry objects for equal batches; cutting one replica leaves the other whole."""
    batches = [_batch(0, [10, 10]), _batch(2, [30]), _batch(3, [10, 20, 5])]
    with MetadataLog.open(tmp_path / "a", fsync=False) as a, MetadataLog.open(tmp_path / "b", fsync=False) as b:
        for raw in batches:
            a.append(raw)
            b.append(raw)
        ea = [e for _, e in a.index_entries()]
        eb = [e for _, e in b.index_entries()]
        assert ea == eb and all(x is y for x, y in zip(ea, eb))
        b.truncate_to(2)
        assert [e for _, e in a.index_entries()] == ea and a.log_end_offset == 6
        assert [e for _, e in b.index_entries()] == ea[:1] and b.log_end_offset == 2
    with MetadataLog.open(tmp_path / "a", read_only=True) as again:
        reread = [e for _, e in again.index_entries()]
        assert reread == ea and all(x is y for x, y in zip(reread, ea))


# ---------------------------------------------------------------------------- files that are not what they seem


def test_a_segment_another_process_appends_to_while_it_is_read_is_taken_as_scanned(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader of a directory a writer is appending to (a running node's log) takes each segment
    as it was when it was mapped and scanned: no internal error for bytes that arrived after."""
    import kraftsim.storage.segment as segment

    first, late = _batch(0, [10, 10]), _batch(2, [10])
    with MetadataLog.open(tmp_path, fsync=False) as log:
        log.append(first)
    scan = segment.scan_segment

    def scan_then_append(*args: object, **kwargs: object) -> object:
        found = scan(*args, **kwargs)  # type: ignore[arg-type]
        with open(tmp_path / segment_file_name(0), "ab") as f:  # the writer's next batch lands now
            f.write(late)
        return found

    monkeypatch.setattr(segment, "scan_segment", scan_then_append)
    with MetadataLog.open(tmp_path, read_only=True) as log:
        assert log.log_end_offset == 2 and log.recovery == []
    monkeypatch.undo()
    with MetadataLog.open(tmp_path, read_only=True) as log:  # opened again, it has the batch
        assert log.log_end_offset == 3


def _cut_on_first_read(monkeypatch: pytest.MonkeyPatch, path: Path, keep: int) -> None:
    """Another process cuts `path` to `keep` bytes right after the first read of a file."""
    import os

    pread = os.pread

    def read_then_cut(fd: int, n: int, at: int) -> bytes:
        data = pread(fd, n, at)
        if path.stat().st_size > keep:
            os.truncate(path, keep)
        return data
    monkeypatch.setattr(os, "pread", read_then_cut)


def test_a_segment_another_process_cuts_while_it_is_scanned_ends_where_it_was_cut(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scan reads a window at a time (here 100 bytes: a batch or two), never a map, so a
    file cut under it reads short and the walk ends there as at a torn tail: a mapped scan
    would have been killed by SIGBUS on the lost pages."""
    import kraftsim.storage.segment as segment

    batches = [_batch(i, [10]) for i in range(6)]
    with MetadataLog.open(tmp_path, fsync=False) as log:
        for b in batches:
            log.append(b)
    cut = sum(len(b) for b in batches[:3]) + 20  # (inside the fourth batch)
    monkeypatch.setattr(segment, "SCAN_WINDOW", 100)
    _cut_on_first_read(monkeypatch, tmp_path / segment_file_name(0), cut)
    with MetadataLog.open(tmp_path, read_only=True) as log:
        assert log.log_end_offset == 3
        assert [r.torn_tail for r in log.recovery] == [True] and log.recovery[0].position == cut - 20


def test_a_segment_replayed_on_its_own_and_cut_while_it_is_read_ends_where_it_was_cut(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`replay SEGMENT` reads the file once, in the scan's windows (here 100 bytes): one cut
    after the first window keeps the batches read before the cut and calls the rest a torn
    tail; the batches it gives are the bytes the scan checked."""
    import kraftsim.storage.segment as segment
    from kraftsim.storage.damage import segment_batches

    batches = [_batch(i, [10]) for i in range(4)]
    with MetadataLog.open(tmp_path, fsync=False) as log:
        for b in batches:
            log.append(b)
    path = tmp_path / segment_file_name(0)
    whole, limit, size = segment_batches(path, up_to_damage=False)
    assert [fb.batch.raw for fb in whole] == batches and limit.torn_tail is None and size == sum(map(len, batches))
    monkeypatch.setattr(segment, "SCAN_WINDOW", 100)
    _cut_on_first_read(monkeypatch, path, len(batches[0]) + 5)
    read, limit, _ = segment_batches(path, up_to_damage=False)
    assert [fb.batch.raw for fb in read] == batches[:1]
    assert limit.torn_tail is not None and limit.torn_tail.position == len(batches[0])


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_fifo_or_directory_named_like_a_segment_is_refused_without_waiting(tmp_path: Path, kind: str) -> None:
    import os

    with MetadataLog.open(tmp_path, fsync=False) as log:
        log.append(_batch(0, [10]))
    odd = tmp_path / segment_file_name(99)
    os.mkfifo(odd) if kind == "fifo" else odd.mkdir()
    with pytest.raises(KraftsimError, match=f"{odd.name}: not a regular file"):
        MetadataLog.open(tmp_path, read_only=True)


@pytest.mark.parametrize("how", ["close", "release_fd"])
def test_a_segment_closed_by_an_interrupted_close_is_not_closed_twice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                      how: str) -> None:
    """SIGTERM (kraftsim's Terminated, a KeyboardInterrupt) right after a segment's descriptor
    was closed: the cleanup that follows closes the segment again, which must not close that
    number a second time (EBADF, an internal error at exit; or another file's descriptor)."""
    import os

    from kraftsim.storage.segment import IndexEntry, LogSegment

    raw = _batch(0, [10])
    seg = LogSegment.create(tmp_path / segment_file_name(0), 0)
    seg.append(raw, IndexEntry(0, 0, 0, len(raw), 1, 0))
    real_close = os.close
    closed: list[int] = []

    def close_then_interrupt(fd: int) -> None:
        real_close(fd)
        closed.append(fd)
        monkeypatch.setattr(os, "close", real_close)
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "close", close_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        getattr(seg, how)()
    seg.close()  # (the cleanup): nothing left to close
    assert len(closed) == 1
