"""A queue of work items that Spark's tasks and the driver take from, on a local master.

Fixed bins (fanout.pack, sweep/tasks.py) are the only way to spread work over executors
that share nothing with the driver. On a local master (`local[N]`) the tasks' Python
workers and the driver run on one machine and can share a file: then each core gets one
task, which takes the next item from the queue's front until none is left, and the driver
may take items from its back. A sweep orders its runs heaviest first, so the tasks start
with the heavy runs and the driver takes the lightest while the cores would otherwise wait
(sweep/driver_share.py). No estimate of an item's cost has to be right: every task ends
within one of the last (lightest) items of the others.

The queue is a file of three counters: the next position from the front, the position after
the last one left at the back, and how many items have ended (for progress). Each taker
holds an exclusive lock on the file while it reads and writes the counters. A lock of
flock(2) belongs to the open file, which the threads of one process share through one
WorkQueue: one thread's shared lock or unlock would convert or drop another's exclusive
one, so a WorkQueue also holds a thread lock around its own.
"""

from __future__ import annotations

import fcntl
import os
import struct
import threading
from pathlib import Path
from types import TracebackType
from typing import Iterator, Sequence, TypeVar

T = TypeVar("T")

_COUNTERS = struct.Struct("<qqq")  # front, back, ended


class WorkQueue:
    """Positions 0..n-1 of an order of items, taken from either end by any process that opens the file."""

    def __init__(self, path: str | Path):
        self.path = str(path)
        self._fd = os.open(self.path, os.O_RDWR)
        self._threads = threading.Lock()

    @classmethod
    def create(cls, path: str | Path, n: int) -> WorkQueue:
        with open(path, "wb") as f:
            f.write(_COUNTERS.pack(0, n, 0))
        return cls(path)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> WorkQueue:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def _update(self, end: str | None, ended: int) -> int | None:
        with self._threads:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                front, back, done = _COUNTERS.unpack(os.pread(self._fd, _COUNTERS.size, 0))
                taken = None
                if end == "front" and front < back:
                    taken, front = front, front + 1
                elif end == "back" and front < back:
                    back -= 1
                    taken = back
                os.pwrite(self._fd, _COUNTERS.pack(front, back, done + ended), 0)
                return taken
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    def take_front(self, ended: int = 0) -> int | None:
        """The next position from the front, or None when none is left; counts `ended` more
        items as ended (those the taker finished since its last call)."""
        return self._update("front", ended)

    def take_back(self, ended: int = 0) -> int | None:
        """The last position left at the back, or None when none is left; counts `ended` as take_front."""
        return self._update("back", ended)

    def count_ended(self, ended: int) -> None:
        """Count `ended` more items as ended, taking none."""
        if ended:
            self._update(None, ended)

    def counters(self) -> tuple[int, int, int]:
        """(front, back, ended) as they are now."""
        with self._threads:
            fcntl.flock(self._fd, fcntl.LOCK_SH)
            try:
                front, back, done = _COUNTERS.unpack(os.pread(self._fd, _COUNTERS.size, 0))
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        return front, back, done


def taken_from_front(queue: WorkQueue, items: Sequence[T]) -> Iterator[T]:
    """The items at the positions this taker takes from the queue's front, until none is
    left; each is counted as ended when the next is asked for (or the end is reached)."""
    ended = 0
    while (pos := queue.take_front(ended)) is not None:
        yield items[pos]
        ended = 1
