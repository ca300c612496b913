"""The C extension's stub (kraftsim/protocol/_speedups.pyi) says what the built module holds:
mypy's stubtest compares every name, signature and class of the two, so a function added to
or changed in _speedups.c without its stub fails here."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.paths import REPO
from tests.protocol_fast._support import needs_speedups


@needs_speedups
def test_the_stub_matches_the_built_extension() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-m", "mypy.stubtest", "kraftsim.protocol._speedups",
                          "--mypy-config-file", str(REPO / "pyproject.toml")],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
