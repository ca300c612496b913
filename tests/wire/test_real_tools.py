"""Kafka's own tools (the fetched release's jars) against `kraftsim serve`: kafka-features
describe and upgrade, kafka-broker-api-versions, kafka-metadata-quorum describe --status and
kafka-cluster cluster-id / unregister and kafka-topics create / list / describe / delete, on the oldest and the newest release line kraftsim serves."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

import kraftsim
from kraftsim.versions import default_catalog
from tests.wire.real_tools import kafka_dist, run_tool

pytestmark = pytest.mark.kafka

FEATURES = "org.apache.kafka.tools.FeatureCommand"
QUORUM = "org.apache.kafka.tools.MetadataQuorumCommand"
CLUSTER = "org.apache.kafka.tools.ClusterTool"
TOPICS = "org.apache.kafka.tools.TopicCommand"


@dataclass(frozen=True)
class Case:
    release: str
    start: str  # the metadata.version the cluster is formatted at
    upgrade: str  # kafka-features upgrade --metadata
    api_versions_max: int
    broker_api_versions: str  # the tool's main class in that release


CASES = [Case("3.7.2", "3.6-IV2", "3.7", 3, "kafka.admin.BrokerApiVersionsCommand"),
         Case("4.4.0", "4.0-IV3", "4.1", 5, "org.apache.kafka.tools.BrokerApiVersionsCommand")]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.release)
def test_kafkas_tools_against_a_served_cluster(case: Case):
    dist = kafka_dist(case.release)
    catalog = default_catalog().at_release(case.release)
    target = catalog.mv_from_string(case.upgrade)
    with kraftsim.serve(controllers=3, brokers=1, release=case.release, release_version=case.start) as k:
        bs = k.bootstrap_servers
        described = run_tool(dist, FEATURES, "--bootstrap-server", bs, "describe")
        assert described.returncode == 0, described.stderr
        (mv_line,) = [line for line in described.stdout.splitlines() if "metadata.version" in line]
        assert f"FinalizedVersionLevel: {case.start}" in mv_line
        highest = catalog.mv_from_level(catalog.supported_features(False)["metadata.version"][1]).version
        assert f"SupportedMaxVersion: {highest}" in mv_line

        upgraded = run_tool(dist, FEATURES, "--bootstrap-server", bs, "upgrade", "--metadata", case.upgrade)
        assert upgraded.returncode == 0, upgraded.stderr
        assert f"metadata.version was upgraded to {target.level}." in upgraded.stdout
        assert k.finalized()["metadata.version"] == target.level
        via_controllers = run_tool(dist, FEATURES, "--bootstrap-controller", k.bootstrap_controllers, "describe")
        assert via_controllers.returncode == 0, via_controllers.stderr
        assert f"FinalizedVersionLevel: {target.version}" in via_controllers.stdout

        versions = run_tool(dist, case.broker_api_versions, "--bootstrap-server", bs)
        assert versions.returncode == 0, versions.stderr
        assert f"ApiVersions(18): 0 to {case.api_versions_max} [usable: {case.api_versions_max}]" in versions.stdout
        assert f"{bs} (id: 4 rack: null" in versions.stdout

        status = run_tool(dist, QUORUM, "--bootstrap-server", bs, "describe", "--status")
        assert status.returncode == 0, status.stderr
        fields = dict(line.split(":", 1) for line in status.stdout.splitlines() if ":" in line)
        assert fields["ClusterId"].strip() == k.cluster_id
        assert int(fields["LeaderId"]) == k.leader()
        assert "4" in fields["CurrentObservers"]

        created = run_tool(dist, TOPICS, "--bootstrap-server", bs, "--create", "--topic", "orders", "--partitions", "3",
                        "--replication-factor", "1")
        assert created.stdout.strip() == "Created topic orders.", created.stderr
        assert run_tool(dist, TOPICS, "--bootstrap-server", bs, "--list").stdout.split() == ["orders"]
        # (what `kraftsim topics create --if-not-exists` does offline: an existing topic is no error, and nothing is said)
        again = run_tool(dist, TOPICS, "--bootstrap-server", bs, "--create", "--topic", "orders", "--if-not-exists")
        assert (again.returncode, again.stdout) == (0, ""), again.stderr
        again = run_tool(dist, TOPICS, "--bootstrap-server", bs, "--create", "--topic", "orders")
        assert (again.returncode, again.stdout) == (1, "Error while executing topic command : Topic 'orders' already "
                                                       "exists.\n"), again.stderr
        # 3.7's tool asks ListPartitionReassignments, 4.x's DescribeTopicPartitions
        described = run_tool(dist, TOPICS, "--bootstrap-server", bs, "--describe", "--topic", "orders")
        assert described.returncode == 0, described.stderr
        rows = [line.split("\t") for line in described.stdout.splitlines() if "Partition: " in line]
        assert [r[2].strip() for r in rows] == ["Partition: 0", "Partition: 1", "Partition: 2"]
        assert all(r[3].strip() == "Leader: 4" and r[4].strip() == "Replicas: 4" for r in rows), described.stdout
        assert "PartitionCount: 3" in described.stdout
        deleted = run_tool(dist, TOPICS, "--bootstrap-server", bs, "--delete", "--topic", "orders")
        assert deleted.returncode == 0, deleted.stderr
        assert run_tool(dist, TOPICS, "--bootstrap-server", bs, "--list").stdout.split() == []

        cluster_id = run_tool(dist, CLUSTER, "cluster-id", "--bootstrap-server", bs)
        assert cluster_id.stdout.strip() == f"Cluster ID: {k.cluster_id}"
        k.stop(4)
        k.start(4)  # registered again with a new epoch; unregistering it now is accepted
        unregistered = run_tool(dist, CLUSTER, "unregister", "--bootstrap-server", bs, "--id", "4")
        assert unregistered.returncode == 0, unregistered.stderr
        assert unregistered.stdout.strip() == "Broker 4 is no longer registered."


ELECTION = "org.apache.kafka.tools.LeaderElectionCommand"


@pytest.mark.parametrize("release", ["3.7.0", "3.7.2", "4.4.0"])
def test_kraftsim_leader_election_prints_what_kafkas_tool_prints_for_the_same_cluster(release, tmp_path, capsys):
    """The same unclean election, once by `kraftsim leader-election` on a copy of the directory
    and once by Kafka's kafka-leader-election against the directory served: the same lines (the
    partitions of each in the order of Java's hash sets), exit code (3.7.0's tool exits 0 after
    its failures) and first line on stderr."""
    import shutil

    from tests.cli_support import run

    dist = kafka_dist(release)
    cluster = tmp_path / "c"
    assert run(capsys, "cluster", "create", str(cluster), "--controllers", "1", "--brokers", "3",
               "--release", release)[0] == 0
    assert run(capsys, "topics", "--cluster", str(cluster), "create", "--count", "3", "--partitions", "9",
               "--replication-factor", "2")[0] == 0
    for step in (["crash", "--nodes", "2"], ["run", "--ms", "20000"], ["crash", "--nodes", "3"],
                 ["run", "--ms", "20000"], ["start", "--nodes", "2"], ["run", "--ms", "20000"]):
        # leaderless at the end: the partitions whose replicas are brokers 2 and 3
        assert run(capsys, "cluster", step[0], str(cluster), *step[1:])[0] in (0, 1)
    partitions = [{"topic": f"topic-{t}", "partition": p} for t in range(3) for p in range(9)]
    wanted = tmp_path / "partitions.json"
    wanted.write_text(json.dumps({"partitions": partitions + [{"topic": "topic-0", "partition": 40},
                                                              {"topic": "nope", "partition": 0}]}))
    copy = tmp_path / "copy"
    shutil.copytree(cluster, copy)
    code, ours, err = run(capsys, "leader-election", "--cluster", str(copy), "--election-type", "unclean",
                          "--path-to-json-file", str(wanted))
    assert "Successfully completed leader election (UNCLEAN)" in ours and "Valid replica" in ours
    with kraftsim.serve(cluster) as k:
        theirs = run_tool(dist, ELECTION, "--bootstrap-server", k.address(2), "--election-type", "unclean",
                       "--path-to-json-file", str(wanted))  # (broker 3 is down: not a bootstrap server)
    assert (code, ours) == (theirs.returncode, theirs.stdout)
    assert code == (0 if release == "3.7.0" else 1)
    their_lines = [ln for ln in theirs.stderr.splitlines() if not ln.startswith("[")]  # (log lines left out)
    assert err.splitlines()[0] == their_lines[0] == "2 replica(s) could not be elected"
