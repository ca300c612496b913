"""The protocol schemas under kraftsim/wire/messages/ against Kafka's own definitions.

Every Kafka file in ../shared/reference/kafka-messages has a TOML file here and the other
way round, except the schemas named in WITHOUT_REFERENCE; each is compared through the loaded schema model (what the codec compiles):
kind, apiKey, valid and flexible versions, listeners, and every field recursively: name,
type, versions, nullable versions, tag and tagged versions, the field's own flexible
versions, ignorable, mapKey and the default (Kafka writes "-1", -1, "true", true, "null").
"about" and "entityType" are not carried; any other Kafka attribute fails the test so that
it is looked at rather than dropped. Skipped when the reference folder is absent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kraftsim.protocol.schema import FieldSpec, StructSpec, VersionRange, load_schema_file, zero_value
from kraftsim.wire.codec import messages_dir
from tests.paths import SHARED

KAFKA_DIR = SHARED / "reference" / "kafka-messages"
if not KAFKA_DIR.is_dir():
    pytest.skip(f"Kafka's message definitions not found at {KAFKA_DIR}", allow_module_level=True)

KAFKA_FILES = sorted(KAFKA_DIR.glob("*.json"))
OUR_FILES = sorted(messages_dir().glob("*.toml"))

TOP_KEYS = {"apiKey", "type", "name", "validVersions", "flexibleVersions", "fields", "commonStructs", "listeners",
            "latestVersionUnstable"}
FIELD_KEYS = {"name", "type", "versions", "nullableVersions", "tag", "taggedVersions", "default", "mapKey", "fields",
              "ignorable", "flexibleVersions", "about", "entityType"}


def load_kafka(path: Path) -> dict[str, Any]:
    """Kafka's definitions are JSON with whole-line // comments."""
    return json.loads("\n".join(ln for ln in path.read_text().splitlines() if not ln.lstrip().startswith("//")))


def kafka_default(f: dict[str, Any]) -> Any:
    raw = f["default"]
    if raw == "null":
        return None
    t = f["type"]
    if t == "bool":
        return raw if isinstance(raw, bool) else {"true": True, "false": False}[raw]
    if t in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
        return int(raw)
    if t == "string":
        return raw
    raise AssertionError(f"{f['name']}: a default on {t}")


def compare_struct(ours: StructSpec, kafka_fields: list[dict[str, Any]], common: dict[str, Any], where: str) -> None:
    assert [f.name for f in ours.fields] == [f["name"] for f in kafka_fields], f"{where}: field names or order"
    for of, kf in zip(ours.fields, kafka_fields):
        compare_field(of, kf, common, f"{where}.{kf['name']}")


def compare_field(of: FieldSpec, kf: dict[str, Any], common: dict[str, Any], where: str) -> None:
    assert set(kf) <= FIELD_KEYS, f"{where}: Kafka attributes this test does not handle: {set(kf) - FIELD_KEYS}"
    assert of.type == kf["type"], where
    assert of.versions == VersionRange.parse(kf["versions"]), where
    assert of.nullable_versions == VersionRange.parse(kf.get("nullableVersions")), where
    assert of.tag == kf.get("tag"), where
    assert of.tagged_versions == VersionRange.parse(kf.get("taggedVersions")), where
    assert of.ignorable == bool(kf.get("ignorable", False)), where
    assert of.map_key == bool(kf.get("mapKey", False)), where
    own_flex = kf.get("flexibleVersions")
    assert of.flexible_versions == (None if own_flex is None else VersionRange.parse(own_flex)), where
    if "default" in kf:
        expected = kafka_default(kf)
        assert (of.default_value() is None and of.null_default) if expected is None else of.default_value() == expected, where
    else:
        assert not of.null_default and of.default_value() == zero_value(of.type, of.struct), where
    if of.struct is not None:
        fields = kf["fields"] if "fields" in kf else common[of.struct.name]["fields"]
        struct_versions = kf["versions"] if "fields" in kf else common[of.struct.name]["versions"]
        assert of.struct.versions == VersionRange.parse(struct_versions), where
        compare_struct(of.struct, fields, common, f"{where}/{of.struct.name}")


#: Schemas added after the reference folder was taken: checked by the round-trip tests and by
#: Kafka's own tools against a served cluster (tests/wire/test_real_tools.py) instead.
WITHOUT_REFERENCE = {"ListPartitionReassignmentsRequest", "ListPartitionReassignmentsResponse",
                     "DeleteRecordsRequest", "DeleteRecordsResponse",
                     "DescribeProducersRequest", "DescribeProducersResponse",
                     "DescribeTopicPartitionsRequest", "DescribeTopicPartitionsResponse",
                     "DescribeAclsRequest", "DescribeAclsResponse", "CreateAclsRequest", "CreateAclsResponse",
                     "DeleteAclsRequest", "DeleteAclsResponse", "ListGroupsRequest", "ListGroupsResponse",
                     "ListTransactionsRequest", "ListTransactionsResponse",
                     "CreatePartitionsRequest", "CreatePartitionsResponse",
                     "IncrementalAlterConfigsRequest", "IncrementalAlterConfigsResponse",
                     "AlterConfigsRequest", "AlterConfigsResponse",
                     "AlterClientQuotasRequest", "AlterClientQuotasResponse",
                     "DescribeClientQuotasRequest", "DescribeClientQuotasResponse",
                     "DescribeUserScramCredentialsRequest", "DescribeUserScramCredentialsResponse",
                     "AlterUserScramCredentialsRequest", "AlterUserScramCredentialsResponse",
                     "ElectLeadersRequest", "ElectLeadersResponse",
                     "AlterPartitionReassignmentsRequest", "AlterPartitionReassignmentsResponse",
                     "DescribeLogDirsRequest", "DescribeLogDirsResponse",
                     "FindCoordinatorRequest", "FindCoordinatorResponse",
                     "DescribeGroupsRequest", "DescribeGroupsResponse",
                     "ConsumerGroupDescribeRequest", "ConsumerGroupDescribeResponse",
                     "OffsetFetchRequest", "OffsetFetchResponse", "DeleteGroupsRequest", "DeleteGroupsResponse",
                     "ListOffsetsRequest", "ListOffsetsResponse",
                     "ListConfigResourcesRequest", "ListConfigResourcesResponse"}


#: Versions Kafka 4.0 removed from its definitions (KIP-896) that 3.3-3.9 nodes still advertise:
#: the schemas here keep them, as Kafka 3.9 defined them (the reference is 4.4's), with the
#: fields only those versions had.
REMOVED_IN_4_0 = {"CreateTopicsRequest": "0-1", "CreateTopicsResponse": "0-1", "DeleteTopicsRequest": "0",
                  "DeleteTopicsResponse": "0", "DescribeConfigsRequest": "0", "DescribeConfigsResponse": "0",
                  "DescribeAclsRequest": "0", "DescribeAclsResponse": "0"}
ONLY_IN_REMOVED_VERSIONS = {("DescribeConfigsResponse", "IsDefault")}


def without_removed_fields(struct: StructSpec, message: str) -> StructSpec:
    """The struct without the fields that only removed versions had (recursively)."""
    import dataclasses

    kept = []
    for f in struct.fields:
        if (message, f.name) in ONLY_IN_REMOVED_VERSIONS:
            continue
        kept.append(dataclasses.replace(f, struct=without_removed_fields(f.struct, message)) if f.struct else f)
    return dataclasses.replace(struct, fields=tuple(kept))


def test_one_toml_per_kafka_definition():
    ours = {p.stem for p in OUR_FILES}
    assert ours - WITHOUT_REFERENCE == {p.stem for p in KAFKA_FILES}


@pytest.mark.parametrize("kpath", KAFKA_FILES, ids=lambda p: p.stem)
def test_schema_matches_kafka(kpath: Path) -> None:
    kafka = load_kafka(kpath)
    assert set(kafka) <= TOP_KEYS, f"Kafka attributes this test does not handle: {set(kafka) - TOP_KEYS}"
    ours = load_schema_file(messages_dir() / f"{kpath.stem}.toml")
    assert ours.name == kafka["name"]
    assert ours.kind == kafka["type"]
    assert ours.api_key == kafka.get("apiKey")
    if kpath.stem in REMOVED_IN_4_0:  # the older versions come first, then Kafka's own range
        removed = VersionRange.parse(REMOVED_IN_4_0[kpath.stem])
        kafka_range = VersionRange.parse(kafka["validVersions"])
        assert kafka_range.lo == removed.hi + 1
        assert ours.versions == VersionRange(removed.lo, kafka_range.hi)
    else:
        assert ours.versions == VersionRange.parse(kafka["validVersions"])
    assert ours.flexible_versions == VersionRange.parse(kafka["flexibleVersions"])
    assert ours.listeners == tuple(kafka.get("listeners", ()))
    assert ours.latest_version_unstable == bool(kafka.get("latestVersionUnstable", False))
    common = {c["name"]: c for c in kafka.get("commonStructs", [])}
    compare_struct(without_removed_fields(ours.body, ours.name), kafka["fields"], common, ours.name)
