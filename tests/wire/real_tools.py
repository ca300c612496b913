"""Kafka's own command-line tools, run from a fetched release's jars, for the tests that hold
kraftsim's output against theirs."""

from __future__ import annotations

import subprocess

import pytest

from kraftsim.conformance.dist import KafkaDist, KafkaUnavailable, fetch, resolve_release
from kraftsim.conformance.tools import TOOL_TIMEOUT_S, log_config_options


def kafka_dist(release: str) -> KafkaDist:
    """The release's jars, fetched once; the test is skipped where Kafka cannot run."""
    try:
        return fetch(resolve_release(release))
    except KafkaUnavailable as e:
        pytest.skip(f"Kafka {release} cannot run here: {e}")


def run_tool(dist: KafkaDist, main_class: str, *args: str) -> subprocess.CompletedProcess[str]:
    """One run of the tool `main_class` in a small JVM (bounded by the conformance suite's timeout)."""
    cmd = [str(dist.java.path), "-Xmx256m", "-XX:TieredStopAtLevel=1", *log_config_options(dist), "-cp",
           dist.classpath, main_class, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)
