"""A clean install: the wheel built from this tree, installed in a fresh virtual environment,
runs the shipped scenarios and the demo from outside the repository.

The wheel is built from a copy of the files it is made of (so the build leaves nothing in the
tree); the virtual environment sees the system's packages (pyspark and the rest are not
downloaded again), so the test checks that `kraftsim` itself comes from the wheel and not
from an editable install. Building needs the build requirements of pyproject.toml (pip
fetches them like any install) and a C compiler for the optional extension.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import REPO

pytestmark = pytest.mark.wheel

#: The wheel's sources: the rest of the repository (tests, benchmarks, docs) is not in it.
SOURCES = ("setup.py", "pyproject.toml", "README.md", "records", "scenarios", "kraftsim")


def _copy_sources(target: Path) -> None:
    target.mkdir()
    for name in SOURCES:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, target / name, ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.egg-info"))
        else:
            shutil.copy2(src, target / name)


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc


def test_the_wheel_ships_the_scenarios_and_runs_them_from_anywhere(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    src, dist, venv, elsewhere = tmp_path / "src", tmp_path / "dist", tmp_path / "venv", tmp_path / "elsewhere"
    _copy_sources(src)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-q", "-w", str(dist),
          str(src)], cwd=tmp_path, env=env)
    (wheel,) = dist.glob("kraftsim-*.whl")
    _run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], cwd=tmp_path, env=env)
    python, kraftsim = venv / "bin" / "python", venv / "bin" / "kraftsim"
    _run([str(python), "-m", "pip", "install", "--no-deps", "--disable-pip-version-check", "-q", str(wheel)],
         cwd=tmp_path, env=env)
    elsewhere.mkdir()

    where = _run([str(python), "-c", "import kraftsim; print(kraftsim.__file__)"], cwd=elsewhere, env=env)
    site = Path(where.stdout.strip()).parent.parent
    assert site.is_relative_to(venv), f"kraftsim was imported from {site}, not from the wheel"

    listed = _run([str(kraftsim), "scenario", "list"], cwd=elsewhere, env=env).stdout.splitlines()
    rows = [line.split() for line in listed if not line.startswith(" ")]
    assert [name for name, _ in rows] == sorted(p.stem for p in (REPO / "scenarios").glob("*.toml"))
    assert all(Path(path) == site / "kraftsim" / "_scenarios" / f"{name}.toml" for name, path in rows)

    keep = elsewhere / "kept"
    ran = _run([str(kraftsim), "scenario", "run", "torn-tail", "--json", "--keep", str(keep)], cwd=elsewhere, env=env)
    assert json.loads(ran.stdout)["passed"] is True
    # the record schemas ship too: the kept log is read back
    dumped = _run([str(kraftsim), "log", "dump", "--json", str(keep / "node-1" / "__cluster_metadata-0")],
                  cwd=elsewhere, env=env)
    assert any(json.loads(line)["type"] == "FEATURE_LEVEL_RECORD" for line in dumped.stdout.splitlines())

    demo = _run([str(kraftsim), "demo", "--no-spark", "--out", "demo"], cwd=elsewhere, env=env)
    assert "replay verification: passed" in demo.stdout
    assert sorted(p.name for p in (elsewhere / "demo" / "reports").iterdir()) == sorted(
        f"{name}.html" for name in ("upgrade-3.7-to-3.8-metadata-flag", "rollback-controller-after-finalizing",
                                    "downgrade-lossy-kip778", "leader-crash-mid-roll",
                                    "upgrade-4.2-to-4.4-release-version"))
