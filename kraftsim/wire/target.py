"""What `kraftsim serve TARGET` serves: a cluster directory, or a scenario file whose cluster is
created and whose steps run first (in `--keep DIR`, or a temporary directory).

A scenario's steps run as `kraftsim scenario run` runs them; the first step that fails
unexpectedly stops the set-up with its text (exit 2: the target is not servable as asked).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from kraftsim.errors import ClusterBusyError, KraftsimError
from kraftsim.regular_file import why_absent
from kraftsim.sim import STATE_FILE, Simulation
from kraftsim.testing import ClusterShape, Step
from kraftsim.wire.control import serving_pid
from kraftsim.wire.recording import Recorder, mixed_release_steps, setup_steps, shape_of


@dataclass
class Opened:
    """The served cluster's Simulation, where it lives, and the recorder's starting point."""

    sim: Simulation
    directory: Path
    recorder: Recorder
    temporary: tempfile.TemporaryDirectory[str] | None = None
    steps: list[Step] = field(default_factory=list)

    def close(self) -> None:
        self.sim.close()
        if self.temporary is not None:
            self.temporary.cleanup()


def open_target(target: Path | str, keep: Path | str | None = None) -> Opened:
    """Open TARGET (see the module docstring); KraftsimError with a clear text when it cannot be."""
    path = Path(target)
    if path.is_dir():
        if keep is not None:
            raise KraftsimError("--keep is for a scenario file; a cluster directory is served where it is")
        if not (path / STATE_FILE).is_file():
            raise KraftsimError(f"{path}: not a cluster directory (no {STATE_FILE}; make one with "
                                "`kraftsim cluster create`)")
        pid = serving_pid(path)
        if pid is not None:  # (its lock would make this one wait, then give up: say so at once)
            raise ClusterBusyError(f"{path}: already served by process {pid} (kraftsim serve); one server per "
                                   "cluster directory: stop it first, or send it cluster commands")
        sim = Simulation.open(path)
        rec = Recorder(name=f"served {path.name}", seed=sim.seed, policy=sim.policy, shape=shape_of(sim),
                       origin_ms=sim.now_ms, steps=mixed_release_steps(sim))
        return Opened(sim, path, rec)
    if not path.is_file():
        if path.exists():  # a FIFO, a device: the scenario runner reads a regular file only
            raise KraftsimError(f"{path}: neither a cluster directory nor a scenario file (not a regular file)")
        reason = why_absent(path)  # (a symlink loop is there, not missing)
        raise KraftsimError(f"{path}: no such cluster directory or scenario file" if reason.startswith("no such")
                            else f"{path}: {reason}")
    # imported here: serving a cluster directory (the quick start) does not need the scenario runner
    from kraftsim.scenario import load_scenario, run_scenario

    scenario = load_scenario(path)
    temporary = None
    if keep is None:
        temporary = tempfile.TemporaryDirectory(prefix="kraftsim-serve-")
        directory = Path(temporary.name) / "cluster"
    else:
        directory = Path(keep)
    try:
        outcome = run_scenario(scenario, keep=directory)
        failed = [s for s in outcome.result.steps if not s.ok]
        if outcome.result.setup_error or failed:
            why = outcome.result.setup_error or f"step {failed[0].index} ({failed[0].op}): {failed[0].error}"
            raise KraftsimError(f"{path}: the scenario's set-up failed: {why}")
        sim = Simulation.open(directory)
    except BaseException:
        if temporary is not None:
            temporary.cleanup()
        raise
    c = scenario.cluster
    shape = ClusterShape(controllers=c.controllers if isinstance(c.controllers, int) else 0, brokers=c.brokers,
                         release=c.release or "", release_version=c.release_version, features=dict(c.features),
                         combined=c.combined, configs={k: str(v).lower() if isinstance(v, bool) else v
                                                       for k, v in c.configs.items()})
    catalog = str(scenario.catalog_path) if scenario.catalog_path else None
    rec = Recorder(name=scenario.name, seed=sim.seed, policy=scenario.policy, shape=shape, origin_ms=sim.now_ms,
                   catalog=catalog, steps=setup_steps(scenario.steps))
    return Opened(sim, directory, rec, temporary)
