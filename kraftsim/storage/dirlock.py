"""One writer per cluster directory: an OS file lock on `DIR/.lock`.

Two commands changing one cluster directory at once interleave their writes to the same
logs and `cluster.json`; an operating-system lock (`flock`) serializes them, and because
the kernel drops it when its holder dies, a killed command never leaves the directory
locked. Writers take it exclusively, readers that must not see an operation half done take
it shared. A writer writes its pid and command line into the lock file, so a command that
gives up can say who holds the directory (a reader writes nothing: it changes no file).

Within one process the lock is re-entrant (a server holding a directory for its whole run
opens the cluster again and again): nested acquisitions share the first one's lock.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shlex
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kraftsim.errors import ClusterBusyError, KraftsimError

LOCK_FILE = ".lock"
#: How long a command waits for another one's lock by default, in seconds.
DEFAULT_WAIT_S = 60.0
#: Overrides DEFAULT_WAIT_S for every command of a process (a number of seconds).
WAIT_ENV = "KRAFTSIM_LOCK_WAIT_S"
_POLL_S = 0.02


def current_command() -> str:
    """This process's command line, as a holder names itself in the lock file."""
    argv = list(sys.argv) or ["python"]
    head = Path(argv[0]).name
    if head in ("__main__.py", "-m", "-c") or not head:
        head = "kraftsim"
    return shlex.join([head, *argv[1:]])


def default_wait_s() -> float:
    """DEFAULT_WAIT_S, or the number of seconds in $KRAFTSIM_LOCK_WAIT_S."""
    text = os.environ.get(WAIT_ENV)
    if text is None:
        return DEFAULT_WAIT_S
    try:
        value = float(text)
    except ValueError:
        raise KraftsimError(f"${WAIT_ENV}: expected a number of seconds, got {text!r}") from None
    if not 0 <= value <= 86_400:
        raise KraftsimError(f"${WAIT_ENV}: expected a number of seconds from 0 to 86400, got {text!r}")
    return value


class _Held:
    """A lock this process holds on one directory: its file, mode and how many hold it."""

    def __init__(self, fd: int, exclusive: bool):
        self.fd = fd
        self.exclusive = exclusive
        self.count = 1


_held: dict[tuple[int, int], _Held] = {}
_guard = threading.RLock()


def _key(directory: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(directory)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _open_lock_file(directory: Path, exclusive: bool) -> int | None:
    """The lock file's descriptor (never through a symlink); None when a reader cannot
    open it in a directory it may not write (then there is nothing it could see half done
    by this user)."""
    path = directory / LOCK_FILE
    flags = os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | flags, 0o644)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise KraftsimError(f"{path}: is a symbolic link; refusing to follow it") from None
        if not exclusive and e.errno in (errno.EACCES, errno.EROFS, errno.EPERM):
            try:
                return os.open(path, os.O_RDONLY | flags)
            except OSError:
                return None
        raise KraftsimError(f"cannot lock {directory}: {e.strerror or e}") from None


def _holder(fd: int) -> str:
    try:
        text = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip()
    except OSError:
        text = ""
    return text or "another command (a reader, which does not name itself, or a writer just starting)"


def _flock(fd: int, directory: Path, exclusive: bool, wait_s: float, command: str) -> None:
    op = (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, op)
            break
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise ClusterBusyError(
                    f"{directory}: in use by {_holder(fd)}; gave up after waiting {wait_s:g} s "
                    f"(set ${WAIT_ENV} to wait longer)") from None
            time.sleep(_POLL_S)
    if exclusive:  # a reader changes nothing, not even the lock file
        _name(fd, command)


def _name(fd: int, command: str) -> None:
    """Write who holds the lock into the lock file (best effort: a read-only file stays as it is)."""
    text = f"pid {os.getpid()} ({command})\n".encode("utf-8", "replace")
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, text, 0)
    except OSError:
        pass


def acquire(directory: Path | str, *, command: str | None = None, exclusive: bool = True,
            wait_s: float | None = None) -> tuple[int, int] | None:
    """Take the lock (see cluster_lock); returns the token `release` needs (None: nothing held)."""
    d = Path(directory)
    wait = default_wait_s() if wait_s is None else wait_s
    cmd = current_command() if command is None else command
    key = _key(d)
    if key is None:
        return None  # no directory: whoever opens it next reports that
    with _guard:
        held = _held.get(key)
        if held is not None:
            if exclusive and not held.exclusive:
                _flock(held.fd, d, True, wait, cmd)
                held.exclusive = True
            held.count += 1
            return key
        fd = _open_lock_file(d, exclusive)
        if fd is None:
            return None
        try:
            _flock(fd, d, exclusive, wait, cmd)
        except BaseException:
            os.close(fd)
            raise
        _held[key] = _Held(fd, exclusive)
        return key


def acquire_new(directory: Path | str) -> tuple[int, int] | None:
    """Take the lock of a directory a new cluster is being made in, and find it still new:
    nothing in it but the lock file. Two commands making a cluster in the same new directory
    both found it new before either locked it; the one that locks second refuses
    (ClusterBusyError) and changes nothing, where it went on into the other's files."""
    token = acquire(directory)
    try:
        names = set(os.listdir(directory))
    except OSError:  # (removed while this command waited: the other one's failure took it back)
        names = set()
    if names != {LOCK_FILE}:
        release(token)
        raise ClusterBusyError(f"{directory}: another command made a cluster there while this one waited for it; "
                               "nothing was changed")
    return token


def release(token: tuple[int, int] | None) -> None:
    """Give back one acquisition; the last one unlocks the file."""
    if token is None:
        return
    with _guard:
        held = _held.get(token)
        if held is None:
            return
        held.count -= 1
        if held.count > 0:
            return
        del _held[token]
        if held.exclusive:
            try:
                os.ftruncate(held.fd, 0)
            except OSError:
                pass
        os.close(held.fd)  # closing the file drops the flock


@contextmanager
def cluster_lock(directory: Path | str, *, command: str | None = None, exclusive: bool = True,
                 wait_s: float | None = None) -> Iterator[None]:
    """Hold the directory's lock for the block: exclusive for a writer, shared for a reader.
    Waits up to `wait_s` seconds (default: $KRAFTSIM_LOCK_WAIT_S, else DEFAULT_WAIT_S) for
    another process to release it, then raises ClusterBusyError naming the holder.
    `command` is what this holder calls itself (default: this process's command line)."""
    token = acquire(directory, command=command, exclusive=exclusive, wait_s=wait_s)
    try:
        yield
    finally:
        release(token)


def locked_directory_around(path: Path | str) -> Path | None:
    """The nearest folder at or above `path` (which need not exist) with a lock file: a cluster
    directory, whose files one writer at a time may change; None when there is none. A
    command writing a file a user named takes that folder's lock when the file lands in one."""
    here = Path(os.path.realpath(path))
    for folder in (here, *here.parents):
        if (folder / LOCK_FILE).is_file():
            return folder
    return None


def holds_lock(directory: Path | str) -> bool:
    """Whether this process holds the directory's lock."""
    key = _key(Path(directory))
    with _guard:
        return key is not None and key in _held
