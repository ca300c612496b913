"""Canonical bytes of image entities, for digests and for keying opaque records.

MessagePack via msgspec with deterministic map order; a Uuid (a bytes subclass msgspec does
not know) is encoded as its 16 bytes. Equal values give equal bytes, whatever the dict
insertion order or replay order that built them.
"""

from __future__ import annotations


import msgspec



def _hook(obj: object) -> object:
    if isinstance(obj, bytes):  # Uuid
        return bytes(obj)
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    raise TypeError(f"no canonical form for {type(obj).__name__}")


_encoder = msgspec.msgpack.Encoder(enc_hook=_hook, order="deterministic")


def canon(value: object) -> bytes:
    """Canonical bytes of a value made of tuples, ints, strs, bytes, Uuids, floats, None and Structs."""
    return _encoder.encode(value)

