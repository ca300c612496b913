"""How far a load may trust a log as it lies on disk: Kafka's rule for damage.

A torn tail after the last complete batch is what a crash in the middle of a write leaves;
Kafka's recovery cuts it and goes on, and so does a load here, saying so in one line with
the offset. Anything else (a whole batch that fails its checks, segments that cannot be
read after it, missing offsets, a log start no snapshot covers) is damage: a load refuses
it with an error naming the first problem, or, when the caller explicitly asks to load up
to the damage, stops below it and labels the result partial with the offset where it stops.
Nothing here changes a file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from kraftsim.errors import CorruptRecordException, KraftsimError
from kraftsim.protocol.batch import BatchSlice, parse_batch, read_batches
from kraftsim.regular_file import opened_file
from kraftsim.storage.batchfile import FileBatch
from kraftsim.storage.log import MetadataLog
from kraftsim.storage.names import parse_segment_name
from kraftsim.storage.recovery import Damage, RecoveryAction, RecoveryKind
from kraftsim.storage.background_writes import WRITES
from kraftsim.storage.segment import ScanProblem, scan_segment_file
from kraftsim.storage.snapshot import SnapshotFile

UP_TO_DAMAGE_HINT = "`kraftsim log verify` lists every problem; --up-to-damage loads the offsets before it as a partial result"


class DamagedLog(KraftsimError):
    """A load met damage and was not asked to stop below it."""

    def __init__(self, damage: list[Damage]):
        self.damage = damage
        more = f" (and {len(damage) - 1} more problem(s))" if len(damage) > 1 else ""
        super().__init__(f"{damage[0].describe()}{more}: {UP_TO_DAMAGE_HINT}")


@dataclass(frozen=True, slots=True)
class LoadLimit:
    """What a load of a log may use: up to `upto` (None: all of it), and why."""

    upto: int | None = None
    torn_tail: RecoveryAction | None = None
    damage: list[Damage] = field(default_factory=list)

    @property
    def partial(self) -> bool:
        return bool(self.damage)

    def recovery_line(self) -> str | None:
        """One line saying what recovery left out, with the offset; None when nothing was torn."""
        t = self.torn_tail
        if t is None:
            return None
        at = f"offset {t.base_offset}" if t.base_offset is not None else f"position {t.position}"
        return (f"recovery: {t.path}: the torn last batch at {at} ({t.bytes_cut} byte(s) at position {t.position}) "
                f"is left out, as Kafka's recovery cuts it: {t.reason}")

    def partial_line(self) -> str | None:
        """One line labelling a partial result with the offset where it stops; None when whole."""
        if not self.damage:
            return None
        first = self.damage[0]
        return (f"PARTIAL: loaded the offsets below {first.offset} only (--up-to-damage); damage from there on: "
                f"{first.describe()}")


def load_limit(log: MetadataLog, *, up_to_damage: bool, upto: int | None = None) -> LoadLimit:
    """The limit of a load of `log` up to `upto` (None: its end), opened read-only, best with
    validate="all" so that a bad batch in any segment is found before anything is loaded.
    Damage at or beyond `upto` does not concern the load; any before it raises DamagedLog
    unless `up_to_damage`."""
    damage = [d for d in log.damage() if upto is None or d.offset < upto]
    torn = log.torn_tail()
    if damage and not up_to_damage:
        raise DamagedLog(damage)
    return LoadLimit(damage[0].offset if damage else None, torn, damage)


def segment_batches(path: Path, *, up_to_damage: bool) -> tuple[list[FileBatch], LoadLimit, int]:
    """The batches of one segment file given on its own, under the same rule: a torn last
    batch is recovery, any other problem damage (an error unless `up_to_damage`); and the
    file's size. The file is read once, a window at a time (`scan_segment_file`), never
    mapped, so one another process cuts meanwhile ends the walk where it was cut."""
    WRITES.drain()  # (the file as appended, also by this process's writer thread)
    with opened_file(path) as f:
        fd = f.fileno()
        size = f.seek(0, os.SEEK_END)
        base = parse_segment_name(path.name)
        if base is None:  # a file renamed by hand: trust its first whole batch, if it has one
            f.seek(0)
            try:
                first = next(read_batches(f), None)
            except CorruptRecordException:  # (none: the scan below reports it, naming the file)
                first = None
            base = first.base_offset if isinstance(first, BatchSlice) and first.base_offset >= 0 else 0
        findings: list[ScanProblem] = []
        raws: list[bytes] = []
        entries, problem = scan_segment_file(fd, size, base, validate=True, findings=findings, raws=raws)
    batches = [FileBatch(str(path), entry.position, parse_batch(raw)) for entry, raw in zip(entries, raws)]
    damage = [Damage(prev.next_offset, f"{path} position {e.position}",
                     f"offsets {prev.next_offset}..{e.base_offset - 1} are missing")
              for prev, e in zip(entries, entries[1:]) if e.base_offset > prev.next_offset]
    damage += [Damage(f.base_offset if f.base_offset is not None else base, f"{path} position {f.position}", f.reason)
               for f in findings]
    if entries and entries[0].base_offset != base:
        damage.insert(0, Damage(base, f"{path} position 0", f"the segment's name says it starts at offset {base}, "
                                                            f"but its first batch starts at {entries[0].base_offset}"))
    torn = None
    if problem is not None and problem.torn:
        torn = RecoveryAction(RecoveryKind.TRUNCATE, str(path), problem.reason, position=problem.position,
                              bytes_cut=size - problem.position, base_offset=problem.base_offset,
                              applied=False, torn_tail=True)
    elif problem is not None:
        end = entries[-1].next_offset if entries else base
        damage.append(Damage(end, f"{path} position {problem.position}", problem.reason))
    if damage and not up_to_damage:
        raise DamagedLog(damage)
    return batches, LoadLimit(damage[0].offset if damage else None, torn, damage), size


def check_snapshot_epoch(snap: SnapshotFile) -> None:
    """Refuse a snapshot whose batches do not carry the epoch of its name: Kafka writes every
    batch of a snapshot with its id's epoch, so the file was renamed or damaged."""
    sid = snap.snapshot_id
    if sid is None:
        return
    wrong = next((fb for fb in snap.batches if fb.batch.partition_leader_epoch != sid.epoch), None)
    if wrong is not None:
        raise DamagedLog([Damage(0, f"{snap.path} position {wrong.position}",
                                 f"its batches carry epoch {wrong.batch.partition_leader_epoch}, but its name says "
                                 f"epoch {sid.epoch}")])
