"""Progress on stderr for the commands that can run long (scenario run, cluster run, demo,
log verify, export): a status line with `--progress` or on a terminal, silent for quick
runs, never on stdout, so `--json` and piped output stay byte-for-byte the same."""

from __future__ import annotations

import io
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

from kraftsim.cli import progress as progress_module
from kraftsim.cli.main import main
from kraftsim.cli.progress import StatusLine
from kraftsim.scenario import load_scenario
from kraftsim.scenario.runner import run_scenario
from kraftsim.textsafe import SafeTerminal

from tests.scenario.helpers import SUITE

SCENARIO = "leader-crash-mid-roll"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_status_line_is_silent_at_first_then_throttled_and_cleared() -> None:
    out, clock = io.StringIO(), Clock()
    status = StatusLine(True, out=out, clock=clock)
    built: list[int] = []

    def text() -> str:
        built.append(1)
        return f"step {len(built)}"

    status(text)
    assert out.getvalue() == "" and not built  # a quick command prints nothing, builds nothing
    clock.now += progress_module.AFTER_S
    status(text)
    assert out.getvalue() == "\rkraftsim: step 1\x1b[K"
    clock.now += progress_module.EVERY_S / 2
    status(text)
    assert len(built) == 1  # not redrawn before EVERY_S
    clock.now += progress_module.EVERY_S
    status(text)
    status.clear()
    status.clear()  # once is enough
    assert out.getvalue() == "\rkraftsim: step 1\x1b[K\rkraftsim: step 2\x1b[K\r\x1b[K"
    off = io.StringIO()
    quiet = StatusLine(False, out=off, clock=clock)
    clock.now += 100
    quiet(text)
    quiet.clear()
    assert off.getvalue() == ""


def test_on_a_guarded_terminal_only_the_own_controls_pass() -> None:
    """A name read from a file cannot move the cursor through the status line."""
    raw, clock = io.StringIO(), Clock()
    status = StatusLine(True, out=SafeTerminal(raw), clock=clock)
    clock.now += progress_module.AFTER_S
    status(lambda: "log verify: file 1 of 1: evil\x1b[2J\rname")
    status.clear()
    assert raw.getvalue() == "\rkraftsim: log verify: file 1 of 1: evil\\x1b[2J\\x0dname\x1b[K\r\x1b[K"


@pytest.fixture
def at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every update is drawn (the clock is not what these tests are about)."""
    monkeypatch.setattr(progress_module, "AFTER_S", 0.0)
    monkeypatch.setattr(progress_module, "EVERY_S", 0.0)


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    got = capsys.readouterr()
    return code, got.out, got.err


@pytest.mark.usefixtures("at_once")
@pytest.mark.parametrize("json_flag", [["--json"], []])
def test_scenario_run_reports_the_running_step_on_stderr_only(capsys: pytest.CaptureFixture[str],
                                                             json_flag: list[str]) -> None:
    code, plain, err = _cli(capsys, "scenario", "run", SCENARIO, "--seed", "3", *json_flag)
    assert code == 0 and err == ""  # stderr is no terminal: no progress unless asked
    code, shown, err = _cli(capsys, "scenario", "run", SCENARIO, "--seed", "3", "--progress", *json_flag)
    assert code == 0 and shown == plain  # stdout byte for byte the same
    lines = [x for x in err.split("\r") if x]
    steps = len(load_scenario(SUITE / f"{SCENARIO}.toml").steps)
    assert any(x.startswith(f"kraftsim: scenario {SCENARIO}: step 1/{steps} (") for x in lines)
    assert any(f"step {steps}/{steps} (" in x and "simulated time +" in x for x in lines)
    assert err.endswith("\r\x1b[K")  # cleared before the results


def test_runner_progress_follows_the_steps_in_simulated_time() -> None:
    heard: list[tuple[int, int]] = []
    run = run_scenario(load_scenario(SUITE / f"{SCENARIO}.toml"), on_progress=lambda i, ms: heard.append((i, ms)))
    assert heard and heard == sorted(heard)  # step and time only go forward
    assert {i for i, _ in heard} == {r.index for r in run.result.steps}
    ends = {r.index: r.time_ms for r in run.result.steps}
    assert all(ms <= ends[i] for i, ms in heard)  # within the step's simulated time
    plain = run_scenario(load_scenario(SUITE / f"{SCENARIO}.toml"))
    assert plain.result == run.result  # listening changes nothing


@pytest.mark.usefixtures("at_once")
def test_cluster_run_log_verify_and_export_progress(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = tmp_path / "c"
    assert main(["cluster", "create", str(cluster), "--controllers", "1", "--brokers", "1", "--release", "3.9"]) == 0
    capsys.readouterr()
    code, out, err = _cli(capsys, "cluster", "run", str(cluster), "--ms", "2000", "--json", "--progress")
    assert code == 0 and '"time_ms"' in out and "kraftsim" not in out
    assert "kraftsim: cluster run: simulated time +" in err and " of +" in err and err.endswith("\r\x1b[K")
    code, plain, _ = _cli(capsys, "log", "verify", str(cluster / "node-1"))
    code, out, err = _cli(capsys, "log", "verify", str(cluster / "node-1"), "--progress")
    assert code == 0 and out == plain
    assert "kraftsim: log verify: file 1 of " in err and err.endswith("\r\x1b[K")
    code, out, err = _cli(capsys, "export", str(cluster / "node-1"), "-o", str(tmp_path / "r.parquet"), "--progress")
    assert code == 0 and out.startswith("wrote ")
    assert "kraftsim: export: " in err and " records" in err and err.endswith("\r\x1b[K")


def test_on_a_terminal_stdout_stays_the_json(tmp_path: Path) -> None:
    """stderr a real pty (progress on), stdout a pipe: stdout is what it is without the pty,
    and whatever reached the terminal is status lines, cleared at the end."""
    argv = [sys.executable, "-m", "kraftsim", "scenario", "run", SCENARIO, "--seed", "3", "--json"]  # about 1 s
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    piped = subprocess.run(argv, capture_output=True, env=env, timeout=600)
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    seen = b""
    while True:  # drain the terminal while the run goes on (bounded by the process's life)
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the other end closed
                break
            if not chunk:
                break
            seen += chunk
        elif proc.poll() is not None:
            break
    out = proc.stdout.read() if proc.stdout else b""
    assert proc.wait(timeout=600) == 0 and piped.returncode == 0
    os.close(master)
    assert out == piped.stdout
    text = seen.decode()
    assert all(x.startswith(f"kraftsim: scenario {SCENARIO}: ") or x in ("", "\x1b[K")
               for x in text.split("\r")), text[-500:]
    assert not text or text.endswith("\r\x1b[K")
