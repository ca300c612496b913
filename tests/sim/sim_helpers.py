"""Helpers for the event-simulation tests: fast scratch directories, many seeds, failing invariants."""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kraftsim.sim import InvariantResult, SimConfig, Simulation

#: Seeds per fault scenario (Kafka's RaftEventSimulationTest runs its scenarios over many seeds too).
SEEDS = range(100)


@contextmanager
def scratch() -> Iterator[Path]:
    """A scratch directory, in memory where the machine has /dev/shm (these tests write many small files)."""
    base = "/dev/shm" if Path("/dev/shm").is_dir() else None
    d = Path(tempfile.mkdtemp(prefix="kraftsim-sim-", dir=base))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def failed(sim: Simulation) -> list[InvariantResult]:
    return [r for r in sim.invariants() if not r.ok]


def over_seeds(scenario: Callable[[Simulation], None], *, seeds=SEEDS, config: SimConfig | None = None,
               **create: object) -> dict[int, Simulation]:
    """Run `scenario` on a fresh cluster per seed; every invariant must hold after every event.
    Returns nothing kept open: each simulation is closed after its scenario."""
    params = {"controllers": 3, "release": "4.1", **create}
    with scratch() as base:
        for seed in seeds:
            sim = Simulation.create(base / f"s{seed}", seed=seed, config=config, durable=False, **params)
            try:
                scenario(sim)
                bad = failed(sim)
                assert not bad, f"seed {seed}: {bad}"
            except Exception as e:
                raise AssertionError(f"seed {seed}: {e}") from e
            finally:
                sim.close()
    return {}


def tree_digest(directory: Path) -> str:
    """A digest of every file's relative path and bytes under `directory`."""
    h = hashlib.sha256()
    for p in sorted(directory.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(directory)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()
