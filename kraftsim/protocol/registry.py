"""The set of known record types: schemas, their message classes and compiled codecs.

A registry is built from schema folders (the shipped records/ plus any a user adds), so
adding a record type or version is adding a file. Lookup is by apiKey for metadata
records, by control type for control records, and by name for both.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Iterable

from kraftsim.errors import SchemaError, UnsupportedVersionException
from kraftsim.protocol.codec import Decoder, Encoder, StructCodec
from kraftsim.protocol.message_types import build_record_classes
from kraftsim.protocol.schema import RecordSchema, builtin_schema_dir, iter_schema_files, load_schema_file


class RecordType:
    """One record type: its schema, its Struct class and its codec for every version."""

    def __init__(self, schema: RecordSchema, kafka_names: bool = False):
        self.schema = schema
        self.name = schema.name
        self.type_name = schema.type_name
        # kafka_names: field names as Kafka writes them (protocol messages, see message_types)
        self.cls, self.nested = build_record_classes(schema, kafka_names)
        self.codec = StructCodec(schema.body, self.cls, self.nested, schema.flexible_versions.__contains__)

    def __repr__(self) -> str:
        key = f"apiKey {self.schema.api_key}" if self.schema.kind == "metadata" else f"control type {self.schema.control_type}"
        return f"<RecordType {self.name} ({key}, versions {self.schema.versions})>"

    def check_version(self, version: int, action: str) -> None:
        if version not in self.schema.versions:
            raise UnsupportedVersionException(f"Can't {action} version {version} of {self.name}")

    def decoder(self, version: int) -> Decoder:
        self.check_version(version, "read")
        return self.codec.decoder(version)

    def encoder(self, version: int) -> Encoder:
        self.check_version(version, "write")
        return self.codec.encoder(version)

    def encode(self, message: object, version: int) -> bytes:
        out = bytearray()
        self.encoder(version)(message, out)
        return bytes(out)

    def decode(self, data: bytes, version: int) -> object:
        """Decode a whole buffer; trailing bytes are an error."""
        message, pos = self.decoder(version)(data, 0)
        if pos != len(data):
            raise ValueError(f"Found {len(data) - pos} byte(s) of garbage after {self.name}")
        return message

    def new(self, **fields: object) -> object:
        """A message with the given fields (Python names) and defaults elsewhere."""
        return self.cls(**fields)


class Registry:
    """All record types known to one run, indexed for the codec's lookups."""

    def __init__(self, schemas: Iterable[RecordSchema]):
        self.by_name: dict[str, RecordType] = {}
        self.by_api_key: dict[int, RecordType] = {}
        self.by_control_type: dict[int, RecordType] = {}
        # Bumped by every add/replace, so that caches built from the tables above (the C
        # decoder's apiKey table, fastpath.decode_table) can tell they are current.
        self.generation = 0
        for schema in schemas:
            self.add(schema)

    def add(self, schema: RecordSchema) -> RecordType:
        """Add a record type; a later schema with the same name or key replaces the earlier."""
        if schema.kind not in ("metadata", "control"):
            raise SchemaError(f"{schema.source}: {schema.name} is a protocol {schema.kind}, not a record")
        existing = self.by_name.get(schema.name)
        if existing is not None and existing.schema.kind != schema.kind:
            raise SchemaError(f"{schema.source}: {schema.name} is already a {existing.schema.kind} record")
        rt = RecordType(schema)
        if existing is not None:
            self._forget(existing)
        if schema.kind == "metadata":
            clash = self.by_api_key.get(schema.api_key)  # type: ignore[arg-type]
            if clash is not None and clash.name != schema.name:
                raise SchemaError(f"{schema.source}: apiKey {schema.api_key} is already {clash.name} ({clash.schema.source})")
            self.by_api_key[schema.api_key] = rt  # type: ignore[index]
        else:
            clash = self.by_control_type.get(schema.control_type)  # type: ignore[arg-type]
            if clash is not None and clash.name != schema.name:
                raise SchemaError(f"{schema.source}: control type {schema.control_type} is already {clash.name}")
            self.by_control_type[schema.control_type] = rt  # type: ignore[index]
        self.by_name[schema.name] = rt
        self.generation += 1
        return rt

    def _forget(self, rt: RecordType) -> None:
        self.generation += 1
        self.by_name.pop(rt.name, None)
        if rt.schema.kind == "metadata":
            self.by_api_key.pop(rt.schema.api_key, None)  # type: ignore[arg-type]
        else:
            self.by_control_type.pop(rt.schema.control_type, None)  # type: ignore[arg-type]

    def __getitem__(self, name: str) -> RecordType:
        try:
            return self.by_name[name]
        except KeyError:
            raise KeyError(f"unknown record type {name!r}") from None

    def __contains__(self, name: str) -> bool:
        return name in self.by_name

    def metadata_types(self) -> list[RecordType]:
        return [self.by_api_key[k] for k in sorted(self.by_api_key)]

    def control_types(self) -> list[RecordType]:
        return [self.by_control_type[k] for k in sorted(self.by_control_type)]

    def with_schema_dirs(self, directories: Iterable[Path]) -> "Registry":
        """A new registry with the record types of extra folders added (or replaced)."""
        reg = Registry(rt.schema for rt in self.by_name.values())
        for path in iter_schema_files(directories):
            reg.add(load_schema_file(path))
        return reg


def load_registry(extra_dirs: Iterable[Path | str] = ()) -> Registry:
    """The shipped record types plus those in `extra_dirs` (later files win).

    Registries are cached per set of folders: every caller asking for the same folders
    gets the same registry, so messages built anywhere share one class per record type.
    """
    extra = tuple(Path(d).resolve() for d in extra_dirs)
    return _registry_with(extra) if extra else default_registry()


@functools.lru_cache(maxsize=32)
def _registry_with(extra_dirs: tuple[Path, ...]) -> Registry:
    return default_registry().with_schema_dirs(extra_dirs)


@functools.cache
def default_registry() -> Registry:
    """The record types shipped with kraftsim; built once per process."""
    return Registry(load_schema_file(p) for p in iter_schema_files([builtin_schema_dir()]))
