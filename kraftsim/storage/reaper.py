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

A deleted snapshot may be kept as a spare instead (`discard(..., reusable=True)`): the next
snapshot written or copied in this process is written over it (`reuse`), so its pages and
blocks serve again. Inside a run that writes tens of gigabytes, taking new pages costs
several times what writing into pages the page cache holds does (alone, it does not; why is
not known): in one million-partition run, alternating per file, a restamped copy of 110-130
MB took 0.25 s into a new file and 0.05 s over a spare (0.67 and 0.10 s in a slower hour),
and an encoded snapshot 0.65 and 0.28 s (1.42 and 0.38 s); such a run writes hundreds of
them, and whole runs took 9% less time (benchmarks/results/scale.md). A spare keeps its
`.deleted` name until it is reused, and `settle` releases the spares below its directory to
the queue first, so a listing never sees one. Only this process reads the files it marks
(its readers hold the cluster's lock), and they read a file whole, so a file written over is
never read half old.
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
#: Spares kept at most (in the million-partition run up to 19 waited at once, most between
#: one node's deletion and another's next write; each holds up to 130 MB of disk), and the
#: least size worth keeping one for.
SPARES_KEPT = 16
SPARE_MIN_BYTES = 1 << 20


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
        #: Deleted files kept to be written over, newest last (their pages most likely cached).
        self._spares: list[str] = []
        self._thread: threading.Thread | None = None
        #: Test hooks: called on the thread before each unlink (`paced` sleeps there: a slow
        #: disk), or unlink in the caller.
        self.before_unlink: Callable[[str], object] | None = None
        self.inline = False

    def discard(self, path: Path | str, *, reusable: bool = False) -> None:
        """Unlink `path` (a file already renamed out of every live name) in the background;
        `reusable`: or keep it as a spare, when it is large and this is its only name."""
        text = os.path.abspath(path)
        if reusable and not self.inline and self._keep_spare(text):
            return
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

    def _keep_spare(self, path: str) -> bool:
        try:
            st = os.stat(path)
        except OSError:
            return False
        if st.st_nlink != 1 or st.st_size < SPARE_MIN_BYTES:
            return False  # (another name still shows its bytes; too small to be worth it)
        with self._cond:
            if len(self._spares) >= SPARES_KEPT:
                return False
            self._spares.append(path)
        return True

    def reuse(self, target: Path | str) -> bool:
        """Move a spare onto `target` (a new temp file's name, replaced), ready to be
        written over from its start and cut to its new length; False when there is none."""
        with self._cond:
            if not self._spares:
                return False
            spare = self._spares.pop()
        try:
            os.replace(spare, target)
        except OSError:
            self.discard(spare)
            return False
        return True

    def _release_spares(self, prefix: str | None) -> None:
        """Queue the spares below `prefix` (None: all) for unlinking."""
        with self._cond:
            released = [p for p in self._spares if _below(p, prefix)]
            if not released:
                return
            self._spares = [p for p in self._spares if not _below(p, prefix)]
        for p in released:
            self.discard(p)

    def pending(self, directory: Path | str | None = None) -> int:
        """How many files marked below `directory` (None: anywhere) are not gone yet:
        queued, or kept as spares."""
        prefix = _prefix(directory)
        with self._cond:
            return self._count(prefix) + sum(_below(p, prefix) for p in self._spares)

    def settle(self, directory: Path | str | None = None) -> None:
        """Wait until every file queued so far below `directory` (None: anywhere) is gone,
        then raise what failed since the last settle, if anything did."""
        prefix = _prefix(directory)
        self._release_spares(prefix)
        with self._cond:
            if self._busy:
                self._cond.wait_for(lambda: not self._count(prefix))
            errors, self._errors = self._errors, []
        if errors:
            raise KraftsimError("; ".join(errors))

    def _count(self, prefix: str | None) -> int:
        return sum(n for p, n in self._busy.items() if _below(p, prefix))

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


def _below(path: str, prefix: str | None) -> bool:
    """Whether `path` lies below `prefix` (from `_prefix`; None: everywhere)."""
    return prefix is None or path.startswith(prefix)


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


def discard(path: Path | str, *, reusable: bool = False) -> None:
    """Queue `path` for unlinking by the process's reaper (`reusable`: or keep it as a spare)."""
    REAPER.discard(path, reusable=reusable)


def reuse(target: Path | str) -> bool:
    """Move one of the process's spares onto `target`; False when there is none."""
    return REAPER.reuse(target)


def settle(directory: Path | str | None = None) -> None:
    """Wait for the process's reaper below `directory` (None: everywhere); raise its errors."""
    REAPER.settle(directory)


def mark_and_discard(path: Path, marked: Path, *, reusable: bool = False) -> None:
    """Rename `path` to `marked` (its `.deleted` name) now, and unlink it in the background
    (`reusable`: or keep it as a spare)."""
    try:
        path.rename(marked)
        if path.exists() and path.samefile(marked):
            # (`marked` still waits, a hard link of the same file: POSIX rename does nothing
            # then. That name is queued already; this one goes now.)
            path.unlink()
            return
    except FileNotFoundError:
        return
    except OSError as e:
        raise KraftsimError(f"cannot rename {path} to {marked.name}: {e.strerror or e}") from None
    discard(marked, reusable=reusable)


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
