"""MetadataLoader: the transaction state machine, publish points, catch-up, publishers and
snapshot loads, against kafka-facts §6.3 (Kafka's MetadataLoader / MetadataBatchLoader)."""

from __future__ import annotations

import pytest

from kraftsim.image import MetadataImage, diff_images, image_digest
from kraftsim.image import (
    AbortHandling, LoaderFault, LogDeltaManifest, MetadataLoader, SnapshotManifest, TransactionState,
)
from kraftsim.protocol.entries import LogEntry
from tests.image.helpers import rec, replay, uid
from tests.image.loader_helpers import LogBuilder, Recorder, abort, begin, config, control, end, mv, noop

S = TransactionState
PREFIX = "Error loading metadata log record from offset"


def collecting_loader(**kw) -> tuple[MetadataLoader, list[LoaderFault]]:
    faults: list[LoaderFault] = []
    return MetadataLoader(fault_handler=faults.append, **kw), faults


def live_loader(*publishers, **kw) -> MetadataLoader:
    """A loader that has caught up: the high watermark is 0, so every publish goes out."""
    loader = MetadataLoader(**kw)
    loader.install_publishers(*publishers)
    loader.set_high_watermark(0)
    return loader


def bootstrapped(*publishers, level: int = 27, **kw) -> tuple[MetadataLoader, LogBuilder]:
    log = LogBuilder()
    loader = live_loader(*publishers, **kw)
    loader.handle_commit([log.batch(mv(level))])
    return loader, log


# ----------------------------------------------------------------------------- the state table

# Records that put a fresh batch loader into each state without publishing anything.
TO_STATE = {
    S.NO_TRANSACTION: [],
    S.STARTED: [begin()],
    S.CONTINUED: [begin(), noop()],
    S.ENDED: [begin(), end()],
    S.ABORTED: [begin(), abort()],
}
RECORDS = {"Begin": begin, "End": end, "Abort": abort, "other": lambda: config("compression.type")}
ERR_BEGIN = "Encountered BeginTransactionRecord while already in a transaction"
ERR_END = "Encountered EndTransactionRecord without having seen a BeginTransactionRecord"
ERR_ABORT = "Encountered AbortTransactionRecord without having seen a BeginTransactionRecord"
# (state, record) -> resulting state, or the error Kafka raises (the state then stays)
TABLE = {
    (S.NO_TRANSACTION, "Begin"): S.STARTED, (S.NO_TRANSACTION, "End"): ERR_END,
    (S.NO_TRANSACTION, "Abort"): ERR_ABORT, (S.NO_TRANSACTION, "other"): S.NO_TRANSACTION,
    (S.STARTED, "Begin"): ERR_BEGIN, (S.STARTED, "End"): S.ENDED,
    (S.STARTED, "Abort"): S.ABORTED, (S.STARTED, "other"): S.CONTINUED,
    (S.CONTINUED, "Begin"): ERR_BEGIN, (S.CONTINUED, "End"): S.ENDED,
    (S.CONTINUED, "Abort"): S.ABORTED, (S.CONTINUED, "other"): S.CONTINUED,
    (S.ENDED, "Begin"): S.STARTED, (S.ENDED, "End"): ERR_END,
    (S.ENDED, "Abort"): ERR_ABORT, (S.ENDED, "other"): S.NO_TRANSACTION,
    (S.ABORTED, "Begin"): S.STARTED, (S.ABORTED, "End"): ERR_END,
    (S.ABORTED, "Abort"): ERR_ABORT, (S.ABORTED, "other"): S.NO_TRANSACTION,
}


@pytest.mark.parametrize("state,record", sorted(TABLE, key=lambda k: (k[0].value, k[1])))
def test_transaction_state_table(state: TransactionState, record: str) -> None:
    loader, faults = collecting_loader()
    loader.set_high_watermark(0)
    log = LogBuilder()
    loader.handle_commit([log.batch(mv(27))])
    loader.load_batch(log.batch(*TO_STATE[state]) if TO_STATE[state] else log.batch(noop()))
    assert loader.transaction_state is state
    offset = log.next_offset
    loader.load_batch(log.batch(RECORDS[record]()))
    expected = TABLE[(state, record)]
    if isinstance(expected, str):
        assert [str(f) for f in faults] == [f"{PREFIX} {offset}: {expected}"]
        assert loader.transaction_state is state  # a refused marker changes nothing
    else:
        assert faults == []
        assert loader.transaction_state is expected


def test_default_fault_handler_raises_with_the_offset() -> None:
    loader = MetadataLoader()
    log = LogBuilder(next_offset=40)
    with pytest.raises(LoaderFault, match=f"^{PREFIX} 41: {ERR_END}$"):
        loader.handle_commit([log.batch(noop(), end())])
    assert loader.faults and loader.faults[0].cause is not None


def test_bad_record_reaches_the_fault_handler_and_loading_goes_on() -> None:
    loader, faults = collecting_loader()
    loader.set_high_watermark(0)
    log = LogBuilder()
    loader.handle_commit([log.batch(mv(27), rec("PartitionChangeRecord", topic_id=uid(9), partition_id=0, leader=1),
                                    config("retention.ms"))])
    assert len(faults) == 1 and str(faults[0]).startswith(f"{PREFIX} 1: ")
    assert loader.image.configs.resources and loader.last_offset == 2


# ----------------------------------------------------------------------------- a Begin in mid-delta


def test_begin_inside_a_batch_publishes_up_to_the_record_before_it_unaligned() -> None:
    r = Recorder()
    loader, log = bootstrapped(r)
    b = log.batch(config("cleanup.policy"), config("segment.ms"), begin(), config("segment.bytes"), end(), epoch=3, time_ms=7_000)
    loader.handle_commit([b])
    split, final = r.seen[-2:]
    assert (split.offset, split.aligned) == (b.base_offset + 1, False)
    prov = split.manifest.provenance
    assert (prov.last_contained_epoch, prov.last_contained_log_time_ms) == (3, 7_000)
    assert set(split.image.configs.resources[(2, "t")]) == {"cleanup.policy", "segment.ms"}
    assert (final.offset, final.aligned) == (b.last_offset, True)
    assert set(final.image.configs.resources[(2, "t")]) == {"cleanup.policy", "segment.ms", "segment.bytes"}
    # the bytes and batch count go with the publish that ends the batch
    assert (split.manifest.num_batches, split.manifest.num_bytes) == (0, 0)
    assert (final.manifest.num_batches, final.manifest.num_bytes) == (1, b.size_in_bytes)


def test_begin_opening_a_later_batch_publishes_aligned_with_that_batch_epoch() -> None:
    """Kafka takes the epoch and append time of the Begin's batch, even though the offset
    published is the previous batch's last one."""
    r = Recorder()
    loader, log = bootstrapped(r)
    first = log.batch(config("cleanup.policy"), epoch=1, time_ms=5_000)
    second = log.batch(begin(), config("segment.ms"), end(), epoch=2, time_ms=6_000)
    loader.handle_commit([first, second])
    split, final = r.seen[-2:]
    prov = split.manifest.provenance
    assert (prov.last_contained_offset, prov.is_offset_batch_aligned) == (first.last_offset, True)
    assert (prov.last_contained_epoch, prov.last_contained_log_time_ms) == (2, 6_000)
    assert (split.manifest.num_batches, split.manifest.num_bytes) == (1, first.size_in_bytes)
    assert (final.manifest.num_batches, final.manifest.num_bytes) == (1, second.size_in_bytes)
    assert final.offset == second.last_offset


def test_begin_opening_the_first_batch_of_a_commit_publishes_nothing_first() -> None:
    r = Recorder()
    loader, log = bootstrapped(r)
    before = len(r.seen)
    b = log.batch(begin(), config("cleanup.policy"), end())
    loader.handle_commit([b])
    assert len(r.seen) == before + 1 and r.seen[-1].offset == b.last_offset


def test_a_batch_tail_starting_with_a_begin_publishes_nothing_first() -> None:
    """A reader that resumes inside a batch (after a snapshot at an unaligned offset) hands
    over only the batch's tail: nothing precedes the Begin since the last publish."""
    r = Recorder()
    loader = live_loader(r)
    loader.handle_load_snapshot(entries_of(mv(27)), end_offset=5, epoch=1, last_contained_log_timestamp=0)
    full = LogBuilder(next_offset=3).batch(config("max.message.bytes"), config("min.insync.replicas"), begin(), config("cleanup.policy"), end())
    tail = full._replace(entries=[e for e in full.entries if e.offset >= 5])
    loader.handle_commit([tail])
    assert r.offsets == [4, 7] and r.kinds == ["SNAPSHOT", "LOG_DELTA"]
    assert set(loader.image.configs.resources[(2, "t")]) == {"cleanup.policy"}


def test_second_begin_in_a_transaction_is_refused_and_publishes_at_the_first() -> None:
    """Kafka checks for a fresh transaction after every record, refused or not."""
    r = Recorder()
    faults: list[LoaderFault] = []
    loader, log = bootstrapped(r, fault_handler=faults.append)
    b = log.batch(begin(), begin(), config("cleanup.policy"), end())
    n = len(r.seen)
    loader.handle_commit([b])
    assert [str(f) for f in faults] == [f"{PREFIX} {b.base_offset + 1}: {ERR_BEGIN}"]
    assert r.offsets[n:] == [b.base_offset, b.last_offset]


# ----------------------------------------------------------------------------- flush per state


def test_open_transaction_publishes_nothing_until_it_ends() -> None:
    r = Recorder()
    loader, log = bootstrapped(r)
    n = len(r.seen)
    loader.handle_commit([log.batch(begin(), config("cleanup.policy"))])
    assert loader.transaction_state is S.CONTINUED and len(r.seen) == n
    loader.handle_commit([log.batch(config("segment.ms"))])
    assert len(r.seen) == n
    b = log.batch(end())
    loader.handle_commit([b])
    assert r.offsets[n:] == [b.last_offset]
    assert set(r.seen[-1].image.configs.resources[(2, "t")]) == {"cleanup.policy", "segment.ms"}
    assert r.seen[-1].manifest.num_batches == 3


def test_started_transaction_at_commit_end_publishes_nothing() -> None:
    r = Recorder()
    loader, log = bootstrapped(r)
    n = len(r.seen)
    loader.handle_commit([log.batch(begin())])
    assert loader.transaction_state is S.STARTED and len(r.seen) == n


def test_aborted_transaction_publishes_an_empty_delta_and_moves_the_provenance() -> None:
    r = Recorder()
    loader, log = bootstrapped(r)
    before = loader.image
    loader.handle_commit([log.batch(begin(), config("cleanup.policy"))])
    b = log.batch(config("segment.ms"), abort())
    loader.handle_commit([b])
    last = r.seen[-1]
    assert last.offset == b.last_offset and last.aligned
    assert last.image.same_content(before) and diff_images(before, last.image) == []
    assert last.delta.apply(before.provenance) == before  # the delta holds no change at all
    assert loader.transaction_state is S.NO_TRANSACTION


@pytest.mark.parametrize("records", [[config("cleanup.policy")], [begin(), config("cleanup.policy"), end()]], ids=["no-transaction", "ended"])
def test_ended_or_no_transaction_is_applied(records) -> None:
    r = Recorder()
    loader, log = bootstrapped(r)
    b = log.batch(*records)
    loader.handle_commit([b])
    assert r.seen[-1].offset == b.last_offset
    assert r.seen[-1].image.configs.resources[(2, "t")] == {"cleanup.policy": "v"}


# ----------------------------------------------------------------------------- the derived abort case


@pytest.mark.parametrize("split_batches", [False, True], ids=["same-batch", "next-batch"])
def test_records_after_an_abort_in_the_same_commit(split_batches: bool) -> None:
    """Kafka's code: the aborted records are published with what follows (AbortHandling.KAFKA).
    kraftsim's named alternative drops them at the Abort (AbortHandling.DISCARD).
    retention.bytes is set inside the aborted transaction, retention.ms after it."""
    results = {}
    for handling in AbortHandling:
        r = Recorder()
        loader, log = bootstrapped(r, abort_handling=handling)
        if split_batches:
            batches = [log.batch(begin(), config("retention.bytes"), abort()), log.batch(config("retention.ms"))]
        else:
            batches = [log.batch(begin(), config("retention.bytes"), abort(), config("retention.ms"))]
        loader.handle_commit(batches)
        assert loader.transaction_state is S.NO_TRANSACTION
        results[handling] = set(r.seen[-1].image.configs.resources[(2, "t")])
    assert results[AbortHandling.KAFKA] == {"retention.bytes", "retention.ms"}
    assert results[AbortHandling.DISCARD] == {"retention.ms"}


@pytest.mark.parametrize("handling", list(AbortHandling))
def test_abort_at_commit_end_drops_the_transaction_under_both(handling: AbortHandling) -> None:
    r = Recorder()
    loader, log = bootstrapped(r, abort_handling=handling)
    loader.handle_commit([log.batch(begin(), config("retention.bytes"), abort())])
    loader.handle_commit([log.batch(config("retention.ms"))])
    assert set(loader.image.configs.resources[(2, "t")]) == {"retention.ms"}


# ----------------------------------------------------------------------------- catching up


def test_nothing_is_published_before_the_high_watermark_is_known() -> None:
    r = Recorder()
    loader = MetadataLoader()
    loader.install_publishers(r)
    log = LogBuilder()
    loader.handle_commit([log.batch(mv(27))])
    loader.handle_commit([log.batch(config("cleanup.policy"))])
    assert r.seen == [] and not loader.caught_up and loader.publish_count == 0
    loader.set_high_watermark(2)  # the loader is already there: the publisher gets the whole image
    assert r.kinds == ["SNAPSHOT"] and r.offsets == [1] and loader.caught_up


def test_nothing_is_published_below_the_high_watermark() -> None:
    r = Recorder()
    loader = MetadataLoader()
    loader.install_publishers(r)
    loader.set_high_watermark(3)
    log = LogBuilder()
    loader.handle_commit([log.batch(mv(27))])  # offset 0 < 3 - 1
    loader.handle_commit([log.batch(config("cleanup.policy"))])  # offset 1
    assert r.seen == []
    loader.handle_commit([log.batch(config("segment.ms"))])  # offset 2 = HW - 1: caught up
    assert r.kinds == ["SNAPSHOT"] and r.offsets == [2]
    loader.handle_commit([log.batch(config("segment.bytes"))])
    assert r.kinds == ["SNAPSHOT", "LOG_DELTA"]


def test_catching_up_needs_a_record() -> None:
    """Only control batches and markers: at the high watermark, but nothing seen yet."""
    r = Recorder()
    loader = MetadataLoader()
    loader.install_publishers(r)
    loader.set_high_watermark(2)
    log = LogBuilder()
    loader.handle_commit([log.leader_change(), log.batch(begin(), end())])
    assert not loader.caught_up and r.seen == [] and not loader.has_seen_record
    loader.handle_commit([log.batch(noop())])  # a NoOpRecord is a record
    assert loader.caught_up and r.offsets == [3]


def test_a_non_empty_image_counts_as_having_seen_a_record() -> None:
    r = Recorder()
    loader = MetadataLoader()
    loader.install_publishers(r)
    loader.set_high_watermark(11)
    snap = [LogEntry(i, 1, 0, False, p.record_type, p.version, p.message) for i, p in enumerate([mv(27)])]
    loader.handle_load_snapshot(snap, end_offset=10, epoch=1, last_contained_log_timestamp=5)
    assert not loader.caught_up  # offset 9 < 11 - 1
    log = LogBuilder(next_offset=10)
    loader.handle_commit([log.leader_change()])  # control batch only, offset 10
    assert loader.caught_up and r.offsets == [10] and r.seen[0].image.metadata_version == 27


def test_records_seen_are_forgotten_when_the_published_image_is_still_empty() -> None:
    """Kafka resets hasSeenRecord to !image.isEmpty() after every publish: a NoOpRecord that
    left the image empty does not count once it has been published."""
    loader = MetadataLoader()
    loader.set_high_watermark(3)
    log = LogBuilder()
    loader.handle_commit([log.batch(noop())])
    assert loader.image.is_empty() and not loader.has_seen_record
    loader.handle_commit([log.leader_change(), log.leader_change()])  # offset 2 = HW - 1
    assert not loader.caught_up
    loader.handle_commit([log.batch(noop())])
    assert loader.caught_up


def test_empty_image_with_only_control_batches_never_catches_up() -> None:
    loader = MetadataLoader()
    loader.set_high_watermark(1)
    loader.handle_commit([LogBuilder().leader_change()])
    assert not loader.caught_up and loader.publish_count == 0


# ----------------------------------------------------------------------------- publishers


def test_new_publisher_gets_the_whole_image_as_a_delta_from_empty_then_increments() -> None:
    first = Recorder("first")
    loader, log = bootstrapped(first)
    loader.handle_commit([log.batch(rec("RegisterBrokerRecord", broker_id=1, incarnation_id=uid(1)),
                                    rec("TopicRecord", name="t", topic_id=uid(2)),
                                    rec("PartitionRecord", topic_id=uid(2), partition_id=0, replicas=[1], isr=[1],
                                        leader=1),
                                    config("retention.ms", "1"))])
    late = Recorder("late")
    loader.install_publishers(late)
    assert loader.publishers == ["first", "late"]
    (init,) = late.seen
    assert isinstance(init.manifest, SnapshotManifest) and init.image is loader.image
    assert init.delta.image == MetadataImage()  # based on the empty image
    rebuilt = init.delta.apply(loader.image.provenance)
    assert rebuilt == loader.image and image_digest(rebuilt) == image_digest(loader.image)
    b = log.batch(config("retention.ms", "2"))
    loader.handle_commit([b])
    inc = late.seen[-1]
    assert isinstance(inc.manifest, LogDeltaManifest) and inc.delta.image is init.image
    assert inc.delta.apply(inc.manifest.provenance) == loader.image
    assert first.seen[-1].image is inc.image


def test_publisher_names_are_unique_and_removable() -> None:
    loader, _ = bootstrapped(Recorder("a"))
    with pytest.raises(Exception, match="already installed"):
        loader.install_publishers(Recorder("a"))
    assert loader.remove_publisher("a").name == "a" and loader.publishers == []


def test_publisher_errors_reach_the_fault_handler() -> None:
    faults: list[LoaderFault] = []
    good, bad = Recorder("good"), Recorder("bad")
    loader, log = bootstrapped(good, bad, fault_handler=faults.append)
    assert faults == [] and loader.publishers == ["good", "bad"]
    bad.fail = True
    loader.handle_commit([log.batch(config("cleanup.policy"))])
    assert [str(f) for f in faults] == [
        "Unhandled error publishing the new metadata image ending at 1 with publisher bad: publisher failed"]
    assert good.offsets[-1] == 1
    late = Recorder("late", fail=True)
    loader.install_publishers(late)
    # a failed initialisation is reported and the publisher is not installed
    assert str(faults[-1]) == "Unhandled error initializing late with a snapshot at offset 1: publisher failed"
    assert "late" not in loader.publishers


# ----------------------------------------------------------------------------- snapshot loads


def entries_of(*payloads) -> list[LogEntry]:
    return [LogEntry(i, 1, 0, False, p.record_type, p.version, p.message) for i, p in enumerate(payloads)]


def test_snapshot_load_replaces_the_image_and_drops_an_open_transaction() -> None:
    r = Recorder()
    faults: list[LoaderFault] = []
    loader, log = bootstrapped(r, fault_handler=faults.append)
    loader.handle_commit([log.batch(config("preallocate"), rec("RegisterBrokerRecord", broker_id=7, incarnation_id=uid(7)))])
    loader.handle_commit([log.batch(begin(), config("index.interval.bytes"))])
    assert loader.transaction_state is S.CONTINUED
    image = loader.handle_load_snapshot(entries_of(mv(25), config("max.compaction.lag.ms", resource="u")), end_offset=100, epoch=4,
                                        last_contained_log_timestamp=123)
    assert loader.transaction_state is S.NO_TRANSACTION
    assert image.metadata_version == 25 and not image.cluster.brokers
    assert list(image.configs.resources) == [(2, "u")]
    p = r.seen[-1]
    assert isinstance(p.manifest, SnapshotManifest) and p.image is image
    prov = image.provenance
    assert (prov.last_contained_offset, prov.last_contained_epoch, prov.last_contained_log_time_ms,
            prov.is_offset_batch_aligned) == (99, 4, 123, True)
    # the transaction was dropped: its End is now out of place
    log.next_offset = 100
    loader.handle_commit([log.batch(end())])
    assert [str(f) for f in faults] == [f"{PREFIX} 100: {ERR_END}"]


def test_bad_snapshot_record_uses_kafkas_snapshot_text() -> None:
    loader, faults = collecting_loader()
    loader.handle_load_snapshot(entries_of(mv(27), rec("PartitionChangeRecord", topic_id=uid(1), partition_id=0)),
                                end_offset=50, epoch=1, last_contained_log_timestamp=0)
    assert len(faults) == 1
    assert str(faults[0]).startswith("Error loading metadata log record 1 in snapshot at offset 49: ")


# ----------------------------------------------------------------------------- control records


def test_kraft_version_and_voters_come_from_control_batches() -> None:
    loader = MetadataLoader()
    log = LogBuilder()
    voters = control("VotersRecord", voters=[])
    loader.handle_commit([log.batch(control("KRaftVersionRecord", k_raft_version=1), voters, control_batch=True),
                          log.batch(mv(27))])
    assert loader.kraft_version == 1 and loader.voters == voters.message
    assert loader.last_offset == 2 and loader.image.metadata_version == 27
    assert loader.image.features.level("kraft.version") == 0  # never in the image


def test_control_batches_count_as_batches_and_move_the_offset() -> None:
    r = Recorder()
    loader, log = bootstrapped(r)
    lc = log.leader_change(epoch=5)
    loader.handle_commit([lc])
    m = r.seen[-1].manifest
    assert (m.provenance.last_contained_offset, m.provenance.last_contained_epoch, m.num_batches, m.num_bytes) == (
        lc.last_offset, 5, 1, lc.size_in_bytes)
    assert r.seen[-1].image.same_content(r.seen[-2].image)


def test_replay_matches_image_from_records() -> None:
    log = LogBuilder()
    batches = [log.batch(mv(27), config("cleanup.policy")), log.batch(begin(), config("segment.ms"), end()), log.batch(config("segment.bytes"))]
    loader = live_loader()
    loader.handle_commit(batches)
    records = [e for b in batches for e in b.entries if e.record_type.name not in
               ("BeginTransactionRecord", "EndTransactionRecord")]
    assert loader.image.same_content(replay(records))
