"""SnapshotEmitter: Kafka-format .checkpoint files from images, the raft log's creation rules,
and the log directory's retention afterwards."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kraftsim.image import (
    LossReport, MetadataImage, MetadataProvenance, UnwritableMetadataException, image_digest, image_from_records,
    write_image,
)
from kraftsim.image import (
    RetentionSettings, SnapshotCreationError, SnapshotEmitter, kraft_header_records, loader_header_records,
)
from kraftsim.image import CommittedBatch, MetadataLoader
from kraftsim.image.synthetic import ClusterShape, cluster_image
from kraftsim.storage import MetadataLog, read_snapshot
from kraftsim.storage.batchfile import decode_file_batch, replay_clock
from kraftsim.storage.names import SnapshotId, snapshot_file_name
from kraftsim.versions import default_catalog
from tests.conftest import ORACLE
from tests.image.helpers import needs_oracle, rec, record_multiset
from tests.image.loader_helpers import LogBuilder, config, control, mv
from tests.image.strategies import image_groups, mv_record

CAT = default_catalog()


def read_back(path: Path) -> MetadataImage:
    snap = read_snapshot(path)
    sid = snap.snapshot_id
    return image_from_records(snap.data_entries(), catalog=CAT, snapshot=True, provenance=MetadataProvenance(
        sid.end_offset - 1, sid.epoch, snap.last_contained_log_timestamp, True))


def at(img: MetadataImage, offset: int, epoch: int = 3, log_time: int = 1_700_000_000_000) -> MetadataImage:
    return img.with_provenance(MetadataProvenance(offset, epoch, log_time, True))


def ticking(start: int = 5_000):
    t = [start]

    def clock() -> int:
        t[0] += 7
        return t[0]
    return clock


# ----------------------------------------------------------------------------- the file


def test_snapshot_file_is_kafkas_and_reads_back_to_the_same_image(tmp_path: Path) -> None:
    img = at(cluster_image(ClusterShape(brokers=4, topics=150, partitions=6), CAT, 25), 4_321)
    em = SnapshotEmitter(tmp_path, clock_ms=ticking(), fsync=False)
    result = em.maybe_emit(img)
    assert result.snapshot_id == SnapshotId(4_322, 3)
    assert result.path == tmp_path / "00000000000000004322-0000000003.checkpoint"
    assert em.messages == ["Successfully wrote snapshot 00000000000000004322-0000000003"]
    snap = read_snapshot(result.path)
    assert snap.last_contained_log_timestamp == 1_700_000_000_000
    assert {fb.batch.partition_leader_epoch for fb in snap.batches} == {3}
    # header, appends of 1024 records, footer; batch timestamps from the clock, one tick per batch
    counts = [fb.batch.records_count for fb in snap.batches]
    assert counts[0] == 1 and counts[-1] == 1 and counts[1:-1][:-1] == [1024] * (len(counts) - 3)
    assert sum(counts[1:-1]) == result.records == len(write_image(img, 25, CAT))
    assert snap.batch_timestamps == [5_000 + 7 * (i + 1) for i in range(len(counts))]
    back = read_back(result.path)
    assert image_digest(back) == image_digest(img) and back.provenance == img.provenance
    assert result.size_in_bytes == result.path.stat().st_size == snap.size_in_bytes


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(image_groups(), st.integers(0, 10**6), st.integers(0, 2**40))
def test_same_image_and_clock_give_the_same_bytes(tmp_path: Path, groups, offset: int, now: int) -> None:
    img = at(image_from_records([mv_record(29)] + [r for g in groups for r in g]), offset, log_time=now)
    files = []
    for run in ("one", "two"):
        d = tmp_path / f"{run}-{offset}-{now}"
        files.append(SnapshotEmitter(d, clock_ms=now, fsync=False).maybe_emit(img).path.read_bytes())
        shutil.rmtree(d)
    assert files[0] == files[1]
    d = tmp_path / f"check-{offset}-{now}"
    res = SnapshotEmitter(d, clock_ms=now, fsync=False).maybe_emit(img)
    assert image_digest(read_back(res.path)) == image_digest(img)
    shutil.rmtree(d)


def test_only_the_batch_timestamps_follow_the_clock(tmp_path: Path) -> None:
    img = at(cluster_image(ClusterShape(topics=3), CAT, 27), 10)
    a = read_snapshot(SnapshotEmitter(tmp_path / "a", clock_ms=1, fsync=False).maybe_emit(img).path)
    b = read_snapshot(SnapshotEmitter(tmp_path / "b", clock_ms=2, fsync=False).maybe_emit(img).path)
    assert set(a.batch_timestamps) == {1} and set(b.batch_timestamps) == {2}
    assert a.payloads() == b.payloads() and a.last_contained_log_timestamp == b.last_contained_log_timestamp


def test_existing_snapshot_is_not_written_again(tmp_path: Path) -> None:
    img = at(cluster_image(ClusterShape(topics=2), CAT, 27), 99)
    em = SnapshotEmitter(tmp_path, clock_ms=1, fsync=False)
    first = em.maybe_emit(img)
    before = first.path.read_bytes()
    assert SnapshotEmitter(tmp_path, clock_ms=2, fsync=False).maybe_emit(img) is None
    assert em.maybe_emit(img) is None
    assert em.messages[-1] == "Not generating snapshot 00000000000000000100-0000000003 because it already exists."
    assert first.path.read_bytes() == before


def test_default_loss_handler_raises_and_leaves_no_file(tmp_path: Path) -> None:
    """An image its own metadata.version cannot hold (tokens below 3.6-IV2) is never written."""
    img = image_from_records([mv_record(14), rec("DelegationTokenRecord", token_id="t", owner="User:a")])
    img = at(img.__class__(**{**{f: getattr(img, f) for f in img.__struct_fields__},
                              "features": img.features.__class__(13, img.features.finalized)}), 5)
    em = SnapshotEmitter(tmp_path, clock_ms=1, fsync=False)
    with pytest.raises(UnwritableMetadataException, match="metadata.version 3.6-IV1: DelegationTokenImage"):
        em.maybe_emit(img)
    assert list(tmp_path.iterdir()) == []
    # a caller that accepts the loss can still write it, and sees what went
    report = LossReport()
    em.maybe_emit(img, loss_handler=report)
    assert report.by_kind() == {"delegation token": ["delegation token t"]}


def test_image_without_metadata_version_is_refused(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="no metadata.version"):
        SnapshotEmitter(tmp_path, fsync=False).maybe_emit(at(MetadataImage(), 3))


def test_kraft_header_records_follow_the_loader(tmp_path: Path) -> None:
    voters = control("VotersRecord", voters=[])
    log = LogBuilder()
    loader = MetadataLoader()
    loader.handle_commit([log.batch(control("KRaftVersionRecord", k_raft_version=1), voters, control_batch=True),
                          log.batch(mv(27), config("cleanup.policy"))])
    em = SnapshotEmitter(tmp_path, clock_ms=1, header_records=loader_header_records(loader), fsync=False)
    snap = read_snapshot(em.maybe_emit(loader.image).path)
    assert [e.type_name for e in snap.header_entries] == ["SNAPSHOT_HEADER", "KRAFT_VERSION", "KRAFT_VOTERS"]
    assert snap.header_entries[1].message.k_raft_version == 1
    assert kraft_header_records(0, voters.message) == [] and kraft_header_records(None, None) == []
    assert len(kraft_header_records(1, None)) == 1


# ----------------------------------------------------------------------------- the raft log's rules


def make_log(directory: Path, *, segment_bytes: int = 1 << 30, epochs=(1, 1, 2, 2, 2)) -> tuple[MetadataLog, list]:
    """A log of single-record batches (plus a two-record one) at the given epochs."""
    lb = LogBuilder()
    batches = [lb.batch(mv(27), config("compression.type"), epoch=epochs[0])]
    for i, e in enumerate(epochs[1:], 1):
        batches.append(lb.batch(config(f"k{i}"), epoch=e))
    log = MetadataLog.open(directory, segment_bytes=segment_bytes, fsync=False)
    for b in batches:
        log.append(lb.raw(b))
    return log, batches


def image_after(batches, upto: int) -> MetadataImage:
    loader = MetadataLoader()
    loader.handle_commit([b for b in batches if b.last_offset < upto])
    return loader.image


def test_creation_rules_of_the_raft_log(tmp_path: Path) -> None:
    log, batches = make_log(tmp_path)  # offsets: [0,1] e1, 2 e1, 3 e2, 4 e2, 5 e2
    em = SnapshotEmitter(log, clock_ms=1, fsync=False, retention=None)
    good = image_after(batches, 4)
    assert good.provenance.snapshot_id() == (4, 2)
    # not batch aligned: the batch holding offset 1 starts at 0
    with pytest.raises(SnapshotCreationError, match=r"^Cannot create snapshot at offset \(1\) because it is not "
                                                    r"batch aligned. The batch containing the requested offset has "
                                                    r"a base offset of \(0\)$"):
        em.maybe_emit(good.with_provenance(MetadataProvenance(0, 1, 0, False)))
    # epoch 1 ends at offset 3: a snapshot at 5 with epoch 1 diverges from the log
    with pytest.raises(SnapshotCreationError, match=r"^Snapshot id \(OffsetAndEpoch\[offset=5, epoch=1\]\) is not "
                                                    r"valid according to the log: ValidOffsetAndEpoch\(kind=DIVERGING, "
                                                    r"offsetAndEpoch=OffsetAndEpoch\[offset=3, epoch=1\]\)$"):
        em.maybe_emit(good.with_provenance(MetadataProvenance(4, 1, 0, True)))
    # an epoch the log never had
    with pytest.raises(SnapshotCreationError, match=r"epoch=7\]\) is not valid according to the log: "
                                                    r"ValidOffsetAndEpoch\(kind=DIVERGING, offsetAndEpoch="
                                                    r"OffsetAndEpoch\[offset=6, epoch=2\]\)$"):
        em.maybe_emit(good.with_provenance(MetadataProvenance(3, 7, 0, True)))
    assert list(tmp_path.glob("*.checkpoint*")) == []
    assert em.maybe_emit(good).snapshot_id == SnapshotId(4, 2)
    # with a snapshot at epoch 2, an older epoch is answered with that snapshot
    with pytest.raises(SnapshotCreationError, match=r"kind=SNAPSHOT, offsetAndEpoch=OffsetAndEpoch\[offset=4, "
                                                    r"epoch=2\]\)$"):
        em.maybe_emit(image_after(batches, 3))
    # beyond the high watermark
    hw = SnapshotEmitter(log, clock_ms=1, fsync=False, high_watermark=lambda: 4)
    with pytest.raises(SnapshotCreationError, match=r"^Cannot create a snapshot with an id "
                                                    r"\(OffsetAndEpoch\[offset=6, epoch=2\]\) greater than the "
                                                    r"high-watermark \(4\)$"):
        hw.maybe_emit(image_after(batches, 6))
    assert em.maybe_emit(image_after(batches, 6)).snapshot_id == SnapshotId(6, 2)  # the log end is fine
    # below the log start offset: silently not created
    log.advance_log_start_offset(4)
    assert em.maybe_emit(image_after(batches, 3)) is None
    assert em.messages[-2] == ("Cannot create a snapshot with an id (OffsetAndEpoch[offset=3, epoch=1]) less than "
                               "the log start offset (4)")
    log.close()


def test_a_directory_with_segments_is_opened_as_its_log(tmp_path: Path) -> None:
    log, batches = make_log(tmp_path)
    log.close()
    with SnapshotEmitter(tmp_path, clock_ms=1, fsync=False) as em:
        assert em.log is not None and em.log.log_end_offset == 6
        with pytest.raises(SnapshotCreationError, match="not batch aligned"):
            em.maybe_emit(image_after(batches, 2).with_provenance(MetadataProvenance(0, 1, 0, True)))
        assert em.maybe_emit(image_after(batches, 6)).snapshot_id == SnapshotId(6, 2)


# ----------------------------------------------------------------------------- retention


def node_with_snapshots(directory: Path, retention: RetentionSettings, now):
    """Twelve batches in segments of two, a snapshot emitted after every third batch."""
    lb = LogBuilder()
    log = MetadataLog.open(directory, segment_bytes=64, fsync=False)  # one batch per segment
    em = SnapshotEmitter(log, clock_ms=now, retention=retention, fsync=False)
    loader = MetadataLoader()
    loader.set_high_watermark(0)
    batches = [lb.batch(mv(27), time_ms=1_000)] + [lb.batch(config(f"k{i}"), time_ms=1_000 * (i + 2))
                                                    for i in range(11)]
    for i, b in enumerate(batches):
        log.append(lb.raw(b))
        loader.handle_commit([b])
        if i % 3 == 2:
            em.maybe_emit(loader.image)
    return log, em, batches


def test_retention_by_size_keeps_the_newest_snapshot(tmp_path: Path) -> None:
    log, em, batches = node_with_snapshots(tmp_path, RetentionSettings(retention_bytes=1, retention_ms=-1),
                                           now=lambda: 0)
    emitted = [r.snapshot_id.end_offset for r in em.results]
    assert emitted == [3, 6, 9, 12]
    # every time a second snapshot appears the older one goes, and the log start moves up to the newer
    assert [r.snapshot_id.end_offset for r in em.results if r.deleted] == [6, 9, 12]
    assert log.snapshot_ids() == [SnapshotId(12, 1)] and log.log_start_offset == 12
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".checkpoint") == [
        "00000000000000000012-0000000001.checkpoint"]
    assert min(log.segments) == 11  # the active segment is never deleted
    assert em.results[1].retention.reasons[0].startswith(
        "00000000000000000003-0000000001.checkpoint: log and snapshots exceed metadata.max.retention.bytes=1")
    log.close()


def test_retention_by_time_uses_the_clock(tmp_path: Path) -> None:
    now = [0]
    log, em, _ = node_with_snapshots(tmp_path, RetentionSettings(retention_bytes=-1, retention_ms=10_000),
                                     now=lambda: now[0])
    assert len(log.snapshot_ids()) == 4 and not any(r.deleted for r in em.results)
    # later, a new snapshot: every snapshot older than 10 s by its last contained log time goes but the newest
    now[0] = 16_500  # snapshots 3 and 6 hold log times 3000 and 6000: both older than 10 s
    lb = LogBuilder(next_offset=12, time_ms=15_000)
    b = lb.batch(config("flush.messages"))
    log.append(lb.raw(b))
    img = image_from_records([mv(27)]).with_provenance(MetadataProvenance(12, 1, 15_000, True))
    res = em.maybe_emit(img)
    assert [s.end_offset for s in log.snapshot_ids()] == [9, 12, 13]
    assert {p.name for p in res.deleted if p.suffix == ".checkpoint"} == {
        snapshot_file_name(SnapshotId(3, 1)), snapshot_file_name(SnapshotId(6, 1))}
    assert log.log_start_offset == 9
    log.close()


def test_retention_is_off_for_a_plain_directory(tmp_path: Path) -> None:
    em = SnapshotEmitter(tmp_path, clock_ms=0, retention=RetentionSettings(retention_bytes=1), fsync=False)
    for offset in (10, 20, 30):
        em.maybe_emit(at(image_from_records([mv(27)]), offset))
    assert len(list(tmp_path.glob("*.checkpoint"))) == 3 and em.log is None


# ----------------------------------------------------------------------------- Kafka's own snapshots


@needs_oracle
@pytest.mark.parametrize("name,offset,epoch,release", [("kafka-4.1_dkoh12", 7209, 1, "4.1"),
                                                       ("cp-kafka-3.6_rjmfernandes", 14926, 1, "3.6"),
                                                       ("cp-kafka-3.8_otus", 8931, 23, "3.8")])
def test_emitted_snapshot_holds_kafkas_records(tmp_path: Path, name: str, offset: int, epoch: int,
                                               release: str) -> None:
    """Same id, header, batches, timestamps (Kafka's replayed), size and records as Kafka's
    snapshot; the same bytes, except where Kafka's order of config resources came from its
    JVM run (3.6: see tests/replay/test_oracle_acceptance.py)."""
    src = ORACLE / name / "__cluster_metadata-0"
    directory = tmp_path / "__cluster_metadata-0"
    directory.mkdir()
    shutil.copyfile(src / "00000000000000000000.log", directory / "00000000000000000000.log")
    kafka = read_snapshot(src / snapshot_file_name(SnapshotId(offset, epoch)))
    with MetadataLog.open(directory, fsync=False) as log:
        loader = MetadataLoader(CAT.at_release(release))
        loader.set_high_watermark(offset)
        loader.handle_commit([CommittedBatch(fb.batch.base_offset, fb.batch.last_offset,
                                             fb.batch.partition_leader_epoch, fb.batch.max_timestamp, fb.batch.size,
                                             decode_file_batch(fb))
                              for fb in log.batches() if fb.batch.last_offset < offset])
        em = SnapshotEmitter(log, catalog=CAT.at_release(release), clock_ms=replay_clock(kafka.batch_timestamps),
                             retention=None, fsync=False)
        ours = read_snapshot(em.maybe_emit(loader.image).path)
    assert ours.path.endswith(snapshot_file_name(SnapshotId(offset, epoch)))
    assert ours.size_in_bytes == kafka.size_in_bytes
    assert ours.last_contained_log_timestamp == kafka.last_contained_log_timestamp
    assert ours.batch_timestamps == kafka.batch_timestamps
    assert [fb.batch.records_count for fb in ours.batches] == [fb.batch.records_count for fb in kafka.batches]
    assert record_multiset(ours.payloads(), normalize_map_order=True) == record_multiset(kafka.payloads(),
                                                                                         normalize_map_order=True)
    if name != "cp-kafka-3.6_rjmfernandes":
        assert Path(ours.path).read_bytes() == Path(kafka.path).read_bytes()
