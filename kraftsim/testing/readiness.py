"""Which scenario ops the simulator carries out today.

The simulator may not simulate every op yet (it raises SimError "... is not simulated
yet"); a state machine must not pretend it tested what it never ran. `simulated_ops()`
asks the simulator once per process, on a one-controller cluster in a temporary
directory, and the machine's rules for the missing ops are switched off by precondition.
"""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path
from typing import Callable

from kraftsim.sim import SimError, Simulation
from kraftsim.versions import default_catalog

NOT_SIMULATED = "not simulated yet"

#: The ops whose support is probed, each as a call on a stopped or running single node.
_PROBES: tuple[tuple[str, Callable[[Simulation], object]], ...] = (
    ("snapshot", lambda sim: sim.snapshot([1])),
    ("partition", lambda sim: sim.partition([[1]])),
    ("heal", lambda sim: sim.heal()),
    ("crash", lambda sim: sim.crash([1])),
    ("disk-fault", lambda sim: sim.disk_fault([1], "torn-tail")),
    ("start", lambda sim: sim.start([1])),
)


@functools.cache
def simulated_ops() -> frozenset[str]:
    """The probed ops the simulator does not refuse as "not simulated yet"."""
    ok: set[str] = set()
    release = default_catalog().releases[-1].name
    with tempfile.TemporaryDirectory(prefix="kraftsim-probe-") as tmp:
        sim = Simulation.create(Path(tmp) / "cluster", controllers=1, release=release)
        try:
            for op, probe in _PROBES:
                try:
                    probe(sim)
                except SimError as e:
                    if NOT_SIMULATED in str(e):
                        continue
                ok.add(op)
        finally:
            sim.close()
    return frozenset(ok)


def is_simulated(op: str) -> bool:
    """Whether `op` runs on the simulator (ops not probed here always do)."""
    probed = {name for name, _ in _PROBES}
    return op not in probed or op in simulated_ops()
