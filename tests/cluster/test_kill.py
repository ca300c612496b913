"""A cluster command killed at any point leaves a directory the next command continues from:
`cluster roll` and `features upgrade` are SIGKILLed at seeded random moments; each time
`cluster status` opens the cluster, the command run again finishes, and every log verifies.

KRAFTSIM_KILLS sets the number of kills (the acceptance run uses 40; the default keeps the
suite fast)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kraftsim.storage import MetadataLog
from tests.cluster.conftest import ok, status

ROOT = Path(__file__).resolve().parents[2]
KILLS = int(os.environ.get("KRAFTSIM_KILLS", "6"))


def _killed(argv: list[str], after_s: float) -> None:
    """Run `kraftsim ARGV` in a child process and SIGKILL it after `after_s` seconds."""
    proc = subprocess.Popen([sys.executable, "-m", "kraftsim", *argv], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        proc.wait(timeout=after_s)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)


def _logs_verify(directory: Path) -> None:
    for node in sorted(directory.glob("node-*")):
        with MetadataLog.open(node / "__cluster_metadata-0", read_only=True, validate="all") as log:
            assert not log.warnings, log.warnings
            for fb in log.batches():
                assert fb.batch.raw  # every batch parses and passes its CRC (read_batch checks it)


def test_killed_roll_and_upgrade_leave_a_cluster_that_continues(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = random.Random(12)
    d = tmp_path / "c"
    ok(capsys, "cluster", "create", d, "--controllers", "3", "--brokers", "2", "--release", "3.9")
    releases = ["4.0", "4.1"]  # both run metadata.version 4.0, which the upgrades finalize
    for i in range(KILLS):
        if i % 3 == 2:
            argv = ["features", "--cluster", str(d), "upgrade", "--metadata", "4.0"]
        else:
            argv = ["cluster", "roll", str(d), "--release", releases[i % 2]]
        started = time.monotonic()
        _killed(argv, rng.uniform(0.4, 1.6))
        assert time.monotonic() - started < 60
        st = status(capsys, d)  # the cluster opens
        assert st["nodes"]
        if argv[0] == "cluster":
            ok(capsys, *argv)  # and the command, run again, finishes
            st = status(capsys, d)
            assert {n["release"] for n in st["nodes"]} == {argv[-1]}
            assert all(n["running"] for n in st["nodes"]) and st["leader"] is not None
        _logs_verify(d)
