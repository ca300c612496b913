"""Properties on random logs (tests/replay/logs.py), no oracle needed.

- Snapshot + tail replay equals full replay: snapshots written by `create_snapshot` at
  random batch boundaries of a random log pass `verify_directory`, and each one's
  "snapshot + log after it" image has the whole log's digest.
- Identical inputs give identical snapshot bytes.
- The snapshot id and header come from the log at O − 1.
- A lossless downgrade then upgrade returns the same image.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftsim.errors import KraftsimError
from kraftsim.image import image_digest
from kraftsim.image import load_path
from kraftsim.image import create_snapshot
from kraftsim.image import verify_directory, verify_roundtrip
from kraftsim.storage import MetadataLog, SnapshotId, read_snapshot
from kraftsim.versions import default_catalog
from tests.replay.logs import random_logs

CATALOG = default_catalog()
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _epoch_and_time_at(directory: Path, offset: int) -> tuple[int, int]:
    with MetadataLog.open(directory, read_only=True) as log:
        b = log.read(offset - 1).batch
        return b.partition_leader_epoch, b.max_timestamp


@SETTINGS
@given(st.data())
def test_snapshot_plus_tail_equals_full_replay(data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "__cluster_metadata-0"
        log = data.draw(random_logs(directory, CATALOG))
        usable = [o for o in log.boundaries if o > 0 and o not in log.in_transaction]
        offsets = data.draw(st.lists(st.sampled_from(usable), min_size=1, max_size=3, unique=True))
        for offset in sorted(offsets):
            path, loss = create_snapshot(directory, offset, out=directory, fsync=False, catalog=CATALOG)
            assert loss.lossless
            epoch, ts = _epoch_and_time_at(directory, offset)
            snap = read_snapshot(path)
            assert snap.snapshot_id == SnapshotId(offset, epoch)
            assert snap.last_contained_log_timestamp == ts

        full = image_digest(load_path(directory, catalog=CATALOG, snapshot="none").image)
        for offset in offsets:
            sid = read_snapshot(next(directory.glob(f"{offset:020d}-*.checkpoint"))).snapshot_id
            tail = load_path(directory, catalog=CATALOG, snapshot=sid)
            assert image_digest(tail.image) == full
            at = load_path(directory, catalog=CATALOG, snapshot="none", upto_offset=offset).image
            assert image_digest(load_path(directory / f"{offset:020d}-{sid.epoch:010d}.checkpoint",
                                          catalog=CATALOG).image) == image_digest(at)

        v = verify_directory(directory, catalog=CATALOG)
        assert v.ok, v
        assert v.whole_log_digest == full
        assert all(len(s.comparisons) == 2 for s in v.snapshots)


@SETTINGS
@given(st.data())
def test_identical_inputs_give_identical_snapshot_bytes(data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "__cluster_metadata-0"
        log = data.draw(random_logs(directory, CATALOG))
        offset = data.draw(st.sampled_from([o for o in log.boundaries if o > 0 and o not in log.in_transaction]))
        first, second = Path(tmp) / "one", Path(tmp) / "two"
        first.mkdir()
        second.mkdir()
        a, _ = create_snapshot(directory, offset, out=first, fsync=False, catalog=CATALOG)
        b, _ = create_snapshot(directory, offset, out=second / "copy.checkpoint", fsync=False, catalog=CATALOG)
        assert a.read_bytes() == b.read_bytes()


@SETTINGS
@given(st.data())
def test_lossless_downgrade_then_upgrade_is_the_identity(data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "__cluster_metadata-0"
        log = data.draw(random_logs(directory, CATALOG))
        image = load_path(directory, catalog=CATALOG).image
        v = verify_roundtrip(image, catalog=CATALOG)
        assert v.ok, v
        assert v.trips and len(v.trips) == len([m for m in CATALOG.metadata_versions if m.level < log.metadata_version])
        assert any(t.outcome == "identical" for t in v.trips)


def test_a_snapshot_inside_a_transaction_is_refused(tmp_path: Path) -> None:
    directory = tmp_path / "__cluster_metadata-0"
    from tests.replay.logs import rec
    with MetadataLog.open(directory, fsync=False) as log:
        log.append_records([rec(CATALOG, 14, "FeatureLevelRecord", name="metadata.version", feature_level=14)],
                           epoch=1, timestamp=1)
        log.append_records([rec(CATALOG, 14, "BeginTransactionRecord", name="t"), rec(CATALOG, 14, "NoOpRecord")],
                           epoch=1, timestamp=2)
        log.append_records([rec(CATALOG, 14, "EndTransactionRecord")], epoch=1, timestamp=3)
    with pytest.raises(KraftsimError, match="lies inside a metadata transaction"):
        create_snapshot(directory, 3, out=tmp_path, fsync=False)
    path, _ = create_snapshot(directory, 4, out=tmp_path, fsync=False)
    assert path.name == "00000000000000000004-0000000001.checkpoint"
