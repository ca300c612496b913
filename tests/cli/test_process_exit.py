"""The `kraftsim` process (cli.main.run) leaves what a command still holds to its exit
(kraftsim.gcpause.leave_to_exit) while shutdown still does its work: atexit handlers run,
output is flushed and the exit code is the command's."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import kraftsim

PROGRAM = textwrap.dedent("""
    import atexit, gc, sys
    from kraftsim.cli.main import run

    atexit.register(lambda: print("atexit: frozen", gc.get_freeze_count() > 0, file=sys.stderr))
    sys.argv = ["kraftsim", *sys.argv[1:]]
    sys.exit(run())
""")


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(kraftsim.__file__).parent.parent)}
    return subprocess.run([sys.executable, "-c", PROGRAM, *argv], capture_output=True, text=True, env=env,
                          timeout=120)


def test_a_command_ends_with_its_output_its_code_and_the_atexit_handlers_run() -> None:
    done = _run("storage", "version-mapping", "--release-version", "3.9")
    assert done.returncode == 0, done.stderr
    assert "metadata.version=" in done.stdout
    assert done.stderr.strip().splitlines()[-1] == "atexit: frozen True"


def test_a_failing_command_keeps_its_exit_code() -> None:
    done = _run("storage", "version-mapping", "--release-version", "0.1")
    assert done.returncode != 0
    assert "Unknown metadata.version '0.1'" in done.stderr
    assert done.stderr.strip().splitlines()[-1] == "atexit: frozen True"
