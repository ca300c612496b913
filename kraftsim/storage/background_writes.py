"""Log appends written by a second thread, while the simulator goes on.

Why: at a million partitions the 33 nodes' log appends are the largest single cost of the
what-if (the `pwrite` of each batch on each node, about a tenth of the run), and it is the
kernel's work, done without the GIL. Handed to one writer thread they overlap with the
simulator's Python on the machine's other core: measured on the 1M what-if over three pairs,
22.5 s (7%) less wall time on average, the same output (benchmarks/results/scale-notes.md,
the twenty-seventh look). The writer takes whatever is queued at once and writes it in one
call of the C module, with the GIL released once (`_write_items`).

The rule that keeps this invisible: a log file holds every byte appended to it whenever
anything but an append uses it. `LogSegment` waits (`drain`) before it reads, cuts, stats,
forces, opens or closes a segment file, and the simulator waits at the end of every operation
(before its checks and before the cluster's state is saved), so every reader of a node's
files by path, in this process or another, sees what it saw before. Writes keep their order
(one thread, first in, first out). The bytes queued are bounded (`QUEUED_BYTES_LIMIT`): an
append waits for room, so a slow disk slows the simulator instead of growing its memory. A
write that fails is reported, naming the file, at the next append or wait; the process waits
for the writes at exit.

Only logs that ask for it (`MetadataLog.background_appends`, set by the simulator's nodes)
write this way; the tools write as before.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections import deque
from collections.abc import Callable

from kraftsim.errors import KraftsimError
from kraftsim.protocol.fastpath import pwrite_each as _pwrite_each
from kraftsim.storage.fileio import WRITE_PIECE, pwrite_all


#: The most bytes queued and not yet written before an append waits: about twice the most the
#: 1M what-if queues (254-270 MB), where a wait would cost time (64 MiB: 11-13 s more a run),
#: while a disk that cannot keep up holds the simulator at half a GiB instead of all its log.
#: (benchmarks/results/scale-notes.md, the twenty-eighth look.)
QUEUED_BYTES_LIMIT = 512 << 20


class BackgroundWrites:
    """One writer thread and its queue of (descriptor, bytes, position, file name)."""

    def __init__(self, room: int = QUEUED_BYTES_LIMIT) -> None:
        #: Bytes that may be queued and not yet written (one larger write is let in alone).
        self.room = room
        #: Called by the writer with each file name before it writes (tests hold the writer).
        self.before_write: Callable[[str], object] | None = None
        self._reset()

    def _reset(self) -> None:
        """No writer and nothing queued."""
        self._queue: deque[tuple[int, bytes, int, str]] = deque()
        self._cond = threading.Condition()
        #: Writes submitted and not yet done: changed by the submitter up and the writer down,
        #: both under the lock (read without it only by the submitter: a zero it reads is true).
        self.pending = 0
        #: Bytes submitted and not yet written (under the lock).
        self.queued_bytes = 0
        self._waiting_for_room = False
        #: Writes submitted in all (a count for tests and measurements).
        self.submitted = 0
        self._failure: str | None = None
        self._thread: threading.Thread | None = None

    def submit(self, fd: int, raw: bytes, position: int, name: str) -> None:
        """Write `raw` at `position` of `fd` (the file `name`), after every write submitted before."""
        if self._failure is not None:
            self.drain()
        if self._thread is None:
            self._thread = threading.Thread(target=self._write_all, name="kraftsim-log-writes", daemon=True)
            self._thread.start()
        self.submitted += 1
        with self._cond:
            while self.queued_bytes and self.queued_bytes + len(raw) > self.room:
                self._waiting_for_room = True
                self._cond.wait()
            self.pending += 1
            self.queued_bytes += len(raw)
            self._queue.append((fd, raw, position, name))
            self._cond.notify_all()

    def drain(self) -> None:
        """Wait until every write submitted is done; a failed one is raised here, once."""
        if self.pending:
            with self._cond:
                while self.pending:
                    self._cond.wait()
        failure, self._failure = self._failure, None
        if failure is not None:
            raise KraftsimError(failure)

    def _write_all(self) -> None:
        queue, cond = self._queue, self._cond
        while True:
            with cond:
                while not queue:
                    cond.wait()
                hook = self.before_write
                if hook is None and _pwrite_each is not None:
                    taken = list(queue)  # (all at once, written in C without the GIL: see `_write_items`)
                    queue.clear()
                else:
                    taken = [queue.popleft()]
            try:
                failure = _write_items(taken, hook)
            except BaseException as e:  # (as in `_write_items`: the thread lives on)
                failure = _cannot_write(taken[0][3], repr(e))
            with cond:
                if failure is not None and self._failure is None:
                    self._failure = failure
                self.pending -= len(taken)
                self.queued_bytes -= sum(len(item[1]) for item in taken)
                if not self.pending or self._waiting_for_room:
                    self._waiting_for_room = False
                    cond.notify_all()

    def forget(self) -> None:
        """In a forked child (Spark's workers): no writer and nothing queued, for the child has
        no copy of the thread and its parent writes what it queued."""
        self._reset()


def _write_items(items: list[tuple[int, bytes, int, str]], hook: Callable[[str], object] | None) -> str | None:
    """Write each (fd, bytes, position, name) item whole, in order; what went wrong first,
    or None. With the C module and no hook, one call writes them all with the GIL released
    once: written one by one, the thread took the GIL back after each `pwrite`, and so
    waited for the simulator's thread to let it go. In the 1M what-if its 79,860 writes took
    135 s of wall time for 52 s of CPU, and the simulator waited 32.5 s for them at the ends
    of operations (benchmarks/results/scale-notes.md, the thirty-ninth look)."""
    failure: str | None = None
    while items and hook is None and _pwrite_each is not None:
        try:
            written, errno, done = _pwrite_each(items, WRITE_PIECE)
        except (TypeError, ValueError, OverflowError):
            break  # (an item is not (fd, bytes, position): nothing was written; one by one below)
        if written == len(items):
            return failure
        _, raw, _, name = items[written]
        failure = failure or (_cannot_write(name, os.strerror(errno)) if errno else _short_write(name, done, len(raw)))
        items = items[written + 1:]  # (the others are written still, as one by one they were)
    for fd, raw, position, name in items:
        try:
            if hook is not None:
                hook(name)
            failed = _write(fd, raw, position, name)
        except BaseException as e:  # (the thread must live on, or a drain would wait for ever)
            failed = _cannot_write(name, repr(e))
        failure = failure or failed
    return failure


def _write(fd: int, raw: bytes, position: int, name: str) -> str | None:
    """Write all of `raw`; what went wrong, or None."""
    try:
        done = pwrite_all(fd, raw, position)
        if done < len(raw):
            return _short_write(name, done, len(raw))
    except OSError as e:
        return _cannot_write(name, str(e.strerror or e))
    return None


def _cannot_write(name: str, reason: str) -> str:
    """The text of a write that failed."""
    return f"cannot write {name}: {reason}"


def _short_write(name: str, done: int, size: int) -> str:
    """The text of a write the kernel took only part of."""
    return f"{name}: short write ({done} of {size} bytes)"


def _drain_at_exit() -> None:
    """What is queued is written before the process ends; a failure is said, not raised."""
    try:
        WRITES.drain()
    except KraftsimError as e:
        print(f"kraftsim: error: {e}", file=sys.stderr)


#: The process's writer (one thread: appends to every log keep one order).
WRITES = BackgroundWrites()
atexit.register(_drain_at_exit)
os.register_at_fork(after_in_child=WRITES.forget)
