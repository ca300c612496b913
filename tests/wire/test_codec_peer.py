"""Cross-check with kafka-python 3.0.12's own protocol classes, both ways.

kafka-python builds its message classes from Kafka's JSON definitions too, with its own
code. For every API both have (ApiVersions, Metadata, CreateTopics, DeleteTopics,
DescribeConfigs, DescribeCluster, UpdateFeatures, DescribeQuorum), at every version both
have, hypothesis bodies are encoded by kraftsim and decoded by kafka-python, and built as
kafka-python objects, encoded by it and decoded by kraftsim; the frames (size, header,
body) must be byte-identical and the decoded values equal.

kafka-python's own changes to some schemas are undone in the comparison: it reads the
authorized-operations int32 fields as a set of bit positions ({31}, Kafka's "not asked",
as None) under the name `authorized_operations`, and the zero uuid as None; its to_dict()
shows uuids as text or UUID objects and bit sets as lists.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftsim.protocol.schema import StructSpec, snake_case
from kraftsim.wire import encode_request, encode_response, parse_request, parse_response
from kraftsim.wire.codec import default_catalog
from tests.wire.test_codec_roundtrip import body_strategy, filled

kp_admin_cluster = pytest.importorskip("kafka.protocol.admin.cluster")
from kafka.protocol.admin import configs as kp_configs  # noqa: E402
from kafka.protocol.admin import topics as kp_topics  # noqa: E402
from kafka.protocol.metadata import api_versions as kp_api_versions  # noqa: E402
from kafka.protocol.metadata import metadata as kp_metadata  # noqa: E402

PEERS = {
    18: (kp_api_versions.ApiVersionsRequest, kp_api_versions.ApiVersionsResponse),
    3: (kp_metadata.MetadataRequest, kp_metadata.MetadataResponse),
    19: (kp_topics.CreateTopicsRequest, kp_topics.CreateTopicsResponse),
    20: (kp_topics.DeleteTopicsRequest, kp_topics.DeleteTopicsResponse),
    32: (kp_configs.DescribeConfigsRequest, kp_configs.DescribeConfigsResponse),
    60: (kp_admin_cluster.DescribeClusterRequest, kp_admin_cluster.DescribeClusterResponse),
    57: (kp_admin_cluster.UpdateFeaturesRequest, kp_admin_cluster.UpdateFeaturesResponse),
    55: (kp_admin_cluster.DescribeQuorumRequest, kp_admin_cluster.DescribeQuorumResponse),
}
BITFIELDS = {"ClusterAuthorizedOperations", "TopicAuthorizedOperations"}

CATALOG = default_catalog()
CASES = []
for _key, (_req, _resp) in PEERS.items():
    _api = CATALOG.apis[_key]
    for _kind, _ours, _theirs in (("request", _api.request, _req), ("response", _api.response, _resp)):
        _lo = max(_ours.versions[0], _theirs.valid_versions[0])
        _hi = min(_ours.versions[1], _theirs.valid_versions[1])
        CASES += [(_key, _kind, v) for v in range(_lo, _hi + 1)]


def _bits(value: int) -> set[int] | None:
    bits = {i for i in range(32) if (value >> i) & 1}
    return None if bits == {31} else bits


def peer_name(f_name: str) -> str:
    return "authorized_operations" if f_name in BITFIELDS else snake_case(f_name)


def to_peer_value(spec: StructSpec, body: dict[str, Any], owner: type, version: int) -> dict[str, Any]:
    """A filled kraftsim body as kafka-python constructor arguments (nested structs built)."""
    kwargs = {}
    for f in spec.fields:
        if not f.present_in(version):
            continue  # kafka-python's definitions may be older than the field
        value = body[f.name]
        if f.struct is not None and value is not None:
            cls = getattr(owner, f.struct.name)
            value = ([cls(**to_peer_value(f.struct, e, cls, version)) for e in value] if f.is_array
                     else cls(**to_peer_value(f.struct, value, cls, version)))
        elif f.element_type == "uuid":
            value = uuid.UUID(bytes=bytes(value))
        elif f.name in BITFIELDS:
            value = _bits(value)
        kwargs[peer_name(f.name)] = value
    return kwargs


def as_peer_dict(spec: StructSpec, body: dict[str, Any], version: int) -> dict[str, Any]:
    """A filled kraftsim body as kafka-python's to_dict() shows it (fields of the version only)."""
    out = {}
    for f in spec.fields:
        if not f.present_in(version):
            continue
        value = body[f.name]
        if f.struct is not None and value is not None:
            value = [as_peer_dict(f.struct, e, version) for e in value] if f.is_array else as_peer_dict(f.struct, value, version)
        elif f.element_type == "uuid":
            value = uuid.UUID(bytes=bytes(value)) if any(value) else None  # it reads the zero uuid as None
        elif f.name in BITFIELDS:
            value = _bits(value)
        out[peer_name(f.name)] = value
    return out


def plain(value: Any) -> Any:
    """One presentation for both sides: uuids as text, bit sets as sorted lists."""
    if isinstance(value, dict):
        return {k: sorted(v) if k == "authorized_operations" and v is not None else plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def _id(case: tuple[int, str, int]) -> str:
    key, kind, version = case
    return f"{CATALOG.apis[key].name}-{kind}-v{version}"


@pytest.mark.parametrize("case", CASES, ids=_id)
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), correlation_id=st.integers(0, 2**31 - 1))
def test_same_bytes_and_values_as_kafka_python(case: tuple[int, str, int], data: st.DataObject, correlation_id: int) -> None:
    key, kind, version = case
    api = CATALOG.apis[key]
    ours = api.request if kind == "request" else api.response
    theirs = PEERS[key][0 if kind == "request" else 1]
    spec = ours.schema.body
    body = filled(spec, data.draw(body_strategy(spec, version)))
    if key == 18 and kind == "response":
        # A client reads an ApiVersions response with an error at version 0 (KIP-511):
        # kafka-python does, so the peer comparison keeps the error code 0.
        body["ErrorCode"] = 0
    peer = theirs(version=version, **to_peer_value(spec, body, theirs, version))
    if kind == "request":
        peer.with_header(correlation_id=correlation_id, client_id="peer")
        frame = encode_request(key, version, correlation_id, body, client_id="peer")
    else:
        peer.with_header(correlation_id=correlation_id)
        frame = encode_response(key, version, correlation_id, body)
    peer_frame = peer.encode(header=True, framed=True)
    assert frame == peer_frame
    # kraftsim reads what kafka-python wrote; kafka-python reads what kraftsim wrote.
    if kind == "request":
        assert parse_request(peer_frame[4:]).body == body
    else:
        assert parse_response(key, version, peer_frame[4:]) == (correlation_id, body)
    decoded = theirs.decode(frame, version=version, header=True, framed=True)
    assert decoded.header.correlation_id == correlation_id
    assert plain(decoded.to_dict()) == plain(as_peer_dict(spec, body, version))
