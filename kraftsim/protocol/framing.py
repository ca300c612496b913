"""Metadata record framing: `uvarint frame version (1) | uvarint apiKey | uvarint version | body`.

Errors carry Kafka's MetadataParseException texts (kafka-facts §4.1) so that a user sees
the same words Kafka's own tools would print for the same bad bytes.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from kraftsim.errors import MetadataParseException, UnsupportedVersionException
from kraftsim.protocol import fastpath as _fastpath
from kraftsim.protocol.codec import DecodeError
from kraftsim.protocol.primitives import VarintError, read_uvarint, uvarint_bytes
from kraftsim.protocol.registry import RecordType, Registry

FRAME_VERSION = 1


class MetadataRecord(NamedTuple):
    """A decoded metadata record: its type, record version and message."""

    record_type: RecordType
    version: int
    message: object


_fastpath.provide_types(metadata_record=MetadataRecord)


def _read_short_uvarint(buf: bytes, pos: int, entity: str) -> tuple[int, int]:
    try:
        value, pos = read_uvarint(buf, pos)
    except VarintError:
        raise MetadataParseException(f"Error while reading {entity}") from None
    if value > 0x7FFF:
        raise MetadataParseException(f"Value for {entity} was too large.")
    return value, pos


def read_frame_header(value: bytes) -> tuple[int, int, int]:
    """Return (apiKey, version, body position) after checking the frame version."""
    frame, pos = _read_short_uvarint(value, 0, "frame version")
    if frame != FRAME_VERSION:
        if frame == 0:
            raise MetadataParseException(
                "Could not deserialize metadata record with frame version 0. Note that upgrades "
                "from the preview release of KRaft in 2.8 to newer versions are not supported."
            )
        raise MetadataParseException(
            f"Could not deserialize metadata record due to unknown frame version {frame}"
            f"(only frame version {FRAME_VERSION} is supported)"
        )
    api_key, pos = _read_short_uvarint(value, pos, "type")
    version, pos = _read_short_uvarint(value, pos, "version")
    return api_key, version, pos


def decode_metadata_record(registry: Registry, value: bytes) -> MetadataRecord:
    """Decode one framed metadata record value."""
    if _fastpath.ENABLED:  # C decoder; None means "not the common case": decode here
        fast: MetadataRecord | None = _fastpath.try_decode_metadata_record(registry, value)
        if fast is not None:
            return fast
    api_key, version, pos = read_frame_header(value)
    record_type = registry.by_api_key.get(api_key)
    if record_type is None:
        raise MetadataParseException(f"Unknown metadata id {api_key}")
    try:
        decoder = record_type.decoder(version)
        message, end = decoder(value, pos)
    except (UnsupportedVersionException, DecodeError, VarintError, IndexError, struct.error, UnicodeDecodeError, ValueError) as e:
        raise MetadataParseException(f"Failed to deserialize record with type {api_key}: {_cause(e)}") from None
    if end != len(value):
        raise MetadataParseException(f"Found {len(value) - end} byte(s) of garbage after {api_key}")
    return MetadataRecord(record_type, version, message)


def encode_metadata_record(record_type: RecordType, message: object, version: int) -> bytes:
    """Frame and encode one metadata record."""
    out = bytearray(b"\x01")
    out += uvarint_bytes(record_type.schema.api_key)  # type: ignore[arg-type]
    out += uvarint_bytes(version)
    record_type.encoder(version)(message, out)
    return bytes(out)


def _cause(e: Exception) -> str:
    if isinstance(e, (IndexError, struct.error)):
        return "the record runs past the end of its value"
    if isinstance(e, UnicodeDecodeError):
        return f"a string is not valid UTF-8 ({e.reason})"
    return str(e)
