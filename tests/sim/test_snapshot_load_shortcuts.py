"""Snapshot loads that do not decode (kraftsim.sim.node.snapshot_share) leave a loader in
the state a plain load of the file leaves it in: the image (compared with ==, by its
features' order and by the records a later write of it holds), its provenance, the
manifest, kraft.version and voters, faults, publishes and offsets.

Two shortcuts: a file whose content, timestamps aside, was loaded already adopts that load
(a restamped copy is the other node's file at another clock); and a file `SnapshotCopies`
wrote (or placed) from an image it still holds is loaded as that image, when the reader's
software replays what the writer's wrote as the writer does (`replays_alike`), across
releases and metadata.versions; a lossy write is never kept, so never taken.
"""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st

from kraftsim.image import (EMPTY_IMAGE, MetadataDelta, MetadataImage, MetadataLoader, MetadataProvenance,
                            MvChangeHandling, SnapshotEmitter, image_digest, kraft_header_records, load_snapshot)
from kraftsim.image.writer.image_writer import iter_image_records
from kraftsim.image.writer.loss import UnwritableMetadataException
from kraftsim.image.publisher.snapshot_generator import SnapshotTriggers
from kraftsim.sim import Simulation
from kraftsim.sim.node import simnode
from kraftsim.sim.node.simnode import SimNode
from kraftsim.sim.node.snapshot_share import SnapshotShare
from kraftsim.sim.node.voters import seed_loader
from kraftsim.storage import SnapshotId, parse_snapshot_name, read_snapshot
from kraftsim.storage.restamp import restamp_batches
from kraftsim.versions import default_catalog
from tests.image.helpers import rec
from tests.image.strategies import image_groups, mv_record
from tests.sim.sim_helpers import failed, scratch, tree_digest

CAT = default_catalog()
RELEASES = ("3.7.2", "3.9.1", "4.0.2", "4.3.1", "4.4.0")
CLOCK = 1_700_000_000_000


def _image(writer: str, level: int, groups: list[list[Any]], kraft_feature: int) -> MetadataImage | None:
    """The image `writer`'s software replays from these records (None if it refuses them)."""
    delta = MetadataDelta(EMPTY_IMAGE, CAT.at_release(writer))
    records = [mv_record(level), *itertools.chain.from_iterable(groups)]
    if kraft_feature:
        records.append(rec("FeatureLevelRecord", name="kraft.version", feature_level=kraft_feature))
    try:
        delta.replay_all(records)
        return delta.apply(MetadataProvenance(0, 0, 0, True))
    except Exception:  # noqa: BLE001 - records this release does not take: no case
        return None


def _loader(release: str, kip_778: bool, faults: list[str]) -> MetadataLoader:
    """A node's fresh loader (SimNode.open's settings)."""
    return MetadataLoader(CAT.at_release(release), fault_handler=lambda f: faults.append(str(f)), clock_ns=lambda: 0,
                          initial_delta_on_use=True,
                          mv_change=MvChangeHandling.KIP_778 if kip_778 else MvChangeHandling.KAFKA)


def _plain(path: Path, release: str, kip_778: bool) -> tuple[Any, ...]:
    faults: list[str] = []
    loader = _loader(release, kip_778, faults)
    sid = parse_snapshot_name(path.name).snapshot_id  # type: ignore[union-attr]
    snap = read_snapshot(path, CAT.at_release(release).record_registry())
    load_snapshot(loader, snap, end_offset=sid.end_offset, epoch=sid.epoch)
    seed_loader(loader, snap.header_entries)
    return _state(loader, release, faults)


def _shared(share: SnapshotShare, path: Path, release: str, kip_778: bool, reads_like: Any) -> tuple[Any, ...]:
    faults: list[str] = []
    loader = _loader(release, kip_778, faults)
    sid = parse_snapshot_name(path.name).snapshot_id  # type: ignore[union-attr]
    share.load(loader, path, sid, CAT.at_release(release).record_registry(), (release, kip_778, id(CAT)),
               seed_loader, reads_like=reads_like)
    return _state(loader, release, faults)


def _state(loader: MetadataLoader, release: str, faults: list[str]) -> tuple[Any, ...]:
    """Everything a node's loader holds after a load that later steps read."""
    image = loader.image
    assert loader.last_publish is not None
    written: object
    try:
        written = list(iter_image_records(image, image.metadata_version, CAT.at_release(release)))
    except Exception as e:  # noqa: BLE001 - the same refusal either way
        written = repr(e)
    return (image, image.provenance, image.features.order, image_digest(image), written, loader.last_publish[2],
            loader.last_publish[1] is image, loader.kraft_version, loader.voters, faults, loader.publishes,
            loader.idle, loader.last_offset)


def _reads_like(release: str) -> Any:
    """SimNode._reads_like of a node of `release` on the catalog CAT."""
    node = SimpleNamespace(base_catalog=CAT, catalog=CAT.at_release(release), state=SimpleNamespace(release=release))
    return lambda software, image: SimNode._reads_like(node, software, image)  # type: ignore[arg-type]


@st.composite
def cases(draw: Any) -> dict[str, Any]:
    writer = draw(st.sampled_from(RELEASES))
    level = draw(st.sampled_from([mv.level for mv in CAT.at_release(writer).metadata_versions]))
    parts = {k: draw(st.booleans()) for k in ("dirs", "elr", "scram", "tokens", "controllers", "shutdown", "zk")}
    return {"writer": writer, "reader": draw(st.just(writer) | st.sampled_from(RELEASES)), "level": level,
            "groups": draw(image_groups(**parts)), "kraft_feature": draw(st.sampled_from([0, 0, 1])),
            "kraft_header": draw(st.sampled_from([0, 1])), "kip_778": draw(st.booleans()),
            "offset": draw(st.integers(0, 10**6)), "epoch": draw(st.integers(0, 50)),
            "time": draw(st.integers(0, 2 * CLOCK)), "aligned": draw(st.booleans()),
            "restamp": draw(st.sampled_from([None, 1, -7]))}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases())
def test_a_load_that_takes_the_written_image_leaves_the_loader_as_a_decode_does(case: dict[str, Any]) -> None:
    image = _image(case["writer"], case["level"], case["groups"], case["kraft_feature"])
    if image is None:
        return
    image = image.with_provenance(MetadataProvenance(case["offset"], case["epoch"], case["time"], case["aligned"]))
    writer, reader = case["writer"], case["reader"]
    wcat = CAT.at_release(writer)
    registry = wcat.record_registry()
    share = SnapshotShare()
    header = kraft_header_records(case["kraft_header"], None, registry)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)

        def emit(name: str, clock: int) -> Path | None:
            emitter = SnapshotEmitter(base / name, catalog=wcat, clock_ms=clock, registry=registry, fsync=False,
                                      copies=share.writes, software=(writer, id(CAT)),
                                      header_records=lambda _image: header)
            result = emitter.maybe_emit(image)
            return None if result is None else result.path  # type: ignore[no-any-return]

        try:
            path = emit("a", CLOCK)
        except UnwritableMetadataException:
            assert share.writes.written == 0  # (a lossy write is not kept: nothing to take)
            return
        assert path is not None
        if case["restamp"] is not None:  # (another node's copy, its batches restamped for its clock)
            path = emit("b", CLOCK + case["restamp"])
            assert path is not None and share.writes.restamped == 1
        want = _plain(path, reader, case["kip_778"])
        reads_like = _reads_like(reader)
        got = _shared(share, path, reader, case["kip_778"], reads_like)
        assert got == want
        takes = reads_like((writer, id(CAT)), image) and image.metadata_version == case["level"]
        assert (share.taken, share.loaded) == ((1, 0) if takes else (0, 1))
        event(f"taken: {takes}")
        # The same content with other timestamps (restamped) is the same load, adopted.
        other = base / "c" / path.name
        other.parent.mkdir()
        data = path.read_bytes()
        stamp = read_snapshot(path, registry).batches[0].batch.base_timestamp
        restamped = restamp_batches(data, stamp, stamp + 1_000)
        assert restamped is not None and restamped != data
        other.write_bytes(restamped)
        again = _shared(share, other, reader, case["kip_778"], None)
        assert again == _plain(other, reader, case["kip_778"]) == want
        if not want[9]:  # (a load with faults is not kept)
            assert share.adopted == 1 and again[0] is got[0]


def _rolled(base: Path, monkeypatch: Any | None = None, *, seed: int = 3,
            snapshot_step: bool = False) -> tuple[str, list[str], SnapshotShare]:
    """The production-scale what-if in small: created on 3.9, controllers rolled to 4.0, (a
    snapshot step on every node,) brokers rolled. With `monkeypatch`, every node snapshots
    after every change, as at a million partitions."""
    if monkeypatch is not None:
        monkeypatch.setattr(simnode, "SHARED_SERVER_DEFAULTS", SnapshotTriggers(max_bytes=256, max_time_ms=3_600_000))
    sim = Simulation.create(base, controllers=3, brokers=4, release="3.9", seed=seed, durable=False)
    lines: list[str] = []
    sim.subscribe(lambda e: lines.append(repr(e)))
    sim.create_topics(12, 3)
    sim.roll("4.0", "controllers")
    if snapshot_step:
        sim.snapshot()
    sim.roll("4.0", "brokers")
    sim.run(2_000)
    assert not failed(sim), failed(sim)
    share = sim.engine.share.snapshots
    sim.close()
    return tree_digest(base), lines, share


def test_restarted_nodes_take_the_written_image_and_every_file_and_event_is_the_same(monkeypatch: Any) -> None:
    """Nodes restarted on another release take the image their file was written from
    (the deep invariants, which decode every file, check each node after each step), and
    the run is the run without that shortcut: the same files and the same timeline."""
    with scratch() as base:
        fast = _rolled(base / "fast", monkeypatch)
        monkeypatch.setattr(SnapshotShare, "_written", lambda *a: None)
        slow = _rolled(base / "slow", monkeypatch)
    assert fast[:2] == slow[:2]
    assert fast[2].taken >= 4 and slow[2].taken == 0
    assert fast[2].loaded < slow[2].loaded


def test_a_kept_load_that_took_the_written_image_rewrites_nothing_and_settles_when_read(monkeypatch: Any) -> None:
    """A load that took the written image is kept for other nodes with its delta settled;
    the delta (the image rewritten from empty) is made only if someone reads it — at a
    million partitions making it costs a whole rewrite and replay — and is then the
    settled delta an eager settle would have left: topics refused, `apply()` the image's."""
    from kraftsim.image import MetadataReplayError
    from kraftsim.image.loader import metadata_loader
    from tests.image.helpers import uid

    made: list[int] = []
    real = metadata_loader.full_image_delta
    monkeypatch.setattr(metadata_loader, "full_image_delta", lambda *a: made.append(1) or real(*a))
    release = "4.0.2"
    cat = CAT.at_release(release)
    records = [mv_record(cat.latest_production.level), rec("TopicRecord", name="t", topic_id=uid(1)),
               *(rec("PartitionRecord", topic_id=uid(1), partition_id=p, replicas=[1, 2, 3], isr=[1, 2, 3], leader=1)
                 for p in range(3))]
    delta = MetadataDelta(EMPTY_IMAGE, cat)
    delta.replay_all(records)
    image = delta.apply(MetadataProvenance(41, 2, CLOCK, True))
    share = SnapshotShare()
    with tempfile.TemporaryDirectory() as tmp:
        emitter = SnapshotEmitter(Path(tmp) / "a", catalog=cat, clock_ms=CLOCK, registry=cat.record_registry(),
                                  fsync=False, copies=share.writes, software=(release, id(CAT)))
        result = emitter.maybe_emit(image)
        assert result is not None
        reads_like = _reads_like(release)
        first = _shared(share, result.path, release, False, reads_like)
        adopter = _loader(release, False, [])
        share.load(adopter, result.path, SnapshotId(42, 2), cat.record_registry(), (release, False, id(CAT)),
                   seed_loader, reads_like=reads_like)
        assert (share.taken, share.adopted, share.loaded) == (1, 1, 0)
        assert first == _state(adopter, release, []) == _plain(result.path, release, False)
        assert made == []  # (the plain load above replays the file: no rewrite either)
        assert adopter.last_publish is not None
        kept = adopter.last_publish[0]  # (the kept load's delta, as adopters get it)
        with pytest.raises(MetadataReplayError):  # (a settled delta's topics are refused)
            assert kept.topics is None
        assert made == [1]
        assert kept.apply().topics is first[0].topics
        assert kept.image is EMPTY_IMAGE


def test_brokers_restarted_after_a_snapshot_step_take_the_image_their_file_was_written_from(
        monkeypatch: Any) -> None:
    """The snapshot step lets the written files' images go for placing, but a broker that
    restarts from its file before anyone writes again takes that image instead of decoding
    the file; the run is the run without that: the same files and the same timeline."""
    from kraftsim.image import SnapshotCopies

    with scratch() as base:
        fast = _rolled(base / "fast", seed=5, snapshot_step=True)
        clear = SnapshotCopies.clear
        monkeypatch.setattr(SnapshotCopies, "clear", lambda self, readable=True: clear(self, readable=False))
        slow = _rolled(base / "slow", seed=5, snapshot_step=True)
    assert fast[:2] == slow[:2]
    assert fast[2].taken > slow[2].taken and fast[2].loaded < slow[2].loaded
