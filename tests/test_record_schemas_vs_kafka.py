"""Cross-check the record schemas under records/ against Apache Kafka's own JSON schemas.

The TOML files are parsed with tomllib directly (no kraftsim import), and compared field
by field, recursively through structs, with the Kafka JSON files kept in
../shared/reference/kafka-schemas (relative to the repository root). The module is
skipped when that folder is not there.

What is compared: record name, apiKey (metadata) / the control type id (control),
validVersions, flexibleVersions, and for every field in declaration order: name, type
(struct names resolved and compared recursively), versions, nullableVersions, tag,
taggedVersions, mapKey and the default (semantically: Kafka's "-1" == -1, "true" == true,
"null" == null_default = true, absent == absent).

Kafka attributes deliberately not carried: "about" (we write our own docs) and
"entityType" (only drives Kafka's own tooling). Any other Kafka attribute makes the test
fail, so that a new one is looked at rather than silently dropped.
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.paths import KAFKA_SCHEMAS, REPO

RECORDS = REPO / "records"
KAFKA_DIR = Path(os.environ.get("KRAFTSIM_KAFKA_SCHEMAS") or KAFKA_SCHEMAS)

if not KAFKA_DIR.is_dir():
    pytest.skip(f"Kafka reference schemas not found at {KAFKA_DIR}", allow_module_level=True)

# Our record name -> Kafka's file name, where they differ.
KAFKA_FILE_FOR = {"ZkMigrationStateRecord": "ZkMigrationRecord.json"}

# ControlRecordType ids (clients/.../record/ControlRecordType.java); not in the JSON files.
CONTROL_TYPES = {
    "LeaderChangeMessage": 2,
    "SnapshotHeaderRecord": 3,
    "SnapshotFooterRecord": 4,
    "KRaftVersionRecord": 5,
    "VotersRecord": 6,
}

PRIMITIVES = {
    "bool", "int8", "int16", "int32", "int64", "uint16", "uint32", "float64",
    "string", "bytes", "uuid",
}
INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}

# Keys allowed in our TOML (records/README.md).
OUR_TOP_KEYS = {"name", "kind", "api_key", "control_type", "versions", "flexible_versions",
                "doc", "fields", "structs"}
OUR_FIELD_KEYS = {"name", "type", "versions", "nullable_versions", "tag", "tagged_versions",
                  "default", "null_default", "map_key", "doc"}
OUR_STRUCT_KEYS = {"versions", "fields"}

# Kafka keys we compare, and the ones we deliberately drop; anything else fails the test.
KAFKA_TOP_KEYS = {"apiKey", "type", "name", "validVersions", "flexibleVersions", "fields",
                  "commonStructs"}
KAFKA_FIELD_KEYS = {"name", "type", "versions", "nullableVersions", "tag", "taggedVersions",
                    "default", "mapKey", "fields"}
KAFKA_FIELD_IGNORED = {"about", "entityType"}
KAFKA_STRUCT_KEYS = {"name", "versions", "fields"}


# --------------------------------------------------------------------------- loading


def load_kafka(path: Path) -> dict[str, Any]:
    """Kafka's schema files are JSON with whole-line // comments."""
    lines = [ln for ln in path.read_text().splitlines() if not ln.lstrip().startswith("//")]
    return json.loads("\n".join(lines))


def kafka_file_for(name: str) -> Path:
    return KAFKA_DIR / KAFKA_FILE_FOR.get(name, f"{name}.json")


TOML_FILES = sorted(RECORDS.rglob("*.toml"))
KAFKA_FILES = sorted(KAFKA_DIR.glob("*.json"))


# --------------------------------------------------------------------------- helpers


def vrange(spec: str | None) -> tuple[int, int | None] | None:
    """'N', 'N-M', 'N+' -> (lo, hi); hi None = open. None / 'none' -> None."""
    if spec is None:
        return None
    s = str(spec).strip()
    if s == "none":
        return None
    if s.endswith("+"):
        return (int(s[:-1]), None)
    if "-" in s:
        lo, hi = s.split("-", 1)
        return (int(lo), int(hi))
    return (int(s), int(s))


def split_type(t: str) -> tuple[bool, str]:
    return (True, t[2:]) if t.startswith("[]") else (False, t)


_ABSENT = ("absent",)
_NULL = ("null",)


def kafka_default(field: dict[str, Any], where: str) -> tuple:
    """Kafka's default (a string in JSON) as a typed value."""
    if "default" not in field:
        return _ABSENT
    raw = field["default"]
    assert isinstance(raw, str), f"{where}: Kafka default is not a string: {raw!r}"
    if raw == "null":
        return _NULL
    is_array, elem = split_type(field["type"])
    if is_array or elem not in PRIMITIVES:
        raise AssertionError(f"{where}: unhandled Kafka default {raw!r} for type {field['type']}")
    if elem in INT_RANGES:
        s = raw.strip()
        if s == "":
            return ("value", 0)
        sign = -1 if s.startswith("-") else 1
        body = s.lstrip("+-")
        # Kafka's generator accepts "0x..." hex as well as decimal.
        value = sign * (int(body[2:], 16) if body.lower().startswith("0x") else int(body, 10))
        return ("value", value)
    if elem == "bool":
        assert raw in ("true", "false"), f"{where}: odd Kafka bool default {raw!r}"
        return ("value", raw == "true")
    if elem == "float64":
        return ("value", float(raw))
    if elem == "string":
        return ("value", raw)
    raise AssertionError(f"{where}: unhandled Kafka default {raw!r} for type {field['type']}")


def our_default(field: dict[str, Any], where: str) -> tuple:
    has_default = "default" in field
    null_default = field.get("null_default", False)
    assert isinstance(null_default, bool), f"{where}: null_default must be a bool"
    assert not (has_default and null_default), f"{where}: both default and null_default"
    if null_default:
        return _NULL
    if not has_default:
        return _ABSENT
    value = field["default"]
    is_array, elem = split_type(field["type"])
    assert not is_array and elem in PRIMITIVES, f"{where}: default on non-primitive {field['type']}"
    if elem in INT_RANGES:
        assert isinstance(value, int) and not isinstance(value, bool), \
            f"{where}: default {value!r} is not an int"
        lo, hi = INT_RANGES[elem]
        assert lo <= value <= hi, f"{where}: default {value} out of range for {elem}"
    elif elem == "bool":
        assert isinstance(value, bool), f"{where}: default {value!r} is not a bool"
    elif elem == "float64":
        assert isinstance(value, (int, float)) and not isinstance(value, bool), \
            f"{where}: default {value!r} is not a number"
        value = float(value)
    elif elem == "string":
        assert isinstance(value, str), f"{where}: default {value!r} is not a string"
    else:
        raise AssertionError(f"{where}: default on type {elem} is not supported")
    return ("value", value)


def kafka_struct(kfield: dict[str, Any], common: dict[str, dict], where: str) -> dict[str, Any]:
    """The struct a Kafka struct-typed field refers to: inline or from commonStructs."""
    _, elem = split_type(kfield["type"])
    if "fields" in kfield:
        assert elem not in common, f"{where}: struct {elem} both inline and common"
        return {"name": elem, "versions": kfield["versions"], "fields": kfield["fields"]}
    assert elem in common, f"{where}: Kafka struct {elem} not found"
    return common[elem]


def compare_fields(
    ours: list[dict[str, Any]],
    kafka: list[dict[str, Any]],
    our_structs: dict[str, dict],
    common: dict[str, dict],
    where: str,
    seen_structs: set[str],
) -> None:
    assert [f.get("name") for f in ours] == [f["name"] for f in kafka], \
        f"{where}: field names/order differ"
    for of, kf in zip(ours, kafka):
        fw = f"{where}.{kf['name']}"
        assert set(of) <= OUR_FIELD_KEYS, f"{fw}: unknown keys {set(of) - OUR_FIELD_KEYS}"
        unknown = set(kf) - KAFKA_FIELD_KEYS - KAFKA_FIELD_IGNORED
        assert not unknown, f"{fw}: Kafka attributes not handled by this test: {unknown}"
        assert "versions" in of, f"{fw}: missing versions"
        assert isinstance(of.get("doc", ""), str)

        assert vrange(of["versions"]) == vrange(kf["versions"]), f"{fw}: versions"
        assert vrange(of.get("nullable_versions")) == vrange(kf.get("nullableVersions")), \
            f"{fw}: nullable versions"
        assert of.get("tag") == kf.get("tag"), f"{fw}: tag"
        assert vrange(of.get("tagged_versions")) == vrange(kf.get("taggedVersions")), \
            f"{fw}: tagged versions"
        assert bool(of.get("map_key", False)) == bool(kf.get("mapKey", False)), f"{fw}: map key"
        assert our_default(of, fw) == kafka_default(kf, fw), f"{fw}: default"

        o_arr, o_elem = split_type(of["type"])
        k_arr, k_elem = split_type(kf["type"])
        assert o_arr == k_arr, f"{fw}: array-ness of type {of['type']} vs {kf['type']}"
        if k_elem in PRIMITIVES:
            assert "fields" not in kf, f"{fw}: primitive with fields"
            assert o_elem == k_elem, f"{fw}: type {of['type']} vs {kf['type']}"
            continue
        # A struct: our name must be Kafka's; compare its definition recursively.
        assert o_elem == k_elem, f"{fw}: struct type {of['type']} vs {kf['type']}"
        assert o_elem in our_structs, f"{fw}: struct {o_elem} not defined under [structs]"
        ks = kafka_struct(kf, common, fw)
        os_ = our_structs[o_elem]
        sw = f"{where}/{o_elem}"
        assert set(os_) <= OUR_STRUCT_KEYS, f"{sw}: unknown keys {set(os_) - OUR_STRUCT_KEYS}"
        assert vrange(os_.get("versions")) == vrange(ks["versions"]), f"{sw}: struct versions"
        seen_structs.add(o_elem)
        compare_fields(os_.get("fields", []), ks["fields"], our_structs, common, sw, seen_structs)


# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize("path", TOML_FILES, ids=lambda p: p.stem)
def test_record_matches_kafka(path: Path) -> None:
    ours = tomllib.loads(path.read_text())
    name = ours["name"]
    assert set(ours) <= OUR_TOP_KEYS, f"{name}: unknown keys {set(ours) - OUR_TOP_KEYS}"
    assert path.stem == name, f"file {path.name} holds record {name}"
    assert path.parent.name == ours["kind"], f"{name}: kind {ours['kind']} in {path.parent.name}/"

    kpath = kafka_file_for(name)
    assert kpath.is_file(), f"{name}: no Kafka schema {kpath.name}"
    kafka = load_kafka(kpath)
    unknown = set(kafka) - KAFKA_TOP_KEYS
    assert not unknown, f"{name}: Kafka attributes not handled by this test: {unknown}"
    assert kafka["name"] == name

    if ours["kind"] == "metadata":
        assert kafka["type"] == "metadata"
        assert "control_type" not in ours
        assert ours["api_key"] == kafka["apiKey"], f"{name}: apiKey"
    else:
        assert ours["kind"] == "control"
        assert kafka["type"] == "data" and "apiKey" not in kafka
        assert "api_key" not in ours
        assert ours["control_type"] == CONTROL_TYPES[name], f"{name}: control type"

    assert vrange(ours["versions"]) == vrange(kafka["validVersions"]), f"{name}: validVersions"
    assert vrange(ours["flexible_versions"]) == vrange(kafka["flexibleVersions"]), \
        f"{name}: flexibleVersions"

    common = {}
    for cs in kafka.get("commonStructs", []):
        assert set(cs) <= KAFKA_STRUCT_KEYS, f"{name}: odd common struct keys {set(cs)}"
        common[cs["name"]] = cs
    our_structs = ours.get("structs", {})
    seen: set[str] = set()
    compare_fields(ours.get("fields", []), kafka["fields"], our_structs, common, name, seen)
    assert set(our_structs) == seen, f"{name}: unused structs {set(our_structs) - seen}"


@pytest.mark.parametrize("kpath", KAFKA_FILES, ids=lambda p: p.stem)
def test_kafka_schema_has_toml(kpath: Path) -> None:
    kafka = load_kafka(kpath)
    name = kafka["name"]
    assert kafka_file_for(name) == kpath, f"{kpath.name}: record {name} not mapped to this file"
    folder = "metadata" if kafka["type"] == "metadata" else "control"
    assert (RECORDS / folder / f"{name}.toml").is_file(), f"no records/{folder}/{name}.toml"


def test_ids_unique() -> None:
    seen: dict[tuple[str, int], str] = {}
    for path in TOML_FILES:
        rec = tomllib.loads(path.read_text())
        key = (rec["kind"], rec.get("api_key", rec.get("control_type")))
        assert key not in seen, f"{rec['name']} and {seen[key]} share {key}"
        seen[key] = rec["name"]
