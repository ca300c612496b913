"""The simulator's shortcuts give what the long way gives, and the deep invariants stay as strong.

Each shortcut (benchmarks/bench_sim.py measures what it saves) has a test here that would
fail if it changed a result: cached digests, shadow loaders sharing replays (but never with
the nodes they check), kept batch parses, a follower appending the leader's checked batch,
the recovery scan's CRC check, the network's delay draw.
"""

from __future__ import annotations

import random

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftsim.errors import CorruptRecordException, KraftsimError
from kraftsim.image import DigestCache, TopicsImage, image_digest
from kraftsim.protocol.batch import build_batch, check_batch_at, parse_batch
from kraftsim.sim import SimConfig, Simulation
from kraftsim.sim.engine.events import Network, Scheduler
from kraftsim.storage import MetadataLog
from tests.sim.sim_helpers import failed, loader_drops_topic_commits, scratch


def _faults(sim: Simulation, rounds: int, seed: int) -> None:
    rng = random.Random(seed)
    for k in range(rounds):
        if k % 3 == 0:
            leader = sim.leader()
            if leader is not None:
                sim.crash([leader])
                sim.run(4_000)
                sim.start([leader])
        elif k % 3 == 1:
            node = rng.randint(4, 6)
            sim.crash([node])
            sim.run(3_000)
            sim.start([node])
        else:
            sim.partition([[rng.randint(1, 6)]])
            sim.run(4_000)
            sim.heal()


# ------------------------------------------------------------------------------ digests


def test_cached_digests_equal_fresh_ones_over_a_faulty_history() -> None:
    """Every image the nodes hold along a run with crashes and partitions digests the same
    through one DigestCache (parts remembered by identity) as from scratch."""
    cache = DigestCache()
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=3, brokers=3, release="4.1", seed=5, durable=False)
        sim.create_topics(20, 3)
        seen = 0
        for round_ in range(6):
            _faults(sim, 1, round_)
            for info in sim.nodes():
                image = sim.image(info.id)
                if image is not None:
                    assert image_digest(image, cache) == image_digest(image)
                    seen += 1
        assert not failed(sim)
        sim.close()
    assert seen > 20 and cache.hits > 0  # the cache was used, not bypassed


def test_a_cached_digest_still_sees_a_changed_topic() -> None:
    """A topic replaced by another object with other partitions changes the digest, cached or not."""
    cache = DigestCache()
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=3, brokers=3, release="4.1", seed=2, durable=False)
        sim.create_topics(3, 2)
        image = sim.image(1)
        assert image is not None
        before = image_digest(image, cache)
        emptied = msgspec.structs.replace(image, topics=TopicsImage())
        assert image_digest(emptied, cache) == image_digest(emptied) != before
        assert image_digest(image, cache) == before
        sim.close()


# ------------------------------------------------------------------------------ shadow loaders


def test_a_drift_on_one_broker_among_many_is_caught() -> None:
    """Shadows share their replays; a broker whose image drifts while five other nodes apply
    the same commits correctly is still named."""
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=3, brokers=3, release="4.1", seed=4, durable=False)
        with loader_drops_topic_commits(sim.engine.member(5).node):
            sim.create_topics(2, 1)
        bad = failed(sim)
        sim.close()
    assert [r.name for r in bad] == ["ImageMatchesLog"]
    assert "node 5's image" in bad[0].detail


def test_shadows_never_adopt_what_the_nodes_share() -> None:
    """The nodes' commit share handing every adopting node a wrong image (all of them wrong
    alike) is caught: the shadows replay through a share of their own."""
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=3, brokers=2, release="4.1", seed=1, durable=False)
        share = sim.engine.share
        keep_result = share.keep_result  # (every kept commit goes through it, a loader's or the controller's)

        def poisoned(software, batch, before, raft_before, delta, image, *rest):  # type: ignore[no-untyped-def]
            if len(image.topics):
                image = msgspec.structs.replace(image, topics=TopicsImage())
            keep_result(software, batch, before, raft_before, delta, image, *rest)

        share.keep_result = poisoned  # type: ignore[method-assign]
        sim.create_topics(1, 1)
        bad = failed(sim)
        sim.close()
    assert [r.name for r in bad] == ["ImageMatchesLog"]


def test_shadow_replays_are_shared_and_invariants_hold_over_faults() -> None:
    """Over crashes and partitions every invariant holds, and most shadow steps are adopted."""
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=3, brokers=3, release="4.1", seed=9, durable=False,
                                config=SimConfig(message_loss=0.01))
        sim.create_topics(10, 3)
        _faults(sim, 9, 9)
        assert not failed(sim)
        share = sim.engine.checker.shadow_share
        assert share.adopted > share.replayed > 0
        sim.close()


# ------------------------------------------------------------------------------ storage paths


def test_kept_parses_follow_truncation_and_reappends() -> None:
    """A batch cut away and replaced by other bytes at the same offset reads as the new bytes,
    from the kept parse and from the file alike."""
    with scratch() as base:
        log = MetadataLog.open(base / "log", fsync=False)
        for i in range(4):
            log.append(build_batch(i, [(None, b"a%d" % i)], epoch=1, timestamp=0))
        log.truncate_to(2)
        log.append(build_batch(2, [(None, b"other")], epoch=2, timestamp=5))
        kept = [fb.batch.raw for fb in log.batches(0)]
        log.close()
        with MetadataLog.open(base / "log", read_only=True) as fresh:
            assert [fb.batch.raw for fb in fresh.batches(0)] == kept
        assert len(kept) == 3 and parse_batch(kept[2]).partition_leader_epoch == 2


def test_a_checked_batch_is_trusted_only_for_its_own_bytes() -> None:
    """append(checked=...) skips the parse only when given the parse of those very bytes."""
    raw = build_batch(0, [(None, b"x")], epoch=1, timestamp=0)
    bad = bytearray(raw)
    bad[-1] ^= 0xFF
    with scratch() as base:
        log = MetadataLog.open(base / "log", fsync=False)
        with pytest.raises(KraftsimError, match="crc"):
            log.append(bytes(bad), checked=parse_batch(raw))
        log.append(raw, checked=parse_batch(raw))
        assert log.log_end_offset == 1
        log.close()


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=0, max_value=200), st.integers(min_value=1, max_value=255))
def test_the_scan_check_raises_what_parse_batch_raises(position: int, flip: int) -> None:
    raw = bytearray(build_batch(7, [(None, b"value-%d" % i) for i in range(5)], epoch=3, timestamp=11))
    position %= len(raw)
    if position >= 12:  # (the base offset and length frame the batch; the scan checks them itself)
        raw[position] ^= flip
    data = b"pad" + bytes(raw)
    try:
        parse_batch(bytes(raw))
        expected = None
    except CorruptRecordException as e:
        expected = str(e)
    try:
        check_batch_at(data, 3, len(raw))
        got = None
    except CorruptRecordException as e:
        got = str(e)
    assert got == expected


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=0, max_value=2**32), st.integers(min_value=0, max_value=40),
       st.integers(min_value=0, max_value=1000))
def test_network_delays_are_randrange_draws(seed: int, lo: int, width: int) -> None:
    """The network's delay draw is `randrange(lo, hi + 1)`: the same numbers from the same bits."""
    hi = lo + width
    delays: list[int] = []
    sched = Scheduler(0)
    net = Network(sched, random.Random(seed), delay_ms=(lo, hi), loss=0.0, deliver=lambda m: None,
                  emit=lambda *a: None)
    net.verbose = False
    from kraftsim.sim.engine.events import Message

    for _ in range(20):
        net.send(Message(1, 2, "x", 0))
    while (entry := sched.pop_due(hi)) is not None:
        delays.append(entry[0])
    assert not len(sched)
    ref = random.Random(seed)
    assert sorted(delays) == sorted(lo if hi <= lo else ref.randrange(lo, hi + 1) for _ in range(20))


@settings(max_examples=15, deadline=None)
@given(st.integers(min_value=0, max_value=2**32))
def test_kept_leader_epochs_equal_a_fresh_walk(seed: int) -> None:
    """The leader epochs a log keeps up to date on appends equal a walk of its index, through
    appends, truncations, log start moves and segment rolls."""
    from kraftsim.storage.log import epoch_starts

    rng = random.Random(seed)
    with scratch() as base:
        log = MetadataLog.open(base / "log", fsync=False, segment_bytes=300)
        epoch = 0
        for _ in range(80):
            start, end = log.log_start_offset, log.log_end_offset
            r = rng.random()
            if r < 0.7 or end <= start:
                epoch += rng.choice([0, 0, 1])
                log.append(build_batch(end, [(None, b"v" * rng.randint(1, 40))] * rng.randint(1, 3), epoch=epoch,
                                       timestamp=0))
            elif r < 0.85:
                log.truncate_to(rng.randint(start, end))
            else:
                log.advance_log_start_offset(rng.randint(start, end))
            walked = epoch_starts(((e.epoch, e.base_offset) for _, e in log.index_entries()), log.log_start_offset)
            assert log.leader_epochs() == walked
        log.close()
