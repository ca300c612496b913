"""Messages as Kafka's generated JSON converters print them (DESIGN.md, contract 2).

Field names in lowerCamelCase; every untagged field of the version present (null when
null); a tagged field only when it differs from its default; uuids in Kafka's base64 text;
bytes as standard base64; unknown tagged fields left out. The reverse direction builds a
message from such a dict, so dumps can be edited and written back.
"""

from __future__ import annotations

import base64
from typing import Any

from kraftsim.protocol.primitives import Uuid
from kraftsim.protocol.schema import FieldSpec, StructSpec


def _shown(f: FieldSpec, version: int, flexible: bool, value: object) -> bool:
    if not f.present_in(version):
        return False
    if flexible and f.tagged_in(version):
        return value is not None if f.null_default else value != f.default_value()
    return True


def _value_to_json(f: FieldSpec, value: Any, version: int, flexible: bool, elem: bool = False) -> Any:
    if value is None:
        return None
    if f.is_array and not elem:
        return [_value_to_json(f, v, version, flexible, elem=True) for v in value]
    t = f.element_type
    if f.struct is not None:
        return struct_to_json(f.struct, value, version, flexible)
    if t == "uuid":
        return str(Uuid(value))
    if t == "bytes":
        return base64.b64encode(value).decode("ascii")
    return value


def struct_to_json(spec: StructSpec, message: Any, version: int, flexible: bool) -> dict[str, Any]:
    out: dict[str, object] = {}
    for f in spec.fields:
        value = getattr(message, f.py_name)
        if _shown(f, version, flexible, value):
            out[f.json_name] = _value_to_json(f, value, version, flexible)
    return out


def _value_from_json(f: FieldSpec, value: Any, version: int, cls_of: dict[str, type], elem: bool = False) -> Any:
    if value is None:
        return None
    if f.is_array and not elem:
        return [_value_from_json(f, v, version, cls_of, elem=True) for v in value]
    t = f.element_type
    if f.struct is not None:
        return struct_from_json(f.struct, cls_of[f.struct.name], value, version, cls_of)
    if t == "uuid":
        return Uuid.from_string(value)
    if t == "bytes":
        return base64.b64decode(value)
    if t == "float64":
        return float(value)
    return value


def struct_from_json(spec: StructSpec, cls: type, data: dict[str, object], version: int, cls_of: dict[str, type]) -> object:
    """Build a message from its JSON form; fields not given keep their defaults."""
    known = {f.json_name: f for f in spec.fields}
    unknown = set(data) - set(known)
    if unknown:
        raise ValueError(f"{spec.name} has no field(s) {sorted(unknown)}")
    kwargs = {known[k].py_name: _value_from_json(known[k], v, version, cls_of) for k, v in data.items()}
    return cls(**kwargs)
