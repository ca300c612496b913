"""`javacompat.timeline_hash_order` against Kafka's own TimelineHashMap (the map each
resource's configs live in on the controller, whose order decides the order of the records
that delete configs a legacy AlterConfigs leaves out): TimelineOrderFacts.java puts each
probe's keys into a fresh map and prints them in its iteration order."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from kraftsim.javacompat import string_hash, timeline_hash_order
from tests.conformance.conftest import kafka_dist

PROBE = Path(__file__).with_name("TimelineOrderFacts.java")
pytestmark = pytest.mark.kafka

#: Config-like names, and random ones: sizes across several growths of the table (2 to 64 slots).
NAMES = ["log.retention.ms", "log.flush.interval.ms", "log.cleaner.threads", "log.roll.ms", "min.insync.replicas",
         "retention.ms", "cleanup.policy", "segment.bytes", "compression.type", "max.message.bytes"]


def _probes() -> list[list[str]]:
    rng = random.Random(1)
    probes = [NAMES[:n] for n in range(1, len(NAMES) + 1)] + [NAMES[::-1]]
    for size in list(range(2, 41)) * 3:
        probes.append(list(dict.fromkeys("".join(rng.choice("abcdefgh.xyz_") for _ in range(rng.randint(1, 12)))
                                         for _ in range(size))))
    return probes


@pytest.mark.parametrize("version", ["3.9.2", "4.4.0"])
def test_timeline_hash_order_is_the_maps_iteration_order(version: str) -> None:
    dist = kafka_dist(version)
    probes = _probes()
    stdin = "".join("\t".join(p) + "\n" for p in probes)
    proc = subprocess.run([str(dist.java.path), "-Xmx64m", "-cp", dist.classpath, str(PROBE)], input=stdin,
                          capture_output=True, text=True, timeout=180, check=True)
    orders = [line.split("\t") for line in proc.stdout.splitlines()]
    assert len(orders) == len(probes)
    wrong = [(p, o) for p, o in zip(probes, orders) if timeline_hash_order(p, string_hash) != o]
    assert not wrong, wrong[:3]
