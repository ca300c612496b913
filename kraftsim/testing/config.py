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
from typing import Callable, TypeVar

DEFAULT_REPRO_DIR = Path(".kraftsim") / "repro"
DEFAULT_SEED = 0

#: Set by the pytest plugin from its options; None when not given.
option_repro_dir: Path | None = None
option_seed: int | None = None


T = TypeVar("T")


def _resolved(own: T | None, option: T | None, env: str, convert: Callable[[str], T], default: T) -> T:
    """The machine's own value, else the pytest option's, else the environment's, else the default."""
    if own is not None:
        return own
    if option is not None:
        return option
    value = os.environ.get(env)
    return convert(value) if value else default


def repro_dir(own: str | Path | None = None) -> Path:
    return _resolved(None if own is None else Path(own), option_repro_dir, "KRAFTSIM_REPRO_DIR", Path,
                     DEFAULT_REPRO_DIR)


def seed(own: int | None = None) -> int:
    return _resolved(own, option_seed, "KRAFTSIM_SEED", int, DEFAULT_SEED)


#: `--kraftsim-shrink-budget`: seconds a machine may shrink a counterexample (None: not given).
option_shrink_budget: float | None = None
#: `--kraftsim-replay`: a machine's scenario file its machine replays instead of exploring.
option_replay: Path | None = None
DEFAULT_SHRINK_BUDGET_S = 60.0


def shrink_budget(own: float | None = None) -> float:
    """Seconds from the first failing example after which the best counterexample so far is
    written (kraftsim.testing.shrink_budget)."""
    return _resolved(own, option_shrink_budget, "KRAFTSIM_SHRINK_BUDGET", float, DEFAULT_SHRINK_BUDGET_S)
