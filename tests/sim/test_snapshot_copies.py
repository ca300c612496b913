"""Nodes on one image write their snapshot once (kraftsim.sim.node.snapshot_share's `writes`):
every node's directory ends up with exactly the files it has when each node encodes its
own — same names, bytes and modes — and the nodes' files are independent names of them."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kraftsim.errors import LogFileError
from kraftsim.image import MetadataLoader
from kraftsim.sim import Simulation
from kraftsim.sim.node import snapshot_share
from kraftsim.sim.node.snapshot_share import SETTLED_NS, SnapshotShare
from kraftsim.storage import METADATA_DIR_NAME, parse_snapshot_name
from tests.sim.sim_helpers import failed, scratch

NODES = range(1, 8)


def _run(base: Path, *, share_writes: bool) -> tuple[dict[int, dict[str, tuple[bytes, int]]], list[str], int]:
    """The rolled cluster in small (3.9, controllers to 4.0, a snapshot on every node, brokers
    rolled): every node's metadata directory (name -> bytes, mode), the timeline, and how
    many snapshot files were linked or copied instead of encoded."""
    sim = Simulation.create(base, controllers=3, brokers=4, release="3.9", seed=5, durable=False)
    sim.engine.share.snapshots.writes.enabled = share_writes
    lines: list[str] = []
    sim.subscribe(lambda e: lines.append(repr(e)))
    sim.create_topics(20, 3)
    sim.roll("4.0", "controllers")
    sim.snapshot()
    sim.roll("4.0", "brokers")
    sim.snapshot()
    sim.run(2_000)
    assert not failed(sim)
    writes = sim.engine.share.snapshots.writes
    placed = writes.linked + writes.copied
    sim.close()
    dirs = {}
    for n in NODES:
        d = base / f"node-{n}" / METADATA_DIR_NAME
        dirs[n] = {p.name: (p.read_bytes(), stat.S_IMODE(p.stat().st_mode)) for p in sorted(d.iterdir())
                   if p.is_file()}
    return dirs, lines, placed


def test_node_directories_are_what_each_node_writes_alone_and_their_files_independent() -> None:
    with scratch() as base:
        shared, shared_lines, placed = _run(base / "on", share_writes=True)
        plain, plain_lines, none = _run(base / "off", share_writes=False)
        assert shared == plain and shared_lines == plain_lines
        assert none == 0 and placed >= len(NODES) - 2  # (one encode per software at least)
        snaps = {n: sorted(base / "on" / f"node-{n}" / METADATA_DIR_NAME / name for name in files
                           if (parsed := parse_snapshot_name(name)) is not None and parsed.snapshot_id.end_offset > 0)
                 for n, files in shared.items()}
        inodes = {os.stat(p).st_ino for ps in snaps.values() for p in ps}
        assert len(inodes) < sum(len(ps) for ps in snaps.values())  # linked, not each encoded
        victim = snaps[4][-1]
        others = {p: p.read_bytes() for ps in snaps.values() for p in ps if p != victim}
        victim.unlink()
        assert all(p.read_bytes() == data for p, data in others.items())


def test_a_settled_file_is_hashed_once_and_a_rewrite_of_it_is_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loads of one file's links find their shared load without reading it again once the
    file has settled; a file rewritten in place since is read again, and its damage is
    reported as a fresh load reports it."""
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=3, brokers=4, release="4.0", seed=2, durable=False)
        sim.create_topics(5, 2)
        written = sim.snapshot()
        node = sim.engine.member(4).node
        sim.close()
        paths = [p for p in written if os.stat(p).st_ino == os.stat(written[-1]).st_ino]
        assert len(paths) >= 4  # (one written file, linked)
        share = SnapshotShare()
        sid = parse_snapshot_name(paths[0].name).snapshot_id

        def load(path: Path) -> MetadataLoader:
            loader = MetadataLoader(node.catalog, clock_ns=lambda: 0)
            share.load(loader, path, sid, node.registry, ("4.0", False, 0))
            return loader

        first = load(paths[0])
        assert load(paths[1]).image is first.image
        assert (share.hashed, share.loaded) == (2, 1)  # just written, not settled: each link is read
        monkeypatch.setattr(snapshot_share, "SETTLED_NS", 0)
        assert load(paths[2]).image is first.image and share.hashed == 3
        assert load(paths[3]).image is first.image and share.hashed == 3  # no read, no hash
        os.chmod(paths[1], 0o644)
        data = bytearray(paths[1].read_bytes())
        data[len(data) // 2] ^= 0xFF
        paths[1].write_bytes(bytes(data))  # in place: every link sees it
        later = os.stat(paths[1]).st_mtime_ns + SETTLED_NS  # (as a write in a later clock tick stamps it)
        os.utime(paths[1], ns=(later, later))
        with pytest.raises(LogFileError):
            load(paths[3])
        assert share.hashed == 4


def _emit(d: Path, image: object, copies: object, clock: int) -> Path:
    from kraftsim.image import SnapshotEmitter
    from kraftsim.versions import default_catalog

    em = SnapshotEmitter(d, catalog=default_catalog(), clock_ms=clock, fsync=False, copies=copies)  # type: ignore[arg-type]
    result = em.maybe_emit(image)  # type: ignore[arg-type]
    assert result is not None
    return result.path


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(clocks=st.lists(st.integers(0, 2**41), min_size=2, max_size=4))
def test_files_placed_from_one_write_are_read_and_checked_but_hashed_once(tmp_path: Path, clocks: list[int]) -> None:
    """A load of a file linked or restamped from a write whose content a load found already
    takes that content without hashing (the file is still read and checked), and it is what
    hashing the file gives; a file rewritten since it was placed is hashed."""
    from kraftsim.image import MetadataProvenance
    from kraftsim.image.synthetic import ClusterShape, cluster_image
    from kraftsim.storage import read_snapshot
    from kraftsim.versions import default_catalog

    cat = default_catalog()
    image = cluster_image(ClusterShape(brokers=4, topics=12, partitions=5), cat, 25).with_provenance(
        MetadataProvenance(2_000, 3, 1_700_000_000_000, True))
    other = cluster_image(ClusterShape(brokers=4, topics=13, partitions=5), cat, 25).with_provenance(
        MetadataProvenance(2_000, 3, 1_700_000_000_000, True))
    base = tmp_path / str(len(list(tmp_path.iterdir())))
    share = SnapshotShare()
    paths = [_emit(base / f"n{i}", image, share.writes, clock) for i, clock in enumerate(clocks)]
    sid = parse_snapshot_name(paths[0].name).snapshot_id
    reg = cat.record_registry()

    def load(path: Path) -> MetadataLoader:
        loader = MetadataLoader(cat, clock_ns=lambda: 0)
        share.load(loader, path, sid, reg, ("4.0", False, 0))
        return loader

    first = load(paths[0])
    for path in paths[1:]:
        assert load(path).image is first.image
        assert snapshot_share.snapshot_content(read_snapshot(path)) == snapshot_share.snapshot_content(
            read_snapshot(paths[0]))
    assert (share.hashed, share.known, share.loaded) == (len(paths), len(paths) - 1, 1)
    elsewhere = _emit(base / "other", other, None, clocks[0])
    victim = paths[-1]
    os.chmod(victim, 0o644)
    victim.write_bytes(elsewhere.read_bytes())  # in place: a file placed from the write no longer
    assert load(victim).image.topics.partition_count() == other.topics.partition_count()
    assert share.known == len(paths) - 1

