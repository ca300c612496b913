"""The driver JVM's class-data archive (kraftsim/pipeline/class_archive.py): recorded once,
mapped by later starts, never half-written into use, and out of the way when turned off
or when the user sets the JVM's options."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kraftsim.pipeline import class_archive as ca
from kraftsim.pipeline.java import JavaRuntime
from kraftsim.pipeline.session import default_conf, with_class_archive
from tests.paths import REPO

NOW = 1_800_000_000.0


def _installation(tmp_path: Path) -> tuple[Path, Path]:
    """A Java home with a base archive, and a folder of Spark jars."""
    java_home, jars = tmp_path / "java", tmp_path / "spark" / "jars"
    (java_home / "lib" / "server").mkdir(parents=True)
    (java_home / "lib" / "server" / "classes.jsa").write_bytes(b"base")
    (java_home / "lib" / "modules").write_bytes(b"modules")
    jars.mkdir(parents=True)
    (jars / "spark-core.jar").write_bytes(b"jar")
    return java_home, jars


def _part(folder: Path, key: str, *, complete: bool, age_s: float) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / f"{key}.123.{os.getpid()}.part"
    p.write_bytes((ca.DYNAMIC_MAGIC if complete else b"\0\0\0\0") + b"regions")
    os.utime(p, (NOW - age_s, NOW - age_s))
    return p


def test_the_first_start_records_an_archive_and_a_finished_recording_is_mapped_next_time(tmp_path: Path) -> None:
    java_home, jars = _installation(tmp_path)
    folder = tmp_path / "cache"
    first = ca.class_archive_options(java_home, jars, folder=folder, env={}, now=NOW)
    assert "-XX:ArchiveClassesAtExit=" in first and ca.QUIET in first
    part = Path(first.split("-XX:ArchiveClassesAtExit=")[1].split()[0])
    assert part.parent == folder and part.name.endswith(".part")
    # Claimed at once: a JVM started before the first one exits records nothing.
    assert part.is_file() and ca.class_archive_options(java_home, jars, folder=folder, env={}, now=time.time()) == ""
    # The JVM writes the header last: while it has not, the part is not used, nor recorded again.
    part.write_bytes(b"\0" * 64)
    os.utime(part, (NOW, NOW))
    assert ca.class_archive_options(java_home, jars, folder=folder, env={}, now=NOW + 5) == ""
    part.write_bytes(ca.DYNAMIC_MAGIC + b"\0" * 60)
    second = ca.class_archive_options(java_home, jars, folder=folder, env={}, now=NOW + 10)
    final = folder / f"{ca.installation_key(java_home, jars)}.jsa"
    assert second == f"-XX:SharedArchiveFile={final} {ca.QUIET}"
    assert final.read_bytes().startswith(ca.DYNAMIC_MAGIC) and not part.exists()


def test_a_part_left_unfinished_by_a_dead_jvm_is_dropped_and_recorded_anew(tmp_path: Path) -> None:
    java_home, jars = _installation(tmp_path)
    folder = tmp_path / "cache"
    key = ca.installation_key(java_home, jars)
    dead = _part(folder, key, complete=False, age_s=ca.STALE_PART_S + 1)
    options = ca.class_archive_options(java_home, jars, folder=folder, env={}, now=NOW)
    assert not dead.exists() and "-XX:ArchiveClassesAtExit=" in options


def test_another_installations_archive_is_kept_once_and_older_ones_go(tmp_path: Path) -> None:
    java_home, jars = _installation(tmp_path)
    folder = tmp_path / "cache"
    folder.mkdir()
    for age, name in ((100, "aaaaaaaaaaaaaaaa"), (50, "bbbbbbbbbbbbbbbb")):
        (folder / f"{name}.jsa").write_bytes(ca.DYNAMIC_MAGIC)
        os.utime(folder / f"{name}.jsa", (NOW - age, NOW - age))
    ca.class_archive_options(java_home, jars, folder=folder, env={}, now=NOW)
    assert sorted(p.name for p in folder.glob("*.jsa")) == ["bbbbbbbbbbbbbbbb.jsa"]
    # A new jar makes another installation: its archive is its own.
    (jars / "extra.jar").write_bytes(b"x")
    assert ca.installation_key(java_home, jars) != folder.name


def test_no_archive_when_turned_off_or_java_has_no_base_archive(tmp_path: Path) -> None:
    java_home, jars = _installation(tmp_path)
    for value in ("off", "0", "no", "OFF"):
        assert ca.class_archive_options(java_home, jars, folder=tmp_path / "c", env={ca.SWITCH: value}) == ""
    assert not (tmp_path / "c").exists()
    (java_home / "lib" / "server" / "classes.jsa").unlink()
    assert ca.class_archive_options(java_home, jars, folder=tmp_path / "c", env={}) == ""


def test_the_users_java_options_and_non_local_masters_get_no_archive(tmp_path: Path, monkeypatch) -> None:
    java_home, jars = _installation(tmp_path)
    monkeypatch.setattr("kraftsim.pipeline.session.spark_jars", lambda: jars)
    monkeypatch.setattr(ca, "archive_dir", lambda: tmp_path / "cache")
    monkeypatch.delenv(ca.SWITCH, raising=False)
    runtime = JavaRuntime(java_home, java_home / "bin" / "java", 17, "PATH")
    base = default_conf("local[2]", "t", "-XX:+UseSerialGC")["spark.driver.extraJavaOptions"]
    local = default_conf("local[2]", "t", "-XX:+UseSerialGC")
    assert with_class_archive(local, runtime, {}) == "record"
    options = local["spark.driver.extraJavaOptions"]
    assert options.startswith(base + " -XX:ArchiveClassesAtExit=") and options.endswith(ca.QUIET)
    mine = dict(local, **{"spark.driver.extraJavaOptions": "-Xmx1g"})
    assert with_class_archive(mine, runtime, {"spark.driver.extraJavaOptions": "-Xmx1g"}) == ""
    assert mine["spark.driver.extraJavaOptions"] == "-Xmx1g"
    remote = default_conf("spark://127.0.0.1:7077", "t")
    before = dict(remote)
    with_class_archive(remote, runtime, {})
    assert remote == before


_PROBE = """
import os, subprocess
from kraftsim.pipeline.session import spark_session
spark = spark_session("local[1]", app_name="class archive probe")
assert spark.range(0, 10, 1, 2).count() == 10
kids = subprocess.run(["pgrep", "-P", str(os.getpid())], capture_output=True, text=True).stdout.split()
maps = "".join(open(f"/proc/{pid}/maps").read() for pid in kids if os.path.exists(f"/proc/{pid}/maps"))
print("MAPPED", sorted({line.split()[-1] for line in maps.splitlines() if line.endswith(".jsa")}))
spark.stop()
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the JVM's memory map in /proc")
def test_a_real_jvm_records_the_archive_at_exit_and_the_next_one_maps_it(tmp_path: Path) -> None:
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    env.pop(ca.SWITCH, None)
    folder = tmp_path / "cache" / "kraftsim" / "spark-classes"

    def start() -> str:
        out = subprocess.run([sys.executable, "-c", _PROBE], cwd=REPO, env=env, capture_output=True, text=True,
                             timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        assert "cds" not in out.stdout + out.stderr  # the JVM's class-sharing messages stay off
        return out.stdout

    first = start()
    if not list(folder.glob("*.part")) and not list(folder.glob("*.jsa")):
        deadline = time.monotonic() + 120  # the JVM writes the archive as it exits, after Python
        while not list(folder.glob("*.part")) and time.monotonic() < deadline:
            time.sleep(0.2)
    assert str(folder) not in first
    deadline = time.monotonic() + 120
    while not any(ca.is_complete(p) for p in folder.glob("*.part")) and time.monotonic() < deadline:
        time.sleep(0.2)
    second = start()
    archives = list(folder.glob("*.jsa"))
    assert len(archives) == 1 and str(archives[0]) in second, (second, sorted(os.listdir(folder)))
