"""`kraftsim ARGS...` with the deep invariants (ImageMatchesLog, SnapshotMatchesLog) not
checked: a measuring tool for `bench_scale.py --without-deep-checks`, not a product option.
It splits a run's cost into the simulation's own and its deep checks', which replay every
node's files; the cheap invariants are still checked on every event, and a run whose deep
checks pass gives the same `--json` bytes either way (nothing the checks do is output)."""

from __future__ import annotations

import sys

from kraftsim.cli.main import main
from kraftsim.sim.engine.core import Engine


def _not_checked(self: Engine, label: str) -> None:
    """Engine.check_deep's stand-in: nothing replayed."""


def turn_off_deep_checks() -> None:
    """From now on in this process, no operation ends with the deep checks."""
    Engine.check_deep = _not_checked  # type: ignore[method-assign]


if __name__ == "__main__":
    turn_off_deep_checks()
    sys.argv = ["kraftsim", *sys.argv[1:]]
    sys.exit(main())
