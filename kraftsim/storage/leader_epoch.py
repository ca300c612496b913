"""`leader-epoch-checkpoint`: the first offset of each leader epoch in the log.

Kafka's CheckpointFile text format: a version line (0), a count line, then one
`<epoch> <start offset>` line per entry, each ending in a newline.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from kraftsim.errors import KraftsimError
from kraftsim.storage.fileio import atomic_write, read_file
from kraftsim.storage.log import EpochEntry
from kraftsim.storage.names import LEADER_EPOCH_CHECKPOINT_FILE

CHECKPOINT_VERSION = 0


def leader_epoch_text(entries: Sequence[EpochEntry]) -> str:
    lines = [str(CHECKPOINT_VERSION), str(len(entries))] + [f"{e.epoch} {e.start_offset}" for e in entries]
    return "".join(line + "\n" for line in lines)


def parse_leader_epoch_checkpoint(text: str, source: str = LEADER_EPOCH_CHECKPOINT_FILE) -> list[EpochEntry]:
    """Parse the file's text with the checks (and texts) of Kafka's CheckpointFile reader."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()

    def malformed(line: str) -> KraftsimError:
        return KraftsimError(f"Malformed line in checkpoint file ({source}): {line}")

    if not lines:
        raise KraftsimError(f"Malformed line in checkpoint file ({source}): the file is empty")
    try:
        version = int(lines[0])
    except ValueError:
        raise malformed(lines[0]) from None
    if version != CHECKPOINT_VERSION:
        raise KraftsimError(f"Unrecognized version of the checkpoint file ({source}): {version}")
    if len(lines) < 2:
        raise KraftsimError(f"Malformed line in checkpoint file ({source}): the entry count is missing")
    try:
        expected = int(lines[1])
    except ValueError:
        raise malformed(lines[1]) from None
    entries = []
    for line in lines[2:]:
        parts = line.split()
        if len(parts) != 2:
            raise malformed(line)
        try:
            entries.append(EpochEntry(int(parts[0]), int(parts[1])))
        except ValueError:
            raise malformed(line) from None
    if len(entries) != expected:
        raise KraftsimError(f"Expected {expected} entries in checkpoint file ({source}), but found only {len(entries)}")
    return entries


def read_leader_epoch_checkpoint(path: Path | str) -> list[EpochEntry]:
    p = Path(path)
    if p.is_dir():
        p = p / LEADER_EPOCH_CHECKPOINT_FILE
    return parse_leader_epoch_checkpoint(read_file(p).decode("utf-8", errors="replace"), str(p))


def write_leader_epoch_checkpoint(path: Path | str, entries: Sequence[EpochEntry], *, fsync: bool = True) -> Path:
    p = Path(path)
    if p.is_dir():
        p = p / LEADER_EPOCH_CHECKPOINT_FILE
    atomic_write(p, leader_epoch_text(entries).encode("ascii"), fsync=fsync)
    return p
