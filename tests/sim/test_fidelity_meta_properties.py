"""A simulated node does not start on a meta.properties Kafka's server refuses, with its text.

Kafka's reader accepts a file without `version` (v0) even without ids; KafkaRaftServer then
refuses to start on it ("Error: node ID not found in <dir>", "Error: cluster ID not found in
<dir>"), and on another node's id ("Stored node id ..."). Measured on Kafka 3.7.2, 4.0.2 and
4.4.0 (tests/conformance/test_fidelity_vs_kafka.py compares them live).
"""

from __future__ import annotations

import pytest

from kraftsim.sim import SimError, Simulation
from tests.sim.sim_helpers import scratch

HEAD = "#\n#Thu Jan 01 00:00:00 UTC 2026\n"


@pytest.mark.parametrize(("body", "expected"), [
    ("", "Error: node ID not found in {dir}"),
    ("cluster.id={cluster}\nnode.id=2\n", "Error: node ID not found in {dir}"),
    ("broker.id=2\n", "Error: cluster ID not found in {dir}"),
    ("cluster.id={cluster}\nbroker.id=7\n", "Stored node id 7 doesn't match previous node id 2 in {dir}/meta.properties. "
     "If you moved your data, make sure your configured node id matches. If you intend to create a new node, you "
     "should remove all data in your data directories."),
])
def test_a_meta_properties_kafka_refuses_stops_the_node_with_kafkas_text(body: str, expected: str) -> None:
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=1, brokers=1, release="4.4", seed=1, durable=False)
        try:
            sim.stop([2])
            directory = base / "c" / "node-2"
            meta = directory / "meta.properties"
            cluster = next(ln.split("=", 1)[1] for ln in meta.read_text().splitlines() if ln.startswith("cluster.id="))
            meta.write_text(HEAD + body.format(cluster=cluster), encoding="latin-1")
            text = expected.format(dir=directory)
            with pytest.raises(SimError) as e:
                sim.start([2])
            assert str(e.value) == text
            node = {n.id: n for n in sim.nodes()}[2]
            assert node.state == "failed" and node.detail == text
        finally:
            sim.close()


def test_a_v0_file_of_the_same_node_with_its_cluster_starts() -> None:
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=1, brokers=1, release="4.4", seed=1, durable=False)
        try:
            sim.stop([2])
            meta = base / "c" / "node-2" / "meta.properties"
            cluster = next(ln.split("=", 1)[1] for ln in meta.read_text().splitlines() if ln.startswith("cluster.id="))
            meta.write_text(HEAD + f"cluster.id={cluster}\nbroker.id=2\n", encoding="latin-1")
            sim.start([2])
            sim.wait(30_000)
            assert {n.id: n.state for n in sim.nodes()}[2] == "running"
        finally:
            sim.close()
