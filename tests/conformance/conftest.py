"""Real Kafka for the conformance tests: which releases, fetched once, and the skip rule.

Tests marked `kafka` need Java 17+, Maven and Maven Central. Where those are missing they
skip with the reason; with KRAFTSIM_REQUIRE_KAFKA=1 (set by CI) such a skip is turned
into a failure, so the suite cannot pass without having compared kraftsim with Kafka.
KRAFTSIM_CONFORMANCE_RELEASES picks the releases (comma-separated versions or lines, or
"all" for every default release); the default is the CI set below.
"""

from __future__ import annotations

import os

import pytest

from kraftsim.conformance.dist import KafkaDist, KafkaUnavailable, default_releases, fetch, resolve_release

# The releases CI compares with (a fresh machine fetches them in about half a minute):
# the oldest line, the first 4.x line, and the newest two, whose rules kraftsim's
# catalog is still catching up with. `KRAFTSIM_CONFORMANCE_RELEASES=all` runs every line.
CI_RELEASES = ("3.7.2", "4.0.2", "4.3.1", "4.4.0")
# The live node costs a JVM per command; CI runs it on a 3.x release, whose controller decides
# each update of a request on its own, and on 4.0.2, whose controller is all-or-nothing.
CI_LIVE_RELEASES = ("3.7.2", "4.0.2")
# A live node with unstable versions enabled finalizing its release's placeholder level: the two
# newest lines, whose placeholders (4.4-IV0, 4.5-IV0) users try first.
CI_UNSTABLE_RELEASES = ("4.3.1", "4.4.0")
# The rolling upgrade (a node start per release): 3.7 -> 3.8 brings the rollback case.
CI_ROLL_RELEASES = ("3.7.2", "3.8.1", "4.0.2", "4.4.0")

REQUIRE_KAFKA = os.environ.get("KRAFTSIM_REQUIRE_KAFKA") == "1"


def _selected(env: str, default: tuple[str, ...]) -> list[str]:
    text = os.environ.get(env, "").strip()
    if not text:
        return list(default)
    if text == "all":
        return [r.version for r in default_releases()]
    return [resolve_release(v.strip()).version for v in text.split(",") if v.strip()]


def releases() -> list[str]:
    return _selected("KRAFTSIM_CONFORMANCE_RELEASES", CI_RELEASES)


def live_releases() -> list[str]:
    return _selected("KRAFTSIM_CONFORMANCE_LIVE_RELEASES", CI_LIVE_RELEASES)


def unstable_releases() -> list[str]:
    return _selected("KRAFTSIM_CONFORMANCE_UNSTABLE_RELEASES", CI_UNSTABLE_RELEASES)


def roll_releases() -> list[str]:
    chosen = _selected("KRAFTSIM_CONFORMANCE_ROLL_RELEASES", CI_ROLL_RELEASES)
    return sorted(chosen, key=lambda v: tuple(int(x) for x in v.split(".")))


_dists: dict[str, KafkaDist | str] = {}


def kafka_dist(version: str) -> KafkaDist:
    """The release's jars (fetched once per session), or a skip saying why Kafka cannot run."""
    if version not in _dists:
        try:
            _dists[version] = fetch(resolve_release(version))
        except KafkaUnavailable as e:
            _dists[version] = str(e)
    found = _dists[version]
    if isinstance(found, str):
        pytest.skip(f"real Kafka {version} cannot run here: {found}")
    return found


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """With KRAFTSIM_REQUIRE_KAFKA=1, a skipped `kafka` test fails."""
    outcome = yield
    report = outcome.get_result()
    if REQUIRE_KAFKA and report.skipped and item.get_closest_marker("kafka") is not None:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"KRAFTSIM_REQUIRE_KAFKA=1, but this Kafka test was skipped: {reason}"
