"""The streamed snapshot reader (one batch in memory at a time) gives what the whole-file
reader gives: the same batches and records of a good file, and for a damaged one the same
error (type, text, offset, position), through the loader as well."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kraftsim.errors import KraftsimError
from kraftsim.image.loader.loading import load_path
from kraftsim.storage import SnapshotId, write_snapshot
from kraftsim.storage.batchfile import iter_file_batches, stream_file_batches
from kraftsim.storage.damage import check_snapshot_epoch
from kraftsim.storage.names import snapshot_file_name
from kraftsim.storage.snapshot import SnapshotStream, read_snapshot
from tests.storage.conftest import config_payload, feature_payload

SID = SnapshotId(3001, 4)


def _good(tmp_path: Path) -> Path:
    records = [feature_payload("metadata.version", 21)] + [config_payload(i % 40, name=f"k{i}") for i in range(3000)]
    return write_snapshot(tmp_path, SID, records, last_contained_log_timestamp=7, time_ms=123, max_batch_bytes=60_000)


def _outcome(call: Any) -> Any:
    """What a call gives: its value, or its error's type and what the error says."""
    try:
        return ("ok", call())
    except KraftsimError as e:
        return (type(e).__name__, str(e), getattr(e, "base_offset", None), getattr(e, "position", None))


def _whole(path: Path) -> Any:
    snap = read_snapshot(path)
    check_snapshot_epoch(snap)
    return [e.message for e in snap.data_entries()]


def _streamed(path: Path) -> Any:
    with SnapshotStream(path, recheck=check_snapshot_epoch) as snap:
        return [e.message for e in snap.data_entries()]


def test_a_good_file_streams_as_it_reads_whole(tmp_path: Path) -> None:
    path = _good(tmp_path)
    whole = read_snapshot(path)
    assert len(whole.batches) > 3  # several data batches
    with open(path, "rb") as f:
        assert list(stream_file_batches(str(path), f)) == list(iter_file_batches(str(path), path.read_bytes()))
    with SnapshotStream(path) as snap:
        assert [e.message for e in snap.data_entries()] == [e.message for e in whole.data_entries()]
        assert (snap.batches, snap.size_in_bytes, snap.epoch) == (len(whole.batches), whole.size_in_bytes, whole.epoch)
        assert snap.header_entries == whole.header_entries
        assert snap.last_contained_log_timestamp == whole.last_contained_log_timestamp == 7
    result = load_path(path)
    assert (result.batches, result.bytes, result.records) == (len(whole.batches), whole.size_in_bytes, 3001)


@pytest.fixture(scope="module")
def good_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return _good(tmp_path_factory.mktemp("good")).read_bytes()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_damaged_file_fails_as_it_fails_read_whole(tmp_path: Path, good_bytes: bytes, data: st.DataObject) -> None:
    raw = bytearray(good_bytes)
    kind = data.draw(st.sampled_from(["truncate", "flip", "epoch"]), label="damage")
    if kind == "truncate":
        raw = raw[:data.draw(st.integers(0, len(raw) - 1), label="cut")]
    elif kind == "flip":
        raw[data.draw(st.integers(0, len(raw) - 1), label="at")] ^= data.draw(st.integers(1, 255), label="bits")
    path = tmp_path / "damaged" / snapshot_file_name(SnapshotId(SID.end_offset, SID.epoch + (kind == "epoch")))
    path.parent.mkdir(exist_ok=True)
    if path.exists():
        path.chmod(0o644)
    path.write_bytes(bytes(raw))
    whole = _outcome(lambda: _whole(path))
    assert _outcome(lambda: _streamed(path)) == whole
    if whole[0] != "ok":
        assert _outcome(lambda: load_path(path)) == whole


def test_stream_positions_are_the_files(tmp_path: Path) -> None:
    raw = _good(tmp_path).read_bytes()
    cut = raw[:len(raw) - 5]
    with pytest.raises(KraftsimError) as whole:
        list(iter_file_batches("f", cut))
    with pytest.raises(KraftsimError) as streamed:
        list(stream_file_batches("f", io.BytesIO(cut)))
    assert str(streamed.value) == str(whole.value) and streamed.value.position == whole.value.position  # type: ignore[attr-defined]
