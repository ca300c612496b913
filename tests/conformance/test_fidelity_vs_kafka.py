"""The simulator's restart timing, a refused broker's registration timeout and kraftsim's
meta.properties and bootstrap start refusals against live Kafka (`kafka` marker; see conftest.py for the
releases and the skip rule).

Each case starts real JVMs (bounded, on 127.0.0.1, killed with their process group): the
restart measurement about 30 s on 4.x and 10 s on 3.x (the oldest CI release is always
measured too, for the 3.x rule), the registration timeout about 15 s per pair, each
meta.properties variant a few seconds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, TypeVar

import pytest

from kraftsim.conformance.registration_timeout import measure as registration_measure
from kraftsim.conformance.registration_timeout import simulated as registration_simulated
from kraftsim.conformance.reregistration import measure, simulated
from kraftsim.conformance.start_refusal import VARIANTS, kafka_start_answer, kafka_start_answer_after
from kraftsim.storage.bootstrap import write_bootstrap
from kraftsim.storage.bootstrap_builder import feature_level_payload
from kraftsim.storage.bootstrap_start import bootstrap_start_refusal
from kraftsim.versions import default_catalog
from kraftsim.storage.meta_properties import kraft_start_refusal
from tests.conformance.conftest import kafka_dist, live_releases, releases

pytestmark = pytest.mark.kafka

HEARTBEAT_MS = 2000  # broker.heartbeat.interval.ms
SESSION_MS = 9000  # broker.session.timeout.ms
#: The simulator's figures are simulated time: exact up to its own message delays.
SLACK_MS = 100
#: Kafka's figures are wall-clock times read from a JVM that shares a 2-core machine with other
#: work: its timers fire late and its start-up stretches when the machine is loaded (a restarted
#: 3.7.2 broker registered 2.5 s after its first log line on one slow machine, 0.5-1 s on a quiet
#: one). Half a heartbeat interval still separates every behaviour compared here: 4.x's fixed
#: 2 s retries from 3.x's backoff doubling from 100 ms, and registering before the old session
#: expires (3.x) from registering only after it (4.x).
KAFKA_SLACK_MS = HEARTBEAT_MS // 2

R = TypeVar("R")


def _gaps(times: list[int]) -> list[int]:
    return [b - a for a, b in zip(times, times[1:])]


def _retaken(measure_once: Callable[[], R], kafka_disagrees: Callable[[R], str | None]) -> R:
    """A live JVM's wall-clock figures, taken once more with a fresh JVM when the first run's did
    not fit: on a loaded 2-core machine one late timer or a stretched start-up can push a single
    run past its tolerance (seen in CI: a 3.7.2 broker registering 2.5 s after restart). A
    behaviour that really differs fails both runs; the second must fit."""
    run = measure_once()
    first = kafka_disagrees(run)
    if first is None:
        return run
    run = measure_once()
    again = kafka_disagrees(run)
    assert again is None, f"twice: {first}; then {again}"
    return run


def _rejoin_disagreement(version_line: tuple[int, ...], kafka: Any, ours: Any) -> str | None:
    """Why Kafka's restart figures do not fit the rule both should follow, or None."""
    if version_line < (4, 0):
        # 3.x: the broker was fenced by its controlled shutdown, so it holds no session and its
        # new incarnation gets in at the first attempt; registered long before the old session
        # could have expired, once Kafka's JVM start-up is taken off
        if kafka.refused_ms or not 0 < kafka.unfenced_ms - kafka.registered_ms <= KAFKA_SLACK_MS \
                or not kafka.registered_ms - kafka.started_ms < SESSION_MS - HEARTBEAT_MS:
            return kafka.describe()
        return None
    # 4.x: refused until the old session expires, retried every heartbeat interval; it registers on
    # the first retry after the session expires: where in the 2 s cycle that falls depends on its
    # JVM's start-up, so the two agree within one heartbeat interval
    if len(kafka.refused_ms) < 3 \
            or not all(HEARTBEAT_MS <= g <= HEARTBEAT_MS + KAFKA_SLACK_MS for g in _gaps(kafka.refused_ms)) \
            or not 0 < kafka.unfenced_ms - kafka.registered_ms <= KAFKA_SLACK_MS \
            or abs(kafka.unfenced_ms - ours.unfenced_ms) > HEARTBEAT_MS + KAFKA_SLACK_MS:
        return f"{kafka.describe()} against {ours.describe()}"
    return None


@pytest.mark.parametrize("version", sorted({releases()[0], *live_releases()}))
def test_a_restarted_broker_rejoins_when_the_simulator_says(version: str, tmp_path: Path) -> None:
    dist = kafka_dist(version)
    ours = simulated(dist.release.line)
    line = dist.release.line_tuple
    attempts = iter(("first", "second"))
    _retaken(lambda: measure(dist, tmp_path / next(attempts)), lambda k: _rejoin_disagreement(line, k, ours))
    # the simulator's own figures are simulated time: tight bounds, no retake
    if line < (4, 0):
        assert ours.refused_ms == [], ours.describe()
        assert 0 < ours.unfenced_ms - ours.registered_ms <= 4 * SLACK_MS, ours.describe()
        assert ours.unfenced_ms < HEARTBEAT_MS, ours.describe()
        return
    assert len(ours.refused_ms) >= 3, ours.describe()
    assert all(HEARTBEAT_MS <= g <= HEARTBEAT_MS + SLACK_MS for g in _gaps(ours.refused_ms)), ours.describe()
    assert 0 < ours.unfenced_ms - ours.registered_ms <= SLACK_MS, ours.describe()


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("version", sorted({releases()[0], *live_releases()}))
def test_meta_properties_start_refusal_is_kafkas(version: str, variant: str, tmp_path: Path) -> None:
    dist = kafka_dist(version)
    answer = kafka_start_answer(dist, tmp_path / "kafka", VARIANTS[variant])
    ours = kraft_start_refusal(answer.log_dir, 1)
    assert answer.fatal is not None, f"Kafka {version} started on {variant!r}"
    assert ours is not None and ours.text == answer.fatal


@pytest.mark.parametrize("controller, broker", [("3.8.1", "3.7.2"), ("4.0.2", "3.7.2")])
def test_a_refused_broker_gives_up_when_the_simulator_says(controller: str, broker: str, tmp_path: Path) -> None:
    """A broker of a release below the controller's metadata.version, with a 5 s registration
    timeout: refused in the controller release's words, retried, then shut down (exit 1),
    about 5 s after its first refusal, in both."""
    ours = registration_simulated(kafka_dist(controller).release.line, broker, timeout_ms=5000)
    attempts = iter(("first", "second"))

    def disagreement(kafka: Any) -> str | None:
        fits = (kafka.exit_code == 1 and kafka.refusal == ours.refusal
                and 5000 - 3 * SLACK_MS <= kafka.shutdown_ms <= 5000 and len(ours.refused_ms) == len(kafka.refused_ms))
        return None if fits else f"{kafka.describe()} against {ours.describe()}"

    _retaken(lambda: registration_measure(kafka_dist(controller), kafka_dist(broker), tmp_path / next(attempts),
                                          timeout_ms=5000), disagreement)
    assert 5000 - 3 * SLACK_MS <= ours.shutdown_ms <= 5000, ours.describe()


def _checks_bootstrap_at_start(version: str) -> bool:
    """3.x checks the bootstrap file when it starts; 4.x only when a controller activates on an
    empty log (policy bootstrap_metadata_version = at-activation), which kraftsim leaves out."""
    return default_catalog().at_release(version).policy("bootstrap_metadata_version") != "at-activation"


@pytest.mark.parametrize("version", sorted(v for v in {releases()[0], *live_releases()} if _checks_bootstrap_at_start(v)))
def test_a_bootstrap_metadata_version_the_release_does_not_list_stops_it_as_kafka_does(
        version: str, tmp_path: Path) -> None:
    """bootstrap.checkpoint rewritten at the level above the release's latest testing one (what a
    newer release formats): Kafka stops before opening its log, and kraftsim's start-up check
    says the same words (policy bootstrap_metadata_version)."""
    dist = kafka_dist(version)
    line = default_catalog().at_release(dist.release.line)
    level = line.latest_testing.level + 1
    answer = kafka_start_answer_after(dist, tmp_path / "kafka", lambda data: write_bootstrap(
        data, [feature_level_payload("metadata.version", level)], time_ms=0))
    assert answer.fatal is not None and "No MetadataVersion with " in answer.fatal, f"Kafka {version} started"
    assert bootstrap_start_refusal(answer.log_dir, line) == answer.fatal
