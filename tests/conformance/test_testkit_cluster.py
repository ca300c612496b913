"""Kafka's in-process test cluster (kraftsim.conformance.testkit_cluster), the real side of
`bench_serve --cluster`: the probe builds for the release, the cluster's brokers answer
ApiVersions on the ports asked for, on loopback only, and advertise the same API versions
as a broker of `kraftsim serve` on the same release. The source variants are checked offline.
"""

from __future__ import annotations

import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

import kraftsim
from kraftsim.conformance import testkit_cluster as kit
from kraftsim.conformance.dist import KafkaUnavailable
from kraftsim.conformance.tools import kill_group
from kraftsim.conformance.wire_client import api_versions
from tests.conformance.conftest import kafka_dist

RELEASE = "4.3.1"  # the newest release whose test kit Maven Central serves whole (see testkit_cluster)


def _api_ranges(answer: dict) -> dict[int, tuple[int, int]]:
    return {k["ApiKey"]: (k["MinVersion"], k["MaxVersion"]) for k in answer["ApiKeys"]}


def _other_interface() -> str | None:
    """An address of this machine other than loopback, if it has one."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the outgoing interface
            address = s.getsockname()[0]
    except OSError:
        return None
    return None if address.startswith("127.") else address


@pytest.mark.kafka
def test_the_probe_builds_and_every_broker_answers_as_a_served_broker_does() -> None:
    dist = kafka_dist(RELEASE)
    try:
        dist = kit.with_testkit(dist)
    except KafkaUnavailable as e:
        pytest.skip(f"Kafka {RELEASE}'s test kit cannot be fetched here: {e}")
    with tempfile.TemporaryDirectory(prefix="kraftsim-testkit-") as tmp:
        work = Path(tmp)
        ports = kit.free_ports(3)
        cmd = kit.command(dist, controllers=3, brokers=3, base_dir=work / "cluster", broker_ports=ports,
                          heap="768m", log_file=work / "server.log")
        proc = kit.spawn(cmd, work, work / "probe.out")
        try:
            from benchmarks.bench_serve import first_answers

            answered = first_answers([("127.0.0.1", p) for p in ports], time.perf_counter(), time.monotonic() + 180,
                                     proc.pid)
            assert len(answered) == 3
            answers = [api_versions("127.0.0.1", p) for p in ports]
            other = _other_interface()
            if other is not None:  # every listener is on loopback only
                for port in ports:
                    with pytest.raises(OSError):
                        socket.create_connection((other, port), timeout=5).close()
        finally:
            if proc.stdin is not None:
                proc.stdin.close()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                kill_group(proc)
                proc.wait(timeout=30)
        assert "formatted" in kit.marks(work / "probe.out")
    with kraftsim.serve(controllers=3, brokers=3, release=RELEASE) as served:
        host, _, port = served.bootstrap_servers.split(",")[0].rpartition(":")
        ours = api_versions(host, int(port))
    for answer in answers:
        assert answer["ErrorCode"] == 0
        assert _api_ranges(answer) == _api_ranges(ours)


class _Dist:
    """Just enough of a KafkaDist for probe_source."""

    def __init__(self, line: tuple[int, int]):
        self.release = type("R", (), {"line_tuple": line})()


def test_the_3x_source_uses_kafka_testkit_and_leaves_out_the_4x_parts() -> None:
    text = kit.probe_source(_Dist((3, 9)))  # type: ignore[arg-type]
    assert "kafka.testkit.KafkaClusterTestKit" in text and "org.apache.kafka.common.test" not in text
    assert not [ln for ln in text.splitlines() if ln.rstrip().endswith("// since 4.0")]
    assert "PreboundSocketFactoryManager" not in text and "setBaseDirectory" not in text
    assert text.count("{") == text.count("}")
    full = kit.probe_source(_Dist((4, 3)))  # type: ignore[arg-type]
    assert "class LoopbackSockets extends PreboundSocketFactoryManager" in full and "bindOnLoopback(builder" in full


def test_jar_names_are_told_apart_by_artifact_and_classifier() -> None:
    assert kit.jar_key("kafka-clients-4.3.1-test.jar") == ("kafka-clients", "test")
    assert kit.jar_key("kafka-clients-4.3.1.jar") == ("kafka-clients", None)
    assert kit.jar_key("kafka_2.13-3.9.1-test.jar") == ("kafka_2.13", "test")
    assert kit.jar_key("log4j-slf4j2-impl-2.25.5.jar") == ("log4j-slf4j2-impl", None)


def test_releases_before_the_kit_takes_per_server_properties_are_refused() -> None:
    with pytest.raises(KafkaUnavailable, match="3.8 or newer"):
        kit.artifacts(type("D", (), {"release": type("R", (), {"version": "3.7.2", "line_tuple": (3, 7)})()})())  # type: ignore[arg-type]
