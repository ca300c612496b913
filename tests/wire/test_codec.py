"""The wire codec: headers, Kafka's rules for unservable requests, hand-checked bytes.

The ApiVersions vectors are written out byte by byte from Kafka's encoding rules
(kafka-facts §4.2, KIP-511, KIP-584): the response header of ApiVersions is v0 at every
version, features are tagged fields 0-3, a tagged field is written only when it differs
from its default.
"""

from __future__ import annotations

import struct

import pytest

from kraftsim.errors import SchemaError, UnsupportedVersionException
from kraftsim.protocol import fastpath
from kraftsim.protocol.registry import Registry
from kraftsim.protocol.schema import parse_schema
from kraftsim.wire import (
    API_KEYS,
    FrameError,
    UnsupportedRequest,
    encode_request,
    encode_response,
    parse_request,
    parse_response,
    schema_versions,
)
from kraftsim.wire.codec import default_catalog


def compact_string(s: str) -> bytes:
    data = s.encode()
    assert len(data) < 127
    return bytes([len(data) + 1]) + data


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def with_size(payload: bytes) -> bytes:
    return i32(len(payload)) + payload


# ---------------------------------------------------------------------------- ApiVersions vectors


def test_api_versions_v3_response_with_every_feature_tag():
    body = {
        "ErrorCode": 0,
        "ApiKeys": [{"ApiKey": 18, "MinVersion": 0, "MaxVersion": 4}],
        "ThrottleTimeMs": 0,
        "SupportedFeatures": [{"Name": "metadata.version", "MinVersion": 7, "MaxVersion": 27}],
        "FinalizedFeaturesEpoch": 42,
        "FinalizedFeatures": [{"Name": "metadata.version", "MaxVersionLevel": 27, "MinVersionLevel": 27}],
        "ZkMigrationReady": True,
    }
    supported = b"\x02" + compact_string("metadata.version") + i16(7) + i16(27) + b"\x00"
    finalized = b"\x02" + compact_string("metadata.version") + i16(27) + i16(27) + b"\x00"
    assert len(supported) == len(finalized) == 23
    expected = with_size(
        i32(1234)  # response header v0: the correlation id only, no tagged section
        + i16(0)  # ErrorCode
        + b"\x02" + i16(18) + i16(0) + i16(4) + b"\x00"  # ApiKeys: compact array of one, its empty tags
        + i32(0)  # ThrottleTimeMs
        + b"\x04"  # four tagged fields, in tag order
        + b"\x00" + bytes([len(supported)]) + supported  # tag 0 SupportedFeatures
        + b"\x01\x08" + i64(42)  # tag 1 FinalizedFeaturesEpoch
        + b"\x02" + bytes([len(finalized)]) + finalized  # tag 2 FinalizedFeatures
        + b"\x03\x01\x01"  # tag 3 ZkMigrationReady
    )
    assert encode_response(18, 3, 1234, body) == expected
    assert parse_response(18, 3, expected[4:]) == (1234, body)


def test_api_versions_v4_writes_only_tags_that_differ_from_their_defaults():
    # KIP-1022: v4 may carry a supported range starting at 0; no finalized features yet
    # (epoch -1, the default) and not migration-ready: only tag 0 is on the wire.
    body = {"ApiKeys": [{"ApiKey": 57, "MinVersion": 0, "MaxVersion": 2}],
            "SupportedFeatures": [{"Name": "group.version", "MinVersion": 0, "MaxVersion": 1}]}
    supported = b"\x02" + compact_string("group.version") + i16(0) + i16(1) + b"\x00"
    expected = with_size(
        i32(7) + i16(0) + b"\x02" + i16(57) + i16(0) + i16(2) + b"\x00" + i32(0)
        + b"\x01" + b"\x00" + bytes([len(supported)]) + supported
    )
    assert encode_response(18, 4, 7, body) == expected
    _, decoded = parse_response(18, 4, expected[4:])
    assert decoded["FinalizedFeaturesEpoch"] == -1 and decoded["FinalizedFeatures"] == []
    assert decoded["ZkMigrationReady"] is False


def test_api_versions_v0_response_drops_fields_it_does_not_have():
    # ThrottleTimeMs and the feature tags are ignorable: at v0 they are left out, not refused.
    body = {"ErrorCode": 35, "ApiKeys": [{"ApiKey": 18, "MinVersion": 0, "MaxVersion": 4}], "ThrottleTimeMs": 5,
            "FinalizedFeaturesEpoch": 3}
    expected = with_size(i32(9) + i16(35) + i32(1) + i16(18) + i16(0) + i16(4))
    assert encode_response(18, 0, 9, body) == expected
    with fastpath.pure_python():
        assert encode_response(18, 0, 9, body) == expected


def test_api_versions_v3_request_bytes():
    # Request header v2: key, version, correlation id, ClientId with a 2-byte length (never
    # compact), an empty tagged section; then the flexible body.
    expected = with_size(
        i16(18) + i16(3) + i32(5) + i16(3) + b"cid" + b"\x00"
        + compact_string("kp") + compact_string("3.0") + b"\x00"
    )
    frame = encode_request(18, 3, 5, {"ClientSoftwareName": "kp", "ClientSoftwareVersion": "3.0"}, client_id="cid")
    assert frame == expected
    req = parse_request(expected[4:])
    assert (req.api_key, req.api_version, req.correlation_id, req.client_id, req.header_version) == (18, 3, 5, "cid", 2)
    assert req.body == {"ClientSoftwareName": "kp", "ClientSoftwareVersion": "3.0", "ClusterId": None, "NodeId": -1}


def test_a_nullable_struct_is_written_after_an_int8_marker():
    # DescribeTopicPartitions v0's Cursor: -1 for null, 1 then the struct when present.
    head = i16(75) + i16(0) + i32(7) + i16(-1) + b"\x00"
    topics = b"\x02" + compact_string("a") + b"\x00"
    null = with_size(head + topics + i32(2000) + b"\xff" + b"\x00")
    assert encode_request(75, 0, 7, {"Topics": [{"Name": "a"}]}, client_id=None) == null
    assert parse_request(null[4:]).body["Cursor"] is None
    present = with_size(head + topics + i32(10) + b"\x01" + compact_string("a") + i32(3) + b"\x00" + b"\x00")
    body = {"Topics": [{"Name": "a"}], "ResponsePartitionLimit": 10, "Cursor": {"TopicName": "a", "PartitionIndex": 3}}
    assert encode_request(75, 0, 7, body, client_id=None) == present
    assert parse_request(present[4:]).body["Cursor"] == {"TopicName": "a", "PartitionIndex": 3}
    with pytest.raises(FrameError):
        parse_request(present[4:4 + len(head) + len(topics) + 4 + 1])  # cut right after the marker


# ---------------------------------------------------------------------------- headers


def test_header_versions_follow_flexibility():
    # Metadata v8 is not flexible (header v1, no tags), v9 is (header v2 / response header v1).
    v8 = encode_request(3, 8, 1, {"Topics": None})
    # header v1 (ClientId, no tags), then Topics null, AllowAutoTopicCreation true, the two
    # authorized-operations flags false
    assert v8[4:] == i16(3) + i16(8) + i32(1) + i16(8) + b"kraftsim" + i32(-1) + b"\x01\x00\x00"
    assert parse_request(v8[4:]).header_version == 1
    assert parse_request(encode_request(3, 9, 1, {"Topics": None})[4:]).header_version == 2
    assert encode_response(3, 8, 77, {})[4:8] == i32(77) and encode_response(3, 8, 77, {})[8:12] == i32(0)
    flexible = encode_response(3, 9, 77, {})
    assert flexible[4:9] == i32(77) + b"\x00"  # header v1: its empty tagged section


def test_null_client_id_reads_as_empty():
    frame = encode_request(60, 0, 3, {}, client_id=None)
    assert frame[12:14] == i16(-1)
    assert parse_request(frame[4:]).client_id == ""


def test_missing_fields_take_defaults_and_absent_versions_fill_in():
    req = parse_request(encode_request(57, 0, 1, {"FeatureUpdates": [{"Feature": "metadata.version", "MaxVersionLevel": 20}]})[4:])
    assert req.body["timeoutMs"] == 60000
    assert req.body["FeatureUpdates"] == [{"Feature": "metadata.version", "MaxVersionLevel": 20, "AllowDowngrade": False,
                                           "UpgradeType": 1}]
    assert req.body["ValidateOnly"] is False


def test_a_non_ignorable_field_is_refused_at_a_version_without_it():
    with pytest.raises(UnsupportedVersionException, match="non-default"):
        encode_response(3, 7, 1, {"ClusterAuthorizedOperations": 5})  # versions 8-10, not ignorable


def test_unknown_body_fields_are_named():
    with pytest.raises(ValueError, match="NoSuchField"):
        encode_response(18, 3, 1, {"NoSuchField": 1})


@pytest.mark.parametrize("body, words", [
    ({"ErrorCode": None}, r"Expected `int`, got `null` - at `\$.ErrorCode`"),
    ({"ApiKeys": [{"ApiKey": "18"}]}, r"at `\$.ApiKeys\[0\].ApiKey`"),
    ({"ErrorCode": 1 << 20}, "ApiVersionsResponse v3: a value does not fit its field's type"),
])
def test_bad_values_are_value_errors_that_say_where(body, words):
    with pytest.raises(ValueError, match=words):
        encode_response(18, 3, 1, body)
    with fastpath.pure_python(), pytest.raises(ValueError, match=words):
        encode_response(18, 3, 1, body)


# ---------------------------------------------------------------------------- unservable requests


def test_unknown_api_key_is_unsupported_with_its_correlation_id():
    frame = i16(999) + i16(0) + i32(42) + i16(-1)
    with pytest.raises(UnsupportedRequest) as info:
        parse_request(frame)
    assert (info.value.api_key, info.value.api_version, info.value.correlation_id) == (999, 0, 42)
    assert str(info.value) == "Unknown API key 999"


def test_api_versions_above_the_range_is_unsupported_after_the_header():
    # KIP-511: a newer client's ApiVersions; the header (v2 for any version >= 3) is read,
    # the body is not.
    frame = i16(18) + i16(127) + i32(8) + i16(2) + b"me" + b"\x00" + b"\xff\xff garbage"
    with pytest.raises(UnsupportedRequest) as info:
        parse_request(frame)
    assert (info.value.api_key, info.value.api_version, info.value.correlation_id, info.value.client_id) == (18, 127, 8, "me")


def test_other_keys_out_of_range_are_unsupported():
    frame = i16(3) + i16(14) + i32(8) + i16(0) + b"\x00"
    with pytest.raises(UnsupportedRequest, match="Received request api key METADATA with version 14 which is not enabled"):
        parse_request(frame)


@pytest.mark.parametrize("frame", [b"", b"\x00\x12", b"\x00\x12\x00\x03\x00\x00\x00"])
def test_too_short_for_a_header(frame):
    with pytest.raises(FrameError):
        parse_request(frame)


def test_a_body_that_does_not_parse_is_a_frame_error_with_the_header():
    frame = i16(3) + i16(12) + i32(8) + i16(0) + b"\x00" + b"\x05"  # four topics announced, none there
    with pytest.raises(FrameError, match="Error getting request for apiKey: METADATA, apiVersion: 12") as info:
        parse_request(frame)
    assert info.value.correlation_id == 8


def test_api_keys_and_versions():
    assert API_KEYS["ApiVersions"] == 18 and API_KEYS["DescribeQuorum"] == 55 and API_KEYS["UnregisterBroker"] == 64
    assert schema_versions(18) == (0, 5)
    assert schema_versions(3) == (0, 13)
    assert schema_versions(19) == (0, 7)  # 0-1 as 3.x nodes list them (KIP-896 removed them in 4.0)
    apis = default_catalog().apis
    assert apis[3].listeners == ("broker",) and apis[82].listeners == ("controller",)
    assert set(apis[18].listeners) == {"broker", "controller"}


# ---------------------------------------------------------------------------- the schema format


def _request(**extra):
    return {"name": "XRequest", "kind": "request", "api_key": 1000, "versions": "0", "flexible_versions": "0+",
            "fields": [{"name": "A", "type": "string", "versions": "0+"}], **extra}


def test_schema_format_checks_the_protocol_keys():
    assert parse_schema(_request(listeners=["broker"]), "x").listeners == ("broker",)
    with pytest.raises(SchemaError, match="listeners must be a list"):
        parse_schema(_request(listeners=["zookeeper"]), "x")
    with pytest.raises(SchemaError, match="only a request names the listeners"):
        parse_schema({**_request(listeners=["broker"]), "kind": "response"}, "x")
    with pytest.raises(SchemaError, match="needs an integer api_key"):
        parse_schema({**_request(), "api_key": "1"}, "x")
    bad_field = _request()
    bad_field["fields"] = [{"name": "A", "type": "int32", "versions": "0+", "flexible_versions": "none"}]
    with pytest.raises(SchemaError, match="only a string or bytes field has its own flexible_versions"):
        parse_schema(bad_field, "x")


def test_a_protocol_message_is_not_a_record():
    with pytest.raises(SchemaError, match="is a protocol request, not a record"):
        Registry([parse_schema(_request(), "x")])
