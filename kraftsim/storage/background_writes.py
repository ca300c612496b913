"""Log appends written by a second thread, while the simulator goes on.

Why: at a million partitions the 33 nodes' log appends are the largest single cost of the
what-if (the `pwrite` of each batch on each node, about a tenth of the run), and it is the
kernel's work, done without the GIL. Handed to one writer thread they overlap with the
simulator's Python on the machine's other core: measured on the 1M what-if over three pairs,
22.5 s (7%) less wall time on average, the same output (benchmarks/results/scale-notes.md,
the twenty-seventh look).

The rule that keeps this invisible: a log file holds every byte appended to it whenever
anything but an append uses it. `LogSegment` waits (`drain`) before it reads, cuts, stats,
forces, opens or closes a segment file, and the simulator waits at the end of every operation
(before its checks and before the cluster's state is saved), so every reader of a node's
files by path, in this process or another, sees what it saw before. Writes keep their order
(one thread, first in, first out). A write that fails is reported, naming the file, at the
next append or wait; the process waits for the writes at exit.

Only logs that ask for it (`MetadataLog.background_appends`, set by the simulator's nodes)
write this way; the tools write as before.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections import deque

from kraftsim.errors import KraftsimError


class BackgroundWrites:
    """One writer thread and its queue of (descriptor, bytes, position, file name)."""

    def __init__(self) -> None:
        self._start_afresh()

    def _start_afresh(self) -> None:
        """No writer and nothing queued: also in a child process (Spark's forked workers),
        which has no copy of the thread and whose parent writes what it queued."""
        self._queue: deque[tuple[int, bytes, int, str]] = deque()
        self._cond = threading.Condition()
        #: Writes submitted and not yet done: changed by the submitter up and the writer down,
        #: both under the lock (read without it only by the submitter: a zero it reads is true).
        self.pending = 0
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
            self.pending += 1
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
                fd, raw, position, name = queue.popleft()
            failure = _write(fd, raw, position, name)
            with cond:
                if failure is not None and self._failure is None:
                    self._failure = failure
                self.pending -= 1
                if not self.pending:
                    cond.notify_all()


def _write(fd: int, raw: bytes, position: int, name: str) -> str | None:
    """Write all of `raw`; what went wrong, or None."""
    view, done = memoryview(raw), 0
    try:
        while done < len(raw):
            n = os.pwrite(fd, view[done:], position + done)
            if n <= 0:
                return f"{name}: short write ({done} of {len(raw)} bytes)"
            done += n
    except OSError as e:
        return f"cannot write {name}: {e.strerror or e}"
    return None


def _drain_at_exit() -> None:
    """What is queued is written before the process ends; a failure is said, not raised."""
    try:
        WRITES.drain()
    except KraftsimError as e:
        print(f"kraftsim: error: {e}", file=sys.stderr)


#: The process's writer (one thread: appends to every log keep one order).
WRITES = BackgroundWrites()
atexit.register(_drain_at_exit)
os.register_at_fork(after_in_child=WRITES._start_afresh)
