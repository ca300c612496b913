"""Snapshots encoded once per identical image (image.publisher.snapshot_copies): every
directory gets the file it would have got from its own emitter — same name, bytes and
mode — and only what decides the bytes being equal lets a file be shared."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kraftsim.image import MetadataImage, MetadataProvenance, SnapshotCopies, SnapshotEmitter, kraft_header_records
from kraftsim.image.synthetic import ClusterShape, cluster_image
from kraftsim.storage import read_snapshot
from kraftsim.versions import default_catalog

CAT = default_catalog()
IMAGE = cluster_image(ClusterShape(brokers=4, topics=40, partitions=5), CAT, 25).with_provenance(
    MetadataProvenance(2_000, 3, 1_700_000_000_000, True))


def files(d: Path) -> dict[str, tuple[bytes, int]]:
    """Every file of `d`: name -> (bytes, permission bits)."""
    return {p.name: (p.read_bytes(), stat.S_IMODE(p.stat().st_mode)) for p in sorted(d.iterdir())}


def emit(d: Path, image: MetadataImage, copies: SnapshotCopies | None, *, clock: int = 42,
         header: object = None, batch_size: int = 1024) -> object:
    em = SnapshotEmitter(d, catalog=CAT, clock_ms=clock, fsync=False, copies=copies, batch_size=batch_size,
                         header_records=header)  # type: ignore[arg-type]
    return em.maybe_emit(image)


def alone(tmp: Path, image: MetadataImage, **kw: object) -> dict[str, tuple[bytes, int]]:
    """What one emitter writes without sharing."""
    d = tmp / f"alone-{len(list(tmp.iterdir()))}"
    emit(d, image, None, **kw)  # type: ignore[arg-type]
    return files(d)


def test_each_directory_gets_what_it_would_have_written_alone_and_deleting_one_leaves_the_others(
        tmp_path: Path) -> None:
    copies = SnapshotCopies()
    results = [emit(tmp_path / f"n{i}", IMAGE, copies) for i in range(3)]
    want = alone(tmp_path, IMAGE)
    for i in range(3):
        assert files(tmp_path / f"n{i}") == want
    assert (copies.written, copies.linked, copies.copied) == (1, 2, 0)
    assert len({os.stat(r.path).st_ino for r in results}) == 1  # type: ignore[attr-defined]
    assert len({(r.records, r.size_in_bytes, r.snapshot_id) for r in results}) == 1  # type: ignore[attr-defined]
    assert results[1].records == len(read_snapshot(results[1].path).payloads())  # type: ignore[attr-defined]
    os.unlink(results[0].path)  # type: ignore[attr-defined]  (retention deletes by unlink)
    assert files(tmp_path / "n1") == want == files(tmp_path / "n2")
    emit(tmp_path / "n3", IMAGE, copies)  # the first file is gone: another is linked
    assert files(tmp_path / "n3") == want and copies.linked == 3


def test_without_hard_links_the_file_is_copied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_link(src: object, dst: object) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", no_link)
    copies = SnapshotCopies()
    a, b = (emit(tmp_path / n, IMAGE, copies) for n in ("a", "b"))
    assert files(tmp_path / "b") == files(tmp_path / "a") == alone(tmp_path, IMAGE)
    assert os.stat(a.path).st_ino != os.stat(b.path).st_ino  # type: ignore[attr-defined]
    assert (copies.linked, copies.copied) == (0, 1)
    assert not [p for p in (tmp_path / "b").iterdir() if p.name.endswith(".part")]


def test_a_replaced_or_rewritten_source_is_not_used(tmp_path: Path) -> None:
    copies = SnapshotCopies()
    first = emit(tmp_path / "a", IMAGE, copies)
    path = first.path  # type: ignore[attr-defined]
    os.chmod(path, 0o644)
    path.write_bytes(b"not a snapshot")  # rewritten in place (same inode, other size)
    emit(tmp_path / "b", IMAGE, copies)
    assert files(tmp_path / "b") == alone(tmp_path, IMAGE)
    assert copies.linked == 0 and copies.written == 2


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(change=st.sampled_from(["image", "equal image", "header", "batch", "offset"]))
def test_only_the_same_inputs_share_a_file(tmp_path_factory: pytest.TempPathFactory, change: str) -> None:
    """Whatever differs in what decides the bytes, the second directory gets its own file,
    equal to what it would have written alone."""
    tmp = tmp_path_factory.mktemp("c")
    copies = SnapshotCopies()
    emit(tmp / "a", IMAGE, copies)
    image, kw = IMAGE, {}
    if change == "image":
        image = cluster_image(ClusterShape(brokers=4, topics=41, partitions=5), CAT, 25).with_provenance(
            IMAGE.provenance)
    elif change == "equal image":  # equal but another object: not taken as the same (identity is the key)
        image = IMAGE.with_provenance(IMAGE.provenance)
    elif change == "header":
        kw = {"header": lambda img: kraft_header_records(1, None)}
    elif change == "batch":
        kw = {"batch_size": 100}
    else:
        image = IMAGE.with_provenance(MetadataProvenance(2_001, 3, 1_700_000_000_000, True))
    emit(tmp / "b", image, copies, **kw)  # type: ignore[arg-type]
    assert files(tmp / "b") == alone(tmp, image, **kw)  # type: ignore[arg-type]
    assert copies.linked == 0 and copies.written == 2


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=st.integers(0, 2**62), second=st.integers(0, 2**62),
       limits=st.sampled_from([(7, 16_384), (100, 16_384), (1024, 8 * 1024 * 1024)]))
def test_at_another_clock_the_file_is_a_restamped_copy_equal_to_a_fresh_write(
        tmp_path_factory: pytest.TempPathFactory, first: int, second: int, limits: tuple[int, int]) -> None:
    """The clock only stamps batches: a file wanted at another timestamp is the kept one with
    new batch timestamps and CRCs, byte for byte what its own emitter would write."""
    tmp = tmp_path_factory.mktemp("t")
    copies = SnapshotCopies()
    batch_size, max_batch_bytes = limits

    def run(d: Path, clock: int, c: SnapshotCopies | None) -> None:
        SnapshotEmitter(d, catalog=CAT, clock_ms=clock, fsync=False, copies=c, batch_size=batch_size,
                        max_batch_bytes=max_batch_bytes).maybe_emit(IMAGE)

    run(tmp / "a", first, copies)
    run(tmp / "b", second, copies)
    run(tmp / "fresh", second, None)
    assert files(tmp / "b") == files(tmp / "fresh")
    assert (copies.restamped, copies.linked) == ((0, 1) if first == second else (1, 0))
    snap = read_snapshot(next((tmp / "b").iterdir()))
    assert set(snap.batch_timestamps) == {second}
    assert max_batch_bytes > 16_384 or len(snap.batches) > 3  # (several data batches restamped)


def test_switched_off_every_emitter_encodes_its_own(tmp_path: Path) -> None:
    copies = SnapshotCopies(enabled=False)
    a, b = (emit(tmp_path / n, IMAGE, copies) for n in ("a", "b"))
    assert os.stat(a.path).st_ino != os.stat(b.path).st_ino  # type: ignore[attr-defined]
    assert files(tmp_path / "a") == files(tmp_path / "b")
    assert (copies.written, copies.linked) == (0, 0)


def test_images_that_change_between_snapshots_are_written_as_alone_reusing_the_unchanged_topics(
        tmp_path: Path) -> None:
    """Each emit of a changed image encodes only what changed (the topics' values kept by the
    copies), and writes the bytes an emitter without any sharing writes."""
    from tests.image.test_topic_values import changed

    copies = SnapshotCopies()
    image = IMAGE
    for i in range(4):
        image = changed(image, 0b101 << i).with_provenance(MetadataProvenance(2_000 + i, 3, 1_700_000_000_000, True))
        emit(tmp_path / f"n{i}", image, copies, clock=40 + i)
        assert files(tmp_path / f"n{i}") == alone(tmp_path, image, clock=40 + i)
    partitions = IMAGE.topics.partition_count()
    assert copies.topic_values.reused > 2 * partitions and copies.topic_values.encoded < 2 * partitions


def test_cleared_files_are_not_placed_but_still_name_their_image_until_the_next_write(tmp_path: Path) -> None:
    """After `clear()` (every node wrote) no file is placed from the cleared ones, but a
    node restarting from its file before anyone writes again still finds the image it was
    written from (`written_from`), until the next write lets it go; `readable=False`
    forgets at once."""
    from kraftsim.storage.snapshot import file_identity

    copies = SnapshotCopies()
    first = emit(tmp_path / "a", IMAGE, copies).path  # type: ignore[attr-defined]
    linked = emit(tmp_path / "b", IMAGE, copies).path  # type: ignore[attr-defined]
    assert copies.linked == 1
    copies.clear()
    for path in (first, linked):
        found = copies.written_from(file_identity(path))
        assert found is not None and found[0] is IMAGE
    emit(tmp_path / "c", IMAGE, copies)  # (encoded again: cleared files are not placed)
    assert (copies.written, copies.linked) == (2, 1)
    assert copies.written_from(file_identity(first)) is None  # (the write let the cleared one go)
    assert copies.written_from(file_identity(tmp_path / "c" / first.name)) is not None
    copies.clear(readable=False)
    assert copies.written_from(file_identity(tmp_path / "c" / first.name)) is None


def test_a_write_outlives_the_next_commit_written_by_the_three_softwares_of_a_broker_roll(tmp_path: Path) -> None:
    """In a broker roll the controllers on the new release, the brokers still on the old one
    and those already rolled each write a commit's image once. A broker stopped after its
    last write restarts after the others wrote the next commit: its file must still name the
    image it was written from, or the restart decodes it (at a million partitions, three of
    the thirty restarts of the 1M what-if did)."""
    from kraftsim.storage.snapshot import file_identity

    def write(d: Path, image: MetadataImage, software: object) -> Path:
        em = SnapshotEmitter(d, catalog=CAT, clock_ms=42, fsync=False, copies=copies, software=software)
        return em.maybe_emit(image).path  # type: ignore[attr-defined]

    copies = SnapshotCopies()
    stopped = write(tmp_path / "stopped", IMAGE, ("3.9.2", 1))
    later = IMAGE.with_provenance(MetadataProvenance(3_000, 3, 1_700_000_001_000, True))
    for i, software in enumerate((("4.0.2", 1), ("3.9.2", 1), ("4.0.2", 2))):
        write(tmp_path / f"running-{i}", later, software)
    assert copies.written == 4
    found = copies.written_from(file_identity(stopped))
    assert found is not None and found[0] is IMAGE
