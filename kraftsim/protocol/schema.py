"""Record schemas: the data files under records/ loaded into a typed model.

The schema model is what the codec compiles from and what the JSON view and the catalog
consult; it knows nothing of bytes. Schema files are TOML in the project's own format
(records/README.md). The same format, with kinds "request", "response" and "header",
describes Kafka's protocol messages (kraftsim/wire/messages/README.md).
"""

from __future__ import annotations

import keyword
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Iterable

from kraftsim import shipped_folder
from kraftsim import tomlinput
from kraftsim.errors import SchemaError
from kraftsim.regular_file import UnreadableFile, opened_file

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
        if m := re.fullmatch(r"([0-9]{1,6})(?:(\+)|-([0-9]{1,6}))?", text):
            lo = int(m[1])
            hi = MAX_VERSION if m[2] else lo if m[3] is None else int(m[3])
            if max(lo, hi) > MAX_VERSION:
                raise SchemaError(f"bad version range {text!r}: a version is at most {MAX_VERSION} (an int16)")
            if lo > hi:
                raise SchemaError(f"bad version range {text!r}: {lo} > {hi}, expected 'N-M' with N <= M")
            return cls(lo, hi)
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise SchemaError(f"bad version range {shown!r}: expected 'N', 'N-M', 'N+' or 'none'")

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
_STRUCT_KEYS = {"versions", "fields"}
KINDS = ("metadata", "control", "request", "response", "header")
_LISTENERS = ("broker", "controller")

#: Names as Kafka's generator takes them (MessageSpec, FieldSpec): a letter, then letters and
#: digits. The codec compiles Python from them, so nothing else may get through.
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*")
#: A struct type is told from a primitive by its upper-case first letter.
_STRUCT_NAME = re.compile(r"[A-Z][A-Za-z0-9]*")
#: An apiKey and a control record type are int16 on the wire; Kafka's are small and non-negative.
MAX_API_KEY = 0x7FFF
MAX_CONTROL_TYPE = 0x7FFF
#: A tagged field's tag is an unsigned varint that Kafka reads into an int.
MAX_TAG = 0x7FFFFFFF
INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1), "int16": (-(2**15), 2**15 - 1), "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1), "uint16": (0, 2**16 - 1), "uint32": (0, 2**32 - 1),
}
_VERSION_RANGE = "a version range string ('N', 'N-M', 'N+' or 'none')"


def _shown(value: object) -> str:
    """A value read from a file as an error message shows it: TOML's name of its type and its
    repr, cut short."""
    kind = ("boolean" if isinstance(value, bool) else "integer" if isinstance(value, int)
            else "float" if isinstance(value, float) else "string" if isinstance(value, str)
            else "array" if isinstance(value, list) else "table" if isinstance(value, dict) else "date/time")
    text = repr(value)
    return f"{kind} {text if len(text) <= 60 else text[:57] + '...'}"


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_schema(data: dict[str, Any], source: str) -> RecordSchema:
    """Build a RecordSchema from a decoded TOML document, checking every value's type and
    range as we go: each refusal names the file, the key and what was expected."""

    def fail(msg: str) -> SchemaError:
        return SchemaError(f"{source}: {msg}")

    def expected(where: str, what: str, value: object) -> SchemaError:
        return fail(f"{where}: expected {what}, got {_shown(value)}")

    def text(table: dict[str, Any], key: str, where: str, default: str | None = None) -> str:
        value = table.get(key, default)
        if not isinstance(value, str):
            raise expected(where, "a string", value)
        return value

    def name_of(table: dict[str, Any], where: str, pattern: re.Pattern[str] = _NAME) -> str:
        value = table["name"]
        if not isinstance(value, str) or not pattern.fullmatch(value):
            first = "an upper-case letter" if pattern is _STRUCT_NAME else "a letter"
            raise expected(where, f"a name: {first}, then letters and digits", value)
        return value

    def flag(table: dict[str, Any], key: str, where: str) -> bool:
        value = table.get(key, False)
        if not isinstance(value, bool):
            raise expected(where, "true or false", value)
        return value

    def ranged(value: object, where: str) -> VersionRange:
        if not isinstance(value, str):
            raise expected(where, _VERSION_RANGE, value)
        try:
            return VersionRange.parse(value)
        except SchemaError as e:
            raise fail(f"{where}: {e}") from None

    def small_int(value: object, where: str, top: int, what: str) -> int:
        if not _is_int(value) or not 0 <= value <= top:  # type: ignore[operator]
            raise expected(where, f"an integer from 0 to {top} ({what})", value)
        return value  # type: ignore[return-value]

    def tables(value: object, where: str, what: str) -> list[dict[str, Any]]:
        if not isinstance(value, list) or not all(isinstance(x, dict) for x in value):
            raise expected(where, f"an array of tables ({what})", value)
        return value

    unknown = set(data) - _RECORD_KEYS
    if unknown:
        raise fail(f"unknown key(s) {sorted(unknown)}")
    for key in ("name", "kind", "versions"):
        if key not in data:
            raise fail(f"missing required key {key!r}")
    name = name_of(data, "name")
    kind = data["kind"]
    if not isinstance(kind, str) or kind not in KINDS:
        raise fail(f"kind must be one of {', '.join(repr(k) for k in KINDS)}, not {_shown(kind)}")
    api_key = data.get("api_key")
    control_type = data.get("control_type")
    if kind in ("metadata", "request", "response") and not _is_int(api_key):
        raise fail(f"a {kind} {'record' if kind == 'metadata' else 'message'} needs an integer api_key")
    if api_key is not None:
        small_int(api_key, "api_key", MAX_API_KEY, "an int16 apiKey")
    listeners = data.get("listeners", [])
    if not isinstance(listeners, list) or any(not isinstance(x, str) or x not in _LISTENERS for x in listeners):
        raise fail(f"listeners must be a list of {' and '.join(repr(x) for x in _LISTENERS)}, not {_shown(listeners)}")
    if listeners and kind != "request":
        raise fail("only a request names the listeners that accept it")
    if kind == "control" and not _is_int(control_type):
        raise fail("a control record needs an integer control_type")
    if control_type is not None:
        small_int(control_type, "control_type", MAX_CONTROL_TYPE, "an int16 control record type")
    versions = ranged(data["versions"], "versions")
    flexible = ranged(data.get("flexible_versions", "none"), "flexible_versions")
    doc = text(data, "doc", "doc", "")
    unstable = flag(data, "latest_version_unstable", "latest_version_unstable")
    structs_data = data.get("structs", {})
    if not isinstance(structs_data, dict) or not all(isinstance(x, dict) for x in structs_data.values()):
        raise expected("structs", "a table of struct tables ([structs.Name])", structs_data)
    for sname, sdata in structs_data.items():
        if not _STRUCT_NAME.fullmatch(sname):
            raise expected("structs", "struct names of an upper-case letter, then letters and digits", sname)
        unknown = set(sdata) - _STRUCT_KEYS
        if unknown:
            raise fail(f"struct {sname}: unknown key(s) {sorted(unknown)}")
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
            versions=ranged(sdata.get("versions", "0+"), f"struct {name}: versions"),
            fields=parse_fields(sdata.get("fields", []), f"{name}."),
        )
        resolving.discard(name)
        resolved[name] = spec
        return spec

    def parse_fields(value: object, prefix: str) -> tuple[FieldSpec, ...]:
        where = f"struct {prefix[:-1]}: fields" if prefix else "fields"
        fields = tuple(parse_field(f, prefix, i) for i, f in enumerate(tables(value, where, "[[fields]]")))
        seen: dict[str, str] = {}
        tags: dict[int, str] = {}
        for f in fields:
            # Two names may differ only where the generated code does not (`Ab`, `AB`: `ab`).
            for key in (f.name, f.py_name):
                if key in seen:
                    raise fail(f"{'struct ' + prefix[:-1] if prefix else 'record'}: duplicate field names "
                               f"{seen[key]} and {f.name}")
                seen[key] = f.name
            if f.tag is not None:
                if f.tag in tags:
                    raise fail(f"field {prefix}{f.name}: tag {f.tag} is already the tag of {prefix}{tags[f.tag]}")
                tags[f.tag] = f.name
        return fields

    def parse_field(f: dict[str, Any], prefix: str, index: int) -> FieldSpec:
        unknown = set(f) - _FIELD_KEYS
        shown = f.get("name") if isinstance(f.get("name"), str) and _NAME.fullmatch(f["name"]) else f"#{index + 1}"
        if unknown:
            raise fail(f"field {prefix}{shown}: unknown key(s) {sorted(unknown)}")
        if "name" not in f or "type" not in f or "versions" not in f:
            raise fail(f"field {prefix}{shown} needs name, type and versions")
        fname = name_of(f, f"field {prefix}{shown}: name")
        if keyword.iskeyword(snake_case(fname)):
            raise fail(f"field {prefix}{fname}: name: {snake_case(fname)!r} is a Python keyword, which a field's "
                       f"attribute cannot be")
        where = f"field {prefix}{fname}"
        ftype = text(f, "type", f"{where}: type")
        elem = ftype[2:] if ftype.startswith("[]") else ftype
        struct = None
        if elem not in PRIMITIVE_TYPES:
            if not _STRUCT_NAME.fullmatch(elem):
                raise fail(f"{where}: unknown type {_shown(ftype)}")
            struct = resolve_struct(elem)
        tag = f.get("tag")
        if tag is not None:
            small_int(tag, f"{where}: tag", MAX_TAG, "a tag")
        tagged = ranged(f.get("tagged_versions", "none"), f"{where}: tagged_versions")
        if tag is not None and tagged.empty:
            raise fail(f"{where}: a tag needs tagged_versions")
        default = f.get("default", _NO_DEFAULT)
        if default is not _NO_DEFAULT:
            check_default(default, ftype, struct, f"{where}: default")
        spec = FieldSpec(
            name=fname,
            type=ftype,
            versions=ranged(f["versions"], f"{where}: versions"),
            nullable_versions=ranged(f.get("nullable_versions", "none"), f"{where}: nullable_versions"),
            tag=tag,
            tagged_versions=tagged if tag is not None else VersionRange.NONE,
            default=default,
            null_default=flag(f, "null_default", f"{where}: null_default"),
            map_key=flag(f, "map_key", f"{where}: map_key"),
            doc=text(f, "doc", f"{where}: doc", ""),
            struct=struct,
            ignorable=flag(f, "ignorable", f"{where}: ignorable"),
            flexible_versions=ranged(f["flexible_versions"], f"{where}: flexible_versions")
            if "flexible_versions" in f else None,
        )
        if spec.null_default and spec.nullable_versions.empty:
            raise fail(f"{where}: null_default needs nullable_versions")
        if spec.flexible_versions is not None and ftype not in ("string", "bytes"):
            raise fail(f"{where}: only a string or bytes field has its own flexible_versions")
        return spec

    def check_default(value: object, ftype: str, struct: StructSpec | None, where: str) -> None:
        """A default is a typed TOML value of the field's type (README): a bool, an integer in
        the type's range, a number, a string, or an array of them."""
        if ftype.startswith("[]"):
            if not isinstance(value, list):
                raise expected(where, f"an array of {ftype[2:]} values", value)
            for i, v in enumerate(value):
                check_default(v, ftype[2:], struct, f"{where}[{i}]")
            return
        if ftype == "bool":
            ok, what = isinstance(value, bool), "true or false"
        elif ftype in INT_RANGES:
            lo, hi = INT_RANGES[ftype]
            ok, what = _is_int(value) and lo <= value <= hi, f"an {ftype}, an integer from {lo} to {hi}"  # type: ignore[operator]
        elif ftype == "float64":
            ok, what = isinstance(value, (int, float)) and not isinstance(value, bool), "a number"
        elif ftype == "string":
            ok, what = isinstance(value, str), "a string"
        else:
            raise fail(f"{where}: a {ftype} field takes no default (its default is "
                       f"{'the zero uuid' if ftype == 'uuid' else 'empty' if ftype == 'bytes' else 'the struct of defaults'}"
                       f"; null_default = true makes it null)")
        if not ok:
            raise expected(where, what, value)

    fields = parse_fields(data.get("fields", []), "")
    return RecordSchema(
        name=name,
        kind=kind,
        api_key=api_key,
        control_type=control_type,
        versions=versions,
        flexible_versions=flexible,
        doc=doc,
        body=StructSpec(name, versions, fields),
        source=source,
        listeners=tuple(listeners),
        latest_version_unstable=unstable,
    )


def load_schema_file(path: Path) -> RecordSchema:
    """One schema file; anything but a regular file (a FIFO would block the open) is refused
    before it is opened."""
    try:
        with opened_file(path) as f:
            data = tomlinput.loads(tomlinput.read_opened(f))
    except UnreadableFile as e:
        raise SchemaError(f"{path}: cannot read: {e.reason}") from None
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
            if d.exists():
                raise SchemaError(f"schema directory {d} is not a directory: expected a folder of *.toml schema files")
            raise SchemaError(f"schema directory {d} does not exist")
        yield from sorted(d.rglob("*.toml"))
