"""The wire codec against a real Kafka node: Kafka reads the requests kraftsim writes, at
every version the node advertises, and kraftsim reads every answer whole (no byte left
over); Kafka's handling of requests it cannot serve is what kraftsim.wire.codec documents.

One combined node per release of KRAFTSIM_CONFORMANCE_LIVE_RELEASES (default: CI's live
release), started once for the module. Requests are harmless: validate-only topic
creation (v0, which has no validate-only, creates a topic of its own), deletion of a topic
that does not exist, validate-only growth of one (CreatePartitions) and a validate-only config
change of one (IncrementalAlterConfigs, and the legacy AlterConfigs), an empty feature update,
unregistering a broker id that was never registered, cancelling a reassignment of a topic that
does not exist (AlterPartitionReassignments), the node's log directories (DescribeLogDirs), DescribeAcls, CreateAcls and DeleteAcls (refused:
no authorizer), ListGroups and ListTransactions (none). The raft voter APIs are left out (they would change the quorum).
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kraftsim.conformance.node import CLUSTER_ID, LiveNode
from kraftsim.conformance.wire_client import WireClient, WireClientError
from kraftsim.wire import API_KEYS, parse_response, schema_versions
from tests.conformance.conftest import kafka_dist, live_releases

pytestmark = pytest.mark.kafka


def body_for(api: str, version: int) -> dict[str, Any]:
    if api == "ApiVersions":
        return {"ClientSoftwareName": "kraftsim-test", "ClientSoftwareVersion": "0"}
    if api == "Metadata":
        return {"Topics": [] if version == 0 else None}
    if api == "CreateTopics":
        if version == 0:  # v0 (3.x only) has no validateOnly: it creates a topic of its own
            return {"Topics": [{"Name": "wire-check-v0", "NumPartitions": 1, "ReplicationFactor": 1}]}
        return {"Topics": [{"Name": "wire-check", "NumPartitions": 1, "ReplicationFactor": 1}], "validateOnly": True}
    if api == "DeleteTopics":
        names = {"Topics": [{"Name": "no-such-topic"}]} if version >= 6 else {"TopicNames": ["no-such-topic"]}
        return {**names, "TimeoutMs": 30000}  # no default: 0 times out at once
    if api == "DescribeConfigs":
        return {"Resources": [{"ResourceType": 4, "ResourceName": "1", "ConfigurationKeys": ["log.retention.ms"]}]}
    if api == "UpdateFeatures":
        return {"FeatureUpdates": [], "ValidateOnly": True} if version >= 1 else {"FeatureUpdates": []}
    if api == "DescribeQuorum":
        return {"Topics": [{"TopicName": "__cluster_metadata", "Partitions": [{"PartitionIndex": 0}]}]}
    if api == "UnregisterBroker":
        return {"BrokerId": 99}
    if api == "CreatePartitions":
        return {"Topics": [{"Name": "no-such-topic", "Count": 2, "Assignments": None}], "TimeoutMs": 30000,
                "ValidateOnly": True}
    if api == "IncrementalAlterConfigs":
        return {"Resources": [{"ResourceType": 2, "ResourceName": "no-such-topic",
                               "Configs": [{"Name": "retention.ms", "ConfigOperation": 0, "Value": "1000"}]}],
                "ValidateOnly": True}
    if api == "AlterConfigs":
        return {"Resources": [{"ResourceType": 2, "ResourceName": "no-such-topic",
                               "Configs": [{"Name": "retention.ms", "Value": "1000"}]}], "ValidateOnly": True}
    if api == "ElectLeaders":  # a topic the node does not have: answered per partition, nothing elected
        return {"ElectionType": 0, "TopicPartitions": [{"Topic": "no-such-topic", "Partitions": [0, 1]}],
                "TimeoutMs": 30000}
    if api == "AlterPartitionReassignments":  # a cancel for a topic the node does not have: refused per partition
        return {"Topics": [{"Name": "no-such-topic", "Partitions": [{"PartitionIndex": 0, "Replicas": None}]}],
                "TimeoutMs": 30000}
    if api == "DescribeLogDirs":  # the node's log directories, without any partition of a topic it does not have
        return {"Topics": [{"Topic": "no-such-topic", "Partitions": [0]}]}
    if api == "DescribeAcls":  # LITERAL (3) is also what v0, which has no pattern type, means
        return {"ResourceTypeFilter": 1, "PatternTypeFilter": 3, "Operation": 1, "PermissionType": 1}
    if api == "CreateAcls":  # refused per creation: no authorizer
        return {"Creations": [{"ResourceType": 2, "ResourceName": "t", "ResourcePatternType": 3,
                               "Principal": "User:alice", "Host": "*", "Operation": 3, "PermissionType": 3}]}
    if api == "DeleteAcls":  # refused per filter: no authorizer
        return {"Filters": [{"ResourceTypeFilter": 2, "ResourceNameFilter": "t", "PatternTypeFilter": 3,
                             "PrincipalFilter": None, "HostFilter": None, "Operation": 1, "PermissionType": 1}]}
    return {}


CHECKED = ["ApiVersions", "Metadata", "CreateTopics", "DeleteTopics", "DescribeConfigs", "DescribeCluster",
           "UpdateFeatures", "DescribeQuorum", "UnregisterBroker", "DescribeAcls", "CreatePartitions",
           "IncrementalAlterConfigs", "AlterConfigs", "ElectLeaders", "AlterPartitionReassignments",
           "DescribeLogDirs", "CreateAcls", "DeleteAcls", "ListGroups", "ListTransactions"]


@pytest.fixture(scope="module", params=live_releases())
def node(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveNode]:
    dist = kafka_dist(request.param)
    live = LiveNode(dist, Path(tmp_path_factory.mktemp(f"wire-{request.param}")), heap="384m")
    live.format()
    with live:
        live.start()
        yield live


def advertised(node: LiveNode, port: int) -> dict[int, tuple[int, int]]:
    with WireClient("127.0.0.1", port) as client:
        answer = client.request("ApiVersions", 3, body_for("ApiVersions", 3))
    assert answer["ErrorCode"] == 0
    return {k["ApiKey"]: (k["MinVersion"], k["MaxVersion"]) for k in answer["ApiKeys"]}


@pytest.mark.parametrize("api", CHECKED)
def test_every_advertised_version_round_trips_with_kafka(node: LiveNode, api: str) -> None:
    key = API_KEYS[api]
    ranges = advertised(node, node.broker_port)
    if key not in ranges:
        pytest.skip(f"Kafka {node.dist.release.version}'s broker listener does not serve {api}")
    lo, hi = ranges[key]
    ours = schema_versions(key)
    versions = range(max(lo, ours[0]), min(hi, ours[1]) + 1)
    assert len(versions) > 0
    with WireClient("127.0.0.1", node.broker_port) as client:
        for version in versions:
            answer = client.request(key, version, body_for(api, version))  # a refused request closes the connection
            if api == "Metadata" and version >= 2 or api == "DescribeCluster":
                assert answer["ClusterId"] == CLUSTER_ID
            if api == "DeleteTopics":
                results = answer["Responses"]
                assert [r["ErrorCode"] for r in results] == [3]  # UNKNOWN_TOPIC_OR_PARTITION
            if api == "CreateTopics":
                assert [t["ErrorCode"] for t in answer["Topics"]] == [0]
            if api == "AlterPartitionReassignments":
                parts = [p for t in answer["Responses"] for p in t["Partitions"]]
                assert [p["ErrorCode"] for p in parts] == [3]  # UNKNOWN_TOPIC_OR_PARTITION
                assert parts[0]["ErrorMessage"] == "Unable to find a topic named no-such-topic."
            if api == "DescribeLogDirs":
                assert [r["ErrorCode"] for r in answer["Results"]] == [0] and answer["Results"][0]["Topics"] == []
            if api == "DescribeAcls":
                assert answer["ErrorCode"] == 54  # SECURITY_DISABLED: no authorizer, as kraftsim serve answers
            if api == "ListGroups":
                assert (answer["ErrorCode"], answer["Groups"]) == (0, [])  # a node no group ever used
            if api == "ListTransactions":
                assert (answer["ErrorCode"], answer["TransactionStates"]) == (0, [])
            if api == "CreateAcls":
                assert [(r["ErrorCode"], r["ErrorMessage"]) for r in answer["Results"]] == [
                    (54, "No Authorizer is configured.")]
            if api == "DeleteAcls":
                assert [(r["ErrorCode"], r["ErrorMessage"], r["MatchingAcls"]) for r in answer["FilterResults"]] == [
                    (54, "No Authorizer is configured.", [])]


def _raw_request(port: int, payload: bytes) -> bytes | None:
    """Send one hand-made request; its answer's payload, or None when Kafka closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(struct.pack(">i", len(payload)) + payload)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return None if not data else data[4:]
            data += chunk
            if len(data) >= 4 and len(data) >= 4 + struct.unpack(">i", data[:4])[0]:
                return data[4:]


def test_api_versions_above_the_range_gets_unsupported_version_at_v0(node: LiveNode) -> None:
    # KIP-511: header v2 (any ApiVersions version >= 3), a body Kafka does not read.
    answer = _raw_request(node.broker_port, struct.pack(">hhih", 18, 127, 55, 2) + b"me" + b"\x00" + b"\x01\x02")
    assert answer is not None
    correlation_id, body = parse_response(18, 0, answer)
    lo, hi = advertised(node, node.broker_port)[18]
    assert correlation_id == 55
    assert body["ErrorCode"] == 35 and body["ApiKeys"] == [{"ApiKey": 18, "MinVersion": lo, "MaxVersion": hi}]


@pytest.mark.parametrize("payload", [
    struct.pack(">hhih", 999, 0, 1, -1),  # an api key Kafka does not know
    struct.pack(">hhih", 3, 99, 1, -1) + b"\x00\x00",  # Metadata at a version outside its range
    struct.pack(">hhih", 3, 12, 1, -1) + b"\x00\x05",  # a body that does not parse
], ids=["unknown-key", "metadata-v99", "bad-body"])
def test_requests_kafka_cannot_serve_close_the_connection(node: LiveNode, payload: bytes) -> None:
    assert _raw_request(node.broker_port, payload) is None
    advertised(node, node.broker_port)  # the node still serves others


def test_controller_listener_api_versions(node: LiveNode) -> None:
    ranges = advertised(node, node.controller_port)
    lo, hi = ranges[18]
    for version in range(lo, min(hi, schema_versions(18)[1]) + 1):
        with WireClient("127.0.0.1", node.controller_port) as client:
            try:
                answer = client.request("ApiVersions", version, body_for("ApiVersions", version))
            except WireClientError as e:  # pragma: no cover - the message says which version failed
                raise AssertionError(f"ApiVersions v{version} on the controller listener: {e}") from None
        assert answer["ErrorCode"] == 0 and any(k["ApiKey"] == 55 for k in answer["ApiKeys"])
