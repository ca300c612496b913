"""A commit replayed under one software is adopted under another only when the batch replays
alike under both (kraftsim.sim.node.commit_share: `batch_reads`, `replays_alike`, `across`).

- Property: two loaders of random releases (and metadata.version handling) standing on the
  same image replay the same random batch; whenever `replays_alike` says the batch replays
  alike, the two give the same image (features' order included), manifest, raft state and
  faults. The batches mix records that read nothing of the software with ones that do
  (metadata.version and kraft.version FeatureLevelRecords, configs some releases drop).
- Each guard is needed: for each software-dependent kind of record, two releases whose
  replays differ, which `replays_alike` keeps apart.
- In a cluster: 3.9 controllers finalize kraft.version (a FeatureLevelRecord 3.x keeps in its
  image and 4.0 leaves out) while one broker already runs 4.0: that batch is replayed by each
  software, the rest adopted across; shared anyway, the deep invariants name the broker.
- Rolled cluster: the same files and timeline with and without adopting across softwares.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from kraftsim.image import MetadataLoader, MvChangeHandling, image_digest
from kraftsim.protocol.entries import Payload
from kraftsim.sim import Simulation
from kraftsim.sim.node import commit_share
from kraftsim.sim.node.commit_share import CommitShare, Replayer, batch_reads, replays_alike
from kraftsim.sim.node.replay_reads import NEUTRAL, PARTITION_CHANGES, READ_TYPES
from kraftsim.versions import VersionsError, default_catalog
from tests.image.helpers import rec, uid
from tests.image.loader_helpers import LogBuilder, begin, end, feature, mv, noop
from tests.sim.sim_helpers import failed, scratch, tree_digest

CAT = default_catalog()
RELEASES = ("3.7.0", "3.7.2", "3.9.0", "4.0.0", "4.2.0", "4.2.1", "4.3.1", "4.4.0")
TOPICS = (uid(1), uid(2))


def _replayer(release: str, kip_778: bool) -> Replayer:
    catalog = CAT.at_release(release)
    return Replayer(catalog, catalog.record_registry(), kip_778)


def _loader(r: Replayer) -> MetadataLoader:
    return MetadataLoader(r.catalog, fault_handler=lambda fault: None, clock_ns=lambda: 0,
                          mv_change=MvChangeHandling.KIP_778 if r.kip_778 else MvChangeHandling.KAFKA)


def _knows(r: Replayer, level: int) -> bool:
    try:
        return r.catalog.mv_from_level(level).level == level
    except VersionsError:
        return False


def _config(rtype: int, resource: str, name: str, value: str | None = "1") -> Payload:
    return rec("ConfigRecord", resource_type=rtype, resource_name=resource, name=name, value=value)


def _base(level: int) -> list[Payload]:
    out = [mv(level)]
    for i, tid in enumerate(TOPICS):
        out.append(rec("TopicRecord", name=f"t{i}", topic_id=tid))
        out += [rec("PartitionRecord", partition_id=p, topic_id=tid, replicas=[1, 2], isr=[1, 2], leader=1,
                    leader_epoch=0, partition_epoch=0) for p in range(2)]
    return out + [_config(2, "t0", "cleanup.policy", "compact")]


RECORDS = st.one_of(
    # nothing of the software
    st.builds(lambda t, p, leader: rec("PartitionChangeRecord", topic_id=TOPICS[t], partition_id=p, leader=leader,
                                       isr=[leader]), st.integers(0, 1), st.integers(0, 1), st.sampled_from([1, 2])),
    st.builds(lambda n: rec("ProducerIdsRecord", broker_id=1, broker_epoch=1, next_producer_id=n), st.integers(0, 99)),
    st.builds(lambda t: rec("RemoveTopicRecord", topic_id=TOPICS[t]), st.integers(0, 1)),
    st.builds(lambda v: _config(4, "1", "log.retention.ms", v), st.sampled_from(["5", None])),
    # what some releases replay differently, each kind its own branch
    st.builds(_config, st.sampled_from([2, 16, 32]), st.sampled_from(["t0", "t1"]),
              st.sampled_from(["cleanup.policy", "retention.ms", "message.format.version", "no.such.config",
                               "errors.deadletterqueue.group.enable"])),
    st.builds(mv, st.sampled_from([3, 7, 20, 21, 25, 30, 33])),
    st.builds(lambda level: feature("kraft.version", level), st.sampled_from([0, 1, 1])),
    # replicas changed without directories: 3.7.0 gives a new one UNASSIGNED
    st.builds(lambda t, p, replicas: rec("PartitionChangeRecord", topic_id=TOPICS[t], partition_id=p,
                                         replicas=replicas), st.integers(0, 1), st.integers(0, 1),
              st.sampled_from([[1, 2, 3], [2, 3], [1]])),
    st.builds(feature, st.sampled_from(["group.version", "eligible.leader.replicas.version"]), st.integers(0, 1)),
)


def _outcome(loader: MetadataLoader) -> tuple[Any, ...]:
    published = loader.last_publish
    assert published is not None
    delta, image, manifest = published
    return (image, image.features.order, image_digest(image), manifest, delta.metadata_version_changed(),
            loader.kraft_version, loader.voters, [str(f) for f in loader.faults], loader.publishes, loader.last_offset)


@settings(max_examples=400, deadline=None)
@given(releases=st.lists(st.sampled_from(RELEASES), min_size=2, max_size=2, unique=True) | st.sampled_from(RELEASES).map(lambda r: [r, r]),
       kips=st.sampled_from([(False, False), (False, False), (True, True), (False, True), (True, False)]),
       base_level=st.integers(7, 20), records=st.lists(RECORDS, min_size=1, max_size=4), tx=st.booleans())
def test_a_batch_said_to_replay_alike_replays_alike(releases: list[str], kips: tuple[bool, bool], base_level: int,
                                                   records: list[Payload], tx: bool) -> None:
    ra, rb = _replayer(releases[0], kips[0]), _replayer(releases[1], kips[1])
    log = LogBuilder()
    first, second = _loader(ra), _loader(rb)
    first.handle_commit([log.batch(*_base(base_level))])
    assert not first.faults and first.last_publish is not None
    delta, image, manifest = first.last_publish
    second.adopt(delta, image, manifest, kraft_version=first.kraft_version, voters=first.voters)  # (one object)
    batch = log.batch(*([begin(), *records, end()] if tx else records))
    reads = batch_reads(batch.entries)
    for loader in (first, second):
        loader.handle_commit([batch])
    if replays_alike(ra, rb, reads):
        assert _outcome(first) == _outcome(second)
        assert replays_alike(rb, ra, reads)  # (alike is symmetric)


@settings(max_examples=200, deadline=None)
@given(records=st.lists(RECORDS, max_size=6), tx=st.booleans())
def test_a_batchs_reads_are_the_same_from_a_list_as_record_by_record(records: list[Payload], tx: bool) -> None:
    """`batch_reads` of a list first gathers the record types (and answers NEUTRAL, or
    PARTITION_CHANGES, when none else reads the software); the same records handed one by one
    are read record by record."""
    entries = LogBuilder().batch(*([begin(), *records, end()] if tx else records)).entries
    assert batch_reads(entries) == batch_reads(iter(entries)) == batch_reads(tuple(entries))
    reads = batch_reads(entries)
    assert (reads in (NEUTRAL, PARTITION_CHANGES)) == all(e.record_type.name not in READ_TYPES for e in entries)
    assert reads.partition_changes == any(e.record_type.name == "PartitionChangeRecord" for e in entries)


def _replays(release: str, records: list[Payload], *, kip_778: bool = False, base_level: int = 19) -> tuple[Any, ...]:
    log = LogBuilder()
    loader = _loader(_replayer(release, kip_778))
    loader.handle_commit([log.batch(*_base(base_level))])
    loader.handle_commit([log.batch(*records)])
    return _outcome(loader)


@pytest.mark.parametrize("a, b, records, kip_778", [
    # kraft.version: 3.x keeps its FeatureLevelRecord in the image, 4.0 on leaves it out
    ("3.9.0", "4.0.0", [feature("kraft.version", 1)], False),
    # a topic config 4.3 does not define: 4.2.0 keeps it, 4.3.1 drops it
    ("4.2.0", "4.3.1", [_config(2, "t0", "no.such.config")], False),
    # a metadata.version level 4.x no longer knows: 3.7 replays it, 4.0 refuses it
    ("3.7.2", "4.0.0", [mv(3)], False),
    # KIP-778's handling rewrites the image at a metadata.version change with its catalog
    ("3.7.2", "4.0.0", [mv(7)], True),
    # a replica added without directories: 3.7.0 gives it UNASSIGNED, 3.7.1 on MIGRATING (KAFKA-16583)
    ("3.7.0", "3.7.1", [rec("PartitionChangeRecord", topic_id=TOPICS[0], partition_id=0, replicas=[1, 2, 3])],
     False),
])
def test_every_guard_keeps_apart_batches_that_replay_differently(a: str, b: str, records: list[Payload],
                                                                 kip_778: bool) -> None:
    """Each kind of record `replays_alike` looks at, in a batch two releases replay differently
    (or, for KIP-778's rewrite, may): kept apart; the same releases share a batch without it."""
    reads = batch_reads(records)
    ra, rb = _replayer(a, kip_778), _replayer(b, kip_778)
    assert not replays_alike(ra, rb, reads)
    if not kip_778:
        assert _replays(a, records) != _replays(b, records)
    neutral = [noop(), rec("ProducerIdsRecord", broker_id=1, broker_epoch=1, next_producer_id=7)]
    assert replays_alike(ra, rb, batch_reads(neutral))
    assert _replays(a, neutral, kip_778=kip_778) == _replays(b, neutral, kip_778=kip_778)


def _kraft_version_upgrade(base: Path, guarded: bool = True) -> tuple[Any, ...]:
    with pytest.MonkeyPatch.context() as mp:
        if not guarded:  # (every batch said to replay alike: the FeatureLevelRecord shared too)
            mp.setattr(commit_share, "replays_alike", lambda a, b, reads: True)
        sim = Simulation.create(base / ("c" if guarded else "unguarded"), controllers=3, brokers=2, release="3.9",
                                seed=3, durable=False)
        sim.create_topics(3, 2)
        sim.roll("4.0", [5])
        sim.features("upgrade", features={"kraft.version": 1})
        sim.run(3_000)
        images = [sim.engine.member(b).node.loader.image for b in (4, 5)]  # type: ignore[union-attr]
        out = (images, sim.engine.share.adopted_across, [r.name for r in failed(sim)])
        sim.close()
    return out


def test_a_software_dependent_batch_is_replayed_by_each_software() -> None:
    with scratch() as base:
        (b39, b40), across, bad = _kraft_version_upgrade(base)
        assert bad == []
        assert dict(b39.features.finalized).get("kraft.version") == 1  # (3.9 keeps it in its image)
        assert "kraft.version" not in dict(b40.features.finalized)  # (4.0 does not)
        assert across > 0  # (the other batches were adopted across the two releases)
        (u39, u40), _, unguarded = _kraft_version_upgrade(base, guarded=False)
    assert u39 is u40 and "ImageMatchesLog" in unguarded  # (shared anyway: the deep invariants name it)


def _rolled(base: Path, name: str) -> tuple[str, list[str], int, int]:
    """Created on 3.9, controllers rolled to 4.0, a snapshot, brokers rolled, more topics."""
    sim = Simulation.create(base / name, controllers=3, brokers=3, release="3.9", seed=5, durable=False)
    lines: list[str] = []
    sim.subscribe(lambda e: lines.append(repr(e)))
    sim.create_topics(6, 3)
    sim.roll("4.0", "controllers")
    sim.snapshot()
    sim.roll("4.0", [4])
    sim.create_topics(2, 3, prefix="mid-")
    sim.roll("4.0", "brokers")
    sim.run(3_000)
    assert not failed(sim)
    share = sim.engine.share
    out = (tree_digest(base / name), lines, share.replayed, share.adopted_across)
    sim.close()
    return out


def test_adopting_across_softwares_changes_no_result(monkeypatch: pytest.MonkeyPatch) -> None:
    with scratch() as base:
        fast = _rolled(base, "fast")
        monkeypatch.setattr(CommitShare, "across", lambda self, *a: None)
        slow = _rolled(base, "slow")
    assert fast[:2] == slow[:2]
    assert fast[3] > 0 and slow[3] == 0
    assert fast[2] < slow[2]
