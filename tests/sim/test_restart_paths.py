"""The shortcuts of a node's start and of its state files give what the long way gives.

Each has a test that would fail if it changed a result or were wired wrongly: the recovery
scan's one-header-read path, the read-only log handed over as the node's log, batches
matched by their bytes (the catch-up's adoptions, the start-up feature scan), state files
rewritten only when their bytes change, and a new publisher's first delta made on use.
"""

from __future__ import annotations

import random
import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftsim.image import MetadataLoader, image_digest
from kraftsim.image.loader.metadata_loader import full_image_delta
from kraftsim.protocol.batch import build_batch
from kraftsim.sim import SimConfig, Simulation
from kraftsim.sim.node.simnode import SimNode
from kraftsim.sim.node.start_scan import FeatureLevelScan
from kraftsim.sim.node.state_files import holds
from kraftsim.storage import MetadataLog
from kraftsim.storage.segment import IndexEntry, ScanProblem, _scan_step, scan_segment, scan_segment_file
from tests.sim.sim_helpers import failed, scratch, tree_digest


def _restarts(sim: Simulation, seed: int) -> None:
    """Leader and broker crashes and restarts, a partition, a clean stop: every start catches up."""
    rng = random.Random(seed)
    sim.create_topics(12, 3)
    for k in range(6):
        if k % 3 == 0:
            leader = sim.leader()
            if leader is not None:
                sim.crash([leader])
                sim.run(3_000)
                sim.start([leader])
        elif k % 3 == 1:
            broker = rng.randint(4, 6)
            sim.stop([broker]) if k == 4 else sim.crash([broker])
            sim.run(2_500)
            sim.start([broker])
        else:
            sim.partition([[rng.randint(1, 6)]])
            sim.run(3_000)
            sim.heal()
    sim.run(5_000)


def _run(base, name: str, seed: int = 4) -> tuple[str, list[str], dict[str, int]]:  # type: ignore[no-untyped-def]
    """(the cluster directory's digest, the timeline, counters) of one seeded run."""
    sim = Simulation.create(base / name, controllers=3, brokers=3, release="4.1", seed=seed, durable=False,
                            config=SimConfig(message_loss=0.02))
    lines: list[str] = []
    sim.subscribe(lambda e: lines.append(repr(e)))
    _restarts(sim, seed)
    assert not failed(sim)
    counts = {"adopted": sim.engine.share.adopted, "replayed": sim.engine.share.replayed}
    sim.close()
    return tree_digest(base / name), lines, counts


# ------------------------------------------------------------------------------ the recovery scan


def _segment(rng: random.Random) -> bytes:
    out, offset, epoch = b"", 0, 1
    for _ in range(rng.randint(1, 6)):
        epoch += rng.choice([0, 0, 1])
        n = rng.randint(1, 3)
        out += build_batch(offset, [(None, b"v" * rng.randint(0, 30))] * n, epoch=epoch, timestamp=7)
        offset += n + rng.choice([0, 0, 0, 2])  # (a gap now and then)
    return out


#: How a scan's segment is damaged: a flipped byte anywhere, a cut tail, a falling epoch, not at all.
DAMAGE = st.sampled_from(["flip", "cut", "epoch", "none"])


def _damaged_segment(seed: int, damage: str) -> bytes:
    rng = random.Random(seed)
    data = bytearray(_segment(rng))
    if damage == "flip":
        data[rng.randrange(len(data))] ^= rng.randint(1, 255)
    elif damage == "cut":
        del data[rng.randrange(1, len(data)):]
    elif damage == "epoch":
        data += build_batch(100, [(None, b"late")], epoch=0, timestamp=7)
    return bytes(data)


def _walk(data: bytes, base: int, validate: bool, min_epoch: int | None, expected_next: int | None,
          findings: list[ScanProblem]) -> tuple[list[IndexEntry], ScanProblem | None]:
    """scan_segment the long way only: every batch through `_scan_step`."""
    entries: list[IndexEntry] = []
    pos, expected = 0, base if expected_next is None else max(base, expected_next)
    while pos < len(data):
        problem, pos, expected = _scan_step(data, pos, expected, entries, validate=validate, min_epoch=min_epoch,
                                            findings=findings)
        if problem is not None:
            return entries, problem
    return entries, None


@settings(max_examples=150, deadline=None)
@given(st.integers(min_value=0, max_value=2**32), st.booleans(), DAMAGE,
       st.sampled_from([None, 0, 3]), st.sampled_from([None, 2, 9]))
def test_the_scan_fast_path_equals_the_long_walk(seed: int, validate: bool, damage: str, expected_next: int | None,
                                                 min_epoch: int | None) -> None:
    """Entries, the problem that ends the walk and the findings are those of the check-by-check
    walk, over damaged segments (a flipped byte anywhere, a cut tail, a falling epoch)."""
    data = _damaged_segment(seed, damage)
    fast: list[ScanProblem] = []
    slow: list[ScanProblem] = []
    got = scan_segment(data, 0, validate=validate, expected_next=expected_next, min_epoch=min_epoch,
                       findings=fast)
    assert got == _walk(data, 0, validate, min_epoch, expected_next, slow)
    assert fast == slow


@settings(max_examples=150, deadline=None)
@given(st.integers(min_value=0, max_value=2**32), st.booleans(), DAMAGE,
       st.sampled_from([None, 0, 3]), st.sampled_from([None, 2, 9]), st.sampled_from([1, 12, 61, 62, 100, 257, 1 << 20]))
def test_a_scan_of_the_file_a_window_at_a_time_equals_the_scan_of_its_bytes(
        seed: int, validate: bool, damage: str, expected_next: int | None, min_epoch: int | None, window: int) -> None:
    """Entries (positions in the file), the problem and the findings are those of one scan
    over the whole file's bytes, whatever the window (batches cut by a window's end are read
    again from their start), over the damaged segments above."""
    data = _damaged_segment(seed, damage)
    whole: list[ScanProblem] = []
    windowed: list[ScanProblem] = []
    expected = scan_segment(data, 0, validate=validate, expected_next=expected_next, min_epoch=min_epoch,
                            findings=whole)
    with tempfile.TemporaryFile() as f:
        f.write(data)
        f.flush()
        got = scan_segment_file(f.fileno(), len(data), 0, validate=validate, expected_next=expected_next,
                                min_epoch=min_epoch, findings=windowed, window=window)
    assert got == expected
    assert windowed == whole


# ------------------------------------------------------------------------------ one open at a start


def test_a_clean_read_only_log_made_writable_is_the_writable_open() -> None:
    with scratch() as base:
        for d in ("a", "b"):
            log = MetadataLog.open(base / d, fsync=False)
            for i in range(5):
                log.append(build_batch(i, [(None, b"x%d" % i)], epoch=1 + i // 3, timestamp=0))
            log.close()
        handed = MetadataLog.open(base / "a", read_only=True)
        assert handed.to_writable(fsync=False)
        fresh = MetadataLog.open(base / "b", fsync=False)
        for log in (handed, fresh):
            log.append(build_batch(5, [(None, b"more")], epoch=3, timestamp=0))
            log.truncate_to(4)
            log.append(build_batch(4, [(None, b"other")], epoch=3, timestamp=0))
        assert [(e.base_offset, e.last_offset, e.epoch) for _, e in handed.index_entries()] \
            == [(e.base_offset, e.last_offset, e.epoch) for _, e in fresh.index_entries()]
        assert handed.leader_epochs() == fresh.leader_epochs()
        handed.close()
        fresh.close()
        assert tree_digest(base / "a") == tree_digest(base / "b")

        (base / "empty").mkdir()
        empty = MetadataLog.open(base / "empty", read_only=True)
        assert empty.to_writable(fsync=False) and empty.log_end_offset == 0
        empty.close()
        assert sorted(p.name for p in (base / "empty").iterdir()) == ["00000000000000000000.log"]


def test_a_log_with_something_to_recover_is_not_handed_over() -> None:
    with scratch() as base:
        log = MetadataLog.open(base / "t", fsync=False)
        for i in range(3):
            log.append(build_batch(i, [(None, b"y")], epoch=1, timestamp=0))
        log.close()
        seg = base / "t" / "00000000000000000000.log"
        seg.write_bytes(seg.read_bytes()[:-5])  # a torn tail
        ro = MetadataLog.open(base / "t", read_only=True)
        assert ro.recovery and not ro.to_writable(fsync=False) and ro.read_only
        ro.close()


# ------------------------------------------------------------------------------ batches matched by bytes


def test_catching_up_by_bytes_gives_what_parsing_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same seeded run with every unparsed batch read and parsed (no match by bytes) ends
    with the same directories, timeline and images; the match by bytes did adopt."""
    with scratch() as base:
        fast = _run(base, "fast")
        monkeypatch.setattr(SimNode, "_adopt_unparsed", lambda self, seg, j, *a: j)  # (adopts none)
        slow = _run(base, "slow")
    assert fast[:2] == slow[:2]
    assert fast[2]["adopted"] == slow[2]["adopted"] and fast[2]["replayed"] == slow[2]["replayed"]


def test_bytes_that_differ_are_never_adopted(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the kept bytes of every shared commit wrong, no batch is adopted by its bytes (each
    is parsed, checked and adopted by its key the long way), and everything ends the same."""
    from kraftsim.sim.node.commit_share import CommitShare

    by_bytes = [0]
    adopt_unparsed = SimNode._adopt_unparsed

    def counted(self, seg, j, *a):  # type: ignore[no-untyped-def]
        k = adopt_unparsed(self, seg, j, *a)
        by_bytes[0] += k - j
        return k

    monkeypatch.setattr(SimNode, "_adopt_unparsed", counted)
    with scratch() as base:
        good = _run(base, "good")
        assert by_bytes[0] > 0
        by_bytes[0] = 0
        keep_result = CommitShare.keep_result  # (every kept commit goes through it, a loader's or the controller's)

        def wrong_bytes(self, software, batch, before, raft_before, delta, image, manifest, raw,  # type: ignore[no-untyped-def]
                        raft_after=None):
            keep_result(self, software, batch, before, raft_before, delta, image, manifest,
                        None if raw is None else raw + b"?", raft_after)

        monkeypatch.setattr(CommitShare, "keep_result", wrong_bytes)
        bad = _run(base, "bad")
    assert by_bytes[0] == 0
    assert good == bad


def test_the_feature_scan_by_bytes_equals_a_fresh_decode(monkeypatch: pytest.MonkeyPatch) -> None:
    """A controller's start-up levels (after an upgrade of metadata.version, so the log holds
    FeatureLevelRecords) are those a scan with nothing kept decodes at that start; a kept
    entry whose bytes differ is decoded again, not trusted."""
    from kraftsim.sim.engine.core import Engine

    starts = []
    on_disk = Engine._finalized_on_disk

    def compared(self, node):  # type: ignore[no-untyped-def]
        before = self.level_scan.matched_by_bytes
        got = on_disk(self, node)
        starts.append((got, FeatureLevelScan(self.registry).finalized(node),
                       self.level_scan.matched_by_bytes - before))
        return got

    monkeypatch.setattr(Engine, "_finalized_on_disk", compared)
    with scratch() as base:
        sim = Simulation.create(base / "f", controllers=3, brokers=1, release="4.1", release_version="3.9",
                                seed=2, durable=False)
        sim.features("upgrade", metadata="4.1")
        for node_id in (2, 3, 2):
            sim.crash([node_id])
            sim.run(1_000)
            sim.start([node_id])
            sim.run(2_000)
        scan = sim.engine.level_scan
        for key, (raw, found) in list(scan._levels.items()):
            scan._levels[key] = (raw[:-1] + bytes([raw[-1] ^ 1]), found[:0])  # wrong bytes, no levels
        sim.crash([3])
        sim.start([3])
        mv = sim.metadata_version()
        assert not failed(sim)
        sim.close()
    assert all(got == fresh for got, fresh, _ in starts)
    assert len(starts) == 3 + 4 and all(got["metadata.version"] == mv for got, _, _ in starts[3:])
    assert starts[-2][2] > 0  # the third start matched batches by their bytes
    assert starts[-1][2] == 0  # none of the wrong bytes was trusted


# ------------------------------------------------------------------------------ state files


def test_holds_compares_the_bytes_and_sees_a_leftover_temporary() -> None:
    with scratch() as base:
        p = base / "quorum-state"
        assert not holds(p, b"abc")  # missing
        p.write_bytes(b"abc")
        assert holds(p, b"abc")
        assert not holds(p, b"ab") and not holds(p, b"abcd") and not holds(p, b"abd")
        (base / "quorum-state.tmp").write_bytes(b"")
        assert not holds(p, b"abc")


def test_the_state_files_bytes_are_the_storage_writers_bytes() -> None:
    """write_if_changed is handed the very bytes write_quorum_state and
    write_leader_epoch_checkpoint write (as raft.py builds them)."""
    from kraftsim.sim.node.state_files import write_if_changed
    from kraftsim.sim.node.voters import quorum_state
    from kraftsim.storage import EpochEntry, leader_epoch_text, write_leader_epoch_checkpoint, write_quorum_state

    with scratch() as base:
        for kraft_version in (0, 1):
            state = quorum_state(kraft_version, leader=2, epoch=7, voted=None, voters=(1, 2, 3))
            write_quorum_state(base / "a", state, fsync=False)
            write_if_changed(base / "b", state.text().encode("utf-8"), fsync=False)
            assert (base / "a").read_bytes() == (base / "b").read_bytes()
        entries = [EpochEntry(1, 0), EpochEntry(3, 17)]
        write_leader_epoch_checkpoint(base / "c", entries, fsync=False)
        write_if_changed(base / "d", leader_epoch_text(entries).encode("ascii"), fsync=False)
        assert (base / "c").read_bytes() == (base / "d").read_bytes()


def test_state_files_end_as_unconditional_writes_leave_them(monkeypatch: pytest.MonkeyPatch) -> None:
    with scratch() as base:
        skipping = _run(base, "skip")
        monkeypatch.setattr("kraftsim.sim.node.state_files.holds", lambda path, data: False)
        writing = _run(base, "write")
    assert skipping[:2] == writing[:2]


# ------------------------------------------------------------------------------ a publisher's first delta


class _Recorder:
    def __init__(self, name: str, read: bool):
        self.name, self.read = name, read
        self.got: list = []

    def on_metadata_update(self, delta, image, manifest) -> None:  # type: ignore[no-untyped-def]
        self.got.append((delta, image_digest(delta.apply()) if self.read else None))


def test_a_first_delta_made_on_use_is_the_full_image_delta() -> None:
    with scratch() as base:
        sim = Simulation.create(base / "d", controllers=1, brokers=1, release="4.1", seed=3, durable=False)
        sim.create_topics(3, 2)
        image = sim.image(1)
        catalog = sim.engine.member(1).node.catalog  # type: ignore[union-attr]
        sim.close()
    eager = image_digest(full_image_delta(image, catalog).apply())
    for on_use in (False, True):
        loader = MetadataLoader(catalog, clock_ns=lambda: 0, initial_delta_on_use=on_use)
        loader._image, loader._caught_up = image, True  # (a loader standing on that image)
        reader, ignorer = _Recorder("reader", True), _Recorder("ignorer", False)
        loader.install_publishers(reader, ignorer)
        assert reader.got[0][1] == eager
        assert reader.got[0][0] is ignorer.got[0][0]  # one delta for all the new publishers
    lazy = MetadataLoader(catalog, clock_ns=lambda: 0, initial_delta_on_use=True)
    lazy._image, lazy._caught_up = image, True
    ignorer = _Recorder("ignorer", False)
    lazy.install_publishers(ignorer)
    assert ignorer.got[0][0]._delta is None  # never read: never made


# ------------------------------------------------------------------------------ the collector


class _Cyclic:
    def __init__(self) -> None:
        self.me = self


def test_the_collector_runs_less_often_only_while_the_simulator_works() -> None:
    """While events run the young and middle thresholds are YOUNG and MIDDLE and cyclic garbage is still collected
    (by the collector's own runs, none asked for); afterwards the caller's thresholds are back."""
    import gc
    import weakref

    from kraftsim.gcpause import MIDDLE, YOUNG, fewer_collections

    before = gc.get_threshold()
    assert before[0] < YOUNG
    during: set[tuple[int, int]] = set()
    refs: list[weakref.ref] = []

    def litter(event: object) -> None:
        during.add(gc.get_threshold()[:2])
        for _ in range(YOUNG // 250):  # (enough for several young collections in the run)
            refs.append(weakref.ref(_Cyclic()))

    assert gc.isenabled()
    with scratch() as base:
        sim = Simulation.create(base / "g", controllers=3, brokers=1, release="4.1", seed=1, durable=False)
        assert gc.get_threshold() == before
        sim.subscribe(litter)
        sim.run(30_000)
        dead_in_run = sum(r() is None for r in refs)
        assert gc.get_threshold() == before
        with pytest.raises(RuntimeError), fewer_collections(), fewer_collections():
            assert gc.get_threshold()[0] == YOUNG
            raise RuntimeError("out of a nested scope")
        assert gc.get_threshold() == before
        sim.close()
    assert during == {(YOUNG, MIDDLE)}
    assert len(refs) > 3 * YOUNG and dead_in_run >= len(refs) - 2 * YOUNG


# ------------------------------------------------------------------------------ per-event checks


@settings(max_examples=30, deadline=None)
@given(st.lists(st.binary(min_size=12, max_size=80), min_size=1, max_size=40))
def test_a_remembered_crc_is_the_crc_of_those_very_bytes(raws: list[bytes]) -> None:
    """Checker._crc is zlib's CRC-32 after the first 12 bytes, and an entry left under the
    identity of other bytes is not taken for them."""
    import zlib

    from kraftsim.sim.engine.invariants import Checker

    checker = Checker(lambda result: None)
    for raw in raws + raws:
        assert checker._crc(raw) == zlib.crc32(raw[12:])
    raw = raws[0]
    checker._crcs[id(raw)] = (bytes(len(raw)), 12345)  # other bytes, a wrong sum, the same key
    assert checker._crc(raw) == zlib.crc32(raw[12:])


def test_closing_drops_what_is_kept_only_for_speed() -> None:
    """A closed simulation keeps no shared commits, shadow loaders, digest parts, CRCs or
    start-up levels (freed at once, not by the cyclic collector); its results still answer."""
    with scratch() as base:
        sim = Simulation.create(base / "x", controllers=3, brokers=2, release="4.1", seed=6, durable=False)
        sim.create_topics(4, 2)
        sim.crash([1])
        sim.start([1])
        engine, checker = sim.engine, sim.engine.checker
        assert engine.share._done and checker._shadows and checker._crcs and engine.level_scan._levels
        counts = (engine.share.replayed, engine.share.adopted)
        sim.close()
        assert not engine.share._done and not checker._shadows and not checker.shadow_share._done
        assert not checker._crcs and not engine.level_scan._levels
        assert (engine.share.replayed, engine.share.adopted) == counts
        assert all(r.ok for r in sim.invariants())


# ------------------------------------------------------------------------------ digests by subtree


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(min_value=0, max_value=39), st.integers(min_value=-1, max_value=39)),
                min_size=1, max_size=30), st.integers(min_value=0, max_value=2**16))
def test_subtree_sums_give_the_fresh_digest(changes: list[tuple[int, int]], seed: int) -> None:
    """Images whose topics-by-id maps share subtrees (each a few topics moved, replaced or
    removed from the last), digested through one DigestCache in a shuffled order, digest
    as from scratch."""
    import msgspec

    from kraftsim.image import DigestCache

    image = _forty_topics()
    tids = sorted(image.topics.by_id.keys())
    images = [image]
    by_id = image.topics.by_id
    for at, source in changes:
        by_id = by_id.delete(tids[at]) if source < 0 else by_id.set(tids[at], image.topics.by_id[tids[source]])
        images.append(msgspec.structs.replace(image, topics=msgspec.structs.replace(image.topics, by_id=by_id)))
    random.Random(seed).shuffle(images)
    cache = DigestCache(limit=4)
    for img in images + images:
        assert image_digest(img, cache) == image_digest(img)


_FORTY: list = []


def _forty_topics():  # type: ignore[no-untyped-def]
    if not _FORTY:
        with scratch() as base:
            sim = Simulation.create(base / "t", controllers=1, brokers=1, release="4.1", seed=1, durable=False)
            sim.create_topics(40, 2)
            _FORTY.append(sim.image(1))
            sim.close()
    return _FORTY[0]


def test_a_scenario_runs_with_the_collector_thresholds_raised_between_its_steps_too() -> None:
    """A scenario's steps, and what runs between them (expectations, the step reports),
    see `YOUNG` and `MIDDLE`, not Python's 700 and 10; the caller's are back afterwards."""
    import gc

    from kraftsim.gcpause import MIDDLE, YOUNG
    from kraftsim.scenario.runner import run_scenario
    from kraftsim.scenario.validate import parse_scenario

    text = """
name = "gc"
seed = 1
[cluster]
controllers = 1
brokers = 1
release = "4.0.0"
[[step]]
op = "run"
ms = 1000
[[step]]
op = "run"
ms = 1000
"""
    saved = gc.get_threshold()
    seen: list[tuple[int, ...]] = []
    try:
        gc.set_threshold(700, 10, saved[2])
        run_scenario(parse_scenario(text, "gc.toml"), on_step=lambda step: seen.append(gc.get_threshold()[:2]))
        assert gc.get_threshold()[:2] == (700, 10)
    finally:
        gc.set_threshold(*saved)
    assert seen and set(seen) == {(YOUNG, MIDDLE)}
