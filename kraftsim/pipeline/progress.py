"""Progress of a running Spark job, printed from the driver.

A thread polls Spark's status tracker for the tasks of the active stages. Short jobs stay
silent (nothing before `after` seconds); on a terminal one line is rewritten in place, else
a line is printed every `every` seconds, so logs of long batch runs stay readable.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, TextIO


class SparkProgress:
    """`with SparkProgress(spark, "corpus"): df.write...` — reports tasks done while inside."""

    def __init__(self, spark: Any, label: str, *, out: TextIO | None = None, after: float = 2.0,
                 every: float | None = None):
        self.tracker = spark.sparkContext.statusTracker()
        self.label = label
        self.out = out if out is not None else sys.stderr
        self.tty = bool(getattr(self.out, "isatty", lambda: False)())
        self.after = after
        self.every = every if every is not None else (0.5 if self.tty else 10.0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"kraftsim-progress-{label}", daemon=True)
        self._start = 0.0
        self._printed = False

    def snapshot(self) -> tuple[int, int, int]:
        """(tasks done, tasks running, tasks in all) over the active stages."""
        done = running = total = 0
        for sid in self.tracker.getActiveStageIds():
            info = self.tracker.getStageInfo(sid)
            if info is None:
                continue
            done += info.numCompletedTasks
            running += info.numActiveTasks
            total += info.numTasks
        return done, running, total

    def _line(self) -> str | None:
        done, running, total = self.snapshot()
        if not total:
            return None
        return f"{self.label}: {done}/{total} tasks done, {running} running, {time.monotonic() - self._start:.0f} s"

    def _run(self) -> None:
        if self._stop.wait(self.after):
            return
        while True:
            line = self._line()
            if line:
                self.out.write(("\r" + line + "\x1b[K") if self.tty else line + "\n")
                self.out.flush()
                self._printed = True
            if self._stop.wait(self.every):
                return

    def __enter__(self) -> "SparkProgress":
        self._start = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        if self._printed and self.tty:
            self.out.write("\r\x1b[K")
            self.out.flush()
