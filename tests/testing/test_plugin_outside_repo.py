"""The pytest plugin from a user's project: a temporary directory outside the repository,
a virtualenv that sees the installed dependencies and installs this tree (no deps), and
plain `pytest` (the plugin arrives through its `pytest11` entry point, nothing else)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

USER_TEST = textwrap.dedent('''
    from hypothesis import settings
    from hypothesis.stateful import invariant
    from kraftsim.testing import ClusterStateMachine


    def test_cluster_factory(kraftsim_cluster, kraftsim_catalog):
        sim = kraftsim_cluster(controllers=1, brokers=1, release="3.9")
        sim.wait(60_000)
        assert sim.metadata_version() == kraftsim_catalog.at_release("3.9").latest_production.level
        assert sim.seed == 7


    class Never38(ClusterStateMachine):
        releases = ("3.8",)
        controllers = 1
        brokers = 1
        ops = frozenset({"features-downgrade", "run"})

        @invariant()
        def stays(self):
            if self.cluster is not None:
                assert self.cluster.metadata_version() >= 20


    Never38.TestCase.settings = settings(max_examples=60, stateful_step_count=4, deadline=None,
                                         derandomize=True, database=None)
    TestNever38 = Never38.TestCase
''')


@pytest.fixture(scope="module")
def venv(tmp_path_factory):  # type: ignore[no-untyped-def]
    if shutil.which("git") is None:
        pytest.skip("git is needed to copy the tree")
    where = tmp_path_factory.mktemp("venv")
    env_dir = where / "env"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(env_dir)], check=True, timeout=120)
    py = env_dir / "bin" / "python"
    proc = subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps",
                           "--disable-pip-version-check", "-e", str(REPO)],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        pytest.skip(f"cannot install the tree into a virtualenv: {proc.stderr.strip().splitlines()[-1:]}")
    return py


def test_plugin_from_a_users_project(venv):  # type: ignore[no-untyped-def]
    project = Path(tempfile.mkdtemp(prefix="kraftsim-user-"))
    try:
        (project / "test_user.py").write_text(USER_TEST, encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KRAFTSIM_SEED", "KRAFTSIM_REPRO_DIR")}
        proc = subprocess.run([str(venv), "-m", "pytest", "-p", "no:cacheprovider", "--kraftsim-seed", "7",
                               "--kraftsim-repro-dir", "repro", "test_user.py"],
                              cwd=project, env=env, capture_output=True, text=True, timeout=600)
        out = proc.stdout + proc.stderr
        assert "kraftsim: " in out and "seed 7" in out and "repro dir repro" in out, out
        assert "1 failed, 1 passed" in out, out  # the factory works; the machine finds the downgrade
        written = sorted((project / "repro").glob("*.toml"))
        assert len(written) == 1, out
        assert f"written as a scenario: {written[0]}" in out
        run = subprocess.run([str(venv), "-m", "kraftsim", "scenario", "run", "--json", str(written[0])],
                             cwd=project, env=env, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stdout + run.stderr
    finally:
        shutil.rmtree(project, ignore_errors=True)
