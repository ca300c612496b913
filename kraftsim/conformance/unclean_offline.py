"""A partition whose only in-sync replica is gone, in a real Kafka cluster: once its topic allows
an unclean election, does the controller elect the live out-of-sync replica by itself? From 3.9
it does, at its next look for leaderless partitions (unclean.leader.election.interval.ms), and
the new leader, alone, asks nothing more (the partition stays RECOVERING); before 3.9 the
controller never reads the config. The partition's changes the controller writes, against the
simulator's.

A cluster of one controller (node 1) and two brokers (nodes 2 and 3), separate processes on
127.0.0.1 (three JVMs), formatted by the release's storage tool; the controller looks every
`LOOK_S` (5 minutes by default: shortened on both sides; a release before 3.9 ignores the
setting). A topic of one partition on brokers 2 and 3 (2 leads) is created with kafka-topics;
broker 3 is stopped with SIGTERM (it leaves the ISR), broker 2 is killed with SIGKILL (its
session expires: no leader, the ISR still names 2), broker 3 is started again (the partition
stays offline), then kafka-configs sets unclean.leader.election.enable=true on the topic
through broker 3. After `AFTER_S`, the processes stop and the controller's metadata log is
read: each PartitionChangeRecord of the topic, as (ISR, leader, leader recovery state), each
None where the record leaves it. `simulated` runs the same steps in kraftsim's simulator. Every
process is bounded and killed with its process group when the run ends.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from kraftsim.conformance.dist import KafkaDist, KafkaUnavailable
from kraftsim.conformance.live_trio import LiveTrio, create_simulated_topic, metadata_log_records
from kraftsim.conformance.tools import run_tool

TOPIC = "t"
REPLICAS = (2, 3)
#: How long the brokers run before the first stop; how long broker 2's session takes to expire
#: (broker.session.timeout.ms, 9 s, and a margin); how often the controller looks; how long
#: after the config is set the run goes on.
SETTLE_S = 3.0
SESSION_S = 14.0
LOOK_S = 5
AFTER_S = 2 * LOOK_S + 4.0
UNCLEAN = "unclean.leader.election.enable"
#: The partition's changes: (ISR, leader, leader recovery state) per record, None where unchanged.
Change = tuple[tuple[int, ...] | None, int | None, int | None]


def partition_changes(log_dir: Path) -> list[Change]:
    """The PartitionChangeRecords of partition 0 of topic TOPIC in the metadata log at `log_dir`."""
    from kraftsim.controller import NO_LEADER_CHANGE

    topic_id = None
    out: list[Change] = []
    for e in metadata_log_records(log_dir):
        name, msg = e.record_type.name, e.message
        if name == "TopicRecord" and msg.name == TOPIC:
            topic_id = msg.topic_id
        elif name == "PartitionChangeRecord" and msg.topic_id == topic_id and msg.partition_id == 0:
            out.append((None if msg.isr is None else tuple(msg.isr),
                        None if msg.leader == NO_LEADER_CHANGE else msg.leader,
                        None if msg.leader_recovery_state == -1 else msg.leader_recovery_state))
    return out


def measure(dist: KafkaDist, work: Path) -> list[Change]:
    """The controller's changes of the partition in a live cluster (see the module docstring)."""
    with LiveTrio(dist, work, (f"unclean.leader.election.interval.ms={LOOK_S * 1000}",)) as cluster:
        cluster.create_topic(TOPIC, (REPLICAS,))
        time.sleep(SETTLE_S)
        cluster.running[3].terminate()
        cluster.running[2].kill()
        time.sleep(SESSION_S)
        cluster.restart(3)
        time.sleep(SETTLE_S)
        altered = run_tool(dist, "configs", ["--bootstrap-server", cluster.bootstrap(3), "--alter", "--entity-type",
                                             "topics", "--entity-name", TOPIC, "--add-config", f"{UNCLEAN}=true"])
        if altered.code != 0:
            raise KafkaUnavailable(f"Kafka {cluster.version} did not set the topic's config: {altered.text()[:300]}")
        time.sleep(AFTER_S)
    return partition_changes(cluster.metadata_log)


def simulated(release: str, *, seed: int = 0) -> list[Change]:
    """The same steps in kraftsim's simulator."""
    from kraftsim.sim import SimConfig, Simulation

    config = SimConfig(unclean_leader_election_interval_ms=LOOK_S * 1000)
    with tempfile.TemporaryDirectory(prefix="kraftsim-unclean-") as tmp:
        directory = Path(tmp) / "cluster"
        with Simulation.create(directory, controllers=1, brokers=2, release=release, seed=seed,
                               config=config) as sim:
            create_simulated_topic(sim, TOPIC, (REPLICAS,))
            sim.run(round(SETTLE_S * 1000))
            sim.stop([3])
            sim.crash([2])
            sim.run(round(SESSION_S * 1000))
            sim.start([3])
            sim.wait(60_000)
            sim.run(round(SETTLE_S * 1000))
            sim.alter_topic_config(TOPIC, {UNCLEAN: "true"})
            sim.run(round(AFTER_S * 1000))
        return partition_changes(directory / "node-1" / "__cluster_metadata-0")
