"""Progress of a running Spark job, printed from the driver.

On entry it says what the job is about to do
(`starting`); then a thread polls Spark's status tracker. The action run inside `SparkProgress` is tagged with
a job group of its own, so every stage of every job it starts counts (a write's fan-out
stage, then its shuffle's stage, then the files' commit) and the count of tasks done only
grows: it never starts again from zero when the next stage begins. A stage counts from its
first task on, so a stage Spark skips (its shuffle output already there) adds nothing.

Short jobs stay silent (nothing before `after` seconds); on a terminal one line is
rewritten in place, else a line is printed every `every` seconds, so logs of long batch
runs stay readable.
"""

from __future__ import annotations

import itertools
import sys
import threading
import time
from typing import TYPE_CHECKING, TextIO

from kraftsim.textsafe import own

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: The local properties a job group sets (SparkContext.setJobGroup), put back on exit.
_GROUP_PROPERTIES = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")
_GROUPS = itertools.count(1)


class SparkProgress:
    """`with SparkProgress(spark, "corpus"): df.write...` — reports tasks done while inside."""

    def __init__(self, spark: SparkSession, label: str, *, out: TextIO | None = None, after: float = 2.0,
                 every: float | None = None, starting: str | None = None):
        self.context = spark.sparkContext
        self.tracker = self.context.statusTracker()
        self.label = label
        self.out = out if out is not None else sys.stderr
        self.tty = bool(getattr(self.out, "isatty", lambda: False)())
        self.after = after
        self.every = every if every is not None else (0.5 if self.tty else 10.0)
        self.group = f"kraftsim-{label}-{next(_GROUPS)}"
        self.starting = starting  # a line said at once on entry: what the job is about to do
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"kraftsim-progress-{label}", daemon=True)
        self._start = 0.0
        self._printed = False
        self._saved: dict[str, str | None] = {}
        self._stages: dict[int, tuple[int, int, int]] = {}  # stage -> (done, running, tasks), last seen

    def snapshot(self) -> tuple[int, int, int]:
        """(tasks done, tasks running, tasks) over the started stages of every job of the
        group so far; done never decreases while the jobs run."""
        for job_id in self.tracker.getJobIdsForGroup(self.group):
            info = self.tracker.getJobInfo(job_id)
            for stage_id in info.stageIds if info is not None else ():
                stage = self.tracker.getStageInfo(stage_id)
                if stage is None:  # no longer kept by Spark: its last figures stand
                    continue
                if stage.numActiveTasks or stage.numCompletedTasks or stage_id in self._stages:
                    self._stages[stage_id] = (stage.numCompletedTasks, stage.numActiveTasks, stage.numTasks)
        done = sum(s[0] for s in self._stages.values())
        running = sum(s[1] for s in self._stages.values())
        total = sum(s[2] for s in self._stages.values())
        return done, running, total

    def line(self) -> str | None:
        done, running, total = self.snapshot()
        if not total:
            return None
        stages = len(self._stages)
        return (f"{self.label}: {done}/{total} tasks done ({stages} stage{'s' if stages != 1 else ''} started), "
                f"{running} running, {time.monotonic() - self._start:.0f} s")

    def _run(self) -> None:
        if self._stop.wait(self.after):
            return
        while True:
            text = self.line()
            if text:
                self.out.write((own("\r", self.out) + text + own("\x1b[K", self.out)) if self.tty else text + "\n")
                self.out.flush()
                self._printed = True
            if self._stop.wait(self.every):
                return

    def __enter__(self) -> "SparkProgress":
        self._saved = {key: self.context.getLocalProperty(key) for key in _GROUP_PROPERTIES}
        self.context.setJobGroup(self.group, self.label)
        self._start = time.monotonic()
        if self.starting:
            self.out.write(self.starting + "\n")
            self.out.flush()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        for key, value in self._saved.items():
            self.context.setLocalProperty(key, value)  # type: ignore[arg-type]  # None removes it (pyspark says str)
        if self._printed and self.tty:
            self.out.write(own("\r", self.out) + own("\x1b[K", self.out))
            self.out.flush()
