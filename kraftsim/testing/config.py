"""Settings the pytest plugin passes to state machines (no pytest import here).

The repro directory is where counterexamples are written as scenario files; the seed is
the simulator's seed (the simulated network's and elections' randomness), not
hypothesis's. Resolution order: the machine class's own attribute, the pytest option
(`--kraftsim-repro-dir`, `--kraftsim-seed`), the environment (`KRAFTSIM_REPRO_DIR`,
`KRAFTSIM_SEED`), the default. The shrink budget resolves the same way
(`shrink_budget_s`, `--kraftsim-shrink-budget`, `KRAFTSIM_SHRINK_BUDGET`, 60 s).
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_REPRO_DIR = Path(".kraftsim") / "repro"
DEFAULT_SEED = 0

#: Set by the pytest plugin from its options; None when not given.
option_repro_dir: Path | None = None
option_seed: int | None = None


def repro_dir(own: str | Path | None = None) -> Path:
    if own is not None:
        return Path(own)
    if option_repro_dir is not None:
        return option_repro_dir
    env = os.environ.get("KRAFTSIM_REPRO_DIR")
    return Path(env) if env else DEFAULT_REPRO_DIR


def seed(own: int | None = None) -> int:
    if own is not None:
        return own
    if option_seed is not None:
        return option_seed
    env = os.environ.get("KRAFTSIM_SEED")
    return int(env) if env else DEFAULT_SEED


#: `--kraftsim-shrink-budget`: seconds a machine may shrink a counterexample (None: not given).
option_shrink_budget: float | None = None
#: `--kraftsim-replay`: a machine's scenario file its machine replays instead of exploring.
option_replay: Path | None = None
DEFAULT_SHRINK_BUDGET_S = 60.0


def shrink_budget(own: float | None = None) -> float:
    """Seconds from the first failing example after which the best counterexample so far is
    written (kraftsim.testing.shrink_budget)."""
    if own is not None:
        return own
    if option_shrink_budget is not None:
        return option_shrink_budget
    env = os.environ.get("KRAFTSIM_SHRINK_BUDGET")
    return float(env) if env else DEFAULT_SHRINK_BUDGET_S
