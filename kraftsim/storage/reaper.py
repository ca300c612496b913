"""Files marked for deletion, unlinked later by one background thread, as Kafka does.

Kafka deletes a snapshot or a log segment in two steps: it renames the file to
`<name>.deleted` at once and leaves the unlink to a scheduler thread
(KafkaMetadataLog.removeSnapshots, LocalLog.deleteSegmentFiles). It matters here too: on a
file system that discards freed blocks, unlinking a large file takes tens of milliseconds,
time the simulator's one thread need not wait for. The caller renames; `discard` queues the
unlink; one daemon thread carries the queue out in order.

Nothing may observe the difference. Whatever lists, opens or removes a directory that may
hold queued files first calls `settle(directory)` (or `settle()` for every directory), which
waits until every file queued so far below it is gone; closing a log and ending a run or the
process settle too. An unlink that fails is kept and raised as a KraftsimError by the next
settle, so it is reported, never lost.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time
from collections import deque
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from kraftsim.errors import KraftsimError

#: The thread's name (what a thread listing or a profile shows).
THREAD_NAME = "kraftsim-reaper"


class Reaper:
    """A queue of files to unlink and the one thread that unlinks them, in order."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._cond = threading.Condition()
        self._queue: deque[str] = deque()
        #: Queued or being unlinked: absolute path -> how many times (a name may be queued twice).
        self._busy: dict[str, int] = {}
        self._errors: list[str] = []
        self._thread: threading.Thread | None = None
        #: Test hooks: called on the thread before each unlink (`paced` sleeps there: a slow
        #: disk), or unlink in the caller.
        self.before_unlink: Callable[[str], object] | None = None
        self.inline = False

    def discard(self, path: Path | str) -> None:
        """Unlink `path` (a file already renamed out of every live name) in the background."""
        text = os.path.abspath(path)
        if self.inline:
            error = _unlink(text)
            if error is not None:
                raise KraftsimError(error)
            return
        with self._cond:
            self._queue.append(text)
            self._busy[text] = self._busy.get(text, 0) + 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def pending(self, directory: Path | str | None = None) -> int:
        """How many queued files below `directory` (None: anywhere) are not gone yet."""
        with self._cond:
            return self._count(_prefix(directory))

    def settle(self, directory: Path | str | None = None) -> None:
        """Wait until every file queued so far below `directory` (None: anywhere) is gone,
        then raise what failed since the last settle, if anything did."""
        prefix = _prefix(directory)
        with self._cond:
            if self._busy:
                self._cond.wait_for(lambda: not self._count(prefix))
            errors, self._errors = self._errors, []
        if errors:
            raise KraftsimError("; ".join(errors))

    def _count(self, prefix: str | None) -> int:
        if prefix is None:
            return sum(self._busy.values())
        return sum(n for p, n in self._busy.items() if p.startswith(prefix))

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: bool(self._queue))
                path = self._queue.popleft()
                hook = self.before_unlink
            try:
                if hook is not None:
                    hook(path)
                error = _unlink(path)
            except BaseException as e:  # (the thread must live on, or a settle would wait for ever)
                error = f"cannot delete {path}: {e}"
            with self._cond:
                left = self._busy[path] - 1
                if left:
                    self._busy[path] = left
                else:
                    del self._busy[path]
                if error is not None:
                    self._errors.append(error)
                self._cond.notify_all()

    def forget(self) -> None:
        """In a forked child: the parent's queue and thread stay the parent's."""
        self._reset()


def _prefix(directory: Path | str | None) -> str | None:
    return None if directory is None else os.path.join(os.path.abspath(directory), "")


def _unlink(path: str) -> str | None:
    """Unlink a file (gone already is fine, as Kafka's deleteIfExists); the error text, if any."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as e:
        return f"cannot delete {path}: {e.strerror or e}"
    return None


#: The one reaper of the process.
REAPER = Reaper()


def discard(path: Path | str) -> None:
    """Queue `path` for unlinking by the process's reaper."""
    REAPER.discard(path)


def settle(directory: Path | str | None = None) -> None:
    """Wait for the process's reaper below `directory` (None: everywhere); raise its errors."""
    REAPER.settle(directory)


def mark_and_discard(path: Path, marked: Path) -> None:
    """Rename `path` to `marked` (its `.deleted` name) now, and unlink it in the background."""
    try:
        path.rename(marked)
    except FileNotFoundError:
        return
    except OSError as e:
        raise KraftsimError(f"cannot rename {path} to {marked.name}: {e.strerror or e}") from None
    discard(marked)


@contextmanager
def paced(*, delay_s: float = 0.0, inline: bool = False,
          before_unlink: Callable[[str], object] | None = None) -> Iterator[Reaper]:
    """Tests: for the time of the block, the reaper slowed (`delay_s` slept before each
    unlink), held (`before_unlink` called first) or unlinking in the caller (`inline`);
    settled on entry and on exit."""
    def hook(path: str) -> None:
        if delay_s > 0:
            time.sleep(delay_s)
        if before_unlink is not None:
            before_unlink(path)

    REAPER.settle()
    before = REAPER.before_unlink, REAPER.inline
    REAPER.before_unlink, REAPER.inline = hook, inline
    try:
        yield REAPER
    finally:
        REAPER.before_unlink, REAPER.inline = before
        REAPER.settle()


def _settle_at_exit() -> None:
    """The process ends: what is queued is unlinked first; a failure is said on stderr."""
    try:
        REAPER.settle()
    except KraftsimError as e:
        print(f"kraftsim: error: {e}", file=sys.stderr)


atexit.register(_settle_at_exit)
os.register_at_fork(after_in_child=REAPER.forget)
