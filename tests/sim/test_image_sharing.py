"""Nodes that hold the same image hold one object, and that changes no result.

Three mechanisms let a rolled node join the image the other nodes stand on instead of
replaying every later commit itself: kraftsim.sim.node.snapshot_share (a restarted node
takes another node's load of the same snapshot, or the image its file was written from),
CommitShare.rebase (a node that loaded alone joins at the next kept commit) and adoption
across releases (CommitShare.across). Each has a test that fails if it changed a result (the same files and
timeline as the long way), did nothing (counted, and the images are one object), or
handed a wrong image (the deep invariants' replay of the node's own files sees it).
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from kraftsim.image import MetadataLoader, MetadataReplayError, TopicsImage, image_digest
from kraftsim.sim import Simulation
from kraftsim.sim.engine.invariants import replay_image
from kraftsim.sim.node.commit_share import CommitShare
from kraftsim.sim.node.snapshot_share import SnapshotShare
from kraftsim.storage import parse_snapshot_name
from tests.sim.sim_helpers import failed, scratch, tree_digest

BROKERS = (4, 5, 6, 7)


def _rolled(base: Path, name: str, check=None):  # type: ignore[no-untyped-def]
    """The production-scale what-if in small: created on 3.9, controllers rolled to 4.0, a
    snapshot on every node, brokers rolled. (directory digest, timeline, counters)."""
    sim = Simulation.create(base / name, controllers=3, brokers=len(BROKERS), release="3.9", seed=3, durable=False)
    lines: list[str] = []
    sim.subscribe(lambda e: lines.append(repr(e)))
    sim.create_topics(30, 4)
    sim.roll("4.0", "controllers")
    sim.snapshot()
    sim.roll("4.0", "brokers")
    sim.run(3_000)
    assert not failed(sim)
    share = sim.engine.share
    counts = {"rebased": share.rebased, "snapshot_adopted": share.snapshots.adopted,
              "snapshot_taken": share.snapshots.taken, "replayed": share.replayed}
    if check is not None:
        check(sim)
    sim.close()
    return tree_digest(base / name), lines, counts


def _one_image(sim: Simulation) -> None:
    """Every rolled broker stands on one image object, equal to a replay of its own files."""
    nodes = [sim.engine.member(b).node for b in BROKERS]
    images = {id(n.loader.image) for n in nodes}
    assert len(images) == 1
    for n in nodes:
        replayed = replay_image(n, n.applied_offset + 1)
        assert replayed is not None and image_digest(replayed) == image_digest(n.loader.image)


def _kept_commits_let_go_of_topic_changes(sim: Simulation) -> None:
    """A kept commit's delta holds no topic changes (MetadataDelta.settle): reading them is refused."""
    settled = 0
    for hit in sim.engine.share.kept().values():
        try:
            topics = hit[2].topics
        except MetadataReplayError:
            settled += 1
        else:
            assert not topics.changed
    assert settled > 0
    settled = 0
    for run in sim.engine.checker.shadow_share.kept_runs():  # (the deep checks' shadow replays, likewise)
        try:
            topics = run.delta.topics
        except MetadataReplayError:
            settled += 1
        else:
            assert not topics.changed
    assert settled > 0


def _loads_decoded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every snapshot load decoded by its node: none kept for others, no written image taken."""
    keep_limit = SnapshotShare.__init__

    def no_keep(self, keep: int = 0) -> None:
        keep_limit(self, 0)

    monkeypatch.setattr(SnapshotShare, "__init__", no_keep)
    monkeypatch.setattr(SnapshotShare, "_written", lambda self, *a: None)


def test_rolled_nodes_share_one_image_and_every_file_is_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    with scratch() as base:
        fast = _rolled(base, "fast", check=lambda sim: (_one_image(sim), _kept_commits_let_go_of_topic_changes(sim)))
        _loads_decoded(monkeypatch)  # (restarted nodes load alone, then join by a rebase)
        rebased = _rolled(base, "rebased", check=_one_image)
        monkeypatch.setattr(CommitShare, "rebase", lambda self, software, batch, loader: False)
        slow = _rolled(base, "slow")
    assert fast[:2] == rebased[:2] == slow[:2]
    assert fast[2]["snapshot_adopted"] + fast[2]["snapshot_taken"] >= len(BROKERS)
    assert rebased[2]["rebased"] >= len(BROKERS) and rebased[2]["snapshot_adopted"] == 0
    assert slow[2]["rebased"] == 0 and slow[2]["snapshot_adopted"] == slow[2]["snapshot_taken"] == 0
    assert fast[2]["replayed"] < rebased[2]["replayed"] < slow[2]["replayed"]


def test_a_snapshot_load_is_shared_only_for_the_same_bytes() -> None:
    """Two files of different bytes (another node's snapshot at another offset) are loaded
    each; the same file twice is loaded once, into the same image a fresh load gives."""
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=3, brokers=2, release="4.0", seed=2, durable=False)
        sim.create_topics(5, 2)
        first = sim.snapshot()
        sim.create_topics(3, 1, prefix="more-")
        second = sim.snapshot()
        node = sim.engine.member(4).node
        software = ("4.0", False, 0)
        share = SnapshotShare()
        loaders = []
        for path in (first[0], first[0], second[0]):
            sid = parse_snapshot_name(path.name).snapshot_id
            loader = MetadataLoader(node.catalog, clock_ns=lambda: 0)
            share.load(loader, path, sid, node.registry, software)
            loaders.append(loader)
        sim.close()
    assert (share.loaded, share.adopted) == (2, 1)
    with pytest.raises(MetadataReplayError):  # (a kept load's delta let go of its topic changes)
        _ = loaders[0].last_publish[0].topics  # type: ignore[index]
    assert loaders[0].image is loaders[1].image and loaders[2].image is not loaders[0].image
    assert loaders[0].last_offset == loaders[1].last_offset != loaders[2].last_offset


def test_a_wrong_shared_image_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """A rebase onto a wrong image (every rebase handed an image with no topics) is named by
    the deep invariants, which replay each node's own files."""
    _loads_decoded(monkeypatch)  # (else restarted nodes take their images and need no rebase)
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=3, brokers=2, release="3.9", seed=3, durable=False)
        sim.create_topics(6, 2)
        sim.roll("4.0", "controllers")
        sim.snapshot()
        share = sim.engine.share
        calls = [0]

        def wrong(software, batch, loader):  # type: ignore[no-untyped-def]
            hit = share.kept().get((software, batch))
            if hit is None or hit[3] is loader.image:
                return False
            calls[0] += 1
            loader.rebase(msgspec.structs.replace(hit[3], topics=TopicsImage()))
            return True

        share.rebase = wrong  # type: ignore[method-assign]
        sim.roll("4.0", "brokers")
        bad = failed(sim)
        sim.close()
    assert calls[0] > 0
    assert "ImageMatchesLog" in [r.name for r in bad]
