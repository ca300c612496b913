"""A class-data archive for the driver's JVM on local masters: each start maps the classes
an earlier start loaded, instead of finding, parsing and verifying them again.

A cold Spark driver spends most of its first seconds loading classes: on 2 cores, about
3.6 s of CPU until the session is ready and 2.5 s more in its first job. Java 13+ can
record the classes a JVM loaded into a file when it exits (a dynamic class-data-sharing
archive, `-XX:ArchiveClassesAtExit`) and map that file at later starts
(`-XX:SharedArchiveFile`); with one, the same start and first job take about 1.9 s and
1.4 s of CPU. kraftsim keeps one such archive per Java and Spark installation in the user's
cache (`~/.cache/kraftsim/spark-classes/`, about 150 MB; the
most recently used one of another installation is kept too):

- no archive yet: the JVM is told to write one when it exits, to `KEY.TIME.part` (made
  empty at once, so that JVMs started meanwhile, a test suite's for instance, do not all
  record it too). The JVM writes the file's header last, so a part whose first bytes are
  the archive's magic number is complete; the next start renames it to `KEY.jsa`. The
  first start pays for the recording (a few seconds of CPU, once per machine).
- an archive: the JVM maps it. Should it not fit the JVM after all (another Java build
  under the same path), the JVM runs without it, as it would have.

The JVM's class-sharing messages are turned off either way: they would reach the user's
terminal, and nothing in them needs an answer. `KRAFTSIM_SPARK_CLASS_ARCHIVE=off` turns
the archive off; `--conf spark.driver.extraJavaOptions=...` replaces it with the user's
options, as it replaces all of kraftsim's.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path
from typing import Mapping

from kraftsim.pipeline.java import cache_dir

#: The environment variable that turns the archive off ("off", "0" or "no").
SWITCH = "KRAFTSIM_SPARK_CLASS_ARCHIVE"
#: The first bytes of a finished dynamic archive: HotSpot's magic 0xf00baba8, little-endian.
#: HotSpot writes the header after every region, so these bytes mean the file is whole.
DYNAMIC_MAGIC = bytes.fromhex("a8ab0bf0")
#: An unfinished part older than this was left by a JVM that died while writing it.
STALE_PART_S = 600.0
#: Archives kept: this installation's and the most recently used other one (two Pythons
#: with their own PySpark, say), so that taking turns does not record anew each time.
KEEP = 2
#: Class-sharing messages off, for a missing, unfit or unwritable archive alike.
QUIET = "-Xlog:cds*=off -Xlog:class+path=off"


def archive_dir() -> Path:
    return cache_dir() / "spark-classes"


def disabled(env: Mapping[str, str] | None = None) -> bool:
    value = (os.environ if env is None else env).get(SWITCH, "").strip().lower()
    return value in {"off", "0", "no", "false"}


def installation_key(java_home: Path, spark_jars: Path) -> str:
    """Names the Java and Spark an archive was made with: an archive only fits the JVM and
    class path that wrote it. Paths, sizes and times of the Java image and Spark's jars."""
    digest = hashlib.sha256()
    parts = [java_home / "lib" / "modules", java_home / "lib" / "server" / "libjvm.so"]
    parts += sorted(spark_jars.glob("*.jar"))
    for p in parts:
        try:
            st = p.stat()
        except OSError:
            continue
        digest.update(f"{p.resolve()}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def is_complete(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(len(DYNAMIC_MAGIC)) == DYNAMIC_MAGIC
    except OSError:
        return False


def tidy(folder: Path, key: str, now: float | None = None) -> None:
    """Promote finished parts (KEY.TIME.part to KEY.jsa), drop parts a dead JVM left, and
    drop the archives of other installations but the most recently used (KEEP). Parts
    still being written stay."""
    now = time.time() if now is None else now
    for p in sorted(folder.glob("*.part")):
        target = folder / f"{p.name.split('.')[0]}.jsa"
        try:
            if is_complete(p):
                if target.exists():
                    p.unlink()
                else:
                    p.replace(target)
            elif now - p.stat().st_mtime > STALE_PART_S:
                p.unlink()
        except OSError:
            continue
    final = folder / f"{key}.jsa"
    others = sorted((p for p in folder.glob("*.jsa") if p != final), key=_last_used, reverse=True)
    for p in others[KEEP - 1:]:
        try:
            p.unlink()
        except OSError:
            continue


def _last_used(p: Path) -> float:
    try:
        return p.stat().st_mtime
    except OSError:
        return 0.0


def _being_written(folder: Path, key: str, now: float) -> bool:
    return any(now - p.stat().st_mtime <= STALE_PART_S for p in folder.glob(f"{key}.*.part"))


def class_archive_options(java_home: Path, spark_jars: Path, *, folder: Path | None = None,
                          env: Mapping[str, str] | None = None, now: float | None = None) -> str:
    """The driver JVM's options for the archive: map it, record it, or nothing (turned off,
    no base archive in this Java to build on, a cache that cannot be written, or another
    JVM recording it right now)."""
    if disabled(env) or not (java_home / "lib" / "server" / "classes.jsa").is_file() or not spark_jars.is_dir():
        return ""
    folder = archive_dir() if folder is None else folder
    now = time.time() if now is None else now
    key = installation_key(java_home, spark_jars)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tidy(folder, key, now)
        final = folder / f"{key}.jsa"
        if final.is_file():
            os.utime(final)  # used: the last to go when archives are pruned
            return f"-XX:SharedArchiveFile={final} {QUIET}"
        if _being_written(folder, key, now) or not os.access(folder, os.W_OK):
            return ""
    except OSError:
        return ""
    part = folder / f"{key}.{time.time_ns()}.{os.getpid()}.part"
    try:
        part.touch()  # claims the recording: starts until the JVM writes it map nothing, record nothing
    except OSError:
        return ""
    return f"-XX:ArchiveClassesAtExit={part} {QUIET}"
