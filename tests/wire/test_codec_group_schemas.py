"""The group APIs' schemas (FindCoordinator, DescribeGroups, ConsumerGroupDescribe, OffsetFetch)
and ListOffsets' against Kafka's generated classes, and their round trip through the codec.

The layout test compiles a small Java program that walks each version's `SCHEMAS[v]` of
Kafka 4.4.0's generated `<Message>Data` class (the exact wire layout Kafka reads and writes:
field order, types, compact and nullable encodings, tagged fields) and compares it, version by
version, with the layout the codec compiles from kraftsim's schema (`StructSpec.wire_fields`).
OffsetFetch v0 and ListOffsets v0, which Kafka 4.0 removed (KIP-896) and 3.x nodes still
advertise, are compared with Kafka 3.9.2's classes instead. Skipped without java and javac or without the cached
kafka-clients jars (`kraftsim kafka fetch 4.4.0` puts them in the cache).
"""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kraftsim.conformance.dist import KafkaUnavailable, cache_root, find_java
from kraftsim.errors import UnsupportedVersionException
from kraftsim.protocol import fastpath
from kraftsim.protocol.primitives import Uuid
from kraftsim.protocol.schema import FieldSpec, RecordSchema, StructSpec
from kraftsim.wire import encode_request, encode_response, parse_request, parse_response
from kraftsim.wire.codec import default_catalog

RELEASE = "4.4.0"
#: Versions Kafka 4.4 no longer defines (null in SCHEMAS) that the schemas keep as Kafka 3.9 defined them.
REMOVED_IN_4_0 = {"OffsetFetchRequest": {0}, "OffsetFetchResponse": {0}, "ListOffsetsRequest": {0},
                  "ListOffsetsResponse": {0}}
LEGACY_RELEASE = "3.9.2"

APIS = ("FindCoordinator", "DescribeGroups", "ConsumerGroupDescribe", "OffsetFetch", "ListOffsets")
MESSAGES = tuple(f"{api}{kind}" for api in APIS for kind in ("Request", "Response"))
CATALOG = default_catalog()
SCHEMAS: dict[str, RecordSchema] = {
    m.name: m.schema
    for api in APIS
    for m in (CATALOG.by_name[api].request, CATALOG.by_name[api].response)
}
CASES = [(name, v) for name in MESSAGES for v in range(SCHEMAS[name].versions.lo, SCHEMAS[name].versions.hi + 1)]

# Prints, for each class and version, the schema as JSON: a struct is {"struct": [[name, type], ...],
# "nullable": bool}, an array {"array": compact, "nullable": bool, "of": type}, the tagged-field
# section {"tagged": [[tag, name, type], ...]}, any other type its Kafka name ("COMPACT_STRING").
LAYOUT_JAVA = r"""
import java.util.Map;
import org.apache.kafka.common.protocol.types.BoundField;
import org.apache.kafka.common.protocol.types.CompactArrayOf;
import org.apache.kafka.common.protocol.types.Field;
import org.apache.kafka.common.protocol.types.Schema;
import org.apache.kafka.common.protocol.types.TaggedFields;
import org.apache.kafka.common.protocol.types.Type;

public class SchemaLayout {
    public static void main(String[] args) throws Exception {
        for (String name : args) {
            Class<?> data = Class.forName("org.apache.kafka.common.message." + name + "Data");
            Object[] schemas = (Object[]) data.getField("SCHEMAS").get(null);
            for (int v = 0; v < schemas.length; v++) {
                StringBuilder out = new StringBuilder();
                if (schemas[v] == null) out.append("null");
                else type((Type) schemas[v], out);
                System.out.println(name + "\t" + v + "\t" + out);
            }
        }
    }

    // The tag -> field map (3.x has no public accessor for it; 4.x's fields() returns the same map).
    @SuppressWarnings("unchecked")
    static Map<Integer, Field> taggedFields(TaggedFields t) {
        try {
            java.lang.reflect.Field f = TaggedFields.class.getDeclaredField("fields");
            f.setAccessible(true);
            return (Map<Integer, Field>) f.get(t);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    static void type(Type t, StringBuilder out) {
        if (t instanceof Schema) {
            out.append("{\"struct\":[");
            BoundField[] fields = ((Schema) t).fields();
            for (int i = 0; i < fields.length; i++) {
                if (i > 0) out.append(',');
                out.append("[\"").append(fields[i].def.name).append("\",");
                type(fields[i].def.type, out);
                out.append(']');
            }
            out.append("],\"nullable\":").append(t.isNullable()).append('}');
        } else if (t instanceof TaggedFields) {
            out.append("{\"tagged\":[");
            boolean first = true;
            for (Map.Entry<Integer, Field> e : taggedFields((TaggedFields) t).entrySet()) {
                if (!first) out.append(',');
                first = false;
                out.append('[').append(e.getKey()).append(",\"").append(e.getValue().name).append("\",");
                type(e.getValue().type, out);
                out.append(']');
            }
            out.append("]}");
        } else if (t.isArray()) {
            out.append("{\"array\":").append(t instanceof CompactArrayOf).append(",\"nullable\":")
               .append(t.isNullable()).append(",\"of\":");
            type(t.arrayElementType().get(), out);
            out.append('}');
        } else {
            out.append('"').append(t.toString()).append('"');
        }
    }
}
"""


# ------------------------------------------------------------------------------------ Kafka's side


def _kafka_clients_jar(version: str) -> Path:
    jar = cache_root() / version / "jars" / f"kafka-clients-{version}.jar"
    if not jar.is_file():
        pytest.skip(f"Kafka {version}'s kafka-clients jar is not cached at {jar} (kraftsim kafka fetch {version})")
    return jar


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(java, the folder with SchemaLayout.class), compiled against 4.4.0's kafka-clients."""
    try:
        java = find_java()
    except KafkaUnavailable as e:
        pytest.skip(str(e))
    beside = java.path.parent / "javac"
    javac = str(beside) if beside.is_file() else shutil.which("javac")
    if javac is None:
        pytest.skip("no javac beside java or on PATH to compile the schema walker")
    jar = _kafka_clients_jar(RELEASE)
    out = tmp_path_factory.mktemp("schema_layout")
    source = out / "SchemaLayout.java"
    source.write_text(LAYOUT_JAVA, encoding="utf-8")
    run = subprocess.run([javac, "-J-Xmx64m", "--release", str(java.version), "-cp", str(jar), "-d", str(out),
                          str(source)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    return java.path, out


@functools.cache
def _dump(java: Path, classes: Path, version: str) -> dict[tuple[str, int], Any]:
    """Every version's layout of the messages of APIS in a release's kafka-clients jar (None: no such version)."""
    jar = _kafka_clients_jar(version)
    run = subprocess.run([str(java), "-Xmx64m", "-XX:TieredStopAtLevel=1", "-cp", f"{classes}:{jar}", "SchemaLayout",
                          *MESSAGES], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    layouts: dict[tuple[str, int], Any] = {}
    for line in run.stdout.splitlines():
        name, v, text = line.split("\t")
        layouts[name, int(v)] = json.loads(text)
    return layouts


# ------------------------------------------------------------------------------------ kraftsim's side

_PRIMITIVES = {"bool": "BOOLEAN", "int8": "INT8", "int16": "INT16", "int32": "INT32", "int64": "INT64",
               "uint16": "UINT16", "uint32": "UINT32", "float64": "FLOAT64", "uuid": "UUID"}


def kafka_snake(name: str) -> str:
    """Kafka's generator's field name in a Schema (MessageGenerator.toSnakeCase)."""
    out, prev_capital = [], True
    for c in name:
        if c.isupper():
            out.append(("" if prev_capital else "_") + c.lower())
            prev_capital = True
        else:
            out.append(c)
            prev_capital = False
    return "".join(out)


def _scalar(type_name: str, nullable: bool, compact: bool) -> str:
    if type_name in ("string", "bytes"):
        return ("COMPACT_" if compact else "") + ("NULLABLE_" if nullable else "") + type_name.upper()
    return _PRIMITIVES[type_name]


def _field_type(f: FieldSpec, version: int, flexible: bool) -> Any:
    if f.is_array:
        elem = (_struct(f.struct, version, flexible, False) if f.struct is not None
                else _scalar(f.element_type, False, flexible))
        return {"array": flexible, "nullable": f.nullable_in(version), "of": elem}
    if f.struct is not None:
        return _struct(f.struct, version, flexible, f.nullable_in(version))
    return _scalar(f.type, f.nullable_in(version), f.compact_in(version, flexible))


def _struct(spec: StructSpec, version: int, flexible: bool, nullable: bool) -> dict[str, Any]:
    """The layout the codec writes, in the form the Java program prints."""
    untagged, tagged = spec.wire_fields(version, flexible)
    fields: list[list[Any]] = [[kafka_snake(f.name), _field_type(f, version, flexible)] for f in untagged]
    if flexible:
        fields.append(["_tagged_fields", {"tagged": [[f.tag, kafka_snake(f.name), _field_type(f, version, flexible)]
                                                     for f in tagged]}])
    return {"struct": fields, "nullable": nullable}


def our_layout(schema: RecordSchema, version: int) -> dict[str, Any]:
    return _struct(schema.body, version, version in schema.flexible_versions, False)


def flat(layout: Any, path: str = "") -> list[str]:
    """A layout as one line per field ("groups[].members[].member_id: COMPACT_STRING"): readable diffs."""
    lines = []
    for name, t in layout["struct"]:
        lines += _flat_type(t, f"{path}{name}")
    return lines


def _flat_type(t: Any, path: str) -> list[str]:
    if isinstance(t, str):
        return [f"{path}: {t}"]
    if "struct" in t:
        return [f"{path}: {'NULLABLE_' if t['nullable'] else ''}STRUCT", *flat(t, f"{path}.")]
    if "array" in t:
        kind = ("COMPACT_" if t["array"] else "") + ("NULLABLE_" if t["nullable"] else "") + "ARRAY"
        return [f"{path}: {kind}", *_flat_type(t["of"], f"{path}[]")]
    lines = [f"{path}: TAGGED_FIELDS"]
    for tag, name, inner in sorted(t["tagged"], key=lambda x: x[0]):
        lines += _flat_type(inner, f"{path}<{tag}>.{name}")
    return lines


# ------------------------------------------------------------------------------------ the tests


@pytest.mark.kafka
@pytest.mark.parametrize("name", MESSAGES)
def test_kafka_4_4_defines_the_same_versions(name: str, compiled: tuple[Path, Path]) -> None:
    layouts = _dump(*compiled, RELEASE)
    defined = {v for (n, v), layout in layouts.items() if n == name and layout is not None}
    ours = SCHEMAS[name].versions
    assert max(defined) == ours.hi
    assert set(range(ours.lo, ours.hi + 1)) - defined == REMOVED_IN_4_0.get(name, set())


@pytest.mark.kafka
@pytest.mark.parametrize("name, version", CASES, ids=[f"{n}-v{v}" for n, v in CASES])
def test_layout_matches_kafka(name: str, version: int, compiled: tuple[Path, Path]) -> None:
    release = LEGACY_RELEASE if version in REMOVED_IN_4_0.get(name, set()) else RELEASE
    kafka = _dump(*compiled, release)[name, version]
    assert kafka is not None, f"Kafka {release} does not define {name} v{version}"
    assert flat(our_layout(SCHEMAS[name], version)) == flat(kafka)
    assert our_layout(SCHEMAS[name], version) == kafka


def test_kafka_snake_case() -> None:
    assert [kafka_snake(n) for n in ("GroupId", "IncludeAuthorizedOperations", "KRaftVersion", "TopicId")] == [
        "group_id", "include_authorized_operations", "kraft_version", "topic_id"]


# ------------------------------------------------------------------------------------ round trip

TOPIC_ID = Uuid(bytes(range(1, 17)))
ASSIGNMENT = {"TopicPartitions": [{"TopicId": TOPIC_ID, "TopicName": "orders", "Partitions": [0, 2]},
                                  {"TopicId": Uuid(bytes(16)), "TopicName": "", "Partitions": []}]}

#: One body per message with every field of every version set to a value other than its default
#: (where a value is nullable in every version that has it, null is used somewhere too).
SAMPLES: dict[str, dict[str, Any]] = {
    "FindCoordinatorRequest": {"Key": "group-a", "KeyType": 1, "CoordinatorKeys": ["group-a", "txn-b", ""]},
    "FindCoordinatorResponse": {
        "ThrottleTimeMs": 7, "ErrorCode": 15, "ErrorMessage": "The coordinator is not available.", "NodeId": 2,
        "Host": "broker-2.example", "Port": 9093,
        "Coordinators": [
            {"Key": "group-a", "NodeId": 1, "Host": "localhost", "Port": 9092, "ErrorCode": 0, "ErrorMessage": None},
            {"Key": "txn-b", "NodeId": -1, "Host": "", "Port": -1, "ErrorCode": 15,
             "ErrorMessage": "The coordinator is not available."},
        ]},
    "DescribeGroupsRequest": {"Groups": ["group-a", "group-b"], "IncludeAuthorizedOperations": True},
    "DescribeGroupsResponse": {
        "ThrottleTimeMs": 3,
        "Groups": [
            {"ErrorCode": 0, "ErrorMessage": None, "GroupId": "group-a", "GroupState": "Stable",
             "ProtocolType": "consumer", "ProtocolData": "range",
             "Members": [{"MemberId": "m-1", "GroupInstanceId": "instance-1", "ClientId": "client-1",
                          "ClientHost": "/10.0.0.1", "MemberMetadata": b"\x00\x01meta",
                          "MemberAssignment": b"\x00\x01assign"},
                         {"MemberId": "m-2", "GroupInstanceId": None, "ClientId": "client-2",
                          "ClientHost": "/10.0.0.2", "MemberMetadata": b"", "MemberAssignment": b"\xff"}],
             "AuthorizedOperations": 0x0F0},
            {"ErrorCode": 69, "ErrorMessage": "Group group-b not found.", "GroupId": "group-b", "GroupState": "Dead",
             "ProtocolType": "", "ProtocolData": "", "Members": [], "AuthorizedOperations": -2147483648},
        ]},
    "ConsumerGroupDescribeRequest": {"GroupIds": ["group-a", "group-b"], "IncludeAuthorizedOperations": True},
    "ConsumerGroupDescribeResponse": {
        "ThrottleTimeMs": 11,
        "Groups": [
            {"ErrorCode": 0, "ErrorMessage": None, "GroupId": "group-a", "GroupState": "Stable", "GroupEpoch": 5,
             "AssignmentEpoch": 4, "AssignorName": "uniform",
             "Members": [{"MemberId": "m-1", "InstanceId": "instance-1", "RackId": "rack-a", "MemberEpoch": 5,
                          "ClientId": "client-1", "ClientHost": "/10.0.0.1", "SubscribedTopicNames": ["orders"],
                          "SubscribedTopicRegex": "ord.*", "Assignment": ASSIGNMENT,
                          "TargetAssignment": {"TopicPartitions": []}, "MemberType": 1},
                         {"MemberId": "m-2", "InstanceId": None, "RackId": None, "MemberEpoch": -1,
                          "ClientId": "client-2", "ClientHost": "/10.0.0.2", "SubscribedTopicNames": [],
                          "SubscribedTopicRegex": None, "Assignment": {"TopicPartitions": []},
                          "TargetAssignment": ASSIGNMENT, "MemberType": 0}],
             "AuthorizedOperations": 0x0F0},
            {"ErrorCode": 69, "ErrorMessage": "Group group-b not found.", "GroupId": "group-b", "GroupState": "Dead",
             "GroupEpoch": -1, "AssignmentEpoch": -1, "AssignorName": "", "Members": [],
             "AuthorizedOperations": -2147483648},
        ]},
    "OffsetFetchRequest": {
        "GroupId": "group-a",
        "Topics": [{"Name": "orders", "PartitionIndexes": [0, 1, 2]}, {"Name": "payments", "PartitionIndexes": []}],
        "Groups": [
            {"GroupId": "group-a", "MemberId": "m-1", "MemberEpoch": 5,
             "Topics": [{"Name": "orders", "TopicId": TOPIC_ID, "PartitionIndexes": [0, 1]}]},
            {"GroupId": "group-b", "MemberId": None, "MemberEpoch": -1, "Topics": None},
        ],
        "RequireStable": True},
    "OffsetFetchResponse": {
        "ThrottleTimeMs": 9,
        "Topics": [{"Name": "orders", "Partitions": [
            {"PartitionIndex": 0, "CommittedOffset": 42, "CommittedLeaderEpoch": 3, "Metadata": "meta",
             "ErrorCode": 0},
            {"PartitionIndex": 1, "CommittedOffset": -1, "CommittedLeaderEpoch": -1, "Metadata": None,
             "ErrorCode": 3}]}],
        "ErrorCode": 16,
        "Groups": [
            {"GroupId": "group-a", "Topics": [{"Name": "orders", "TopicId": TOPIC_ID, "Partitions": [
                {"PartitionIndex": 0, "CommittedOffset": 2**40, "CommittedLeaderEpoch": 7, "Metadata": "",
                 "ErrorCode": 0},
                {"PartitionIndex": 5, "CommittedOffset": -1, "CommittedLeaderEpoch": -1, "Metadata": None,
                 "ErrorCode": 100}]}],
             "ErrorCode": 0},
            {"GroupId": "group-b", "Topics": [], "ErrorCode": 69},
        ]},
    "ListOffsetsRequest": {
        "ReplicaId": -2, "IsolationLevel": 1, "TimeoutMs": 5000,
        "Topics": [{"Name": "orders", "Partitions": [
            {"PartitionIndex": 0, "CurrentLeaderEpoch": 4, "Timestamp": -3, "MaxNumOffsets": 5},
            {"PartitionIndex": 2, "CurrentLeaderEpoch": -1, "Timestamp": 1764416400000, "MaxNumOffsets": 0}]},
            {"Name": "payments", "Partitions": []}]},
    "ListOffsetsResponse": {
        "ThrottleTimeMs": 4,
        "Topics": [{"Name": "orders", "Partitions": [
            {"PartitionIndex": 0, "ErrorCode": 0, "OldStyleOffsets": [42, 0], "Timestamp": 1764416400000,
             "Offset": 2**40, "LeaderEpoch": 3},
            {"PartitionIndex": 2, "ErrorCode": 74, "OldStyleOffsets": [], "Timestamp": -1, "Offset": -1,
             "LeaderEpoch": -1}]},
            {"Name": "payments", "Partitions": []}]},
}


def at_version(spec: StructSpec, body: dict[str, Any], version: int) -> dict[str, Any]:
    """The fields of `body` that exist at `version` (what a writer may send)."""
    out = {}
    for f in spec.fields:
        if f.name not in body or not f.present_in(version):
            continue
        value = body[f.name]
        if f.struct is not None and value is not None:
            value = [at_version(f.struct, e, version) for e in value] if f.is_array else at_version(f.struct, value, version)
        out[f.name] = value
    return out


def as_read(spec: StructSpec, body: dict[str, Any]) -> dict[str, Any]:
    """What a reader returns for a body sent at a version: every field, defaults for those not sent."""
    out = {}
    for f in spec.fields:
        if f.name not in body:
            value = f.default_value()
            if f.struct is not None and not f.is_array and not f.null_default:
                value = as_read(f.struct, {})
            out[f.name] = value
            continue
        value = body[f.name]
        if f.struct is not None and value is not None:
            value = [as_read(f.struct, e) for e in value] if f.is_array else as_read(f.struct, value)
        out[f.name] = value
    return out


def test_samples_set_every_field() -> None:
    def names(spec: StructSpec, body: dict[str, Any], where: str) -> set[str]:
        missing = {f"{where}{f.name}" for f in spec.fields if f.name not in body}
        for f in spec.fields:
            value = body.get(f.name)
            if f.struct is not None and value is not None:
                for e in value if f.is_array else [value]:
                    missing |= names(f.struct, e, f"{where}{f.name}.")
        return missing

    for name in MESSAGES:
        assert names(SCHEMAS[name].body, SAMPLES[name], "") == set(), name


@pytest.mark.parametrize("name, version", CASES, ids=[f"{n}-v{v}" for n, v in CASES])
def test_round_trip(name: str, version: int) -> None:
    schema = SCHEMAS[name]
    assert schema.api_key is not None
    key = schema.api_key
    body = at_version(schema.body, SAMPLES[name], version)
    expected = as_read(schema.body, body)
    if schema.kind == "request":
        frame = encode_request(key, version, 12345, body, client_id="group-tester")
        with fastpath.pure_python():
            assert encode_request(key, version, 12345, body, client_id="group-tester") == frame
        req = parse_request(frame[4:])
        assert (req.api_key, req.api_version, req.correlation_id, req.client_id) == (key, version, 12345, "group-tester")
        assert req.body == expected
        assert req.header_version == (2 if version in schema.flexible_versions else 1)
    else:
        frame = encode_response(key, version, 12345, body)
        with fastpath.pure_python():
            assert encode_response(key, version, 12345, body) == frame
            assert parse_response(key, version, frame[4:]) == (12345, expected)
        assert parse_response(key, version, frame[4:]) == (12345, expected)
    # every byte is read: the frame is exactly as long as its fields
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4


def test_nullable_topics_round_trip() -> None:
    """OffsetFetch's Topics is null ("all topics") from v2 on, and a group's Topics in v8+."""
    schema = SCHEMAS["OffsetFetchRequest"]
    for version in range(2, 8):
        req = parse_request(encode_request(9, version, 1, {"GroupId": "g", "Topics": None})[4:])
        assert req.body["Topics"] is None and req.body["GroupId"] == "g"
    for version in (8, 9, 10):
        body = {"Groups": [{"GroupId": "g", "Topics": None}], "RequireStable": False}
        req = parse_request(encode_request(9, version, 1, body)[4:])
        assert req.body == as_read(schema.body, at_version(schema.body, body, version))
    with pytest.raises(UnsupportedVersionException, match="non-nullable field topics"):
        encode_request(9, 1, 1, {"GroupId": "g", "Topics": None})


def test_requests_are_served_by_brokers_only() -> None:
    """Kafka 4.4 lists only "broker" for these requests (3.x also listed "zkBroker")."""
    for name in MESSAGES:
        assert SCHEMAS[name].listeners == (("broker",) if name.endswith("Request") else ())
