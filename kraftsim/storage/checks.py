"""What a file's name and kind, and the other files of its directory, say its batches must be.

A scan (`protocol.scan`) checks one buffer: batch framing, CRCs, records, and offsets and
epochs from batch to batch. What only the file system knows is checked here, as Kafka's
log layer does when it loads a directory:

- a segment is named after the base offset of its first batch, and each segment starts
  where the one before it ends, with no decrease of the leader epoch across the boundary;
- a snapshot (or bootstrap.checkpoint) starts with a control batch holding
  SnapshotHeaderRecord at offset 0 and ends with one holding SnapshotFooterRecord; an empty
  file or one cut before its footer is incomplete;
- a snapshot's batches carry the epoch of its name, and where the log still holds the
  snapshot's last offset, that offset ends a log batch of the same epoch (KRaft snapshots
  are taken at a committed batch's end);
- a leader epoch rises only at a LeaderChange control batch, a new KRaft leader's first
  append (logs written without a raft layer, as some library uses do, break this rule);
- the epochs the batches start agree with leader-epoch-checkpoint, when it is there (a
  checkpoint behind the log is not a problem: Kafka may write it after the batches);
- no batch carries an epoch above the one quorum-state records, when it is there: a node
  persists quorum-state as it moves to an epoch, before it appends anything in it;
- where the log holds a snapshot's offsets from 0, the snapshot holds the log's state at
  its end offset (`log verify` replays the log for this:
  image.verification.verify.snapshots_against_log).

A snapshot alone does not record its end offset: renamed to another end offset of the
same epoch, only the log beside it tells it from the original.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from pathlib import Path
from typing import Collection, Mapping, Sequence

from kraftsim.errors import KraftsimError
from kraftsim.protocol.scan import BatchSpan, Problem, ScanReport
from kraftsim.storage.leader_epoch import read_leader_epoch_checkpoint
from kraftsim.storage.log import epoch_starts
from kraftsim.storage.names import (
    BOOTSTRAP_SNAPSHOT_ID, LEADER_EPOCH_CHECKPOINT_FILE, LOG_SUFFIX, QUORUM_STATE_FILE, PathKind, SnapshotId,
    SnapshotState, parse_segment_name, parse_snapshot_name,
)
from kraftsim.storage.quorum_state import read_quorum_state

HEADER_TYPE = "SNAPSHOT_HEADER"
FOOTER_TYPE = "SNAPSHOT_FOOTER"


def file_problems(kind: PathKind, path: Path, report: ScanReport) -> list[Problem]:
    """The problems of one file that its name and kind reveal (beyond what its scan found)."""
    if kind is PathKind.SEGMENT:
        return _segment_problems(path, report)
    if kind in (PathKind.SNAPSHOT, PathKind.BOOTSTRAP):
        return _snapshot_problems(kind, path, report)
    return []


def _segment_problems(path: Path, report: ScanReport) -> list[Problem]:
    base = parse_segment_name(path.name)
    if base is None:
        return [Problem(0, None, f"{path.name!r} is not a segment name (20 digits, then .log): "
                                 "the file's base offset is unknown")]
    first = report.first_span
    if first is not None and first.base_offset != base:
        return [Problem(first.position, first.base_offset,
                        f"the segment's name says it starts at offset {base}, but its first batch starts at "
                        f"{first.base_offset}")]
    return []


def _snapshot_id(kind: PathKind, path: Path) -> SnapshotId | None:
    if kind is PathKind.BOOTSTRAP:
        return BOOTSTRAP_SNAPSHOT_ID
    parsed = parse_snapshot_name(path.name)
    return parsed.snapshot_id if parsed is not None and parsed.state is SnapshotState.FROZEN else None


def _snapshot_problems(kind: PathKind, path: Path, report: ScanReport) -> list[Problem]:
    problems: list[Problem] = []
    sid = _snapshot_id(kind, path)
    if sid is None:
        problems.append(Problem(0, None, f"{path.name!r} is not a snapshot name (<20-digit end offset>-<10-digit "
                                         "epoch>.checkpoint): its end offset and epoch are unknown"))
    if report.size == 0:
        problems.append(Problem(0, None, "empty file: a snapshot holds at least a header batch and a footer batch"))
        return problems
    already_at_start = any(p.position == 0 for p in report.problems)
    first = report.first_span
    if first is None or first.position != 0:
        if not already_at_start:
            problems.append(Problem(0, None, "First batch is not a control batch with at least one record"))
    elif first.control_types[:1] != (HEADER_TYPE,) and not already_at_start:
        what = first.control_types[0] if first.control_types else "a data batch"
        problems.append(Problem(0, first.base_offset, f"First control record is not a snapshot header ({what})"))
    if first is not None and first.position == 0 and first.base_offset != 0:
        problems.append(Problem(0, first.base_offset,
                                f"a snapshot's offsets start at 0, but its first batch starts at {first.base_offset}"))
    last = report.last_span
    if last is None or FOOTER_TYPE not in last.control_types or report.valid_bytes != report.size:
        problems.append(Problem(report.size, report.expected_offset,
                                "no snapshot footer at the end of the file: the snapshot is incomplete"))
    if sid is not None and report.spans is not None:
        wrong = [s for s in report.spans if s.epoch != sid.epoch]
        if wrong:
            epochs = sorted({s.epoch for s in wrong})
            problems.append(Problem(wrong[0].position, wrong[0].base_offset,
                                    f"{len(wrong)} batch(es) carry epoch {', '.join(map(str, epochs))}, but the file "
                                    f"name says epoch {sid.epoch}"))
    return problems


def directory_problems(files: Sequence[tuple[PathKind, Path]], reports: Mapping[Path, ScanReport],
                       whole: Collection[Path]) -> dict[Path, list[Problem]]:
    """Problems between the files of one metadata directory, by the file they are found in:
    segments that do not follow one another, snapshots that disagree with the log (for
    this the segments' reports must keep their spans: `verify_bytes` does). The directories
    in `whole` were named as directories: only there are the files beside the ones read
    looked at too (the epoch checkpoint, quorum-state, `.log` files no segment is named as);
    a file named on its own is checked with the other files named, not with its neighbours."""
    by_dir: dict[Path, list[tuple[PathKind, Path]]] = defaultdict(list)
    for kind, path in files:
        if kind in (PathKind.SEGMENT, PathKind.SNAPSHOT):
            by_dir[path.parent].append((kind, path))
    out: dict[Path, list[Problem]] = defaultdict(list)
    for directory in sorted(by_dir):
        members = by_dir[directory]
        segments = sorted(((base, p) for k, p in members if k is PathKind.SEGMENT
                           and (base := parse_segment_name(p.name)) is not None), key=lambda t: t[0])
        log_spans: list[BatchSpan] = []
        prev: tuple[Path, BatchSpan] | None = None
        for _, path in segments:
            report = reports[path]
            head = report.first_span
            if head is None or report.last_span is None:
                continue
            if prev is not None:
                prev_path, tail = prev
                if head.base_offset != tail.last_offset + 1:
                    gap = head.base_offset > tail.last_offset + 1
                    out[path].append(Problem(head.position, head.base_offset, (
                        f"the segment starts at offset {head.base_offset}, but {prev_path.name} ends at "
                        f"{tail.last_offset}: " + (f"offsets {tail.last_offset + 1}..{head.base_offset - 1} are missing"
                                                   if gap else "the segments overlap"))))
                if head.epoch < tail.epoch:
                    out[path].append(Problem(head.position, head.base_offset,
                                             f"leader epoch {head.epoch} is lower than epoch {tail.epoch} at the end "
                                             f"of {prev_path.name}"))
            prev = (path, report.last_span)
            log_spans.extend(report.spans or ())
        log_spans.sort(key=lambda s: s.base_offset)
        for previous, span in zip(log_spans, log_spans[1:]):
            if span.epoch > previous.epoch and span.control_types[:1] != ("LEADER_CHANGE",):
                out[_segment_holding(segments, span.base_offset)].append(Problem(
                    span.position, span.base_offset, f"leader epoch rises from {previous.epoch} to {span.epoch} at a "
                    "batch that is not a LeaderChange control batch (a new leader's first append)"))
        if segments and log_spans and directory in whole:
            first_segment = segments[0][1]
            for problem in (_epoch_file_problems(directory, log_spans, segments[0][0])
                            + _quorum_state_problems(directory, log_spans)):
                out[first_segment if problem.base_offset is None else _segment_holding(segments, problem.base_offset)
                    ].append(problem)
        if segments and directory in whole:
            for name in _unnamed_segments(directory):
                out[segments[0][1]].append(Problem(0, None, f"{name}: not a log segment name (expected 20 digits and "
                                                            f"{LOG_SUFFIX}; replay refuses the directory)"))
        bases = [s.base_offset for s in log_spans]
        for kind, path in members:
            if kind is not PathKind.SNAPSHOT:
                continue
            sid = _snapshot_id(kind, path)
            if sid is None or sid.end_offset == 0:
                continue
            last_offset = sid.end_offset - 1
            i = bisect_right(bases, last_offset) - 1
            if i < 0 or log_spans[i].last_offset < last_offset:
                continue  # the log no longer (or not yet) holds it
            span = log_spans[i]
            if span.epoch != sid.epoch:
                out[path].append(Problem(0, None, f"the name says epoch {sid.epoch}, but the log's batch holding "
                                                  f"offset {last_offset} has epoch {span.epoch}", last_offset))
            if span.last_offset != last_offset:
                out[path].append(Problem(0, None, f"the name says the snapshot ends at offset {last_offset}, inside "
                                                  f"the log batch at offsets {span.base_offset}..{span.last_offset} "
                                                  "(snapshots end where a committed batch ends)", last_offset))
    return dict(out)


def _unnamed_segments(directory: Path) -> list[str]:
    """Files ending in .log whose names are no segment's (`abc.log`): verify lists only the
    named segments, so the directory passed as OK while a load of it (replay, as Kafka's log
    loader) fails on such a file."""
    try:
        names = sorted(p.name for p in directory.iterdir())
    except OSError:
        return []
    return [n for n in names if n.endswith(LOG_SUFFIX) and parse_segment_name(n) is None]


def _segment_holding(segments: Sequence[tuple[int, Path]], offset: int) -> Path:
    i = bisect_right([base for base, _ in segments], offset) - 1
    return segments[max(i, 0)][1]


def _epoch_file_problems(directory: Path, spans: Sequence[BatchSpan], log_start: int) -> list[Problem]:
    """The epochs the log's batches start against leader-epoch-checkpoint, where present.

    Kafka may write the checkpoint after the batches (a crash can leave it behind the log),
    so a checkpoint that lacks the log's last epochs is not a problem; one that says other
    than the log does (another start offset, an epoch the log does not have) is."""
    checkpoint = directory / LEADER_EPOCH_CHECKPOINT_FILE
    if not checkpoint.is_file():
        return []
    try:
        written = read_leader_epoch_checkpoint(checkpoint)
    except KraftsimError as e:
        return [Problem(0, None, f"{LEADER_EPOCH_CHECKPOINT_FILE}: {e}")]
    derived = epoch_starts(((s.epoch, s.base_offset) for s in spans), log_start)
    if derived[:len(written)] == written:
        return []
    first = next((d for d, w in zip(derived, written) if d != w), None)
    span = next((s for s in spans if first is not None and s.base_offset == first.start_offset), None)
    text = ", ".join(f"{e.epoch}@{e.start_offset}" for e in written)
    found = ", ".join(f"{e.epoch}@{e.start_offset}" for e in derived)
    return [Problem(span.position if span else 0, span.base_offset if span else None,
                    f"the batches start epochs at {found}, but {LEADER_EPOCH_CHECKPOINT_FILE} says {text}")]


def _quorum_state_problems(directory: Path, spans: Sequence[BatchSpan]) -> list[Problem]:
    """No batch in an epoch above the one quorum-state records (Kafka's QuorumState writes
    the file on every move to a new epoch, before the node votes, leads or appends in it)."""
    quorum = directory / QUORUM_STATE_FILE
    if not quorum.is_file():
        return []
    try:
        current = read_quorum_state(quorum).leader_epoch
    except KraftsimError as e:
        return [Problem(0, None, f"{QUORUM_STATE_FILE}: {e}")]
    above = next((s for s in spans if s.epoch > current), None)
    if above is None:
        return []
    return [Problem(above.position, above.base_offset,
                    f"leader epoch {above.epoch} is above epoch {current}, the latest {QUORUM_STATE_FILE} records "
                    "(a node writes quorum-state as it moves to an epoch, before it appends in it)")]
