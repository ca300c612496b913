"""Replay verification: re-derive every image a log directory can give and check they agree.

The log is the truth and images are derived from it, so whatever a directory holds must
tell one story. Three checks, for real Kafka directories and simulated ones alike:

- `verify_directory`: for every snapshot S (end offset O) of a `__cluster_metadata-0`
  directory, the image from S plus the log after it equals the image of the whole log
  replayed from offset 0 (where the log goes back to 0 without gaps; otherwise every
  "snapshot + log" that reaches the same end must agree with the others), and the image
  of the log up to O equals the image S holds. The same load also checks S's id against
  the log: its epoch is the epoch of the record at O − 1 and its header's
  LastContainedLogTimestamp is that record's batch timestamp, as Kafka's emitter writes them.
- `verify_replicas`: several directories of one quorum agree at every snapshot offset
  any of them has and at the end they have in common; their batches are the same up to
  that end; and each replica's extra tail (offsets, records, record types, bytes) is
  reported, not hidden.
- `verify_roundtrip`: writing the image at a lower metadata.version with no loss, replaying
  that, writing it back at the original version and replaying again gives the same image.

Every image comes from the MetadataLoader a node uses, driven exactly as `load_path`
drives it (snapshot load, then one commit per batch), so transactions, snapshot replacement
and provenance behave as in Kafka; each directory is opened once per verification (opening
re-validates the last segment, which would otherwise dominate the cost). Images are compared
by `image_digest` (provenance excluded); on a mismatch the first differing entities from
`diff_images` are kept. Results are msgspec Structs with a stored `ok`, so they encode to
JSON as they are; `render_*` give the text form.
"""

from __future__ import annotations

from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import Callable, Iterable, Sequence

import msgspec

from kraftsim.errors import KraftsimError
from kraftsim.image.delta import image_from_records
from kraftsim.image.image import MetadataImage
from kraftsim.image.loader.loading import (
    SnapshotChoice,
    committed_batches,
    load_snapshot,
    pick_snapshot,
)
from kraftsim.image.loader.metadata_loader import MetadataLoader, MvChangeHandling
from kraftsim.image.verification.diff import diff_images
from kraftsim.image.verification.digest import image_digest
from kraftsim.image.verification.report import (
    DirectoryVerification,
    FieldCheck,
    ImageComparison,
    ReplicaInfo,
    ReplicaTail,
    ReplicaVerification,
    RoundTrip,
    RoundTripVerification,
    Skipped,
    SnapshotVerification,
)
from kraftsim.image.writer.image_writer import WriterLine, write_image
from kraftsim.image.writer.loss import LossReport
from kraftsim.protocol.entries import LogEntry
from kraftsim.protocol.registry import Registry
from kraftsim.storage.batchfile import decode_file_batch
from kraftsim.storage.log import MetadataLog
from kraftsim.storage.names import BOOTSTRAP_SNAPSHOT_ID, SnapshotId, snapshot_file_name
from kraftsim.storage.snapshot import read_snapshot
from kraftsim.storage.view import metadata_dir_of
from kraftsim.versions import Catalog, default_catalog

#: How many differing entities a failed comparison keeps.
MAX_DIFFERENCES = 20

#: Called with a short description of each load a verification starts (for progress output).
StepProgress = Callable[[str], None]


# ------------------------------------------------------------------------------ comparing


def compare_images(check: str, left_name: str, left: MetadataImage, right_name: str, right: MetadataImage,
                   *, max_differences: int = MAX_DIFFERENCES) -> ImageComparison:
    """Compare two images by digest; on a mismatch keep the first differing entities."""
    a, b = image_digest(left), image_digest(right)
    if a == b:
        return ImageComparison(check=check, left=left_name, right=right_name, left_digest=a, right_digest=b, ok=True)
    changes = diff_images(left, right)
    shown = [c.text for c in changes[:max_differences]]
    return ImageComparison(check=check, left=left_name, right=right_name, left_digest=a, right_digest=b, ok=False,
                           differences=shown, more_differences=max(0, len(changes) - len(shown)))


def _step(progress: StepProgress | None, text: str) -> None:
    if progress is not None:
        progress(text)


def _sid_text(sid: SnapshotId) -> str:
    return snapshot_file_name(sid).removesuffix(".checkpoint")


# ------------------------------------------------------------------------------ (a) one directory


class _LogShape(msgspec.Struct):
    start: int
    end: int
    ids: list[SnapshotId]
    gaps: list[tuple[int, int]]
    recovery: list[str]


def _gap_below(gaps: Sequence[tuple[int, int]], start: int, offset: int) -> tuple[int, int] | None:
    """The first gap that lies (partly) in [start, offset)."""
    for a, b in gaps:
        if b > start and a < offset:
            return a, b
    return None


def _base_for(shape: _LogShape, offset: int) -> tuple[SnapshotChoice, str] | str:
    """Where the state at `offset` can be rebuilt from without using a snapshot at `offset`
    itself: the whole log, or an older snapshot plus the log after it. A string is the reason
    it cannot."""
    if offset > shape.end:
        return f"the log's records end at offset {shape.end}"
    if shape.start == 0 and _gap_below(shape.gaps, 0, offset) is None:
        return "none", "the log from offset 0"
    older = [s for s in shape.ids if s.end_offset < offset and s.end_offset >= shape.start]
    for s in reversed(older):
        if _gap_below(shape.gaps, s.end_offset, offset) is None:
            return s, f"snapshot {_sid_text(s)} + the log up to {offset}"
    gap = _gap_below(shape.gaps, shape.start, offset)
    if gap is not None:
        return f"offsets {gap[0]}..{gap[1] - 1} are missing from the log"
    return f"the log starts at offset {shape.start} and no older snapshot covers the records below it"


class _Replayer:
    """Replays one open log directory with `load_path`'s own steps (`load_snapshot`, then
    `committed_batches` one commit per batch, stopping inside a batch only at an `upto` that
    is not batch aligned), keeping the images reached at chosen offsets.

    The log is opened once for a whole verification: opening re-validates the last segment,
    which would otherwise dominate the cost of checking a directory with many snapshots."""

    def __init__(self, directory: Path, log: MetadataLog, catalog: Catalog, registry: Registry,
                 mv_change: MvChangeHandling = MvChangeHandling.KAFKA):
        self.directory = directory
        self.log = log
        self.catalog = catalog
        self.registry = registry
        self.mv_change = mv_change

    def snapshot_image(self, sid: SnapshotId) -> MetadataImage:
        return self.replay(snapshot=sid, upto=sid.end_offset)[0]

    def replay(self, *, snapshot: SnapshotId | None = None, upto: int | None = None,
               capture: frozenset[int] | set[int] = frozenset()) -> tuple[MetadataImage, dict[int, MetadataImage], int]:
        """(final image, {offset: image there} for `capture`, end offset reached)."""
        log = self.log
        loader = MetadataLoader(self.catalog, mv_change=self.mv_change)
        loader.set_high_watermark(upto if upto is not None else log.log_end_offset)
        start = log.log_start_offset
        if snapshot is not None:
            snap = read_snapshot(self.directory / snapshot_file_name(snapshot), self.registry)
            load_snapshot(loader, snap, end_offset=snapshot.end_offset, epoch=snapshot.epoch)
            start = snapshot.end_offset
        seen: dict[int, MetadataImage] = {}
        end = start
        if (upto is None or upto > start) and start < log.log_end_offset:
            for batch, aligned in committed_batches(log.batches(start), self.registry, start, upto):
                if batch.base_offset in capture:
                    seen[batch.base_offset] = loader.image
                loader.handle_commit([batch], aligned=aligned)
                end = batch.last_offset + 1
        if end in capture:
            seen[end] = loader.image
        return loader.image, seen, end


def verify_directory(path: Path | str, *, catalog: Catalog | None = None, registry: Registry | None = None,
                     progress: StepProgress | None = None, max_differences: int = MAX_DIFFERENCES,
                     mv_change: MvChangeHandling = MvChangeHandling.KAFKA) -> DirectoryVerification:
    """Check every snapshot of a metadata log directory (or a log directory holding one)
    against the log. Problems with individual loads are collected, not raised; a path that
    is not a directory at all raises KraftsimError. A log written under KIP-778's
    metadata.version-change rules (the `kip-778` policy) is replayed with
    `mv_change=MvChangeHandling.KIP_778`, the way its nodes loaded it."""
    catalog = catalog if catalog is not None else default_catalog()
    registry = registry or catalog.record_registry()
    directory = metadata_dir_of(path)
    with MetadataLog.open(directory, read_only=True) as log:
        shape = _LogShape(log.log_start_offset, log.log_end_offset, log.snapshot_ids(), log.gaps(),
                          [f"{a.kind.value} {a.path}: {a.reason}" for a in log.recovery])
        return _verify_open_directory(_Replayer(directory, log, catalog, registry, mv_change), shape, progress,
                                      max_differences)


def snapshots_against_log(path: Path | str, *, catalog: Catalog | None = None, registry: Registry | None = None,
                          mv_changes: Sequence[MvChangeHandling] = (MvChangeHandling.KAFKA, MvChangeHandling.KIP_778),
                          ) -> dict[str, list[str]]:
    """For each snapshot whose offsets the log holds from offset 0 without a gap: what
    disagrees between it and the log replayed to its end offset (the image, the epoch and
    the header's timestamp of the batch ending there), by snapshot file name; a snapshot that
    agrees has an empty list, one the log does not cover is left out. Only this check tells a
    snapshot renamed to another end offset of the same epoch. A snapshot agreeing with the
    replay under any of `mv_changes` (Kafka's, or KIP-778's for logs of the kip-778 policy)
    agrees; each replay is one pass over the log."""
    catalog = catalog if catalog is not None else default_catalog()
    registry = registry or catalog.record_registry()
    directory = metadata_dir_of(path)
    with MetadataLog.open(directory, read_only=True) as log:
        if log.log_start_offset != 0:
            return {}
        covered = [s for s in log.snapshot_ids() if 0 < s.end_offset <= log.log_end_offset
                   and _gap_below(log.gaps(), 0, s.end_offset) is None]
        found: dict[str, list[str]] = {}
        pending = list(covered)
        for mode in mv_changes:
            if not pending:
                break
            replayer = _Replayer(directory, log, catalog, registry, mode)
            _, along, _ = replayer.replay(upto=max(s.end_offset for s in pending),
                                          capture={s.end_offset for s in pending})
            still = []
            for sid in pending:
                name = snapshot_file_name(sid)
                at = along.get(sid.end_offset)
                if at is None:  # not at a batch's end: the name checks of `log verify` say so
                    found[name] = []
                    continue
                alone = replayer.snapshot_image(sid)
                problems = [f"{f.check}: the log has {f.expected}, the snapshot {f.found}"
                            for f in _id_checks(sid, at, alone) if not f.ok]
                same = compare_images(f"log up to {sid.end_offset} = snapshot", f"the log up to {sid.end_offset}",
                                      at, f"snapshot {_sid_text(sid)}", alone, max_differences=3)
                if not same.ok:
                    problems.append(f"its image is not the log's replayed to offset {sid.end_offset} "
                                    f"(first differences: {'; '.join(same.differences)})")
                if problems and mode is not mv_changes[-1]:
                    still.append(sid)
                if mode is mv_changes[0] or not problems:  # say what the first (Kafka's) replay found
                    found[name] = problems
            pending = still
        return found


def _verify_open_directory(replayer: _Replayer, shape: _LogShape, progress: StepProgress | None,
                           max_differences: int) -> DirectoryVerification:
    directory = replayer.directory
    whole = shape.start == 0 and not shape.gaps and shape.end > 0
    result = DirectoryVerification(path=str(directory), log_start_offset=shape.start, log_end_offset=shape.end,
                                   whole_log=whole, gaps=shape.gaps, recovery=shape.recovery)
    full: MetadataImage | None = None
    along: dict[int, MetadataImage] = {}
    if whole:
        _step(progress, f"replaying the whole log of {directory}")
        try:
            full, along, _ = replayer.replay(capture={s.end_offset for s in shape.ids})
            result.whole_log_digest = image_digest(full)
        except KraftsimError as e:
            result.errors.append(f"whole log: {e}")
    elif shape.end > shape.start or shape.start > 0:
        reason = (f"offsets {shape.gaps[0][0]}..{shape.gaps[0][1] - 1} are missing from the log" if shape.gaps
                  else f"the log starts at offset {shape.start}")
        result.skipped.append(Skipped(check="whole-log replay", reason=reason))

    tails: dict[SnapshotId, tuple[int, MetadataImage]] = {}
    for sid in shape.ids:
        sv, tail = _verify_snapshot(replayer, sid, shape, full, along, progress, max_differences)
        if tail is not None:
            tails[sid] = tail
        result.snapshots.append(sv)

    if full is None and len(tails) > 1:
        # No whole log: every "snapshot + log" reaching the same end must still agree.
        by_end: dict[int, list[SnapshotId]] = {}
        for sid, (end, _) in tails.items():
            by_end.setdefault(end, []).append(sid)
        for end, sids in sorted(by_end.items()):
            ref = sids[0]
            for other in sids[1:]:
                result.comparisons.append(compare_images(
                    f"snapshots reach the same image at offset {end}",
                    f"snapshot {_sid_text(ref)} + log", tails[ref][1],
                    f"snapshot {_sid_text(other)} + log", tails[other][1], max_differences=max_differences))
    result.ok = (not result.errors and all(s.ok for s in result.snapshots) and all(c.ok for c in result.comparisons))
    return result


def _verify_snapshot(replayer: _Replayer, sid: SnapshotId, shape: _LogShape, full: MetadataImage | None,
                     along: dict[int, MetadataImage], progress: StepProgress | None,
                     max_differences: int) -> tuple[SnapshotVerification, tuple[int, MetadataImage] | None]:
    name = _sid_text(sid)
    sv = SnapshotVerification(snapshot=snapshot_file_name(sid), end_offset=sid.end_offset, epoch=sid.epoch)
    tail: tuple[int, MetadataImage] | None = None
    try:
        alone = replayer.snapshot_image(sid)
    except KraftsimError as e:
        sv.errors.append(f"loading the snapshot: {e}")
        sv.ok = False
        return sv, None

    # 1. the snapshot plus the log after it, against the whole log
    _step(progress, f"replaying snapshot {name} + the log after it")
    try:
        image, _, end = replayer.replay(snapshot=sid)
        tail = (end, image)
        if full is not None and shape.end >= sid.end_offset:
            sv.comparisons.append(compare_images(
                "snapshot + log after it = whole log", f"snapshot {name} + log up to {end}", image,
                f"whole log up to {shape.end}", full, max_differences=max_differences))
        elif full is not None:
            sv.skipped.append(Skipped(check="snapshot + log after it = whole log",
                                      reason=f"the snapshot lies beyond the log's end offset {shape.end}"))
    except KraftsimError as e:
        sv.errors.append(f"snapshot + log after it: {e}")

    # 2. the log up to the snapshot's offset, against the snapshot
    base = _base_for(shape, sid.end_offset)
    if sid == BOOTSTRAP_SNAPSHOT_ID:
        # Not the log's state at offset 0 but the formatter's bootstrap records (KIP-1170),
        # which the first active controller writes into the log; its id is fixed.
        check = "bootstrap snapshot records = the log's bootstrap write"
        try:
            found = _bootstrap_check(replayer, sid, shape)
            if isinstance(found, str):
                sv.skipped.append(Skipped(check=check, reason=found))
            else:
                sv.fields.append(found)
        except KraftsimError as e:
            sv.errors.append(f"{check}: {e}")
    elif isinstance(base, str):
        sv.skipped.append(Skipped(check=f"log up to {sid.end_offset} = snapshot", reason=base))
    else:
        choice, what = base
        try:
            at = along.get(sid.end_offset) if choice == "none" else None
            if at is None:
                _step(progress, f"replaying {what} for snapshot {name}")
                at = replayer.replay(snapshot=choice if isinstance(choice, SnapshotId) else None,
                                     upto=sid.end_offset)[0]
            sv.comparisons.append(compare_images(f"log up to {sid.end_offset} = snapshot", what, at,
                                                 f"snapshot {name}", alone, max_differences=max_differences))
            sv.fields.extend(_id_checks(sid, at, alone))
        except KraftsimError as e:
            sv.errors.append(f"log up to {sid.end_offset}: {e}")
    sv.ok = not sv.errors and all(c.ok for c in sv.comparisons) and all(f.ok for f in sv.fields)
    return sv, tail


def _record_key(e: LogEntry) -> str:
    return msgspec.json.encode([e.type_name, e.version, e.to_json()["data"]]).decode()


def _bootstrap_check(replayer: _Replayer, sid: SnapshotId, shape: _LogShape) -> FieldCheck | str:
    """The bootstrap snapshot's metadata records must all be in the log's first metadata
    write (the controller's "Bootstrap records" transaction, or its first batch), in order;
    that write may hold more (a 4.x controller adds min.insync.replicas there). A string is
    the reason the check cannot be made."""
    check = "bootstrap snapshot records = the log's bootstrap write"
    snap = read_snapshot(replayer.directory / snapshot_file_name(sid), replayer.registry)
    ours = [_record_key(e) for e in snap.data_entries()]
    if not ours:
        return "the bootstrap snapshot holds KRaft control records only"
    if shape.start != 0:
        return f"the log starts at offset {shape.start}"
    write: list[LogEntry] = []
    for fb in replayer.log.batches(0):
        if fb.batch.is_control:
            continue
        entries = decode_file_batch(fb, replayer.registry)
        write.extend(entries)
        if not write or write[0].type_name != "BEGIN_TRANSACTION_RECORD" or \
                any(e.type_name in ("END_TRANSACTION_RECORD", "ABORT_TRANSACTION_RECORD") for e in entries):
            break
    if not write:
        return "the log holds no metadata record yet"
    keys = iter(_record_key(e) for e in write)
    missing = [k for k in ours if not any(k == w for w in keys)]
    where = f"offsets {write[0].offset}..{write[-1].offset}"
    return FieldCheck(check=check, expected=f"the {len(ours)} records of the bootstrap snapshot, in order, in {where}",
                      found=f"missing or out of order: {missing[0]}" if missing else f"all {len(ours)} in {where}",
                      ok=not missing)


def _id_checks(sid: SnapshotId, upto: MetadataImage, alone: MetadataImage) -> list[FieldCheck]:
    """The snapshot's id and header against the log at O − 1 (Kafka's emitter takes both
    from the image's provenance, which is the log's last contained batch)."""
    p, q = upto.provenance, alone.provenance
    out = [FieldCheck(check="last contained offset", expected=sid.end_offset - 1, found=p.last_contained_offset,
                      ok=p.last_contained_offset == sid.end_offset - 1)]
    out.append(FieldCheck(check="snapshot epoch = epoch of the record at end offset - 1",
                          expected=p.last_contained_epoch, found=sid.epoch, ok=p.last_contained_epoch == sid.epoch))
    out.append(FieldCheck(check="header LastContainedLogTimestamp = batch timestamp at end offset - 1",
                          expected=p.last_contained_log_time_ms, found=q.last_contained_log_time_ms,
                          ok=p.last_contained_log_time_ms == q.last_contained_log_time_ms))
    return out


# ------------------------------------------------------------------------------ (b) replicas


def _batch_signatures(log: MetadataLog, start: int, end: int) -> list[tuple[int, int, int, int]]:
    """(base offset, last offset, epoch, CRC) of every batch in [start, end)."""
    out: list[tuple[int, int, int, int]] = []
    if start >= log.log_end_offset:
        return out
    for fb in log.batches(start):
        b = fb.batch
        if b.base_offset >= end:
            break
        out.append((b.base_offset, b.last_offset, b.partition_leader_epoch, b.crc))
    return out


def _tail(log: MetadataLog, label: str, start: int, end: int, registry: Registry) -> ReplicaTail:
    """What a replica holds from `start` on: its log's records, or only a snapshot's end."""
    types: Counter[str] = Counter()
    records, size, epochs, last = 0, 0, [], start
    if start < log.log_end_offset:
        for fb in log.batches(start):
            b = fb.batch
            entries = [e for e in decode_file_batch(fb, registry) if e.offset >= start]
            if not entries:
                continue
            records += len(entries)
            size += b.size if b.base_offset >= start else 0
            types.update(e.type_name for e in entries)
            if b.partition_leader_epoch not in epochs:
                epochs.append(b.partition_leader_epoch)
            last = b.last_offset + 1
    return ReplicaTail(path=label, start_offset=start, end_offset=max(last, end), records=records, bytes=size,
                       record_types=dict(sorted(types.items())), epochs=epochs)


def _image_at(replayer: _Replayer, offset: int) -> MetadataImage:
    """The image at `offset` as `load_path(upto_offset=offset)` builds it: the newest
    snapshot at or below it plus the log, or the whole log."""
    log = replayer.log
    sid = pick_snapshot(log, replayer.directory, offset, "latest")
    if sid is None and offset > log.log_end_offset:
        raise KraftsimError(f"{replayer.directory}: the log's records end at offset {log.log_end_offset}")
    return replayer.replay(snapshot=sid, upto=offset)[0]


def verify_replicas(paths: Sequence[Path | str], *, catalog: Catalog | None = None, registry: Registry | None = None,
                    progress: StepProgress | None = None, max_differences: int = MAX_DIFFERENCES,
                    mv_change: MvChangeHandling = MvChangeHandling.KAFKA) -> ReplicaVerification:
    """Compare replicas of one quorum: images at every snapshot offset any of them has (up to
    the end they all reach) and at that common end, batches up to it, and each replica's tail."""
    if len(paths) < 2:
        raise KraftsimError("replica verification needs at least two directories")
    catalog = catalog if catalog is not None else default_catalog()
    registry = registry or catalog.record_registry()
    with ExitStack() as stack:
        replicas: list[tuple[str, _Replayer, list[SnapshotId]]] = []
        infos: list[ReplicaInfo] = []
        for p in paths:
            directory = metadata_dir_of(p)
            log = stack.enter_context(MetadataLog.open(directory, read_only=True))
            ids = log.snapshot_ids()
            end = max([log.log_end_offset] + [s.end_offset for s in ids])
            infos.append(ReplicaInfo(path=str(p), log_start_offset=log.log_start_offset,
                                     log_end_offset=log.log_end_offset, end_offset=end,
                                     snapshots=[snapshot_file_name(s) for s in ids]))
            replicas.append((str(p), _Replayer(directory, log, catalog, registry, mv_change), ids))
        return _compare_replicas(replicas, infos, registry, progress, max_differences)


def _compare_replicas(replicas: list[tuple[str, _Replayer, list[SnapshotId]]], infos: list[ReplicaInfo],
                      registry: Registry, progress: StepProgress | None, max_differences: int) -> ReplicaVerification:
    common_end = min(i.end_offset for i in infos)
    result = ReplicaVerification(replicas=infos, common_end_offset=common_end)
    offsets = {s.end_offset for _, _, ids in replicas for s in ids if 0 < s.end_offset <= common_end}
    if common_end > 0:
        offsets.add(common_end)
    result.offsets = sorted(offsets)
    for offset in result.offsets:
        images: list[tuple[str, MetadataImage]] = []
        for label, replayer, _ in replicas:
            _step(progress, f"rebuilding {label} at offset {offset}")
            try:
                images.append((label, _image_at(replayer, offset)))
            except KraftsimError as e:
                result.skipped.append(Skipped(check=f"{label} at offset {offset}", reason=str(e)))
        for label, img in images[1:]:
            result.comparisons.append(compare_images(
                f"{label} agrees with {images[0][0]} at offset {offset}", f"{images[0][0]} at {offset}", images[0][1],
                f"{label} at {offset}", img, max_differences=max_differences))

    # the batches themselves, over the range every replica's log holds
    start = max(i.log_start_offset for i in infos)
    if common_end > start:
        sigs = [(label, _batch_signatures(r.log, start, common_end)) for label, r, _ in replicas]
        ref_name, ref = sigs[0]
        for name, other in sigs[1:]:
            at, text = _first_difference(ref_name, ref, name, other, start)
            if at is not None and (result.diverged_at is None or at < result.diverged_at):
                result.diverged_at, result.divergence = at, text

    for (label, replayer, _), info in zip(replicas, infos):
        if info.end_offset > common_end:
            result.tails.append(_tail(replayer.log, label, common_end, info.end_offset, registry))
    result.ok = not result.errors and result.diverged_at is None and all(c.ok for c in result.comparisons)
    return result


def _first_difference(a_name: str, a: list[tuple[int, int, int, int]], b_name: str,
                      b: list[tuple[int, int, int, int]], start: int) -> tuple[int | None, str | None]:
    for x, y in zip(a, b):
        if x != y:
            return min(x[0], y[0]), (f"{a_name} has batch {x[0]}..{x[1]} epoch {x[2]} crc {x[3]}, "
                                     f"{b_name} has batch {y[0]}..{y[1]} epoch {y[2]} crc {y[3]}")
    if len(a) != len(b):
        shorter = a if len(a) < len(b) else b
        at = shorter[-1][1] + 1 if shorter else start
        return at, f"{a_name} and {b_name} hold different batches from offset {at}"
    return None, None


# ------------------------------------------------------------------------------ (c) round trips


def verify_roundtrip(image: MetadataImage, *, catalog: Catalog | None = None,
                     targets: Iterable[int] | str = "all", writer_line: WriterLine | str | None = None,
                     registry: Registry | None = None,
                     max_differences: int = MAX_DIFFERENCES) -> RoundTripVerification:
    """Write `image` at each lower metadata.version, and where nothing is lost, replay it,
    write it back at the image's own version, replay again and compare with the original.

    `targets`: "all" (every level the catalog knows below the image's), "lossless" (only
    those Kafka calls lossless downgrades: no metadata change in between; the cheap
    check for big images, each target costs two writes and two replays) or levels.
    A target where the writer drops data is listed as "lossy" with what it drops; that is
    a failure only when the catalog calls the downgrade lossless (its didMetadataChange
    flags and the writer must agree)."""
    catalog = catalog if catalog is not None else default_catalog()
    registry = registry or catalog.record_registry()
    line = writer_line if writer_line is not None else WriterLine.from_catalog(catalog)
    line_name = line if isinstance(line, str) else line.name
    mv_level = image.metadata_version
    if mv_level is None:
        return RoundTripVerification(metadata_version=None, writer_line=line_name,
                                     skipped=[Skipped(check="downgrade round trip",
                                                      reason="the image has no finalized metadata.version")])
    mv = catalog.metadata_version(mv_level)
    result = RoundTripVerification(metadata_version=mv.version, writer_line=line_name)
    if targets == "all":
        levels = [v.level for v in catalog.metadata_versions if v.level < mv.level]
    elif targets == "lossless":
        levels = [v.level for v in catalog.metadata_versions if v.level < mv.level and not catalog.is_lossy(mv, v)]
    elif isinstance(targets, str):
        raise ValueError(f"targets must be 'all', 'lossless' or levels, not {targets!r}")
    else:
        levels = sorted(targets)
    if not levels:
        what = "lossless downgrade" if targets == "lossless" else "metadata.version"
        result.skipped.append(Skipped(check="downgrade round trip",
                                      reason=f"the catalog knows no {what} below {mv.version}"))
    for level in levels:
        target = catalog.metadata_version(level)
        lossy = catalog.is_lossy(mv, target)
        report = LossReport()
        low = write_image(image, target, catalog, loss_handler=report, writer_line=line, registry=registry)
        if report:
            result.trips.append(RoundTrip(target=target.version, target_level=level, outcome="lossy",
                                          catalog_lossy=lossy, losses=report.lines(), ok=lossy))
            continue
        middle = image_from_records(low, catalog=catalog, snapshot=True)
        back = write_image(middle, mv, catalog, loss_handler=LossReport(), writer_line=line, registry=registry)
        final = image_from_records(back, catalog=catalog, snapshot=True)
        cmp = compare_images(f"{mv.version} → {target.version} → {mv.version}", f"image at {mv.version}", image,
                             f"after the round trip through {target.version}", final,
                             max_differences=max_differences)
        result.trips.append(RoundTrip(target=target.version, target_level=level,
                                      outcome="identical" if cmp.ok else "different", catalog_lossy=lossy,
                                      comparison=cmp, ok=cmp.ok))
    result.ok = all(t.ok for t in result.trips)
    return result
