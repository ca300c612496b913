"""A snapshot load made under one software is adopted by a fresh loader of another only when
the file's records replay alike under both (kraftsim.sim.node.snapshot_share: `_across`,
with replay_reads.replays_alike over the file's `batch_reads`).

- Adopted: two releases that replay the file alike; the adopting loader ends where a plain
  decode of the file under its own software leaves it (image, digest, provenance, manifest,
  raft state, faults), and the records' reads are learnt once per content.
- Decoded: for each kind of record two releases replay differently (a config one release
  drops, kraft.version's FeatureLevelRecord, a metadata.version level one release refuses),
  KIP-778's handling, and a load seeded differently: the second load is a decode of its own,
  and that decode differs from the first software's (or may: KIP-778).
- In a cluster rolled from 3.9 to 4.0 with snapshots, the deep checks' shadows adopt a load
  across softwares, and the run (files, events, findings) is the run without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kraftsim.image import MetadataLoader, MvChangeHandling, image_digest, kraft_header_records, load_snapshot
from kraftsim.protocol.entries import Payload
from kraftsim.sim import Simulation
from kraftsim.sim.node.snapshot_share import SnapshotShare
from kraftsim.sim.node.voters import seed_loader
from kraftsim.storage import SnapshotId, read_snapshot, write_snapshot
from kraftsim.versions import default_catalog
from tests.image.helpers import rec, uid
from tests.image.loader_helpers import feature, mv
from tests.sim.sim_helpers import failed, scratch, tree_digest

CAT = default_catalog()
SID = SnapshotId(500, 3)
Seed = Any


def _records(level: int, extra: list[Payload]) -> list[Payload]:
    out = [mv(level)]
    for i in range(2):
        tid = uid(i + 1)
        out.append(rec("TopicRecord", name=f"t{i}", topic_id=tid))
        out += [rec("PartitionRecord", partition_id=p, topic_id=tid, replicas=[1, 2], isr=[1, 2], leader=1,
                    leader_epoch=0, partition_epoch=0) for p in range(2)]
    return out + [rec("ConfigRecord", resource_type=2, resource_name="t0", name="cleanup.policy", value="compact"),
                  *extra]


def _file(base: Path, writer: str, level: int, extra: list[Payload]) -> Path:
    registry = CAT.at_release(writer).record_registry()
    base.mkdir(parents=True, exist_ok=True)
    return write_snapshot(base, SID, _records(level, extra), last_contained_log_timestamp=1_000, time_ms=2_000,
                          header_records=kraft_header_records(1, None, registry), registry=registry, fsync=False)


def _loader(release: str, kip_778: bool, faults: list[str]) -> MetadataLoader:
    return MetadataLoader(CAT.at_release(release), fault_handler=lambda f: faults.append(str(f)), clock_ns=lambda: 0,
                          initial_delta_on_use=True,
                          mv_change=MvChangeHandling.KIP_778 if kip_778 else MvChangeHandling.KAFKA)


def _state(loader: MetadataLoader, faults: list[str]) -> tuple[Any, ...]:
    image = loader.image
    assert loader.last_publish is not None
    return (image, image.provenance, image.features.order, image_digest(image), loader.last_publish[2],
            loader.kraft_version, loader.voters, faults, loader.publishes, loader.idle, loader.last_offset)


def _plain(path: Path, release: str, kip_778: bool, seed: Seed) -> tuple[Any, ...]:
    faults: list[str] = []
    loader = _loader(release, kip_778, faults)
    snap = read_snapshot(path, CAT.at_release(release).record_registry())
    load_snapshot(loader, snap, end_offset=SID.end_offset, epoch=SID.epoch)
    if seed is not None:
        seed(loader, snap.header_entries)
    return _state(loader, faults)


def _shared(share: SnapshotShare, path: Path, release: str, kip_778: bool, seed: Seed) -> tuple[Any, ...]:
    faults: list[str] = []
    loader = _loader(release, kip_778, faults)
    share.load(loader, path, SID, CAT.at_release(release).record_registry(), (release, kip_778, id(CAT)), seed)
    return _state(loader, faults)


@pytest.mark.parametrize("a, b, level, kip_778, seed", [
    ("4.0.0", "3.9.0", 21, False, seed_loader),  # (the roll: controllers on 4.0, brokers on 3.9)
    ("3.9.0", "4.2.0", 21, False, None),
    ("3.7.2", "4.2.0", 19, False, seed_loader),
])
def test_a_load_adopted_across_softwares_that_replay_alike_is_a_decode(tmp_path: Path, a: str, b: str, level: int,
                                                                       kip_778: bool, seed: Seed) -> None:
    path = _file(tmp_path / "w", a, level, [])
    share = SnapshotShare()
    first = _shared(share, path, a, kip_778, seed)
    assert first == _plain(path, a, kip_778, seed) and not first[7]
    want = _plain(path, b, kip_778, seed)
    got = _shared(share, path, b, kip_778, seed)
    assert got == want
    assert got[0] is first[0]  # (adopted: the first load's image object)
    assert (share.loaded, share.adopted, share.adopted_across, share.reads_passes) == (1, 1, 1, 1)
    again = _shared(share, path, b, kip_778, seed)  # (the reads are kept with the load)
    assert again == want
    assert (share.loaded, share.adopted_across, share.reads_passes) == (1, 2, 1)


@pytest.mark.parametrize("a, b, level, extra, kip_778", [
    # a topic config 4.3 does not define: 4.2.0 keeps it, 4.3.1 drops it
    ("4.2.0", "4.3.1", 21, [rec("ConfigRecord", resource_type=2, resource_name="t0", name="no.such.config",
                                value="1")], False),
    # kraft.version: 3.x keeps its FeatureLevelRecord in the image, 4.0 on leaves it out
    ("3.9.0", "4.0.0", 21, [feature("kraft.version", 1)], False),
    # a metadata.version level 4.x no longer knows: 3.7 loads it, 4.0 refuses it
    ("3.7.2", "4.0.0", 3, [], False),
    # KIP-778's handling rewrites the image at a metadata.version change with its catalog
    ("4.0.0", "4.2.0", 21, [], True),
])
def test_a_load_that_may_replay_otherwise_under_another_software_is_decoded(
        tmp_path: Path, a: str, b: str, level: int, extra: list[Payload], kip_778: bool) -> None:
    path = _file(tmp_path / "w", a, level, extra)
    share = SnapshotShare()
    first = _shared(share, path, a, kip_778, seed_loader)
    assert first == _plain(path, a, kip_778, seed_loader) and not first[7]
    want = _plain(path, b, kip_778, seed_loader)
    if not kip_778:
        assert want[3] != first[3] or want[7] != first[7]  # (adopting it would be wrong)
    assert _shared(share, path, b, kip_778, seed_loader) == want
    assert (share.loaded, share.adopted_across) == (2, 0)


def test_a_load_seeded_otherwise_is_not_adopted_across(tmp_path: Path) -> None:
    """The kept load's raft state comes from its caller's `seed` (the snapshot header):
    a loader seeded otherwise decodes."""
    path = _file(tmp_path / "w", "4.0.0", 21, [])
    share = SnapshotShare()
    _shared(share, path, "4.0.0", False, seed_loader)
    want = _plain(path, "3.9.0", False, None)
    assert _shared(share, path, "3.9.0", False, None) == want
    assert want[5] is None  # (unseeded: no kraft.version, which the seeded load has)
    assert (share.loaded, share.adopted_across) == (2, 0)


def _rolled(base: Path) -> tuple[Any, ...]:
    """Created on 3.9 with a snapshot, controllers rolled to 4.0, another snapshot, brokers rolled."""
    sim = Simulation.create(base, controllers=3, brokers=3, release="3.9", seed=5, durable=False)
    lines: list[str] = []
    sim.subscribe(lambda e: lines.append(repr(e)))
    sim.create_topics(6, 3)
    sim.snapshot()
    sim.roll("4.0", "controllers")
    sim.create_topics(2, 3, prefix="mid-")
    sim.snapshot()
    sim.run(2_000)
    sim.roll("4.0", "brokers")
    sim.run(2_000)
    shadows = sim.engine.checker.shadow_share.snapshots
    out = (tree_digest(base), lines, failed(sim), shadows.loaded, shadows.adopted_across)
    sim.close()
    return out


def test_shadows_adopting_loads_across_softwares_change_no_result(monkeypatch: pytest.MonkeyPatch) -> None:
    with scratch() as base:
        fast = _rolled(base / "fast")
        monkeypatch.setattr(SnapshotShare, "_across", lambda self, *a: None)
        slow = _rolled(base / "slow")
    assert fast[:3] == slow[:3] and not fast[2]
    assert fast[4] > 0 and slow[4] == 0
    assert fast[3] < slow[3]
