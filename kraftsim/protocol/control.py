"""KRaft control records: a 4-byte key (int16 key version, int16 type) and a bare message.

The message's own leading `Version` field says at which version its body was written.
"""

from __future__ import annotations

import struct
from typing import Any

from kraftsim.errors import CorruptRecordException, UnsupportedVersionException
from kraftsim.protocol.codec import DecodeError
from kraftsim.protocol.framing import MetadataRecord
from kraftsim.protocol.primitives import VarintError
from kraftsim.protocol.registry import RecordType, Registry

CONTROL_KEY_VERSION = 0


def control_key(control_type: int) -> bytes:
    return struct.pack(">hh", CONTROL_KEY_VERSION, control_type)


def parse_control_key(key: bytes | None) -> int:
    """Return the control type id from a control record key."""
    if key is None or len(key) < 4:
        n = 0 if key is None else len(key)
        raise CorruptRecordException(
            f"Invalid value size found for end control record key. Must have at least 4 bytes, but found only {n}"
        )
    key_version: int
    control_type: int
    key_version, control_type = struct.unpack_from(">hh", key, 0)
    if key_version < 0:
        raise CorruptRecordException(f"Invalid version found for control record: {key_version}. May indicate data corruption")
    return control_type


def decode_control_record(registry: Registry, key: bytes | None, value: bytes | None) -> MetadataRecord | None:
    """Decode a control record; None for a control type kraftsim does not know (Kafka ignores those)."""
    control_type = parse_control_key(key)
    record_type = registry.by_control_type.get(control_type)
    if record_type is None:
        return None
    if value is None or len(value) < 2:
        raise CorruptRecordException(f"{record_type.name} control record has no version")
    (version,) = struct.unpack_from(">h", value, 0)
    try:
        message, end = record_type.decoder(version)(value, 0)
    except (UnsupportedVersionException, DecodeError, VarintError, IndexError, struct.error, UnicodeDecodeError, ValueError) as e:
        raise CorruptRecordException(f"Failed to deserialize {record_type.name} control record: {e}") from None
    if end != len(value):
        raise CorruptRecordException(f"Found {len(value) - end} byte(s) of garbage after {record_type.name} control record")
    return MetadataRecord(record_type, version, message)


def encode_control_record(record_type: RecordType, message: Any) -> tuple[bytes, bytes]:
    """Return (key, value) of a control record, written at the message's own Version."""
    version = message.version
    return control_key(record_type.schema.control_type), record_type.encode(message, version)  # type: ignore[arg-type]
