"""The deep invariants checked incrementally keep their power.

- SnapshotMatchesLog reads a snapshot file again only when its identity (device, inode,
  size, mtime) changed since its check, and loads the same bytes once: a file changed
  after it was checked is read and caught at the next check.
- ImageMatchesLog's shadows replay only what was committed since the last check, from
  the last checked image, gathered into one commit and shared among shadows: over random
  runs with crashes, restarts, partitions, snapshots and a release change, every shadow's
  image digests as a full replay of its node's files does (one commit per batch, from the
  newest snapshot, and from the log's start where the log reaches back that far).
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kraftsim.errors import KraftsimError
from kraftsim.image import image_digest
from kraftsim.protocol.batch import crc32c
from kraftsim.protocol.entries import Payload
from kraftsim.sim import Simulation
from kraftsim.sim.engine.checked_snapshots import CheckedSnapshots
from kraftsim.sim.engine.file_memo import FileMemo, file_identity
from kraftsim.image import DigestCache, MetadataLoader
from kraftsim.sim.engine.invariants import _snapshot_digest, replay_image
from kraftsim.sim.node import snapshot_share
from kraftsim.sim.node.snapshot_share import SnapshotShare
from kraftsim.storage import SnapshotId, read_snapshot
from kraftsim.storage.names import parse_snapshot_name
from kraftsim.storage.snapshot import write_snapshot
from tests.sim.sim_helpers import failed, scratch


def _without_last_partition(path: Path, scratch_dir: Path) -> bytes:
    """The bytes of a valid snapshot like the one at `path` but without its last PartitionRecord."""
    snap = read_snapshot(path)
    payloads = snap.payloads()
    last = max(i for i, p in enumerate(payloads) if p.record_type.name == "PartitionRecord")
    del payloads[last]
    parsed = parse_snapshot_name(path.name)
    assert parsed is not None and parsed.snapshot_id is not None
    header = [Payload(e.record_type, e.version, e.message) for e in snap.header_entries[1:]]
    out = write_snapshot(scratch_dir, parsed.snapshot_id, payloads, header_records=header,
                         last_contained_log_timestamp=snap.last_contained_log_timestamp, time_ms=0,
                         registry=snap.registry, fsync=False)
    return out.read_bytes()


def test_a_snapshot_changed_after_its_check_is_caught_and_an_unchanged_one_is_not_read_again() -> None:
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=3, brokers=2, release="4.0", seed=3, durable=False)
        sim.create_topics(4, 3)
        paths = sim.snapshot()
        assert len(paths) == 5 and not failed(sim)
        memo = sim.engine.checker.snapshot_digests
        loads = memo.computed
        assert loads <= 2  # (the nodes' files hold the same bytes: loaded once per software)
        sim.create_topics(1, 1)  # (another operation: another deep check; no file changed)
        assert memo.computed == loads and not failed(sim)
        target = paths[3]
        before = file_identity(target)
        (base / "w").mkdir()
        bad = _without_last_partition(target, base / "w")
        with open(target, "r+b") as f:  # (in place: the same inode, another mtime and size)
            f.write(bad)
            f.truncate()
        assert file_identity(target) != before
        sim.create_topics(1, 1)
        broken = failed(sim)
        sim.close()
    assert [r.name for r in broken] == ["SnapshotMatchesLog"]
    assert "differs from a replay of its log" in str(broken[0].detail)


def _cluster_with_a_snapshot(base: Path) -> tuple[Simulation, Any, Path, SnapshotId, bytes]:
    """A small cluster under `base` that took a snapshot: the simulation, node 1, the path of
    its snapshot file, the snapshot's id and the file's bytes."""
    sim = Simulation.create(base / "c", controllers=3, brokers=2, release="4.0", seed=3, durable=False)
    sim.create_topics(4, 3)
    path = sim.snapshot()[0]
    node = sim.engine.member(1).node
    assert node is not None
    parsed = parse_snapshot_name(path.name)
    assert parsed is not None and parsed.snapshot_id is not None
    return sim, node, path, parsed.snapshot_id, path.read_bytes()


def test_a_read_back_takes_a_shadows_load_of_the_same_content_only() -> None:
    """A snapshot read-back takes the load a shadow made of the same file content (the deep
    check starts every shadow before it reads any snapshot back) and digests it through the
    checker's cache: the same digest as a decode of its own. A file of the same snapshot id
    whose content differs is decoded, and differs."""
    with scratch() as base:
        sim, node, path, sid, raw = _cluster_with_a_snapshot(base)
        share, cache = SnapshotShare(), DigestCache()
        shadow = MetadataLoader(node.catalog)
        share.load(shadow, path, sid, node.registry, (node.state.release, node.kip_778, id(node.base_catalog)))
        held = image_digest(shadow.image, cache)  # (as the shadow's check digests it)
        plain = _snapshot_digest(node, sid, path, raw)
        assert _snapshot_digest(node, sid, path, raw, share, cache) == plain == held
        assert share.adopted == 1 and share.loaded == 1
        (base / "w").mkdir()
        other = base / "w" / path.name
        bad = _without_last_partition(path, base / "w")
        assert other.read_bytes() == bad
        assert _snapshot_digest(node, sid, other, bad, share, cache) != plain
        assert share.adopted == 1 and share.loaded == 2
        sim.close()


def test_a_read_back_loads_the_parse_its_check_made_and_parses_nothing_again(monkeypatch: Any) -> None:
    """The read-back hands the load what checking the file found (`CheckedSnapshots`: its
    content and its parse): the file is parsed once, and the digest is a plain decode's.
    The parse handed over is that of the very bytes checked: a damaged file read after a
    sound one loads its own bytes, and differs."""
    with scratch() as base:
        sim, node, path, sid, raw = _cluster_with_a_snapshot(base)
        plain = _snapshot_digest(node, sid, path, raw)
        (base / "w").mkdir()
        other = base / "w" / path.name
        bad = _without_last_partition(path, base / "w")
        parses: list[bytes] = []
        counted = snapshot_share.read_snapshot

        def counting(where: Path, registry: Any, *, data: bytes | None = None) -> Any:
            parses.append(b"" if data is None else data)
            return counted(where, registry, data=data)
        monkeypatch.setattr(snapshot_share, "read_snapshot", counting)
        checks, share = CheckedSnapshots(), SnapshotShare()
        digests = []
        for where, data in ((path, raw), (other, bad)):
            content = checks.content(where, node.registry, data)
            checked = (content, checks.take_parsed(data))
            assert checked[1] is not None and checks.take_parsed(data) is None  # (handed over once)
            digests.append(_snapshot_digest(node, sid, where, data, share, DigestCache(), checked=checked))
        assert parses == [] and share.loaded == 2
        assert digests[0] == plain != digests[1] == _snapshot_digest(node, sid, other, bad)
        sim.close()


def _rewritten_in_log(node, old: bytes, new: bytes) -> tuple[str, int, bytes]:  # type: ignore[no-untyped-def]
    """Where the first batch of `node`'s log holding `old` is (file, position), and its bytes
    with `old` replaced by `new` (as long) and its CRC made right again: written over it, a
    log that reads cleanly but holds another record than the other nodes' logs."""
    for fb in node.log.batches(0):
        at = fb.batch.raw.find(old)
        if at >= 0:
            raw = bytearray(fb.batch.raw)
            raw[at:at + len(old)] = new
            raw[17:21] = crc32c(bytes(raw[21:])).to_bytes(4, "big")
            return fb.path, fb.position, bytes(raw)
    raise AssertionError(f"{old!r} is in no batch")


def test_a_node_whose_log_differs_below_its_snapshot_gets_no_other_nodes_replay() -> None:
    """SnapshotMatchesLog replays a log up to a snapshot's offset once per software and log
    content (`Checker._log_digest`): a node whose log holds another record below its
    snapshot's offset, though its snapshot is the others', is replayed itself and caught."""
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=3, brokers=2, release="4.0", seed=3, durable=False)
        sim.create_topics(4, 3)
        paths = sim.snapshot()
        checker = sim.engine.checker
        assert not failed(sim) and checker.log_replays_taken > 0  # (the nodes' logs are one log)
        node = sim.engine.member(5).node
        assert node is not None
        where, position, patched = _rewritten_in_log(node, b"topic-2", b"topic-7")
        sim.stop([5])
        with open(where, "r+b") as f:
            f.seek(position)
            f.write(patched)
        sim.start([5])  # (from its snapshot: its image is the others')
        target = paths[4]
        assert "node-5" in str(target)
        st_ = target.stat()
        os.utime(target, ns=(st_.st_atime_ns, st_.st_mtime_ns + 10**9))  # (read back again)
        sim.create_topics(1, 1, replication_factor=1)
        broken = failed(sim)
        sim.close()
    assert [r.name for r in broken] == ["SnapshotMatchesLog"]
    assert "node 5's snapshot" in str(broken[0].detail) and "differs from a replay of its log" in str(broken[0].detail)


def test_file_memo_reads_a_file_once_per_identity_and_loads_bytes_once() -> None:
    with scratch() as base:
        a = base / "a"
        a.write_bytes(b"one")
        memo: FileMemo[bytes] = FileMemo()
        calls: list[bytes] = []

        def compute(raw: bytes) -> bytes:
            calls.append(raw)
            return raw.upper()

        def value(p: Path) -> bytes:
            return memo.value(p, file_identity(p), "ctx", compute)

        assert value(a) == b"ONE" and memo.computed == 1
        os.link(a, base / "linked")
        assert value(base / "linked") == b"ONE" and memo.file_hits == 1  # (a hard link: the same inode)
        (base / "copy").write_bytes(b"one")
        assert value(base / "copy") == b"ONE" and memo.bytes_hits == 1 and memo.computed == 1
        a.write_bytes(b"two")
        assert value(a) == b"TWO" and memo.computed == 2  # (changed: read again)
        assert memo.value(a, file_identity(a), "other", compute) == b"TWO" and memo.computed == 3
        assert calls == [b"one", b"two", b"two"]
        (base / "x1").write_bytes(b"1:same")
        (base / "x2").write_bytes(b"2:same")  # (differs only where `content` does not look)
        for name in ("x1", "x2"):
            p = base / name
            assert memo.value(p, file_identity(p), "ctx", compute, lambda raw: raw[2:]) == b"1:SAME"
        assert memo.computed == 4


def _random_run(sim: Simulation, rng: random.Random, steps: int) -> None:
    brokers = [n.id for n in sim.nodes() if "broker" in n.roles]
    controllers = [n.id for n in sim.nodes() if "controller" in n.roles]
    for _ in range(steps):
        kind = rng.random()
        if kind < .3:
            sim.create_topics(rng.randint(1, 3), rng.randint(1, 9))
        elif kind < .5:
            node = rng.choice(brokers + controllers)
            sim.crash([node])
            sim.run(rng.randint(500, 4_000))
            sim.start([node], release=rng.choice([None, None, "4.1"]))
        elif kind < .65:
            sim.partition([[rng.choice(brokers + controllers)]])
            sim.run(rng.randint(1_000, 4_000))
            sim.heal()
        elif kind < .8:
            try:
                sim.snapshot()
            except KraftsimError:
                pass  # (a node that has not learned the high watermark yet refuses, as Kafka does)
        else:
            sim.run(rng.randint(500, 3_000))


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 2**31))
def test_incremental_shadows_equal_full_replays_on_random_runs(seed: int) -> None:
    rng = random.Random(seed)
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=3, brokers=3, release="4.0", seed=seed % 1000, durable=False)
        compared = 0
        for _ in range(4):
            _random_run(sim, rng, 3)
            checker = sim.engine.checker
            for info in sim.nodes():
                m = sim.engine.member(info.id)
                shadow = checker.shadow(info.id)
                if shadow is None or not m.running or m.node is None:
                    continue
                upto, image = shadow
                if upto > m.node.log.log_end_offset:
                    continue  # (the node's log was cut since: its shadow starts again at the next check)
                full = replay_image(m.node, upto)
                if full is not None:
                    assert image_digest(image) == image_digest(full), f"node {info.id} at {upto}"
                    compared += 1
                if m.node.log.log_start_offset == 0:
                    plain = replay_image(m.node, upto, use_snapshots=False)
                    assert plain is not None and image_digest(image) == image_digest(plain)
        assert not failed(sim), failed(sim)
        share = sim.engine.checker.shadow_share
        sim.close()
    assert compared > 0 and share.adopted > 0


def test_a_snapshot_check_after_many_operations_follows_the_shadows_runs() -> None:
    """A snapshot's check replays its node's log from the start by way of the runs the shadows
    replayed since the empty image (one per operation): after 80 operations it still adopts
    them instead of replaying the log again."""
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=1, brokers=1, release="4.0", seed=3, durable=False)
        for _ in range(80):
            sim.create_topics(1, 1)
        share = sim.engine.checker.shadow_share
        before = share.replayed
        sim.snapshot()
        replayed = share.replayed - before
        assert not failed(sim)
        sim.close()
    assert replayed <= 8, replayed
