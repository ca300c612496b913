"""`kraftsim.serve`: requests over real sockets, answered as the node's release answers them,
with faults changing what clients see."""

from __future__ import annotations

import asyncio
import socket
import struct
import time

import pytest

import kraftsim
from kraftsim.controller import error_codes
from kraftsim.protocol.primitives import Uuid
from kraftsim.sim.node.api_versions import api_version_table, api_versions_response
from kraftsim.wire import encode_request, frame, parse_response
from kraftsim.wire.codec import UnsupportedRequest, default_catalog as codec_catalog, parse_request
from tests.wire.client import API_VERSIONS_V3, closed_by_server, connect, read_frames, rpc, wait_accepting

ERR = error_codes()
ONE_FEATURE = {"FeatureUpdates": [{"Feature": "group.version", "MaxVersionLevel": 1, "UpgradeType": 1}]}


def test_api_versions_are_the_releases_own_and_an_unknown_version_gets_the_range():
    with kraftsim.serve(combined=1, release="3.7.2") as k:
        _, body = rpc(k.bootstrap_servers, 18, 3, API_VERSIONS_V3)
        expected = api_versions_response("3.7.2", "broker", 3, None)
        assert [(a["ApiKey"], a["MinVersion"], a["MaxVersion"]) for a in body["ApiKeys"]] == list(expected.api_keys)
        # v3: ranges starting at 0 are left out (KIP-1022); 3.7's metadata.version starts at 3.0-IV1 (1)
        assert {f["Name"]: (f["MinVersion"], f["MaxVersion"]) for f in body["SupportedFeatures"]} == \
            {"metadata.version": (1, 19)}
        assert {f["Name"]: f["MaxVersionLevel"] for f in body["FinalizedFeatures"]}["metadata.version"] == 19
        assert body["FinalizedFeaturesEpoch"] >= 0
        # 3.7 knows ApiVersions up to v3: a v4 request gets UNSUPPORTED_VERSION at v0 with the range (KIP-511)
        corr, body = rpc(k.bootstrap_servers, 18, 4, API_VERSIONS_V3, correlation_id=9, response_version=0)
        assert corr == 9
        assert body["ErrorCode"] == ERR["UNSUPPORTED_VERSION"]
        assert body["ApiKeys"] == [{"ApiKey": 18, "MinVersion": 0, "MaxVersion": 3}]


def test_v4_lists_features_whose_range_starts_at_zero():
    with kraftsim.serve(combined=1, release="4.4.0") as k:
        v3 = {f["Name"] for f in rpc(k.bootstrap_servers, 18, 3, API_VERSIONS_V3)[1]["SupportedFeatures"]}
        v4 = {f["Name"] for f in rpc(k.bootstrap_servers, 18, 4, API_VERSIONS_V3)[1]["SupportedFeatures"]}
        assert v3 == {"metadata.version"}
        assert {"group.version", "kraft.version", "transaction.version"} <= v4


def test_requests_on_one_connection_are_answered_in_order():
    with kraftsim.serve(combined=1, release="4.4.0") as k, connect(k.bootstrap_servers) as s:
        ids = [7, 3, 11, 5, 2]
        keys = [18, 3, 60, 18, 3]
        bodies = {18: API_VERSIONS_V3, 3: {"Topics": None}, 60: {}}
        versions = {18: 3, 3: 12, 60: 1}
        s.sendall(b"".join(encode_request(key, versions[key], c, bodies[key]) for c, key in zip(ids, keys)))
        frames = read_frames(s, len(ids))
        assert frames is not None
        got = [parse_response(key, versions[key], f)[0] for key, f in zip(keys, frames)]
        assert got == ids


def test_a_request_the_listener_does_not_serve_closes_the_connection():
    with kraftsim.serve(controllers=1, brokers=1, release="4.4.0") as k:
        with connect(k.bootstrap_controllers) as s:  # Metadata is not served on a controller listener
            s.sendall(encode_request(3, 12, 1, {"Topics": None}))
            assert closed_by_server(s)
        with connect(k.bootstrap_servers) as s:  # an api key kraftsim has no schema for (Produce)
            s.sendall(frame(struct.pack(">hhih", 0, 9, 1, -1)))
            assert closed_by_server(s)
        assert rpc(k.bootstrap_servers, 18, 3, API_VERSIONS_V3) is not None  # the server goes on


def _beyond_the_codec(release: str, role: str) -> list[tuple[int, int]]:
    """(api key, version) pairs the release advertises on `role` that the codec has no schema for."""
    schemas = {key: api.request.versions for key, api in codec_catalog().apis.items()}
    return [(key, v) for key, (lo, hi) in api_version_table().ranges(release, role).items()
            for v in range(lo, hi + 1) if not schemas.get(key, (0, -1))[0] <= v <= schemas.get(key, (0, -1))[1]]


def test_advertised_but_unparsable_versions_close_the_connection_on_every_release():
    """ApiVersions lists what the release supports, the codec's schemas or not; a request the
    codec cannot read is refused as Kafka refuses an unknown one (closed), never misread."""
    for release in api_version_table().releases:
        for role in ("broker", "controller"):
            for key, version in _beyond_the_codec(release, role):
                with pytest.raises(UnsupportedRequest):
                    parse_request(struct.pack(">hhih", key, version, 1, -1) + b"\x00")
    with kraftsim.serve(combined=1, release="4.4.0") as k:
        for role in ("broker", "controller"):
            listed = {(a["ApiKey"], a["MinVersion"], a["MaxVersion"])
                      for a in rpc(k.address(1, role), 18, 5, API_VERSIONS_V3)[1]["ApiKeys"]}
            assert {(key, lo, hi) for key, (lo, hi) in api_version_table().ranges("4.4.0", role).items()} == listed
            unparsable = _beyond_the_codec("4.4.0", role)
            assert (94, 0) in unparsable  # UnregisterController: listed, no schema
            for key, version in unparsable:
                assert k.answer(1, role, struct.pack(">hhih", key, version, 1, -1) + b"\x00") is None, (key, version)


def test_an_advertised_request_kraftsim_does_not_carry_out_is_said_once_on_stderr(capsys):
    """The connection is closed (the client retries until its timeout): the operator is told why, once."""
    with kraftsim.serve(combined=1, release="4.4.0") as k:
        capsys.readouterr()
        for _ in range(2):
            assert k.answer(1, "broker", struct.pack(">hhih", 47, 0, 1, -1)) is None  # OffsetDelete v0
        assert k.answer(1, "broker", struct.pack(">hhih", 9999, 0, 1, -1)) is None  # not advertised: nothing said
        err = capsys.readouterr().err
    assert len(err.splitlines()) == 1
    assert ("kraftsim serve: OffsetDelete (API key 47) is not carried out by kraftsim serve: the connection that "
            "asked was closed, and the client will retry until its timeout") in err


def test_metadata_describe_cluster_and_topics_from_the_nodes_image():
    with kraftsim.serve(controllers=1, brokers=2, release="4.4.0") as k:
        created = rpc(k.address(2), 19, 7, {"Topics": [{"Name": "orders", "NumPartitions": 3,
                                                                "ReplicationFactor": 2}]})[1]
        assert created["Topics"][0]["ErrorCode"] == 0 and created["Topics"][0]["NumPartitions"] == 3
        again = rpc(k.address(2), 19, 7, {"Topics": [{"Name": "orders", "NumPartitions": 1,
                                                              "ReplicationFactor": 1}]})[1]
        assert again["Topics"][0]["ErrorCode"] == ERR["TOPIC_ALREADY_EXISTS"]
        md = rpc(k.address(3), 3, 12, {"Topics": None})[1]
        assert md["ClusterId"] == k.cluster_id
        assert [(b["NodeId"], f"{b['Host']}:{b['Port']}") for b in md["Brokers"]] == \
            [(2, k.address(2)), (3, k.address(3))]
        assert md["ControllerId"] in (2, 3)  # KRaft brokers report an alive broker
        (topic,) = md["Topics"]
        assert topic["Name"] == "orders" and len(topic["Partitions"]) == 3
        assert all(len(p["ReplicaNodes"]) == 2 and p["LeaderId"] in (2, 3) for p in topic["Partitions"])
        unknown = rpc(k.address(2), 3, 12, {"Topics": [{"Name": "nope"}], "AllowAutoTopicCreation": False})[1]
        assert unknown["Topics"][0]["ErrorCode"] == ERR["UNKNOWN_TOPIC_OR_PARTITION"]
        controllers = rpc(k.bootstrap_controllers, 60, 1, {"EndpointType": 2})[1]
        assert controllers["ControllerId"] == 1
        assert [(b["BrokerId"], f"{b['Host']}:{b['Port']}") for b in controllers["Brokers"]] == [(1, k.address(1, "controller"))]
        mismatched = rpc(k.bootstrap_servers.split(",")[0], 60, 1, {"EndpointType": 2})[1]
        assert mismatched["ErrorCode"] == ERR["MISMATCHED_ENDPOINT_TYPE"]
        deleted = rpc(k.address(2), 20, 6, {"Topics": [{"Name": "orders"}]})[1]
        assert deleted["Responses"][0]["ErrorCode"] == 0
        assert rpc(k.address(2), 3, 12, {"Topics": None})[1]["Topics"] == []


def test_describe_quorum_reports_voters_and_observers_on_the_simulated_clock():
    with kraftsim.serve(controllers=3, brokers=1, release="4.4.0") as k:
        leader = k.leader()
        asked_ms = time.time() * 1000
        _, body = rpc(k.address(leader, "controller"), 55, 2,
                      {"Topics": [{"TopicName": "__cluster_metadata", "Partitions": [{"PartitionIndex": 0}]}]})
        answered_ms = time.time() * 1000
        (p,) = body["Topics"][0]["Partitions"]
        assert p["ErrorCode"] == 0 and p["LeaderId"] == leader
        assert [v["ReplicaId"] for v in p["CurrentVoters"]] == [1, 2, 3]
        assert [o["ReplicaId"] for o in p["Observers"]] == [4]
        assert all(v["LogEndOffset"] > 0 and v["LastFetchTimestamp"] > 0 for v in p["CurrentVoters"])
        # a settled quorum: every voter caught up to the high watermark at its last fetch
        assert all(0 < v["LastCaughtUpTimestamp"] <= v["LastFetchTimestamp"] for v in p["CurrentVoters"])
        # times as the client's clock reads them (a settled voter fetched well within the last
        # minute of simulated time), not the simulation's own date (2025-01-01)
        assert all(asked_ms - 60_000 < v["LastFetchTimestamp"] <= answered_ms + 1 for v in p["CurrentVoters"])
        assert {n["NodeId"]: n["Listeners"][0]["Port"] for n in body["Nodes"]} == \
            {i: int(k.address(i, "controller").rsplit(":", 1)[1]) for i in (1, 2, 3)}
        follower = next(i for i in (1, 2, 3) if i != leader)
        _, body = rpc(k.address(follower, "controller"), 55, 2,
                      {"Topics": [{"TopicName": "__cluster_metadata", "Partitions": [{"PartitionIndex": 0}]}]})
        assert body["Topics"][0]["Partitions"][0]["ErrorCode"] == ERR["NOT_LEADER_OR_FOLLOWER"]


def test_update_features_forwarded_refused_and_cut_off():
    with kraftsim.serve(controllers=3, brokers=1, release="4.4.0", features={"group.version": 0}) as k:
        leader = k.leader()
        follower = next(i for i in (1, 2, 3) if i != leader)
        refused = rpc(k.address(follower, "controller"), 57, 1, ONE_FEATURE)[1]
        assert refused["ErrorCode"] == ERR["NOT_CONTROLLER"]
        k.partition([[4]])  # the broker alone: it cannot forward
        cut_off = rpc(k.bootstrap_servers, 57, 1, ONE_FEATURE)[1]
        assert cut_off["ErrorCode"] == ERR["REQUEST_TIMED_OUT"]
        assert k.finalized().get("group.version", 0) == 0
        k.heal()
        ok = rpc(k.bootstrap_servers, 57, 1, ONE_FEATURE)[1]
        assert ok["ErrorCode"] == 0 and ok["Results"][0]["ErrorCode"] == 0
        assert k.finalized()["group.version"] == 1
        dry = rpc(k.bootstrap_servers, 57, 1, {"FeatureUpdates": [{"Feature": "group.version", "MaxVersionLevel": 0,
                                                                    "UpgradeType": 2}], "ValidateOnly": True})[1]
        assert dry["ErrorCode"] == 0 and k.finalized()["group.version"] == 1


def test_a_crashed_nodes_listener_closes_and_reopens_on_the_same_port():
    with kraftsim.serve(controllers=1, brokers=1, release="4.4.0", speed=20.0) as k:
        address = k.address(2)
        live = connect(address)
        live.sendall(encode_request(18, 3, 1, API_VERSIONS_V3))
        assert read_frames(live, 1) is not None
        k.crash(2)
        assert closed_by_server(live)
        live.close()
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", int(address.rsplit(":", 1)[1])), timeout=5).close()
        k.start(2)
        wait_accepting(address)  # once the restarted broker is past start-up (tests/wire/test_serve_listen.py)
        assert rpc(address, 18, 3, API_VERSIONS_V3)[1]["ErrorCode"] == 0


def test_api_versions_follow_the_nodes_image_and_a_cut_off_node_stays_stale():
    with kraftsim.serve(controllers=3, brokers=2, release="4.4.0", features={"group.version": 0}) as k:
        def levels(node: int) -> tuple[int, int]:
            body = rpc(k.address(node), 18, 4, API_VERSIONS_V3)[1]
            finalized = {f["Name"]: f["MaxVersionLevel"] for f in body["FinalizedFeatures"]}
            return finalized.get("group.version", 0), body["FinalizedFeaturesEpoch"]

        before = levels(4)
        assert before[0] == 0 and levels(4) == before  # asked twice: the same answer
        k.partition([[5]])  # broker 5 hears nothing more
        assert rpc(k.address(4), 57, 1, ONE_FEATURE)[1]["ErrorCode"] == 0
        after = levels(4)
        assert after[0] == 1 and after[1] > before[1]
        assert levels(5)[0] == 0  # a node cut off from the quorum reports what it has applied
        k.heal()
        k.call(lambda s: s.sim.wait(30_000))
        assert levels(5)[0] == 1


def test_describe_configs_gives_every_config_of_the_topic_with_what_it_inherits():
    with kraftsim.serve(combined=1, release="4.4.0") as k:
        topic = {"Name": "logs", "NumPartitions": 1, "ReplicationFactor": 1,
                 "Configs": [{"Name": "retention.ms", "Value": "1000"}, {"Name": "cleanup.policy", "Value": "compact"}]}
        assert rpc(k.bootstrap_servers, 19, 7, {"Topics": [topic]})[1]["Topics"][0]["ErrorCode"] == 0
        body = rpc(k.bootstrap_servers, 32, 4, {"Resources": [
            {"ResourceType": 2, "ResourceName": "logs", "ConfigurationKeys": None},
            {"ResourceType": 2, "ResourceName": "missing", "ConfigurationKeys": None},
            {"ResourceType": 4, "ResourceName": "", "ConfigurationKeys": None}], "IncludeSynonyms": True})[1]
        found, missing, defaults = body["Results"]
        # ELR on (4.4's default) wrote a cluster-wide min.insync.replicas, which the topic inherits
        # (source 3, DYNAMIC_DEFAULT_BROKER_CONFIG) before the broker's default, as a live 4.4.0 node
        # describes it; every other config is the release's default (source 5)
        described = {c["Name"]: c for c in found["Configs"]}
        assert len(described) == len(found["Configs"]) == 37  # (4.4.0 describes 37 topic configs)
        assert sorted((c["Name"], c["Value"], c["ConfigSource"]) for c in found["Configs"] if c["ConfigSource"] != 5) == \
            [("cleanup.policy", "compact", 1), ("min.insync.replicas", "1", 3), ("retention.ms", "1000", 1)]
        assert described["min.insync.replicas"]["Synonyms"] == [{"Name": "min.insync.replicas", "Value": "1", "Source": 3},
                                                                {"Name": "min.insync.replicas", "Value": "1", "Source": 5}]
        assert (described["segment.bytes"]["Value"], described["segment.bytes"]["Synonyms"]) == \
            ("1073741824", [{"Name": "log.segment.bytes", "Value": "1073741824", "Source": 5}])
        assert missing["ErrorCode"] == ERR["UNKNOWN_TOPIC_OR_PARTITION"]
        assert [(c["Name"], c["Value"], c["ConfigSource"]) for c in defaults["Configs"]] == \
            [("min.insync.replicas", "1", 3)]


def test_describe_acls_is_refused_as_by_a_node_without_an_authorizer():
    with kraftsim.serve(combined=1, release="4.4.0") as k:
        body = rpc(k.bootstrap_servers, 29, 3, {"ResourceTypeFilter": 1, "PatternTypeFilter": 1, "Operation": 1,
                                                "PermissionType": 1})[1]
        assert (body["ErrorCode"], body["ErrorMessage"]) == (ERR["SECURITY_DISABLED"],
                                                             "No Authorizer is configured on the broker")


@pytest.mark.parametrize("listener", ["broker", "controller"])
def test_describe_configs_refuses_what_kafkas_config_helper_refuses_in_its_words(listener):
    with kraftsim.serve(combined=1, release="4.4.0") as k:
        resources = [(2, "nope"), (2, "a b"), (4, "7"), (4, "x"), (4, "01"), (8, ""), (8, "7"), (16, "")]
        body = {"Resources": [{"ResourceType": t, "ResourceName": n, "ConfigurationKeys": None} for t, n in resources]}
        answer = rpc(k.address(1, listener), 32, 4, body)[1]
        assert [(r["ResourceName"], r["ErrorCode"], r["ErrorMessage"]) for r in answer["Results"]] == [
            ("nope", ERR["UNKNOWN_TOPIC_OR_PARTITION"], ""),
            ("a b", ERR["INVALID_TOPIC_EXCEPTION"], "Topic name is invalid: 'a b' contains one or more characters "
                                                    "other than ASCII alphanumerics, '.', '_' and '-'"),
            ("7", ERR["INVALID_REQUEST"], "Unexpected broker id, expected 1 or empty string, but received 7"),
            ("x", ERR["INVALID_REQUEST"], "Broker id must be an integer, but it is: x"),
            ("01", 0, ""),  # (Integer.parseInt reads it as this broker's id)
            ("", ERR["INVALID_REQUEST"], "Broker id must not be empty"),
            ("7", ERR["INVALID_REQUEST"], "Unexpected broker id, expected 1 but received 7"),
            ("", ERR["INVALID_REQUEST"], "Client metrics subscription name must not be empty")]
        # what comes from the node's log4j or Kafka's defaults is not carried out (a subscription
        # is: tests/wire/test_serve_client_metrics.py)
        for rtype, name in ((8, "1"), (32, "group")):
            body = {"Resources": [{"ResourceType": rtype, "ResourceName": name, "ConfigurationKeys": None}]}
            assert rpc(k.address(1, listener), 32, 4, body) is None


@pytest.mark.parametrize("listener", ["broker", "controller"])
def test_create_and_delete_acls_are_refused_per_entry_as_by_a_node_without_an_authorizer(listener):
    with kraftsim.serve(combined=1, release="3.9.2") as k:
        address = k.address(1, listener)
        creation = {"ResourceType": 2, "ResourceName": "t", "ResourcePatternType": 3, "Principal": "User:alice",
                    "Host": "*", "Operation": 3, "PermissionType": 3}
        created = rpc(address, 30, 3, {"Creations": [creation, {**creation, "Operation": 4}]})[1]
        assert [(r["ErrorCode"], r["ErrorMessage"]) for r in created["Results"]] == \
            [(ERR["SECURITY_DISABLED"], "No Authorizer is configured.")] * 2
        acl_filter = {"ResourceTypeFilter": 1, "ResourceNameFilter": None, "PatternTypeFilter": 1,
                      "PrincipalFilter": None, "HostFilter": None, "Operation": 1, "PermissionType": 1}
        deleted = rpc(address, 31, 1, {"Filters": [acl_filter]})[1]
        assert [(r["ErrorCode"], r["ErrorMessage"], r["MatchingAcls"]) for r in deleted["FilterResults"]] == \
            [(ERR["SECURITY_DISABLED"], "No Authorizer is configured.", [])]
        assert rpc(address, 30, 3, {"Creations": []})[1]["Results"] == []


def test_a_controller_below_3_7_iv0_refuses_direct_describe_cluster():
    with kraftsim.serve(controllers=1, brokers=1, release="3.7.2", release_version="3.6-IV2") as k:
        body = rpc(k.bootstrap_controllers, 60, 1, {"EndpointType": 2})[1]
        assert body["ErrorCode"] == ERR["UNSUPPORTED_VERSION"]
        assert body["ErrorMessage"] == ("Direct-to-controller communication is not supported with the current "
                                        "MetadataVersion.")


def test_describe_topic_partitions_pages_with_a_cursor_as_kafkas_metadata_cache():
    with kraftsim.serve(combined=1, release="4.4.0") as k:
        bs = k.bootstrap_servers
        for name, n in (("a", 3), ("b", 2)):
            topic = {"Name": name, "NumPartitions": n, "ReplicationFactor": 1}
            assert rpc(bs, 19, 7, {"Topics": [topic]})[1]["Topics"][0]["ErrorCode"] == 0
        first = rpc(bs, 75, 0, {"Topics": [], "ResponsePartitionLimit": 4})[1]
        assert [(t["Name"], [p["PartitionIndex"] for p in t["Partitions"]]) for t in first["Topics"]] == \
            [("a", [0, 1, 2]), ("b", [0])]
        assert first["NextCursor"] == {"TopicName": "b", "PartitionIndex": 1}
        rest = rpc(bs, 75, 0, {"Topics": [], "Cursor": first["NextCursor"]})[1]
        assert [(t["Name"], [p["PartitionIndex"] for p in t["Partitions"]]) for t in rest["Topics"]] == [("b", [1])]
        assert rest["NextCursor"] is None
        p = rest["Topics"][0]["Partitions"][0]
        assert (p["LeaderId"], p["ReplicaNodes"], p["IsrNodes"], p["OfflineReplicas"]) == (1, [1], [1], [])
        named = rpc(bs, 75, 0, {"Topics": [{"Name": "nope"}, {"Name": "a"}]})[1]
        assert [(t["Name"], t["ErrorCode"]) for t in named["Topics"]] == [("a", 0), ("nope", ERR["UNKNOWN_TOPIC_OR_PARTITION"])]
        bad = rpc(bs, 75, 0, {"Topics": [{"Name": "a"}], "Cursor": {"TopicName": "b", "PartitionIndex": 0}})[1]
        assert [t["ErrorCode"] for t in bad["Topics"]] == [ERR["INVALID_REQUEST"]]


def test_list_partition_reassignments_is_the_active_controllers_answer():
    with kraftsim.serve(controllers=3, brokers=1, release="3.7.2") as k:
        topic = {"Name": "orders", "NumPartitions": 2, "ReplicationFactor": 1}
        assert rpc(k.bootstrap_servers, 19, 7, {"Topics": [topic]})[1]["Topics"][0]["ErrorCode"] == 0
        via_broker = rpc(k.bootstrap_servers, 46, 0, {"Topics": None})[1]
        assert (via_broker["ErrorCode"], via_broker["Topics"]) == (0, [])  # nothing is being reassigned
        follower = next(i for i in (1, 2, 3) if i != k.leader())
        refused = rpc(k.address(follower, "controller"), 46, 0, {"Topics": [{"Name": "orders", "PartitionIndexes": [0]}]})[1]
        assert refused["ErrorCode"] == ERR["NOT_CONTROLLER"]


@pytest.mark.parametrize("release", ["3.7.2", "4.4.0"])
def test_metadata_auto_creates_topics_as_a_live_broker_does(release, tmp_path):
    """Measured on live 3.7.2 and 4.4.0 nodes (auto.create.topics.enable=true): the first
    Metadata v12 for an unknown topic answers UNKNOWN_TOPIC_OR_PARTITION and creates it (one
    partition, one replica), the next one shows it; AllowAutoTopicCreation=false leaves it
    unknown, an illegal name is INVALID_TOPIC_EXCEPTION; v4 with the flag creates too."""
    record = tmp_path / "rec.toml"
    with kraftsim.serve(combined=1, release=release, record=record) as k:
        bs = k.bootstrap_servers

        def ask(name: str, version: int = 12, allow: bool = True) -> dict:
            return rpc(bs, 3, version, {"Topics": [{"Name": name}], "AllowAutoTopicCreation": allow})[1]["Topics"][0]

        assert ask("auto1")["ErrorCode"] == ERR["UNKNOWN_TOPIC_OR_PARTITION"]
        again = ask("auto1")
        assert again["ErrorCode"] == 0
        assert [(p["PartitionIndex"], p["LeaderId"], p["ReplicaNodes"]) for p in again["Partitions"]] == [(0, 1, [1])]
        assert ask("auto2", allow=False)["ErrorCode"] == ERR["UNKNOWN_TOPIC_OR_PARTITION"]
        assert ask("auto2", allow=False)["ErrorCode"] == ERR["UNKNOWN_TOPIC_OR_PARTITION"]
        assert ask("bad name!")["ErrorCode"] == ERR["INVALID_TOPIC_EXCEPTION"]
        assert ask("auto3", version=4)["ErrorCode"] == ERR["UNKNOWN_TOPIC_OR_PARTITION"]
        assert ask("auto3", version=4)["ErrorCode"] == 0
    assert 'names = ["auto1"]' in record.read_text() and 'names = ["auto3"]' in record.read_text()


def test_no_auto_creation_when_the_broker_config_is_off():
    with kraftsim.serve(combined=1, release="4.4.0", auto_create_topics=False) as k:
        for _ in range(2):
            answer = rpc(k.bootstrap_servers, 3, 12, {"Topics": [{"Name": "x"}], "AllowAutoTopicCreation": True})
            assert answer[1]["Topics"][0]["ErrorCode"] == ERR["UNKNOWN_TOPIC_OR_PARTITION"]


@pytest.mark.parametrize(("release", "text"), [("3.7.2", ""), ("4.0.1", ""),
                                               ("4.4.0", "Broker ID 42 is not currently registered")])
def test_unregistering_an_unknown_broker_is_refused_with_the_releases_text(release, text):
    """Live 3.7.2 and 4.4.0 nodes (tests/conformance/test_serve_vs_kafka.py); 4.0.2 (4.0.1 here) from its jar."""
    with kraftsim.serve(combined=1, release=release) as k:
        body = rpc(k.bootstrap_servers, 64, 0, {"BrokerId": 42})[1]
        assert (body["ErrorCode"], body["ErrorMessage"]) == (ERR["BROKER_ID_NOT_REGISTERED"], text)


def test_while_a_handed_over_command_has_the_cluster_api_versions_is_answered_and_the_rest_waits(tmp_path):
    """The server is paused while a command sent to its directory runs (a long `cluster run`):
    its loop stays free, ApiVersions (how clients check a connection) is answered as before,
    other requests are answered once the command is done."""
    from kraftsim.sim import Simulation
    from kraftsim.wire.session import Session
    from kraftsim.wire.target import open_target

    Simulation.create(tmp_path / "c", combined=1, release="4.4.0").close()
    session = Session(open_target(tmp_path / "c"))
    session.start_thread()
    try:
        bs = session.served.bootstrap("broker")
        assert rpc(bs, 18, 3, API_VERSIONS_V3)[1]["ErrorCode"] == 0  # the answer is cached now
        assert session.loop is not None
        asyncio.run_coroutine_threadsafe(_on_loop(session.server.pause), session.loop).result(10)
        with connect(bs) as waiting:
            waiting.sendall(encode_request(3, 12, 7, {"Topics": None, "AllowAutoTopicCreation": False}))
            answered = rpc(bs, 18, 3, API_VERSIONS_V3, correlation_id=9)
            assert answered is not None and answered[0] == 9 and answered[1]["ErrorCode"] == 0
            waiting.settimeout(0.5)
            with pytest.raises(socket.timeout):
                waiting.recv(1)  # Metadata waits for the cluster
            session.loop.call_soon_threadsafe(session.server.resume)
            waiting.settimeout(10)
            (frame_,) = read_frames(waiting, 1)
            assert parse_response(3, 12, frame_)[0] == 7
    finally:
        session.close_thread()


async def _on_loop(fn) -> None:
    fn()


def test_metadata_by_topic_id_as_kafkas_broker_answers_it():
    """Metadata v12 (KIP-516) names topics by id, as the admin client's describeTopics by id
    does (kafka-topics --describe --topic-id): a known id gets its topic with its name, an
    unknown one UNKNOWN_TOPIC_ID with no name (KafkaApis.handleTopicMetadataRequest); an
    illegal name is INVALID_TOPIC_EXCEPTION without auto-creation too."""
    with kraftsim.serve(controllers=1, brokers=1, release="4.4.0", auto_create_topics=False) as k:
        rpc(k.address(2), 19, 7, {"Topics": [{"Name": "orders", "NumPartitions": 2, "ReplicationFactor": 1}]})
        (orders,) = rpc(k.address(2), 3, 12, {"Topics": None})[1]["Topics"]
        unknown_id = Uuid.from_longs(0, 7)
        asked = [{"TopicId": orders["TopicId"], "Name": None}, {"TopicId": unknown_id, "Name": None}]
        answered = rpc(k.address(2), 3, 12, {"Topics": asked, "AllowAutoTopicCreation": False})[1]["Topics"]
        assert [(t["ErrorCode"], t["Name"], t["TopicId"]) for t in answered] == \
            [(ERR["UNKNOWN_TOPIC_ID"], None, unknown_id), (0, "orders", orders["TopicId"])]
        assert answered[1]["Partitions"] == orders["Partitions"]
        by_name = rpc(k.address(2), 3, 12, {"Topics": [{"Name": "bad name!"}, {"Name": "nope"}]})[1]["Topics"]
        assert [(t["ErrorCode"], t["Name"]) for t in by_name] == \
            [(ERR["INVALID_TOPIC_EXCEPTION"], "bad name!"), (ERR["UNKNOWN_TOPIC_OR_PARTITION"], "nope")]
