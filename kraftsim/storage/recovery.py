"""What opening a log directory found wrong and what it did about it.

Kafka's start-up recovery cuts torn or corrupt tails and deletes leftovers of interrupted
writes. kraftsim does the same, but never silently: every cut and every deletion becomes a
RecoveryAction that the caller can print. Opened read-only, the same actions are reported
with `applied=False` and the files are left exactly as they were.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class RecoveryKind(enum.Enum):
    TRUNCATE = "truncate"  # a segment cut back to its valid prefix
    DELETE_SEGMENT = "delete segment"  # a segment after a cut, whose offsets can no longer be trusted
    DELETE_FILE = "delete file"  # a leftover: snapshot temp file, file marked .deleted, stale snapshot


@dataclass(frozen=True, slots=True)
class RecoveryAction:
    """One thing recovery found, with where, how many bytes and why."""

    kind: RecoveryKind
    path: str
    reason: str
    position: int | None = None  # where the valid prefix ends (TRUNCATE)
    bytes_cut: int = 0
    base_offset: int | None = None  # base offset of the first bad batch, when known
    applied: bool = True
    #: A TRUNCATE of a torn last batch at the end of the log: the bytes of a write a crash
    #: interrupted, which Kafka's recovery cuts as a matter of course. Every other action
    #: (a whole batch that is wrong, segments after it, a gap) means the log is damaged.
    torn_tail: bool = False

    def describe(self) -> str:
        verb = {
            RecoveryKind.TRUNCATE: "truncated" if self.applied else "would truncate",
            RecoveryKind.DELETE_SEGMENT: "deleted" if self.applied else "would delete",
            RecoveryKind.DELETE_FILE: "deleted" if self.applied else "would delete",
        }[self.kind]
        if self.kind is RecoveryKind.TRUNCATE:
            where = f" at position {self.position}"
            if self.base_offset is not None:
                where += f" (batch at offset {self.base_offset})"
            return f"{self.path}: {verb} {self.bytes_cut} byte(s){where}: {self.reason}"
        return f"{self.path}: {verb} ({self.bytes_cut} bytes): {self.reason}"


@dataclass(frozen=True, slots=True)
class Damage:
    """Where a log stops being trustworthy beyond what recovery cuts as a matter of course:
    the records from `offset` on cannot be loaded as a whole (a bad batch, a gap, ...)."""

    offset: int
    where: str  # the file and byte position, or the directory
    reason: str

    def describe(self) -> str:
        return f"{self.where}: {self.reason} (the log cannot be trusted from offset {self.offset})"
