"""Records of types the image does not model, carried through snapshots unchanged.

Why: a user catalog may add a record type (KIP-778's hypothetical "Bar"). kraftsim cannot
know its meaning, but it must not silently drop it: such records are kept, written back
into snapshots after everything else, and reported as lost when the target
metadata.version lacks their type.

Keying: if the record's schema marks top-level fields with `map_key = true`, those fields
identify the entity and a later record with the same key replaces the earlier one.
Otherwise the whole record is its own key (a set of distinct records). Keys are canonical
bytes, so they sort deterministically. No removal semantics are guessed.
"""

from __future__ import annotations

from typing import Iterator

import msgspec

from kraftsim.image.canonical import canon
from kraftsim.image.pmap import DELETE, PMap, stable_hash
from kraftsim.protocol.registry import RecordType

OpaqueKey = tuple[str, bytes]


class OpaqueRecord:
    """One carried record: its type, the version it was read at, and its message."""

    __slots__ = ("record_type", "version", "message", "_bytes")

    def __init__(self, record_type: RecordType, version: int, message: object):
        self.record_type = record_type
        self.version = version
        self.message = message
        self._bytes = canon(message)

    @property
    def type_name(self) -> str:
        return self.record_type.name

    def canonical(self) -> bytes:
        return self._bytes

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OpaqueRecord):
            return NotImplemented
        return self.record_type.name == other.record_type.name and self._bytes == other._bytes

    def __hash__(self) -> int:
        return hash((self.record_type.name, self._bytes))

    def __repr__(self) -> str:
        return f"OpaqueRecord({self.record_type.name} v{self.version}: {self.message})"


def _key_fields(record_type: RecordType) -> list[str]:
    """The top-level fields the schema marks `map_key = true` (Python names)."""
    return [f.py_name for f in record_type.schema.body.fields if f.map_key]


def opaque_key(record_type: RecordType, message: object) -> OpaqueKey:
    keys = _key_fields(record_type)
    if keys:
        return record_type.name, canon(tuple(getattr(message, k) for k in keys))
    return record_type.name, canon(message)


def key_text(key: OpaqueKey, record: "OpaqueRecord | None" = None) -> str:
    name, raw = key
    if record is not None:
        keys = _key_fields(record.record_type)
        if keys:
            return f"{name} " + ", ".join(f"{k}={getattr(record.message, k)}" for k in keys)
        return f"{name} {record.message}"
    return f"{name} {raw.hex()}"


class OpaqueImage(msgspec.Struct, frozen=True, gc=False):
    records: PMap[OpaqueKey, OpaqueRecord] = msgspec.field(default_factory=lambda: PMap(stable_hash))

    def is_empty(self) -> bool:
        return not self.records

    def sorted_records(self) -> Iterator[tuple[OpaqueKey, OpaqueRecord]]:
        return iter(self.records.sorted_items())


EMPTY_OPAQUE = OpaqueImage()


class OpaqueDelta:
    def __init__(self, image: OpaqueImage):
        self.image = image
        self.changes: dict[OpaqueKey, object] = {}

    def replay(self, record_type: RecordType, version: int, message: object) -> None:
        self.changes[opaque_key(record_type, message)] = OpaqueRecord(record_type, version, message)

    def finish_snapshot(self) -> None:
        for key in self.image.records:
            self.changes.setdefault(key, DELETE)

    def apply(self) -> OpaqueImage:
        records = self.image.records.update(self.changes)
        return self.image if records is self.image.records else OpaqueImage(records)
