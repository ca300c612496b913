"""A broker restarted in a real Kafka cluster is taken back into the ISRs it left, then given its
preferred leaderships back: the partition changes the controller writes, against the simulator's.

A cluster of one controller (node 1) and two brokers (nodes 2 and 3), separate processes on
127.0.0.1 (three JVMs), formatted by the release's storage tool. A topic of four partitions
whose replicas are given (`ASSIGNMENT`: each broker leads two) is created with kafka-topics;
broker 3 is stopped with SIGTERM (a controlled shutdown: it leaves every ISR and its
leaderships move) and started again at once. The controller balances leaders every
`IMBALANCE_CHECK_S` (leader.imbalance.check.interval.seconds, 300 by default: shortened on both
sides). Once it is unfenced and the partitions have had `REJOIN_S` to take it back and the
controller to balance, the processes stop and the controller's metadata log is read: each
PartitionChangeRecord of the topic that sets an ISR or a leader, in log order, per partition.
`simulated` runs the same steps in kraftsim's simulator and reads its controller's log the same
way. Every process is bounded and killed with its process group when the run ends.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from kraftsim.conformance.dist import KafkaDist, KafkaUnavailable
from kraftsim.conformance.node import free_port
from kraftsim.conformance.reregistration import UNFENCED, KafkaProcess, format_nodes, node_config, wait_for
from kraftsim.conformance.tools import run_tool

#: The topic's replicas, partition by partition (the first one leads).
ASSIGNMENT = ((2, 3), (3, 2), (2, 3), (3, 2))
TOPIC = "t"
#: How long the brokers run before the stop, and the restarted one after it is unfenced.
SETTLE_S = 3.0
REJOIN_S = 12.0
IMBALANCE_CHECK_S = 5
#: A partition's changes: (new ISR or None, new leader or None) per record.
Changes = dict[int, list[tuple[tuple[int, ...] | None, int | None]]]


def partition_changes(log_dir: Path) -> Changes:
    """The PartitionChangeRecords of topic TOPIC in the metadata log at `log_dir`, per partition."""
    from kraftsim.controller import NO_LEADER_CHANGE
    from kraftsim.protocol.batch_io import read_log_entries
    from kraftsim.protocol.registry import default_registry

    registry = default_registry()
    topic_id = None
    out: Changes = {}
    for segment in sorted(log_dir.glob("*.log")):
        entries, _ = read_log_entries(segment.read_bytes(), registry)
        for e in entries:
            name = e.record_type.name
            if name == "TopicRecord" and e.message.name == TOPIC:
                topic_id = e.message.topic_id
            elif name == "PartitionChangeRecord" and e.message.topic_id == topic_id:
                isr = None if e.message.isr is None else tuple(e.message.isr)
                leader = None if e.message.leader == NO_LEADER_CHANGE else e.message.leader
                if isr is not None or leader is not None:
                    out.setdefault(e.message.partition_id, []).append((isr, leader))
    return out


def measure(dist: KafkaDist, work: Path) -> Changes:
    """The controller's partition changes around a restart of broker 3 in a live cluster."""
    cport, bport2, bport3 = free_port(), free_port(), free_port()
    configs = {1: node_config(work / "controller", 1, "controller", cport, None,
                              (f"leader.imbalance.check.interval.seconds={IMBALANCE_CHECK_S}",)),
               2: node_config(work / "broker-2", 2, "broker", cport, bport2),
               3: node_config(work / "broker-3", 3, "broker", cport, bport3)}
    format_nodes(dist, configs.values())
    processes: list[KafkaProcess] = []
    try:
        processes.append(KafkaProcess(dist, configs[1], work / "controller" / "server.log"))
        brokers = {}
        for node in (2, 3):
            log = work / f"broker-{node}" / "server-1.log"
            brokers[node] = KafkaProcess(dist, configs[node], log)
            processes.append(brokers[node])
        for node in (2, 3):
            wait_for(brokers[node].proc, work / f"broker-{node}" / "server-1.log", UNFENCED,
                     f"Kafka {dist.release.version} broker {node}'s first start")
        assignment = ",".join(":".join(map(str, replicas)) for replicas in ASSIGNMENT)
        made = run_tool(dist, "topics", ["--bootstrap-server", f"127.0.0.1:{bport2}", "--create", "--topic", TOPIC,
                                         "--replica-assignment", assignment])
        if made.code != 0:
            raise KafkaUnavailable(f"Kafka {dist.release.version} did not create the topic: {made.text()[:300]}")
        time.sleep(SETTLE_S)
        brokers[3].terminate()
        second = work / "broker-3" / "server-2.log"
        restarted = KafkaProcess(dist, configs[3], second)
        processes.append(restarted)
        wait_for(restarted.proc, second, UNFENCED, f"Kafka {dist.release.version} broker 3's restart")
        time.sleep(REJOIN_S)
    finally:
        for p in reversed(processes):
            p.kill()
    return partition_changes(work / "controller" / "data" / "__cluster_metadata-0")


def simulated(release: str, *, seed: int = 0) -> Changes:
    """The same steps in kraftsim's simulator."""
    from kraftsim.controller import CreatableReplicaAssignment, CreatableTopic
    from kraftsim.sim import SimConfig, Simulation

    config = SimConfig(leader_imbalance_check_interval_ms=IMBALANCE_CHECK_S * 1000)
    with tempfile.TemporaryDirectory(prefix="kraftsim-isr-rejoin-") as tmp:
        directory = Path(tmp) / "cluster"
        with Simulation.create(directory, controllers=1, brokers=2, release=release, seed=seed,
                               config=config) as sim:
            topic = CreatableTopic(TOPIC, -1, -1, assignments=tuple(
                CreatableReplicaAssignment(i, replicas) for i, replicas in enumerate(ASSIGNMENT)))
            result = sim.send_create_topics([topic])
            if result is None or not result.ok or result.response.topics[0].error_code != 0:
                raise RuntimeError(f"the simulated cluster did not create the topic: {result}")
            sim.run(round(SETTLE_S * 1000))
            sim.stop([3])
            sim.start([3])
            sim.wait(60_000)
            sim.run(round(REJOIN_S * 1000))
        return partition_changes(directory / "node-1" / "__cluster_metadata-0")
