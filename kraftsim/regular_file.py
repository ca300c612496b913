"""Opening a file a user named as a regular file, and nothing else.

A FIFO named where kraftsim expects a file would make its open wait for a writer forever, a
device such as /dev/zero never ends, and a directory cannot be read or mapped: each reader of
such inputs (metadata files, record schemas, catalogs) refuses them here, before the open.
"""

from __future__ import annotations

import errno
import os
import select
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Iterator

from kraftsim.errors import KraftsimError


class UnreadableFile(KraftsimError):
    """A file that could not be opened as a regular file: `cannot read PATH: REASON`.
    `errno` is the OS error's (None for a file that is there but not a regular file), so that a
    caller can word a missing file its own way."""

    def __init__(self, path: Path | str, reason: str, errno: int | None = None):
        super().__init__(f"cannot read {path}: {reason}")
        self.path = str(path)
        self.reason = reason
        self.errno = errno

    def __reduce__(self) -> tuple[type[UnreadableFile], tuple[str, str, int | None]]:
        return type(self), (self.path, self.reason, self.errno)


def why_absent(path: Path | str) -> str:
    """Why `path`, which Path.exists() calls missing, cannot be reached, in the OS's words
    ("no such file or directory"; "too many levels of symbolic links" for a symlink loop, "not
    a directory" for a path through a file), for a message that names the real problem."""
    try:
        os.stat(path)
    except OSError as e:
        if e.strerror and not isinstance(e, FileNotFoundError):
            return e.strerror[:1].lower() + e.strerror[1:]
    return "no such file or directory"


def require_regular_file(path: Path | str) -> None:
    """UnreadableFile unless `path` is a regular file, checked before it is opened: opening a
    FIFO waits for a writer, a device such as /dev/zero never ends, a directory cannot be
    mapped. (A missing file passes: the open that follows names it.)"""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as e:
        raise UnreadableFile(path, e.strerror or str(e), e.errno) from None
    if not stat.S_ISREG(mode):
        raise UnreadableFile(path, "not a regular file")


@contextmanager
def opened_file(path: Path | str) -> Iterator[BinaryIO]:
    """A regular file opened for reading, failures to open it as one UnreadableFile (a
    KraftsimError); errors of the caller's own work inside the block (a closed pipe) pass
    through as they are. Anything but a regular file is refused before it is opened: a FIFO's
    open waits for a writer, and a device such as /dev/zero never ends."""
    require_regular_file(path)
    try:
        f = open(path, "rb")
    except OSError as e:
        raise UnreadableFile(path, e.strerror or str(e), e.errno) from None
    with f:
        yield f


#: How long a FIFO named as an input may stay without anything written to it (seconds).
PIPE_WAIT_S = 30.0


def open_input(path: str | os.PathLike[str]) -> BinaryIO:
    """`open(path, "rb")` for an input that may be a pipe (`<(...)`, a named FIFO): a FIFO is
    opened without waiting for a writer, then given PIPE_WAIT_S for something (data, or a
    writer's close) to arrive; a FIFO nobody writes to is an OSError (ETIMEDOUT) instead of an
    open that waits forever. Other failures are open's own OSErrors."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if stat.S_ISFIFO(os.fstat(fd).st_mode):
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            if not poller.poll(int(PIPE_WAIT_S * 1000)):
                raise OSError(errno.ETIMEDOUT, f"a pipe nothing was written to in {PIPE_WAIT_S:g} s (no writer?)",
                              str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
