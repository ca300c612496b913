"""The pipeline's Arrow schemas, read from schemas.toml.

Schemas are data so that they can be documented, versioned and checked in one place:
every schema carries its name and version in its metadata (`kraftsim.schema`,
`kraftsim.schema_version`) and every field its doc, so a Parquet file written from one
says what it is. Readers check the name and version before trusting the columns.
"""

from __future__ import annotations

import functools
import re
import tomllib
from importlib import resources
from typing import NotRequired, TypedDict, cast

import pyarrow as pa

from kraftsim.errors import KraftsimError

SCHEMA_KEY = b"kraftsim.schema"
VERSION_KEY = b"kraftsim.schema_version"
DOC_KEY = b"doc"


class FieldEntry(TypedDict):
    """A field (or struct member) as schemas.toml writes it."""

    name: str
    type: str  # a scalar, list<T> or struct<NAME>
    doc: str
    nullable: NotRequired[bool]  # true unless given


class _StructEntry(TypedDict):
    doc: str
    fields: list[FieldEntry]


class _SchemaEntry(TypedDict):
    doc: str
    version: int
    fields: list[FieldEntry]
    extends: NotRequired[str]  # a schema whose fields come first


class _SchemasFile(TypedDict):
    structs: dict[str, _StructEntry]
    schemas: dict[str, _SchemaEntry]

_SCALARS = {
    "bool": pa.bool_(), "int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(),
    "float64": pa.float64(), "string": pa.string(),
}
_LIST = re.compile(r"^list<(.+)>$")
_STRUCT = re.compile(r"^struct<([a-z_]+)>$")


@functools.cache
def _data() -> _SchemasFile:
    text = resources.files("kraftsim.pipeline").joinpath("schemas.toml").read_text(encoding="utf-8")
    return cast(_SchemasFile, tomllib.loads(text))  # (the shipped file: tests/pipeline/test_schemas.py builds every schema)


def schema_names() -> tuple[str, ...]:
    """Every schema schemas.toml defines."""
    return tuple(_data()["schemas"])


def _arrow_type(text: str) -> pa.DataType:
    if text in _SCALARS:
        return _SCALARS[text]
    if m := _LIST.match(text):
        return pa.list_(_arrow_type(m.group(1)))
    if m := _STRUCT.match(text):
        struct = _data()["structs"].get(m.group(1))
        if struct is None:
            raise KraftsimError(f"schemas.toml: no struct named {m.group(1)}")
        return pa.struct([_field(f) for f in struct["fields"]])
    raise KraftsimError(f"schemas.toml: unknown type {text!r}")


def _field(spec: FieldEntry) -> pa.Field:
    return pa.field(spec["name"], _arrow_type(spec["type"]), nullable=spec.get("nullable", True),
                    metadata={DOC_KEY: spec["doc"].encode()})


def _spec(name: str) -> _SchemaEntry:
    spec: _SchemaEntry | None = _data()["schemas"].get(name)
    if spec is None:
        raise KraftsimError(f"no pipeline schema named {name!r} (known: {', '.join(schema_names())})")
    return spec


def field_specs(name: str) -> list[FieldEntry]:
    """The field entries of a schema as schemas.toml gives them, inherited ones first."""
    spec = _spec(name)
    inherited = field_specs(spec["extends"]) if "extends" in spec else []
    return inherited + list(spec["fields"])


def schema_doc(name: str) -> str:
    return " ".join(_spec(name)["doc"].split())


def schema_version(name: str) -> int:
    return int(_spec(name)["version"])


@functools.cache
def schema(name: str) -> pa.Schema:
    """The Arrow schema `name`, with its name and version in the metadata."""
    fields = [_field(f) for f in field_specs(name)]
    return pa.schema(fields, metadata={SCHEMA_KEY: name.encode(), VERSION_KEY: str(schema_version(name)).encode()})


def identify(s: pa.Schema) -> tuple[str, int] | None:
    """(name, version) a schema's metadata declares, or None for a schema that is not kraftsim's."""
    meta = s.metadata or {}
    if SCHEMA_KEY not in meta or VERSION_KEY not in meta:
        return None
    return meta[SCHEMA_KEY].decode(), int(meta[VERSION_KEY])


def check_schema(s: pa.Schema, name: str, *, where: str = "data") -> None:
    """Refuse data whose metadata names another schema or version, or whose columns differ."""
    found = identify(s)
    want = (name, schema_version(name))
    if found != want:
        got = "no kraftsim schema" if found is None else f"schema {found[0]} version {found[1]}"
        raise KraftsimError(f"{where}: expected kraftsim schema {name} version {want[1]}, found {got}")
    expected = schema(name)
    if not s.remove_metadata().equals(expected.remove_metadata(), check_metadata=False):
        raise KraftsimError(f"{where}: the columns do not match schema {name} version {want[1]}")


def schema_markdown(name: str) -> str:
    """A schema as a Markdown section: its doc, then one table row per field."""
    lines = [f"### `{name}` (version {schema_version(name)})", "", schema_doc(name), "",
             "| column | type | null | meaning |", "|---|---|---|---|"]
    for f in field_specs(name):
        null = "yes" if f.get("nullable", True) else "no"
        lines.append(f"| `{f['name']}` | {f['type']} | {null} | {' '.join(f['doc'].split())} |")
    return "\n".join(lines)


def struct_markdown() -> str:
    """The structs the schemas use, as Markdown tables."""
    out = []
    for name, spec in _data()["structs"].items():
        out += [f"#### struct `{name}`", "", spec["doc"], "", "| field | type | null | meaning |", "|---|---|---|---|"]
        for f in spec["fields"]:
            out.append(f"| `{f['name']}` | {f['type']} | {'yes' if f.get('nullable', True) else 'no'} | {f['doc']} |")
        out.append("")
    return "\n".join(out).rstrip()


def to_table(rows: list[dict[str, object]], name: str) -> pa.Table:
    """Rows (dicts keyed by column) as a table of schema `name`."""
    return pa.Table.from_pylist(rows, schema=schema(name))


def schemas_markdown() -> str:
    """Every schema and struct as Markdown: the schema section of kraftsim/pipeline/README.md."""
    return "\n\n".join(schema_markdown(n) for n in schema_names()) + "\n\n" + struct_markdown()

