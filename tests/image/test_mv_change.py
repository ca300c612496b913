"""KIP-778 metadata.version changes: the loader's split before the change, the image rewritten
at the new MV, the loss report, the snapshots before and after, and the cost of the rewrite."""

from __future__ import annotations

from pathlib import Path

import pytest

from hypothesis import HealthCheck, given, settings, strategies as st

from kraftsim.image import (
    LossReport, MetadataImage, UnwritableMetadataException, diff_images, image_digest, image_from_records, write_image,
)
from kraftsim.image import SnapshotEmitter
from kraftsim.image import SnapshotFault, SnapshotGenerator
from kraftsim.image import MetadataLoader, MvChangeHandling
from kraftsim.image import affected_components, rewrite_at_metadata_version
from kraftsim.image.synthetic import ClusterShape, cluster_image
from kraftsim.storage import read_snapshot
from kraftsim.versions import default_catalog
from tests.image.helpers import REGISTRY, rec, uid
from tests.image.loader_helpers import LogBuilder, Recorder, begin, config, end, mv
from tests.image.strategies import image_groups, mv_record

CAT = default_catalog()
LEVELS = [m.level for m in CAT.metadata_versions]
KIP = MvChangeHandling.KIP_778
FLAGS = st.fixed_dictionaries({k: st.booleans() for k in ("dirs", "elr", "scram", "tokens", "controllers",
                                                          "shutdown", "zk")})
CEP = REGISTRY["RegisterControllerRecord"].nested["ControllerEndpoint"]


def full_rewrite(img: MetadataImage, level: int) -> tuple[MetadataImage, LossReport]:
    """The reference: the whole image written at `level` and read back."""
    report = LossReport()
    out = write_image(img, level, CAT, loss_handler=report)
    return image_from_records(out, catalog=CAT, provenance=img.provenance), report


def image_at(groups, level: int) -> MetadataImage:
    """A random image, made representable at `level` (as a log at that level would hold)."""
    img = image_from_records([mv_record(29)] + [r for g in groups for r in g])
    return full_rewrite(img, level)[0]


def rich_records() -> list:
    """Something of every kind a downgrade below 3.7-IV2 loses."""
    return [
        rec("RegisterBrokerRecord", broker_id=1, incarnation_id=uid(1), log_dirs=[uid(11)]),
        rec("RegisterBrokerRecord", broker_id=2, incarnation_id=uid(2)),
        rec("RegisterControllerRecord", controller_id=3000, incarnation_id=uid(3),
            end_points=[CEP(name="CONTROLLER", host="c", port=1, security_protocol=0)]),
        rec("TopicRecord", name="t", topic_id=uid(20)),
        rec("PartitionRecord", topic_id=uid(20), partition_id=0, replicas=[1, 2], isr=[1, 2], leader=1,
            directories=[uid(11), uid(0)]),
        rec("PartitionRecord", topic_id=uid(20), partition_id=1, replicas=[2], isr=[2], leader=2),
        rec("UserScramCredentialRecord", name="alice", mechanism=1, salt=b"s", stored_key=b"k", server_key=b"v",
            iterations=4096),
        rec("DelegationTokenRecord", token_id="tok", owner="User:alice", requester="User:alice"),
        config("retention.ms", "1"),
    ]


def kip_loader(*publishers, level: int = 19, records=(), **kw) -> tuple[MetadataLoader, LogBuilder]:
    log = LogBuilder()
    loader = MetadataLoader(mv_change=KIP, **kw)
    loader.install_publishers(*publishers)
    loader.set_high_watermark(0)
    loader.handle_commit([log.batch(mv(level), *records)])
    return loader, log


def loss_entities(report: LossReport) -> set[str]:
    return {loss.entity for loss in report}


def diff_entities(before: MetadataImage, after: MetadataImage) -> set[str]:
    out = set()
    for c in diff_images(before, after):
        if c.component == "features":
            continue
        entity = c.entity
        for prefix in ("scram ", "record "):
            entity = entity.removeprefix(prefix) if c.component in ("scram", "opaque") else entity
        out.add(entity)
    return out


# ----------------------------------------------------------------------------- Kafka's default


def test_kafka_default_replays_the_change_like_any_record() -> None:
    r = Recorder()
    log = LogBuilder()
    loader = MetadataLoader()
    loader.install_publishers(r)
    loader.set_high_watermark(0)
    loader.handle_commit([log.batch(mv(19), *rich_records())])
    n = len(r.seen)
    b = log.batch(config("cleanup.policy"), mv(13), config("segment.ms"))
    loader.handle_commit([b])
    assert r.offsets[n:] == [b.last_offset]  # one publish, at the commit's end
    last = r.seen[-1]
    assert last.manifest.metadata_version_change is None
    img = last.image
    assert img.metadata_version == 13 and img.scram.credentials and img.cluster.controllers  # nothing dropped


# ----------------------------------------------------------------------------- the split before the change


def test_change_inside_a_batch_publishes_the_state_before_it_first() -> None:
    r = Recorder()
    loader, log = kip_loader(r, level=21)
    n = len(r.seen)
    b = log.batch(config("cleanup.policy"), config("segment.ms"), mv(14), config("segment.bytes"), epoch=2, time_ms=9_000)
    loader.handle_commit([b])
    before, after = r.seen[n:]
    assert (before.offset, before.aligned) == (b.base_offset + 1, False)
    prov = before.manifest.provenance
    assert (prov.last_contained_epoch, prov.last_contained_log_time_ms) == (2, 9_000)
    assert before.image.metadata_version == 21 and set(before.image.configs.resources[(2, "t")]) == {"cleanup.policy", "segment.ms"}
    assert before.manifest.metadata_version_change is None
    assert (after.offset, after.aligned) == (b.last_offset, True)
    change = after.manifest.metadata_version_change
    assert (change.old_level, change.new_level, change.is_downgrade(), change.lossless) == (21, 14, True, True)
    assert change.text(CAT) == "The metadata.version is changing from 3.9-IV0 to 3.6-IV2"
    # lossless: nothing changed but the version (and the record after it)
    assert diff_images(before.image, after.image)[0].entity == "feature metadata.version"
    assert {str(c) for c in diff_images(before.image, after.image)} == {
        "feature metadata.version: 21 → 14", "config TOPIC t: segment.bytes null → 'v'"}


def test_change_opening_a_later_batch_publishes_aligned_with_the_previous_batch() -> None:
    r = Recorder()
    loader, log = kip_loader(r, level=21)
    n = len(r.seen)
    first = log.batch(config("cleanup.policy"), epoch=1, time_ms=5_000)
    second = log.batch(mv(20), epoch=2, time_ms=6_000)
    loader.handle_commit([first, second])
    before, after = r.seen[n:]
    p = before.manifest.provenance
    assert (p.last_contained_offset, p.last_contained_epoch, p.last_contained_log_time_ms,
            p.is_offset_batch_aligned) == (first.last_offset, 1, 5_000, True)
    assert (before.manifest.num_batches, after.manifest.num_batches) == (1, 1)
    q = after.manifest.provenance
    assert (q.last_contained_offset, q.last_contained_epoch, q.last_contained_log_time_ms) == (second.last_offset, 2,
                                                                                               6_000)


def test_change_at_the_start_of_a_commit_needs_no_split() -> None:
    r = Recorder()
    loader, log = kip_loader(r, level=21)
    n = len(r.seen)
    b = log.batch(mv(25))
    loader.handle_commit([b])
    assert r.offsets[n:] == [b.last_offset]
    change = r.seen[-1].manifest.metadata_version_change
    assert change.is_upgrade() and change.components == ("features",) and change.lossless


def test_setting_the_same_level_is_not_a_change() -> None:
    r = Recorder()
    loader, log = kip_loader(r, level=21)
    n = len(r.seen)
    loader.handle_commit([log.batch(config("cleanup.policy"), mv(21))])
    assert len(r.seen) == n + 1 and r.seen[-1].manifest.metadata_version_change is None


def test_the_first_metadata_version_is_not_a_change() -> None:
    r = Recorder()
    loader = MetadataLoader(mv_change=KIP)
    loader.install_publishers(r)
    loader.set_high_watermark(0)
    loader.handle_commit([LogBuilder().batch(begin(), mv(27), end())])
    assert r.seen[-1].manifest.kind == "SNAPSHOT" and loader.image.metadata_version == 27


# ----------------------------------------------------------------------------- lossy downgrades


def test_lossy_downgrade_drops_exactly_what_the_report_lists() -> None:
    r = Recorder()
    loader, log = kip_loader(r, level=19, records=rich_records())
    before = loader.image
    loader.handle_commit([log.batch(mv(13))])
    after = r.seen[-1]
    change = after.manifest.metadata_version_change
    assert change.is_downgrade() and not change.lossless
    assert change.losses.by_kind() == {
        "broker log dirs": ["broker 1"],
        "controller registration": ["controller 3000"],
        "replica directory assignment": ["topic t partition 0"],
        "delegation token": ["delegation token tok"],
    }
    assert change.components == ("features", "cluster", "topics", "delegation_tokens")
    assert loss_entities(change.losses) == diff_entities(before, after.image)
    # the loader carries on from the rewritten image: what was dropped stays dropped
    assert loader.image is after.image and not loader.image.delegation_tokens.tokens
    loader.handle_commit([log.batch(mv(19))])
    assert loader.image.metadata_version == 19 and not loader.image.cluster.controllers
    assert loader.image.scram.credentials  # SCRAM exists since 3.5-IV2 (11): kept all along


def test_down_and_up_inside_one_transaction_loses_at_the_lowest_level() -> None:
    r = Recorder()
    loader, log = kip_loader(r, level=19, records=rich_records())
    n = len(r.seen)
    b = log.batch(begin(), mv(13), config("max.message.bytes"), mv(19), end())
    loader.handle_commit([b])
    assert r.offsets[n:] == [b.last_offset]  # no split inside a transaction
    change = r.seen[-1].manifest.metadata_version_change
    assert (change.old_level, change.new_level, change.via) == (19, 19, 13)
    assert "delegation token" in change.losses.by_kind()
    assert loader.image.metadata_version == 19 and not loader.image.delegation_tokens.tokens


def test_change_inside_a_transaction_is_published_at_its_end_after_the_state_at_the_begin() -> None:
    r = Recorder()
    loader, log = kip_loader(r, level=19, records=rich_records())
    n = len(r.seen)
    b = log.batch(config("cleanup.policy"), begin(), mv(14), end())
    loader.handle_commit([b])
    at_begin, at_end = r.seen[n:]
    assert at_begin.offset == b.base_offset and at_begin.image.metadata_version == 19
    assert at_end.manifest.metadata_version_change.old_level == 19 and at_end.image.metadata_version == 14
    assert not at_end.image.cluster.controllers


# ----------------------------------------------------------------------------- properties of the rewrite


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(FLAGS.flatmap(lambda f: image_groups(**f)), st.sampled_from(LEVELS), st.sampled_from(LEVELS))
def test_incremental_rewrite_equals_the_full_writer(groups, a: int, b: int) -> None:
    base = image_at(groups, a)
    report = LossReport()
    new, comps = rewrite_at_metadata_version(base, b, CAT, loss_handler=report)
    expected, expected_report = full_rewrite(base, b)
    assert new.same_content(expected) and new.provenance == base.provenance
    assert [(x.kind, x.entity, x.path) for x in report] == [(x.kind, x.entity, x.path) for x in expected_report]
    untouched = [c for c in MetadataImage.__struct_fields__ if c not in comps and c != "provenance"]
    assert all(getattr(new, c) is getattr(base, c) for c in untouched)


@st.composite
def lossless_pairs(draw):
    high = draw(st.sampled_from([lvl for lvl in LEVELS if CAT.safe_downgrade_floor(lvl).level < lvl]))
    low = draw(st.integers(CAT.safe_downgrade_floor(high).level, high - 1))
    return high, low


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(FLAGS.flatmap(lambda f: image_groups(**f)), lossless_pairs())
def test_lossless_down_then_up_is_the_identity(groups, pair) -> None:
    high, low = pair
    base = image_at(groups, high)
    down_report, up_report = LossReport(), LossReport()
    down, _ = rewrite_at_metadata_version(base, low, CAT, loss_handler=down_report)
    up, _ = rewrite_at_metadata_version(down, high, CAT, loss_handler=up_report)
    assert down_report.lossless and up_report.lossless
    assert up == base  # same content, same provenance
    # the full writer agrees, and so does a KIP-778 loader replaying the change from a log
    assert full_rewrite(full_rewrite(base, low)[0], high)[0].same_content(base)
    log = LogBuilder()
    loader = MetadataLoader(mv_change=KIP)
    loader.set_high_watermark(0)
    loader.handle_commit([log.batch(*write_image(base, high, CAT))])
    loader.handle_commit([log.batch(mv(low))])
    loader.handle_commit([log.batch(mv(high))])
    assert loader.image.same_content(base)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(FLAGS.flatmap(lambda f: image_groups(**f)),
       st.sampled_from([lvl for lvl in LEVELS if lvl < 29 and CAT.is_lossy(29, lvl)]))
def test_lossy_report_names_exactly_the_entities_that_changed(groups, low: int) -> None:
    base = image_at(groups, 29)
    report = LossReport()
    new, _ = rewrite_at_metadata_version(base, low, CAT, loss_handler=report)
    assert loss_entities(report) == diff_entities(base, new)
    assert new.metadata_version == low


def test_affected_components_follow_the_catalog_gates() -> None:
    assert affected_components(CAT, 21, 25) == ("features",)  # up: nothing closes
    assert affected_components(CAT, 21, 20) == ("features", "opaque")  # lossless, no gate moves
    assert affected_components(CAT, 14, 13) == ("features", "delegation_tokens", "opaque")
    assert affected_components(CAT, 17, 16) == ("features", "cluster", "topics", "opaque")
    assert affected_components(CAT, 25, 22) == ("features", "topics", "opaque")


def test_rewrite_cost_follows_the_change_not_the_image() -> None:
    """Checked by structure sharing, never by timing: a lossless change, or one that only
    drops delegation tokens, leaves the 20,000-partition topics and the cluster untouched."""
    shape = ClusterShape(brokers=6, topics=2_000, partitions=10, controllers=3)
    big = cluster_image(shape, CAT, 14)
    for target, rewritten in ((13, {"features", "delegation_tokens"}), (15, {"features"}), (14, {"features"})):
        report = LossReport()
        new, comps = rewrite_at_metadata_version(big, target, CAT, loss_handler=report)
        assert set(comps) == rewritten
        for c in ("cluster", "topics", "configs", "scram", "producer_ids"):
            assert getattr(new, c) is getattr(big, c)
    # a change that closes a topics gate rewrites the topics, but shares every topic that came out equal
    elr = cluster_image(shape, CAT, 25)
    new, comps = rewrite_at_metadata_version(elr, 22, CAT, loss_handler=LossReport())
    assert "topics" in comps and new.topics is elr.topics  # no partition had ELR: nothing changed


# ----------------------------------------------------------------------------- snapshots around the change


def kip_node(tmp: Path, records=(), level: int = 19, clock: int = 77, **gen_kw):
    emitter = SnapshotEmitter(tmp, clock_ms=clock, fsync=False)
    gen = SnapshotGenerator(emitter, clock_ms=lambda: clock, mv_change_snapshots=True, **gen_kw)
    loader, log = kip_loader(gen, level=level, records=records)
    return loader, log, gen, emitter


def test_snapshots_before_and_after_a_lossy_downgrade(tmp_path: Path) -> None:
    loader, log, gen, emitter = kip_node(tmp_path, rich_records())
    before = loader.image
    loader.handle_commit([log.batch(config("delete.retention.ms")), log.batch(mv(13))])
    pre, post = emitter.results
    # the state before the change, at its own MV, at the offset before the FeatureLevelRecord
    assert pre.snapshot_id.end_offset == log.next_offset - 1
    assert pre.losses.lossless
    pre_img = image_from_records(read_snapshot(pre.path).data_entries(), catalog=CAT)
    assert pre_img.metadata_version == 19 and pre_img.cluster.controllers and pre_img.delegation_tokens.tokens
    assert set(pre_img.configs.resources[(2, "t")]) == {"retention.ms", "delete.retention.ms"}
    # the new image, rewritten at the new MV: its report is what it lost against the state before
    assert post.snapshot_id.end_offset == log.next_offset
    post_img = image_from_records(read_snapshot(post.path).data_entries(), catalog=CAT)
    assert image_digest(post_img) == image_digest(loader.image)
    assert loss_entities(post.losses) == diff_entities(pre_img, post_img) and not post.losses.lossless
    assert [e.reason for e in gen.emitted] == [
        "metadata.version is changing from 19 to 13 (the state before the change)",
        "metadata.version changed from 19 to 13"]
    assert before.cluster.controllers and not loader.image.cluster.controllers


def test_identical_inputs_give_identical_snapshot_bytes(tmp_path: Path) -> None:
    runs = []
    for run in ("a", "b"):
        loader, log, gen, emitter = kip_node(tmp_path / run, rich_records())
        loader.handle_commit([log.batch(config("delete.retention.ms")), log.batch(mv(13))])
        runs.append([(r.path.name, r.path.read_bytes()) for r in emitter.results])
    assert len(runs[0]) == 2 and runs[0] == runs[1]


def test_the_writers_refusal_words_the_version_as_its_release_does() -> None:
    """'metadata version' in 3.4 to 3.7, 'metadata.version' from 3.8 (read from their jars;
    live 3.7.0 logged the first)."""
    img = image_from_records([mv(19), *rich_records()])
    texts = {}
    for release in ("3.4", "3.7.0", "3.7", "3.8", "4.2"):
        with pytest.raises(UnwritableMetadataException) as e:
            write_image(img, 8, CAT.at_release(release))
        texts[release] = str(e.value)
        report = LossReport()
        write_image(img, 8, CAT.at_release(release), loss_handler=report)
        assert report.kafka_texts()[0] == texts[release]
    loss = "the online log directories of one or more brokers"
    assert texts["3.4"] == texts["3.7.0"] == texts["3.7"] == (
        f"Metadata has been lost because the following could not be represented in metadata version 3.4-IV0: {loss}")
    assert texts["3.8"] == texts["4.2"] == texts["3.7"].replace("metadata version", "metadata.version")


def test_mv_change_snapshots_on_a_kafka_loader_cannot_write_a_lossy_image(tmp_path: Path) -> None:
    faults: list[SnapshotFault] = []
    emitter = SnapshotEmitter(tmp_path, clock_ms=1, fsync=False)
    gen = SnapshotGenerator(emitter, clock_ms=lambda: 1, mv_change_snapshots=True, fault_handler=faults.append)
    log = LogBuilder()
    loader = MetadataLoader()  # Kafka's loader: no split, no rewrite
    loader.install_publishers(gen)
    loader.set_high_watermark(0)
    loader.handle_commit([log.batch(mv(19), *rich_records())])
    loader.handle_commit([log.batch(mv(13))])
    assert len(emitter.results) == 1  # the state before the change was written
    assert [str(f) for f in faults] == [
        "KRaft snapshot file generation error: Metadata has been lost because the following could not be "
        "represented in metadata.version 3.6-IV1: the online log directories of one or more brokers"]
    assert not list(tmp_path.glob("*.part"))  # the failed write left nothing behind


def test_no_snapshot_is_forced_by_default(tmp_path: Path) -> None:
    """Kafka 4.x: an MV change is an ordinary delta for the generator's triggers."""
    emitter = SnapshotEmitter(tmp_path, clock_ms=1, fsync=False)
    gen = SnapshotGenerator(emitter, clock_ms=lambda: 1)
    loader, log = kip_loader(gen, level=21)
    loader.handle_commit([log.batch(mv(14))])
    assert gen.events == [] and emitter.results == []


def test_unaligned_state_before_the_change_is_not_snapshotted(tmp_path: Path) -> None:
    loader, log, gen, emitter = kip_node(tmp_path, level=21)
    loader.handle_commit([log.batch(config("cleanup.policy"), mv(20))])
    skipped, written = gen.events
    assert not skipped.emitted and skipped.message.endswith("because snapshots are disabled; metadata image is not "
                                                            "batch aligned")
    assert written.emitted and [r.snapshot_id.end_offset for r in emitter.results] == [log.next_offset]
