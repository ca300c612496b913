"""Record schemas: the data files under records/ loaded into a typed model.

The schema model is what the codec compiles from and what the JSON view and the catalog
consult; it knows nothing of bytes. Schema files are TOML in the project's own format
(records/README.md). The same format, with kinds "request", "response" and "header",
describes Kafka's protocol messages (kraftsim/wire/messages/README.md).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Iterable

from kraftsim import shipped_folder
from kraftsim import tomlinput
from kraftsim.errors import SchemaError

MAX_VERSION = 0x7FFF

PRIMITIVE_TYPES = frozenset(
    {"bool", "int8", "int16", "int32", "int64", "uint16", "uint32", "float64", "string", "bytes", "uuid"}
)


@dataclass(frozen=True, slots=True)
class VersionRange:
    """An inclusive range of versions; `lo > hi` means no version."""

    lo: int
    hi: int

    NONE: ClassVar[VersionRange]  # no version (set below the class)

    @classmethod
    def parse(cls, text: str | int | None) -> "VersionRange":
        if text is None or text == "none":
            return cls(1, 0)
        if isinstance(text, int):
            return cls(text, text)
        text = text.strip()
        if m := re.fullmatch(r"(\d+)\+", text):
            return cls(int(m[1]), MAX_VERSION)
        if m := re.fullmatch(r"(\d+)-(\d+)", text):
            return cls(int(m[1]), int(m[2]))
        if m := re.fullmatch(r"\d+", text):
            return cls(int(text), int(text))
        raise SchemaError(f"bad version range {text!r}: expected 'N', 'N-M', 'N+' or 'none'")

    def __contains__(self, version: int) -> bool:
        return self.lo <= version <= self.hi

    @property
    def empty(self) -> bool:
        return self.lo > self.hi

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.hi == MAX_VERSION:
            return f"{self.lo}+"
        return str(self.lo) if self.lo == self.hi else f"{self.lo}-{self.hi}"


VersionRange.NONE = VersionRange(1, 0)

_NO_DEFAULT = object()


def snake_case(name: str) -> str:
    """Kafka field name → Python attribute name (`KRaftVersion` → `k_raft_version`)."""
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)
    return s.lower()


def camel_case(name: str) -> str:
    """Kafka field name → the JSON converters' name (`BrokerId` → `brokerId`)."""
    return name[:1].lower() + name[1:]


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One field of a record or struct."""

    name: str
    type: str
    versions: VersionRange
    nullable_versions: VersionRange
    tag: int | None
    tagged_versions: VersionRange
    default: Any
    null_default: bool
    map_key: bool
    doc: str
    struct: "StructSpec | None"  # resolved struct for struct or []struct types
    # A writer may drop a non-default value at a version without the field (Kafka's
    # "ignorable"), instead of refusing to write it.
    ignorable: bool = False
    # Versions in which a string or bytes field uses the compact encoding, when it
    # differs from the message's (the request header's ClientId is never compact).
    flexible_versions: VersionRange | None = None

    @property
    def py_name(self) -> str:
        return snake_case(self.name)

    @property
    def json_name(self) -> str:
        return camel_case(self.name)

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    def present_in(self, version: int) -> bool:
        return version in self.versions

    def tagged_in(self, version: int) -> bool:
        return self.tag is not None and version in self.tagged_versions

    def nullable_in(self, version: int) -> bool:
        return version in self.nullable_versions

    def compact_in(self, version: int, flexible: bool) -> bool:
        """Whether the field's own length prefix is compact in a struct of that flexibility."""
        return flexible if self.flexible_versions is None else version in self.flexible_versions

    def default_value(self) -> Any:
        """The value a reader assumes when the field is absent; fresh for mutable types."""
        if self.null_default:
            return None
        if self.is_array:
            return list(self.default) if self.default is not _NO_DEFAULT else []
        if self.default is not _NO_DEFAULT:
            return self.default
        return zero_value(self.type, self.struct)


@dataclass(frozen=True, slots=True)
class StructSpec:
    """A struct: the top-level message or a nested struct type."""

    name: str
    versions: VersionRange
    fields: tuple[FieldSpec, ...]

    def wire_fields(self, version: int, flexible: bool) -> tuple[list[FieldSpec], list[FieldSpec]]:
        """The fields written at `version`: (the untagged ones in schema order, the tagged ones by tag).

        The Python codec and the C programs (fastpath) both lay a struct out by this."""
        present = [f for f in self.fields if f.present_in(version)]
        untagged = [f for f in present if not (flexible and f.tagged_in(version))]
        tagged = sorted((f for f in present if flexible and f.tagged_in(version)), key=lambda f: f.tag)  # type: ignore[arg-type, return-value]
        return untagged, tagged


@dataclass(frozen=True, slots=True)
class RecordSchema:
    """One record type as read from its schema file."""

    name: str
    kind: str  # "metadata", "control", or for protocol messages "request", "response", "header"
    api_key: int | None
    control_type: int | None
    versions: VersionRange
    flexible_versions: VersionRange
    doc: str
    body: StructSpec
    source: str
    listeners: tuple[str, ...] = ()  # requests: the listeners that accept them ("broker", "controller")
    latest_version_unstable: bool = False  # requests: the highest version is not yet enabled by default

    @property
    def type_name(self) -> str:
        """Kafka's enum name: `MetadataRecordType` or `ControlRecordType` form."""
        if self.kind == "control" and self.control_type is not None:
            return CONTROL_TYPE_NAMES.get(self.control_type, upper_snake(self.name))
        return upper_snake(self.name)


# Kafka's ControlRecordType names differ from the message names.
CONTROL_TYPE_NAMES = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}


def upper_snake(name: str) -> str:
    return snake_case(name).upper()


def zero_value(type_name: str, struct: "StructSpec | None" = None) -> object:
    from kraftsim.protocol.primitives import Uuid

    if type_name.startswith("[]"):
        return []
    if type_name == "bool":
        return False
    if type_name in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
        return 0
    if type_name == "float64":
        return 0.0
    if type_name == "string":
        return ""
    if type_name == "bytes":
        return b""
    if type_name == "uuid":
        return Uuid.ZERO
    if struct is not None:
        return None  # replaced by the struct's own default instance in message_types
    raise SchemaError(f"unknown type {type_name!r}")


# ---------------------------------------------------------------------------- loading

_RECORD_KEYS = {
    "name", "kind", "api_key", "control_type", "versions", "flexible_versions", "doc", "fields", "structs",
    "listeners", "latest_version_unstable",
}
_FIELD_KEYS = {
    "name", "type", "versions", "nullable_versions", "tag", "tagged_versions", "default",
    "null_default", "map_key", "doc", "ignorable", "flexible_versions",
}
KINDS = ("metadata", "control", "request", "response", "header")
_LISTENERS = ("broker", "controller")


def parse_schema(data: dict[str, Any], source: str) -> RecordSchema:
    """Build a RecordSchema from a decoded TOML document, checking it as we go."""

    def fail(msg: str) -> SchemaError:
        return SchemaError(f"{source}: {msg}")

    unknown = set(data) - _RECORD_KEYS
    if unknown:
        raise fail(f"unknown key(s) {sorted(unknown)}")
    for key in ("name", "kind", "versions"):
        if key not in data:
            raise fail(f"missing required key {key!r}")
    kind = data["kind"]
    if kind not in KINDS:
        raise fail(f"kind must be one of {', '.join(repr(k) for k in KINDS)}, not {kind!r}")
    api_key = data.get("api_key")
    control_type = data.get("control_type")
    if kind in ("metadata", "request", "response") and (not isinstance(api_key, int) or isinstance(api_key, bool)):
        raise fail(f"a {kind} {'record' if kind == 'metadata' else 'message'} needs an integer api_key")
    listeners = data.get("listeners", [])
    if not isinstance(listeners, list) or any(x not in _LISTENERS for x in listeners):
        raise fail(f"listeners must be a list of {' and '.join(repr(x) for x in _LISTENERS)}, not {listeners!r}")
    if listeners and kind != "request":
        raise fail("only a request names the listeners that accept it")
    if kind == "control" and not isinstance(control_type, int):
        raise fail("a control record needs an integer control_type")
    versions = VersionRange.parse(data["versions"])
    flexible = VersionRange.parse(data.get("flexible_versions", "none"))
    structs_data: dict[str, Any] = data.get("structs", {})
    resolved: dict[str, StructSpec] = {}
    resolving: set[str] = set()

    def resolve_struct(name: str) -> StructSpec:
        if name in resolved:
            return resolved[name]
        if name not in structs_data:
            raise fail(f"type {name!r} is neither a primitive nor a struct defined under [structs]")
        if name in resolving:
            raise fail(f"struct {name!r} contains itself")
        resolving.add(name)
        sdata = structs_data[name]
        spec = StructSpec(
            name=name,
            versions=VersionRange.parse(sdata.get("versions", "0+")),
            fields=tuple(parse_field(f, f"{name}.") for f in sdata.get("fields", [])),
        )
        resolving.discard(name)
        resolved[name] = spec
        return spec

    def parse_field(f: dict[str, Any], prefix: str) -> FieldSpec:
        unknown = set(f) - _FIELD_KEYS
        if unknown:
            raise fail(f"field {prefix}{f.get('name', '?')}: unknown key(s) {sorted(unknown)}")
        if "name" not in f or "type" not in f or "versions" not in f:
            raise fail(f"field in {prefix or 'record'} needs name, type and versions")
        ftype = f["type"]
        elem = ftype[2:] if ftype.startswith("[]") else ftype
        struct = None
        if elem not in PRIMITIVE_TYPES:
            if not elem[:1].isupper():
                raise fail(f"field {prefix}{f['name']}: unknown type {ftype!r}")
            struct = resolve_struct(elem)
        tag = f.get("tag")
        tagged = VersionRange.parse(f.get("tagged_versions")) if tag is not None else VersionRange.NONE
        if tag is not None and tagged.empty:
            raise fail(f"field {prefix}{f['name']}: a tag needs tagged_versions")
        spec = FieldSpec(
            name=f["name"],
            type=ftype,
            versions=VersionRange.parse(f["versions"]),
            nullable_versions=VersionRange.parse(f.get("nullable_versions")),
            tag=tag,
            tagged_versions=tagged,
            default=f.get("default", _NO_DEFAULT),
            null_default=bool(f.get("null_default", False)),
            map_key=bool(f.get("map_key", False)),
            doc=f.get("doc", ""),
            struct=struct,
            ignorable=bool(f.get("ignorable", False)),
            flexible_versions=VersionRange.parse(f["flexible_versions"]) if "flexible_versions" in f else None,
        )
        if spec.null_default and spec.nullable_versions.empty:
            raise fail(f"field {prefix}{spec.name}: null_default needs nullable_versions")
        if spec.flexible_versions is not None and ftype not in ("string", "bytes"):
            raise fail(f"field {prefix}{spec.name}: only a string or bytes field has its own flexible_versions")
        return spec

    fields = tuple(parse_field(f, "") for f in data.get("fields", []))
    names = [f.name for f in fields]
    if len(set(names)) != len(names):
        raise fail("duplicate field names")
    return RecordSchema(
        name=data["name"],
        kind=kind,
        api_key=api_key,
        control_type=control_type,
        versions=versions,
        flexible_versions=flexible,
        doc=data.get("doc", ""),
        body=StructSpec(data["name"], versions, fields),
        source=source,
        listeners=tuple(listeners),
        latest_version_unstable=bool(data.get("latest_version_unstable", False)),
    )


def load_schema_file(path: Path) -> RecordSchema:
    try:
        data = tomlinput.loads(tomlinput.read_text(path))
    except tomllib.TOMLDecodeError as e:
        raise SchemaError(f"{path}: not valid TOML: {e}") from None
    except tomlinput.TomlTooComplex as e:
        raise SchemaError(f"{path}: not valid TOML: {e}") from None
    except UnicodeDecodeError as e:
        raise SchemaError(f"{path}: not a UTF-8 text file (byte {e.start})") from None
    except OSError as e:
        raise SchemaError(f"{path}: cannot read: {e.strerror or e}") from None
    return parse_schema(data, str(path))


def builtin_schema_dir() -> Path:
    """Where the shipped schemas are: records/ in a source checkout, or inside the wheel."""
    return shipped_folder("kraftsim._records", "records")


def iter_schema_files(directories: Iterable[Path]) -> Iterable[Path]:
    for d in directories:
        d = Path(d)
        if not d.is_dir():
            raise SchemaError(f"schema directory {d} does not exist")
        yield from sorted(d.rglob("*.toml"))
