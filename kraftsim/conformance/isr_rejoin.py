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

from kraftsim.conformance.dist import KafkaDist
from kraftsim.conformance.live_trio import LiveTrio, create_simulated_topic, metadata_log_records

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

    topic_id = None
    out: Changes = {}
    for e in metadata_log_records(log_dir):
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
    with LiveTrio(dist, work, (f"leader.imbalance.check.interval.seconds={IMBALANCE_CHECK_S}",)) as cluster:
        cluster.create_topic(TOPIC, ASSIGNMENT)
        time.sleep(SETTLE_S)
        cluster.running[3].terminate()
        cluster.restart(3)
        time.sleep(REJOIN_S)
    return partition_changes(cluster.metadata_log)


def simulated(release: str, *, seed: int = 0) -> Changes:
    """The same steps in kraftsim's simulator."""
    from kraftsim.sim import SimConfig, Simulation

    config = SimConfig(leader_imbalance_check_interval_ms=IMBALANCE_CHECK_S * 1000)
    with tempfile.TemporaryDirectory(prefix="kraftsim-isr-rejoin-") as tmp:
        directory = Path(tmp) / "cluster"
        with Simulation.create(directory, controllers=1, brokers=2, release=release, seed=seed,
                               config=config) as sim:
            create_simulated_topic(sim, TOPIC, ASSIGNMENT)
            sim.run(round(SETTLE_S * 1000))
            sim.stop([3])
            sim.start([3])
            sim.wait(60_000)
            sim.run(round(REJOIN_S * 1000))
        return partition_changes(directory / "node-1" / "__cluster_metadata-0")
