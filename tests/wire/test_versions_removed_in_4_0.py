"""The versions Kafka 4.0 removed (KIP-896) that 3.x nodes still advertise: a served 3.x node
reads and answers them, a 4.x node refuses them as it refuses any version it does not list,
and every version any release advertises of an API kraftsim serves has a schema."""

from __future__ import annotations

import pytest

import kraftsim
from kraftsim.controller import error_codes
from kraftsim.sim.node.api_versions import api_version_table
from kraftsim.wire.codec import default_catalog as codec_catalog
from tests.wire.client import closed_by_server, connect, rpc
from kraftsim.wire import encode_request

ERR = error_codes()
CREATE, DELETE, DESCRIBE_ACLS, DESCRIBE_CONFIGS = 19, 20, 29, 32


def test_every_version_a_release_advertises_of_an_api_with_a_schema_is_readable():
    schemas = {key: api.request.versions for key, api in codec_catalog().apis.items()}
    unreadable = []
    for release in api_version_table().releases:
        for role in ("broker", "controller"):
            for key, (lo, hi) in api_version_table().ranges(release, role).items():
                if key in schemas and not (schemas[key][0] <= lo and hi <= schemas[key][1]):
                    unreadable.append((release, role, key, (lo, hi), schemas[key]))
    assert unreadable == []


def test_a_3x_node_answers_the_versions_kafka_4_removed():
    with kraftsim.serve(combined=1, release="3.7.2") as k:
        address = k.bootstrap_servers
        # CreateTopics v0 (no validateOnly, no ErrorMessage in the answer) and v1 (validateOnly)
        _, v0 = rpc(address, CREATE, 0, {"Topics": [{"Name": "old", "NumPartitions": 2, "ReplicationFactor": 1,
                                                     "Configs": [{"Name": "retention.ms", "Value": "1000"}]}],
                                         "timeoutMs": 30000})
        assert [(t["Name"], t["ErrorCode"]) for t in v0["Topics"]] == [("old", 0)]
        _, v1 = rpc(address, CREATE, 1, {"Topics": [{"Name": "old", "NumPartitions": 1, "ReplicationFactor": 1}],
                                         "timeoutMs": 30000, "validateOnly": True})
        (topic,) = v1["Topics"]
        assert topic["ErrorCode"] == ERR["TOPIC_ALREADY_EXISTS"] and topic["ErrorMessage"]
        # DescribeConfigs v0: IsDefault instead of ConfigSource, no synonyms
        _, configs = rpc(address, DESCRIBE_CONFIGS, 0, {"Resources": [
            {"ResourceType": 2, "ResourceName": "old", "ConfigurationKeys": None}]})
        (result,) = configs["Results"]
        assert result["ErrorCode"] == 0 and result["ResourceName"] == "old"
        # every config of the topic; Kafka's brokers never set IsDefault (its clients read v0's sources from
        # it): false for its own retention.ms as for the defaults
        described = {c["Name"]: (c["Value"], c["IsDefault"]) for c in result["Configs"]}
        assert len(described) == 31 and described["retention.ms"] == ("1000", False)  # (3.7.2 describes 31)
        assert described["segment.bytes"] == ("1073741824", False)
        # DescribeAcls v0: refused as by a node without an authorizer, at v0's layout
        _, acls = rpc(address, DESCRIBE_ACLS, 0, {"ResourceTypeFilter": 1, "Operation": 1, "PermissionType": 1})
        assert acls["ErrorCode"] == ERR["SECURITY_DISABLED"]
        # DeleteTopics v0 (no ThrottleTimeMs in the answer)
        _, deleted = rpc(address, DELETE, 0, {"TopicNames": ["old"], "TimeoutMs": 30000})
        assert [(t["Name"], t["ErrorCode"]) for t in deleted["Responses"]] == [("old", 0)]
        _, again = rpc(address, DELETE, 0, {"TopicNames": ["old"], "TimeoutMs": 30000})
        assert again["Responses"][0]["ErrorCode"] == ERR["UNKNOWN_TOPIC_OR_PARTITION"]


@pytest.mark.parametrize("key, version, body", [
    (CREATE, 1, {"Topics": [], "timeoutMs": 1000}),
    (DELETE, 0, {"TopicNames": [], "TimeoutMs": 1000}),
    (DESCRIBE_CONFIGS, 0, {"Resources": []}),
])
def test_a_4x_node_refuses_them_as_any_version_it_does_not_list(key: int, version: int, body: dict) -> None:
    with kraftsim.serve(combined=1, release="4.4.0") as k:
        assert api_version_table().ranges("4.4.0", "broker")[key][0] > version
        with connect(k.bootstrap_servers) as s:
            s.sendall(encode_request(key, version, 1, body))
            assert closed_by_server(s)
