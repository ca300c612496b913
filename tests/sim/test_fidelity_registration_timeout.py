"""A refused broker's retries and its registration timeout, against real Kafka's measured timings.

The figures in kraftsim/conformance/data/registration_timeout.toml were measured with a 3.8.1
controller and a 3.7.2 broker, and a 4.0.2 controller and a 3.9.1 broker, the broker's
initial.broker.registration.timeout.ms at 5000 (registration_timeout.measure). Times count from
the first refusal; Kafka arms its deadline just before the first registration is sent, whose
answer takes a few tens of milliseconds (up to 150 ms measured), the simulator's a few.
"""

from __future__ import annotations

import pytest

from kraftsim.conformance.registration_timeout import RegistrationTimeout, measured_runs, simulated
from kraftsim.sim.engine.lifecycle import BACKOFF_JITTER

TIMEOUT_MS = 5000
#: Kafka's first registration answer came 24-143 ms after its deadline was armed.
FIRST_ANSWER_MS = 150
#: A request and its answer on loopback or on the simulator's network.
ROUND_TRIP_SLACK_MS = 80


def _gaps(times: list[int]) -> list[int]:
    return [b - a for a, b in zip(times, times[1:])]


def _pair(run: RegistrationTimeout) -> tuple[str, str]:
    return run.controller.removeprefix("kraftsim "), run.broker.removeprefix("kraftsim ")


def test_the_measurements_show_what_the_model_follows() -> None:
    runs = measured_runs()
    assert {_pair(r) for r in runs} == {("3.8.1", "3.7.2"), ("4.0.2", "3.9.1")}
    for r in runs:
        assert r.exit_code == 1 and r.timeout_ms == TIMEOUT_MS
        assert TIMEOUT_MS - FIRST_ANSWER_MS <= r.shutdown_ms <= TIMEOUT_MS, r.describe()
        mean = [100 * 2**i for i in range(len(r.refused_ms) - 1)]  # 3.x brokers: exponential backoff
        assert all(abs(g - m) <= m * BACKOFF_JITTER + ROUND_TRIP_SLACK_MS for g, m in zip(_gaps(r.refused_ms), mean))


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("pair", [("3.8.1", "3.7.2"), ("4.0", "3.9.1")])
def test_the_simulated_broker_gives_up_when_kafkas_does(pair: tuple[str, str], seed: int) -> None:
    ours = simulated(*pair, timeout_ms=TIMEOUT_MS, seed=seed)
    kafka = [r for r in measured_runs() if _pair(r)[0].startswith(pair[0]) and _pair(r)[1] == pair[1]]
    assert kafka
    assert TIMEOUT_MS - FIRST_ANSWER_MS <= ours.shutdown_ms <= TIMEOUT_MS, ours.describe()
    assert len(ours.refused_ms) == len(kafka[0].refused_ms), (ours.describe(), kafka[0].describe())
    for k in kafka:  # the same backoff between refusals
        assert all(abs(a - b) <= ROUND_TRIP_SLACK_MS + 2 * BACKOFF_JITTER * b
                   for a, b in zip(_gaps(ours.refused_ms), _gaps(k.refused_ms))), (ours.describe(), k.describe())
        assert ours.refusal == k.refusal  # the controller release's own words
