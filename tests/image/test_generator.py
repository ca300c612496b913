"""SnapshotGenerator: Kafka's byte and time triggers on virtual time, batch alignment, the
disabled reason, counter resets, and the offsets Kafka itself snapshotted at."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kraftsim.image import MetadataDelta, MetadataImage
from kraftsim.image import SnapshotEmitter
from kraftsim.image import (
    BUILDER_DEFAULTS, SHARED_SERVER_DEFAULTS, SnapshotFault, SnapshotGenerator, SnapshotTriggers,
)
from kraftsim.image import CommittedBatch, LogDeltaManifest, MetadataLoader
from kraftsim.storage import MetadataLog, read_snapshot
from kraftsim.storage.batchfile import decode_file_batch
from kraftsim.storage.names import SnapshotId, snapshot_file_name
from tests.conftest import ORACLE
from tests.image.helpers import needs_oracle, record_multiset
from tests.image.loader_helpers import LogBuilder, begin, config, end, mv

HOUR = 3_600_000


class FakeEmitter:
    """Records the images it is asked to write."""

    def __init__(self, fail: bool = False):
        self.images: list[MetadataImage] = []
        self.fail = fail

    def maybe_emit(self, image: MetadataImage, *, losses=None):
        if self.fail:
            raise OSError("disk full")
        self.images.append(image)
        return image.provenance.snapshot_id()

    @property
    def offsets(self) -> list[int]:
        return [i.provenance.last_contained_offset for i in self.images]


class Clock:
    def __init__(self, now: int = 0):
        self.now = now

    def __call__(self) -> int:
        return self.now


def node(triggers: SnapshotTriggers, clock: Clock | None = None, **kw):
    clock = clock or Clock()
    emitter = FakeEmitter()
    gen = SnapshotGenerator(emitter, clock_ms=clock, triggers=triggers, **kw)
    loader = MetadataLoader()
    loader.install_publishers(gen)
    loader.set_high_watermark(0)
    log = LogBuilder()
    loader.handle_commit([log.batch(mv(27))])  # the generator's first image: counters reset
    return loader, log, gen, emitter, clock


def test_presets_are_kafkas() -> None:
    assert (BUILDER_DEFAULTS.max_bytes, BUILDER_DEFAULTS.max_time_ms) == (100 * 1024 * 1024, 24 * HOUR)
    assert (SHARED_SERVER_DEFAULTS.max_bytes, SHARED_SERVER_DEFAULTS.max_time_ms) == (20 * 1024 * 1024, HOUR)
    gen = SnapshotGenerator.for_shared_server(FakeEmitter(), clock_ms=Clock())
    assert gen.triggers == SHARED_SERVER_DEFAULTS and gen.name == "SnapshotGenerator"
    assert SnapshotGenerator(FakeEmitter(), clock_ms=Clock()).triggers == BUILDER_DEFAULTS
    with pytest.raises(ValueError):
        SnapshotTriggers(max_bytes=0, max_time_ms=1)


def test_bytes_trigger_fires_exactly_at_the_threshold() -> None:
    log = LogBuilder(next_offset=1)
    batches = [log.batch(config(f"k{i}")) for i in range(4)]
    threshold = sum(b.size_in_bytes for b in batches[:3])
    for max_bytes, fires_at in ((threshold, 2), (threshold + 1, 3), (threshold - 1, 2)):
        loader, _, gen, emitter, _ = node(SnapshotTriggers(max_bytes=max_bytes, max_time_ms=0))
        for i, b in enumerate(batches):
            loader.handle_commit([b])
            assert gen.bytes_since_last_snapshot == (0 if i >= fires_at and emitter.images else
                                                     sum(x.size_in_bytes for x in batches[:i + 1]))
            if i == fires_at:
                break
        assert emitter.offsets == [batches[fires_at].last_offset]
        assert gen.events[0].reason == f"we have replayed at least {max_bytes} bytes"
        assert gen.events[0].message == (f"Creating new KRaft snapshot file snapshot "
                                         f"{batches[fires_at].last_offset + 1:020d}-0000000001 because we have "
                                         f"replayed at least {max_bytes} bytes.")


def test_time_trigger_fires_exactly_at_the_interval_on_virtual_time() -> None:
    clock = Clock(1_000)
    loader, log, gen, emitter, _ = node(SnapshotTriggers(max_bytes=1 << 40, max_time_ms=HOUR), clock)
    assert gen.last_snapshot_time_ms == 1_000
    clock.now = 1_000 + HOUR - 1
    loader.handle_commit([log.batch(config("cleanup.policy"))])
    assert emitter.images == []
    clock.now = 1_000 + HOUR
    b = log.batch(config("segment.ms"))
    loader.handle_commit([b])
    assert emitter.offsets == [b.last_offset] and gen.events[-1].reason == "we have waited at least 60 minute(s)"
    assert (gen.bytes_since_last_snapshot, gen.last_snapshot_time_ms) == (0, 1_000 + HOUR)
    clock.now += HOUR - 1
    loader.handle_commit([log.batch(config("segment.bytes"))])
    assert len(emitter.images) == 1


def test_zero_interval_turns_the_time_trigger_off() -> None:
    clock = Clock()
    loader, log, gen, emitter, _ = node(SnapshotTriggers(max_bytes=1 << 40, max_time_ms=0), clock)
    clock.now = 10 ** 12
    loader.handle_commit([log.batch(config("cleanup.policy"))])
    assert emitter.images == [] and gen.events == []


def test_no_snapshot_at_an_unaligned_image_and_the_counters_keep_counting() -> None:
    loader, log, gen, emitter, _ = node(SnapshotTriggers(max_bytes=1, max_time_ms=0))
    before = log.batch(config("cleanup.policy"))
    mixed = log.batch(config("segment.bytes"), begin(), config("flush.ms"), end())
    # the Begin inside `mixed` publishes at the record before it (unaligned), carrying `before`'s bytes
    loader.handle_commit([before, mixed])
    unaligned, aligned = gen.events
    assert not unaligned.emitted and unaligned.offset == mixed.base_offset
    assert unaligned.message == (f"Not emitting snapshot {mixed.base_offset + 1:020d}-0000000001 despite the fact "
                                 "that we have replayed at least 1 bytes because snapshots are disabled; metadata "
                                 "image is not batch aligned")
    assert aligned.emitted and emitter.offsets == [mixed.last_offset]


def test_unaligned_skip_does_not_reset_the_counters() -> None:
    loader, log, gen, emitter, _ = node(SnapshotTriggers(max_bytes=10_000, max_time_ms=0))
    big = log.batch(*[config(f"k{i}", "x" * 200) for i in range(60)])  # > 10,000 bytes
    loader.load_batch(big)
    loader.flush(aligned=False)  # a reader stopping inside a batch
    assert emitter.images == [] and gen.bytes_since_last_snapshot == big.size_in_bytes
    b = log.batch(config("delete.retention.ms"))
    loader.handle_commit([b])
    assert emitter.offsets == [b.last_offset]


def test_disabled_reason_and_shutdown() -> None:
    loader, log, gen, emitter, _ = node(SnapshotTriggers(max_bytes=1, max_time_ms=0), disabled_reason="testing")
    b = log.batch(config("cleanup.policy"))
    loader.handle_commit([b])
    assert emitter.images == []
    assert gen.events[-1].message.endswith("because snapshots are disabled; testing")
    gen.enable()
    loader.handle_commit([log.batch(config("segment.ms"))])
    assert len(emitter.images) == 1
    gen.begin_shutdown()
    loader.handle_commit([log.batch(config("segment.bytes"))])
    assert len(emitter.images) == 1 and gen.events[-1].message.endswith("disabled; we are shutting down")


def test_counters_reset_on_snapshot_load() -> None:
    clock = Clock()
    loader, log, gen, emitter, _ = node(SnapshotTriggers(max_bytes=400, max_time_ms=HOUR), clock)
    loader.handle_commit([log.batch(config("cleanup.policy", "x" * 100))])
    assert 0 < gen.bytes_since_last_snapshot < 400
    clock.now = HOUR - 1
    loader.handle_load_snapshot(list(log.batches[0].entries), end_offset=log.next_offset, epoch=1,
                                last_contained_log_timestamp=0)
    assert (gen.bytes_since_last_snapshot, gen.last_snapshot_time_ms) == (0, HOUR - 1)
    clock.now = HOUR
    loader.handle_commit([log.batch(config("segment.ms"))])
    assert emitter.images == []


def test_emitter_errors_reach_the_fault_handler() -> None:
    faults: list[SnapshotFault] = []
    gen = SnapshotGenerator(FakeEmitter(fail=True), clock_ms=Clock(), fault_handler=faults.append,
                            triggers=SnapshotTriggers(max_bytes=1, max_time_ms=0))
    loader = MetadataLoader()
    loader.install_publishers(gen)
    loader.set_high_watermark(0)
    log = LogBuilder()
    loader.handle_commit([log.batch(mv(27))])
    loader.handle_commit([log.batch(config("cleanup.policy"))])
    assert [str(f) for f in faults] == ["KRaft snapshot file generation error: disk full"]
    # the default handler raises
    strict = SnapshotGenerator(FakeEmitter(fail=True), clock_ms=Clock(),
                               triggers=SnapshotTriggers(max_bytes=1, max_time_ms=0))
    with pytest.raises(SnapshotFault, match="^KRaft snapshot file generation error: disk full$"):
        strict.on_metadata_update(MetadataDelta(loader.image), loader.image,
                                  LogDeltaManifest(loader.image.provenance, 1, 1, 0, 10))


# ----------------------------------------------------------------------------- Kafka's own snapshot offsets


def replay_with_generator(directory: Path, start: SnapshotId | None, emitter, clock: Clock) -> SnapshotGenerator:
    """A node replaying a real log, its clock the append time of the batch being committed."""
    with MetadataLog.open(directory, read_only=True) as log:
        batches = list(log.batches(start.end_offset if start else None))
        loader = MetadataLoader()
        gen = SnapshotGenerator.for_shared_server(emitter, clock_ms=clock)
        loader.install_publishers(gen)
        loader.set_high_watermark(0)
        if start is not None:
            snap = read_snapshot(directory / snapshot_file_name(start))
            clock.now = snap.last_contained_log_timestamp
            loader.handle_load_snapshot(list(snap.data_entries()), end_offset=start.end_offset, epoch=start.epoch,
                                        last_contained_log_timestamp=snap.last_contained_log_timestamp)
        else:
            clock.now = batches[0].batch.max_timestamp
            gen.reset_snapshot_counters()
        for fb in batches:
            b = fb.batch
            if b.last_offset < (start.end_offset if start else 0):
                continue
            clock.now = b.max_timestamp
            loader.handle_commit([CommittedBatch(b.base_offset, b.last_offset, b.partition_leader_epoch,
                                                 b.max_timestamp, b.size, decode_file_batch(fb))])
    return gen


@needs_oracle
@pytest.mark.parametrize("name", ["kafka-4.2_induswargods", "cp-kafka-3.6_rjmfernandes"])
def test_time_trigger_reproduces_kafkas_snapshot_offsets(name: str) -> None:
    """Started from Kafka's first snapshot, the 1 h trigger on the log's own clock picks
    exactly the offsets of Kafka's later snapshots."""
    directory = ORACLE / name / "__cluster_metadata-0"
    with MetadataLog.open(directory, read_only=True) as log:
        kafka = log.snapshot_ids()
    emitter = FakeEmitter()
    replay_with_generator(directory, kafka[0], emitter, Clock())
    ours = [SnapshotId(*i.provenance.snapshot_id()) for i in emitter.images]
    assert [s for s in ours if s <= kafka[-1]] == kafka[1:]


@needs_oracle
def test_a_node_replaying_kafka_4_1_writes_kafkas_snapshot(tmp_path: Path) -> None:
    src = ORACLE / "kafka-4.1_dkoh12" / "__cluster_metadata-0"
    directory = tmp_path / "__cluster_metadata-0"
    directory.mkdir()
    shutil.copyfile(src / "00000000000000000000.log", directory / "00000000000000000000.log")
    clock = Clock()
    with MetadataLog.open(directory, fsync=False) as log:
        emitter = SnapshotEmitter(log, clock_ms=clock, fsync=False)
        gen = replay_with_generator(directory, None, emitter, clock)
    assert [e.reason for e in gen.emitted] == ["we have waited at least 60 minute(s)"]
    (result,) = emitter.results
    kafka = read_snapshot(src / "00000000000000007209-0000000001.checkpoint")
    assert result.path.name == "00000000000000007209-0000000001.checkpoint"
    ours = read_snapshot(result.path)
    assert ours.last_contained_log_timestamp == kafka.last_contained_log_timestamp
    assert record_multiset(ours.payloads(), normalize_map_order=True) == record_multiset(kafka.payloads(),
                                                                                         normalize_map_order=True)
