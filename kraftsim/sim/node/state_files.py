"""A node's small state files (quorum-state, leader-epoch-checkpoint), rewritten only when
their bytes change.

A node rewrites quorum-state on every raft state change and leader-epoch-checkpoint on
every start, truncation and new epoch; in a faulty run more than half of those writes
would put down the very bytes the file already holds. Reading the file back and comparing
costs less than a temporary file, a write and a rename, and leaves the directory byte for
byte the same. Nothing about the file is remembered between calls: it is read every time,
so a file changed or removed behind the simulation's back is rewritten, and so is one
beside a temporary file an interrupted write left (the rewrite's rename removes it, as
the unconditional write did).
"""

from __future__ import annotations

import os
from pathlib import Path

from kraftsim.errors import KraftsimError
from kraftsim.storage.fileio import atomic_write


def holds(path: Path, data: bytes) -> bool:
    """Whether `path` holds exactly `data` and no `<name>.tmp` (atomic_write's) is beside it.
    (With the os module's calls, not a buffered file object and pathlib: asked on every raft
    state change.)"""
    want = len(data) + 1  # (one byte more than `data`: a longer file differs)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        got = b""
        while len(got) < want:  # (a read may return less than asked; the end of the file returns b"")
            part = os.read(fd, want - len(got))
            if not part:
                break
            got += part
    except OSError:
        return False
    finally:
        os.close(fd)
    if got != data:
        return False
    return not os.path.exists(f"{path}.tmp")  # (path.with_name(path.name + ".tmp"): the same file)


def write_if_changed(path: Path, data: bytes, *, fsync: bool) -> None:
    """`atomic_write(path, data)` (what the storage layer's writers of these files do with
    their bytes), unless the file already `holds` them."""
    if holds(path, data):
        return
    if fsync:
        atomic_write(path, data, fsync=True)
    else:
        _write_unforced(path, data)


def _write_unforced(path: Path, data: bytes) -> None:
    """`atomic_write(path, data, fsync=False)` with the os module's calls (no buffered file
    object, no pathlib): `<name>.tmp` written and renamed over `path`, the temporary removed
    and the error named as atomic_write names it when that fails."""
    tmp = f"{path}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise KraftsimError(f"cannot write {path}: {e.strerror or e}") from None


__all__ = ["holds", "write_if_changed"]
