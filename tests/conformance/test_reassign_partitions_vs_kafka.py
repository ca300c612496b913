"""`kafka-reassign-partitions` (the release's own tool: --execute with a throttle, --verify that
clears it, --cancel and two refused plans) against a live Kafka cluster and against `kraftsim
serve` of the same shape: the same exit codes and the same output (kraftsim.conformance.reassignment; `kafka` marker: two
server JVMs and the tool's, about a minute a release)."""

from __future__ import annotations

import pytest

from kraftsim.conformance.reassignment import disallows_replication_factor_change, measure, served
from tests.conformance.conftest import kafka_dist

pytestmark = pytest.mark.kafka

RELEASES = ("3.9.2", "4.4.0")


@pytest.mark.parametrize("release", RELEASES)
def test_reassign_partitions_prints_what_it_prints_against_kafka(release, tmp_path):
    dist = kafka_dist(release)
    live = measure(dist, tmp_path)
    # the script did what it means to on Kafka: moved, refused twice (three times from 4.1), left one
    # under way, cancelled it
    refused = live.pop(0)[1]
    assert "Unable to find a topic named nope." in refused and '"ErrorMessage": null' in refused, refused
    if disallows_replication_factor_change(dist):
        grown = live.pop(7)
        assert grown[0] == 1 and grown[1].endswith(
            "Error reassigning partition(s):\nmoves-0: The replication factor is changed from 1 to 2\n"), grown
    listed = live.pop(9)[1]
    assert '"AddingReplicas": [2]' in listed and '"RemovingReplicas": [1]' in listed, listed
    assert [code for code, _ in live] == [0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0], live
    assert "Successfully started partition reassignments for moves-0,moves-1" in live[0][1], live[0]
    assert "The inter-broker throttle limit was set to 10000000 B/s" in live[0][1], live[0]
    assert "leader.replication.throttled.replicas=" in live[1][1], live[1]
    assert "leader.replication.throttled.rate=10000000" in live[2][1], live[2]
    assert "is completed" in live[3][1] and "Clearing broker-level throttles on brokers 1,2" in live[3][1], live[3]
    assert "still in progress" in live[8][1], live
    assert "Successfully cancelled partition reassignment for: moves-2" in live[9][1], live[9]
    ours = served(dist, tmp_path)
    assert ours.pop(0)[1] == refused
    if disallows_replication_factor_change(dist):
        assert ours.pop(7) == grown
    assert ours.pop(9)[1] == listed
    assert ours == live
