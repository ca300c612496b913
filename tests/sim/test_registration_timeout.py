"""A broker the controller will not register shuts itself down when
initial.broker.registration.timeout.ms runs out (BrokerLifecycleManager's RegistrationTimeoutEvent).

Measured live with the timeout at 5000 ms: a 3.7.2 broker refused by a 3.8.1 controller (and a
3.9.1 broker refused by a 4.0.2 one) retried on its backoff, logged "Shutting down because we
were unable to register with the controller quorum." about 5.0 s after its first registration
request, and its process exited with code 1 (a fatal error during start-up).
"""

from __future__ import annotations

import pytest

from kraftsim.sim import SimConfig, SimError, Simulation
from tests.sim.sim_helpers import failed, scratch

REFUSAL_38 = ("Unable to register broker 2 because the controller returned error UNSUPPORTED_VERSION: Unable to "
              "register because the broker does not support version 20 of metadata.version. It wants a version "
              "between 1 and 19, inclusive.")
SHUTDOWN = "Shutting down because we were unable to register with the controller quorum."


def _state(sim: Simulation, node: int) -> tuple[str, str | None]:
    info = next(n for n in sim.nodes() if n.id == node)
    return info.state, info.detail


def test_a_refused_broker_stops_when_its_registration_timeout_runs_out() -> None:
    config = SimConfig(initial_broker_registration_timeout_ms=5000)
    with scratch() as d:
        sim = Simulation.create(d / "c", controllers=1, release="3.8.1", config=config, durable=False)
        try:
            start = sim.now_ms
            with pytest.raises(SimError, match="does not support version 20 of metadata.version"):
                sim.add_node("broker", "3.7.2")
            # the deadline runs from its first registration request, sent once it found the leader
            sim.run(start + 4900 - sim.now_ms)
            assert _state(sim, 2) == ("running", REFUSAL_38)  # still retrying
            sim.run(500)
            assert _state(sim, 2) == ("failed", f"{SHUTDOWN} (last refusal: {REFUSAL_38})")
            assert [n.id for n in sim.nodes() if n.state == "running"] == [1]
            # Started again, it gets a new deadline and meets the same end.
            sim.start([2])
            sim.run(4000)
            assert _state(sim, 2)[0] == "running"
            sim.run(1500)
            assert _state(sim, 2)[0] == "failed"
            assert not failed(sim)
        finally:
            sim.close()


def test_a_broker_that_registers_in_time_keeps_running() -> None:
    with scratch() as d:
        sim = Simulation.create(d / "c", controllers=1, brokers=1, release="3.8.1", durable=False,
                                config=SimConfig(initial_broker_registration_timeout_ms=5000))
        try:
            sim.run(20_000)
            assert [(n.id, n.state) for n in sim.nodes()] == [(1, "running"), (2, "running")]
        finally:
            sim.close()
