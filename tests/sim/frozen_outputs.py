"""Seeded outputs to freeze: what a restructuring of kraftsim.sim must leave byte-identical.

Every shipped scenario (but the slow one at scale) runs with seed 1, and two command
sequences drive the tick engine and the event engine's faults through the CLI. What is
recorded is a SHA-256 of every printed line and of every file the runs leave (node logs,
snapshots, quorum-state, cluster.json), so a changed byte names its file.

`python3 -m tests.sim.frozen_outputs` rewrites `data/frozen_outputs.json`: run it only
from code whose outputs are known good (the data was written from main before the
simulator was restructured).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from kraftsim.scenario.suite import is_slow
from tests.paths import REPO

DATA = Path(__file__).parent / "data" / "frozen_outputs.json"
SCENARIOS = REPO / "scenarios"
SEED = "1"
#: left out for time only (it alone takes longer than everything else here together)
SLOW = {"snapshot-during-roll-at-scale"}

#: The tick engine through the CLI: create, roll, add, features, status.
TICKS: list[list[str]] = [
    ["cluster", "create", "{dir}", "--engine", "ticks", "--controllers", "3", "--brokers", "2",
     "--release", "3.7", "--seed", "7"],
    ["cluster", "roll", "{dir}", "--release", "3.9"],
    ["cluster", "add", "{dir}", "--broker", "--release", "3.9"],
    ["features", "--cluster", "{dir}", "upgrade", "--release-version", "3.9"],
    ["features", "--cluster", "{dir}", "describe"],
    ["cluster", "status", "{dir}"],
]

#: The event engine's faults through the CLI: partition, heal, crash, torn tail, wipe, start.
EVENTS: list[list[str]] = [
    ["cluster", "create", "{dir}", "--controllers", "3", "--brokers", "2", "--release", "3.9", "--seed", "5"],
    ["cluster", "partition", "{dir}", "--group", "1"],
    ["cluster", "run", "{dir}", "--ms", "5000"],
    ["cluster", "heal", "{dir}"],
    ["cluster", "crash", "{dir}", "--nodes", "2,4"],
    ["cluster", "disk-fault", "{dir}", "--nodes", "2", "--kind", "torn-tail"],
    ["cluster", "disk-fault", "{dir}", "--nodes", "4", "--kind", "wipe"],
    ["cluster", "start", "{dir}", "--nodes", "2,4"],
    ["cluster", "run", "{dir}", "--ms", "30000", "--until-stable"],
    ["cluster", "roll", "{dir}", "--release", "4.0"],
    ["features", "--cluster", "{dir}", "upgrade", "--release-version", "4.0"],
    ["cluster", "status", "{dir}"],
]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _kraftsim(args: list[str]) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "kraftsim", *args], capture_output=True, env=env, cwd=REPO,
                          check=False)


def _files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): _sha(p.read_bytes()) for p in sorted(root.rglob("*")) if p.is_file()}


def scenario_paths() -> list[Path]:
    paths = sorted(SCENARIOS.glob("*.toml")) + sorted((SCENARIOS / "from-real").glob("*.toml"))
    return [p for p in paths if p.stem not in SLOW and not is_slow(p)]


def scenario_digests(paths: list[Path]) -> dict[str, dict[str, object]]:
    """name -> the digest of its `--json` line and of every file its kept cluster holds."""
    with tempfile.TemporaryDirectory(prefix="kraftsim-frozen-") as tmp:
        keep = Path(tmp) / "keep"
        proc = _kraftsim(["scenario", "run", *map(str, paths), "--seed", SEED, "--json", "--keep", str(keep)])
        lines = proc.stdout.splitlines()
        assert len(lines) == len(paths), proc.stderr.decode(errors="replace")
        out: dict[str, dict[str, object]] = {}
        for path, line in zip(paths, lines):
            name = json.loads(line)["name"]
            out[path.stem] = {"json": _sha(line), "name": name, "files": _files(keep / name)}
        return out


def sequence_digests(commands: list[list[str]]) -> dict[str, object]:
    """Each command's exit code and output digests, then every file the cluster holds."""
    with tempfile.TemporaryDirectory(prefix="kraftsim-frozen-") as tmp:
        directory = Path(tmp) / "c"
        steps = []
        for command in commands:
            proc = _kraftsim([directory.as_posix() if a == "{dir}" else a for a in command])
            stdout = proc.stdout.replace(directory.as_posix().encode(), b"{dir}")
            stderr = proc.stderr.replace(directory.as_posix().encode(), b"{dir}")
            steps.append({"command": " ".join(command), "rc": proc.returncode, "stdout": _sha(stdout),
                          "stderr": _sha(stderr)})
        return {"steps": steps, "files": _files(directory)}


def compute() -> dict[str, object]:
    return {"seed": SEED, "scenarios": scenario_digests(scenario_paths()),
            "ticks": sequence_digests(TICKS), "events": sequence_digests(EVENTS)}


if __name__ == "__main__":
    DATA.parent.mkdir(exist_ok=True)
    DATA.write_text(json.dumps(compute(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {DATA}")
