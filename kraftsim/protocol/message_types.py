"""Typed message classes: one msgspec Struct per record type and per nested struct.

A record's Struct holds every field that exists in any of its versions (the schema says
which version has which); fields absent at a version keep their defaults. Each Struct also
carries `_unknown`, the tagged fields a reader did not recognise, as (tag, payload) pairs,
so that decode-then-encode reproduces them.

Record classes rename their fields to the JSON converters' names (`brokerId`, contract 2).
Protocol messages (kraftsim.wire) are built with `kafka_names=True` instead: fields keep
Kafka's own names (`BrokerId`) and unknown names are refused, so that msgspec converts a
handler's dict of Kafka field names into a message in one C call.
"""

from __future__ import annotations

import functools
from typing import Any

import msgspec

from kraftsim.protocol.primitives import Uuid
from kraftsim.protocol.schema import FieldSpec, RecordSchema, StructSpec

_PY_TYPES: dict[str, object] = {
    "bool": bool,
    "int8": int,
    "int16": int,
    "int32": int,
    "int64": int,
    "uint16": int,
    "uint32": int,
    "float64": float,
    "string": str,
    "bytes": bytes,
    "uuid": Uuid,
}


class MessageStruct(msgspec.Struct, gc=False):
    """Base of every generated message class."""


def unknown_tagged_fields(message: MessageStruct) -> tuple[tuple[int, bytes], ...]:
    """The tagged fields a reader of `message` did not recognise, as (tag, payload) pairs in
    the order read: the public way to see them (the slot's name is the codec's business)."""
    return tuple(getattr(message, "_unknown", ()))


def _field_annotation(f: FieldSpec, classes: dict[str, type]) -> object:
    elem = f.element_type
    inner = classes[elem] if f.struct is not None else _PY_TYPES[elem]
    ann: Any = list[inner] if f.is_array else inner  # type: ignore[valid-type]
    if not f.nullable_versions.empty:
        ann = ann | None
    return ann


def _field_default(f: FieldSpec, classes: dict[str, type]) -> Any:
    if f.null_default:
        return None
    if f.is_array:
        d = f.default_value()
        return msgspec.field(default_factory=functools.partial(list, tuple(d)))
    if f.struct is not None:
        cls = classes[f.struct.name]
        return msgspec.field(default_factory=cls)
    return f.default_value()


def build_struct_class(spec: StructSpec, qualname: str, classes: dict[str, type], kafka_names: bool = False) -> type:
    """Create the Struct for `spec`, after the classes of the structs it contains."""
    for f in spec.fields:
        if f.struct is not None and f.struct.name not in classes:
            classes[f.struct.name] = build_struct_class(f.struct, f"{qualname}.{f.struct.name}", classes, kafka_names)
    fields = [(f.py_name, _field_annotation(f, classes), _field_default(f, classes)) for f in spec.fields]
    fields.append(("_unknown", tuple, ()))
    cls = msgspec.defstruct(
        spec.name,
        fields,
        bases=(MessageStruct,),
        module="kraftsim.messages",
        rename={f.py_name: f.name if kafka_names else f.json_name for f in spec.fields},
        forbid_unknown_fields=kafka_names,
    )
    cls.__qualname__ = qualname
    return cls


def build_record_classes(schema: RecordSchema, kafka_names: bool = False) -> tuple[type, dict[str, type]]:
    """Return the record's Struct and the Structs of its nested struct types by name."""
    nested: dict[str, type] = {}
    cls = build_struct_class(schema.body, schema.name, nested, kafka_names)
    return cls, nested
