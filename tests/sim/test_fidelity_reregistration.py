"""A restarted broker's way back into the cluster, against real Kafka's measured timings.

The figures in kraftsim/conformance/data/reregistration.toml were measured on Kafka 4.0.2,
4.4.0, 3.9.1 and 3.7.2 (one controller, one broker on 127.0.0.1; the broker stopped and started
again at once). The simulator restarts a process instantly, where Kafka's JVM takes about a
second before its first registration; the comparisons below allow for that and nothing else.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import random

from kraftsim.conformance.reregistration import Reregistration, measured_runs, simulated
from kraftsim.sim.engine.lifecycle import BACKOFF_JITTER, resend_backoff_ms
from kraftsim.versions import default_catalog

HEARTBEAT_MS = 2000
SESSION_MS = 9000
#: A request and its answer on the simulator's network (1-10 ms each way) and on loopback.
ROUND_TRIP_SLACK_MS = 30


def _kafka(signal: str, line: str) -> list[Reregistration]:
    return [r for r in measured_runs() if r.signal == signal and r.release.startswith(line)]


def _gaps(times: list[int]) -> list[int]:
    return [b - a for a, b in zip(times, times[1:])]


def test_the_measurements_show_what_the_model_follows() -> None:
    """The data the tests below compare with says what the docstrings claim."""
    four = _kafka("SIGTERM", "4.")
    assert {r.release for r in four} == {"4.0.2", "4.4.0"} and len(four) >= 4
    for r in four:
        assert len(r.refused_ms) >= 3
        assert all(HEARTBEAT_MS <= g <= HEARTBEAT_MS + ROUND_TRIP_SLACK_MS for g in _gaps(r.refused_ms))
        assert 0 < r.unfenced_ms - r.registered_ms <= 100
    (kill39,) = _kafka("SIGKILL", "3.9")
    mean = [min(100 * 2**i, SESSION_MS) for i in range(len(kill39.refused_ms) - 1)]
    assert all(abs(g - m) <= m * BACKOFF_JITTER + ROUND_TRIP_SLACK_MS for g, m in zip(_gaps(kill39.refused_ms), mean))


@pytest.mark.parametrize("release", ["4.0", "4.4"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_rolled_broker_is_unfenced_within_kafkas_measured_range(release: str, seed: int) -> None:
    kafka = _kafka("SIGTERM", "4.")
    ours = simulated(release, seed=seed)
    low, high = min(r.unfenced_ms for r in kafka), max(r.unfenced_ms for r in kafka)
    assert low <= ours.unfenced_ms <= high, (ours.describe(), low, high)
    # refused every heartbeat interval until the old session expired, as Kafka 4.x
    assert len(ours.refused_ms) >= 4
    assert all(HEARTBEAT_MS <= g <= HEARTBEAT_MS + ROUND_TRIP_SLACK_MS for g in _gaps(ours.refused_ms))
    assert ours.registered_ms >= SESSION_MS
    # fast heartbeats while it catches up: unfenced within Kafka's ~50 ms of registering, not a heartbeat later
    assert 0 < ours.unfenced_ms - ours.registered_ms <= 100


@pytest.mark.parametrize("seed", [0, 1])
def test_a_crashed_3x_broker_backs_off_as_kafka_3_9_did(seed: int) -> None:
    (kafka,) = _kafka("SIGKILL", "3.9")
    ours = simulated("3.9", seed=seed, kill=True)
    kafka_gaps, our_gaps = _gaps(kafka.refused_ms), _gaps(ours.refused_ms)
    assert len(our_gaps) >= len(kafka_gaps)
    for k, o in zip(kafka_gaps, our_gaps):
        assert abs(k - o) <= 2 * BACKOFF_JITTER * k + ROUND_TRIP_SLACK_MS, (kafka_gaps, our_gaps)
    # from its first attempt, it gets in when Kafka did (the rest is the JVM's start-up)
    kafka_wait, our_wait = kafka.registered_ms - kafka.refused_ms[0], ours.registered_ms - ours.refused_ms[0]
    assert abs(kafka_wait - our_wait) <= 0.05 * kafka_wait, (kafka_wait, our_wait)


def test_a_crashed_4x_broker_retries_every_heartbeat_interval() -> None:
    (kafka,) = _kafka("SIGKILL", "4.4")
    ours = simulated("4.4", kill=True)
    for gaps in (_gaps(kafka.refused_ms), _gaps(ours.refused_ms)):
        assert gaps and all(HEARTBEAT_MS <= g <= HEARTBEAT_MS + ROUND_TRIP_SLACK_MS for g in gaps)
    # the old session is at most a heartbeat interval older than the crash
    assert SESSION_MS - HEARTBEAT_MS <= ours.registered_ms <= SESSION_MS + HEARTBEAT_MS + ROUND_TRIP_SLACK_MS


@pytest.mark.parametrize("release", ["3.7", "3.9"])
@pytest.mark.parametrize("seed", [0, 1])
def test_a_cleanly_stopped_3x_broker_registers_at_once(release: str, seed: int) -> None:
    """Kafka 3.x's controller gives a fenced broker no live session (policy
    broker_session), so a broker back from a controlled shutdown is not refused."""
    (kafka,) = _kafka("SIGTERM", release)  # 3.7.2, 3.9.1
    assert kafka.refused_ms == [] and kafka.unfenced_ms < HEARTBEAT_MS + 1000  # about 1 s of it is JVM start-up
    ours = simulated(release, seed=seed)
    assert ours.refused_ms == [], ours.describe()
    # its first registration is the one accepted, a round trip after the (instant) restart
    assert 0 < ours.registered_ms - ours.started_ms <= ROUND_TRIP_SLACK_MS, ours.describe()
    # unfenced no later after registering than Kafka's broker was, and long before a session could expire
    assert 0 < ours.unfenced_ms - ours.registered_ms <= kafka.unfenced_ms - kafka.registered_ms, ours.describe()
    assert ours.unfenced_ms < HEARTBEAT_MS


def test_same_seed_same_figures_and_the_jitter_is_seeded() -> None:
    a, b = simulated("3.9", seed=5, kill=True), simulated("3.9", seed=5, kill=True)
    assert a == b
    c = simulated("3.9", seed=6, kill=True)
    assert _gaps(a.refused_ms) != _gaps(c.refused_ms)


def test_the_release_lines_follow_the_measured_schedules() -> None:
    catalog = default_catalog()
    for line in ("3.7", "3.8", "3.9"):
        assert catalog.at_release(line).policy("broker_resend_backoff") == "exponential"
        assert catalog.at_release(line).policy("broker_session") == "unfenced"
    for line in ("4.0", "4.1", "4.2", "4.3", "4.4"):
        assert catalog.at_release(line).policy("broker_resend_backoff") == "heartbeat-interval"
        assert catalog.at_release(line).policy("broker_session") == "epoch"


@settings(max_examples=60, deadline=None)
@given(failures=st.integers(0, 40), seed=st.integers(0, 2**32 - 1))
def test_exponential_backoff_doubles_from_100_ms_to_the_session_timeout(failures: int, seed: int) -> None:
    delay = resend_backoff_ms("exponential", failures, heartbeat_interval_ms=HEARTBEAT_MS,
                              session_timeout_ms=SESSION_MS, jitter_rng=random.Random(seed))
    mean = min(100 * 2**failures, SESSION_MS)
    assert int(mean * (1 - BACKOFF_JITTER)) <= delay <= min(mean * (1 + BACKOFF_JITTER), SESSION_MS)
    assert resend_backoff_ms("exponential", failures, heartbeat_interval_ms=HEARTBEAT_MS,
                             session_timeout_ms=SESSION_MS) == mean
    assert resend_backoff_ms("heartbeat-interval", failures, heartbeat_interval_ms=HEARTBEAT_MS,
                             session_timeout_ms=SESSION_MS, jitter_rng=random.Random(seed)) == HEARTBEAT_MS
