"""Helpers for the fast-path tests: strict equality, the two paths side by side, generators.

"Same" here is stricter than `==`: types must match at every level (True is not 1, a
Uuid is not plain bytes, a list is not a tuple), floats are compared bit for bit (NaN
included), and record types by identity.
"""

from __future__ import annotations

import functools
import struct
import tomllib
from pathlib import Path
from typing import Any, Callable

import msgspec
import pytest
from hypothesis import strategies as st

from kraftsim.protocol import fastpath
from kraftsim.protocol.registry import RecordType
from kraftsim.protocol.schema import MAX_VERSION, FieldSpec, parse_schema
from kraftsim.testing import strategies as ks
from kraftsim.testing.strategies import INT_RANGES

from tests.paths import ORACLE, REPO  # noqa: F401  (re-exported)

needs_speedups = pytest.mark.skipif(
    not fastpath.HAVE_SPEEDUPS or fastpath.FORCED_PURE,
    reason="the C extension kraftsim.protocol._speedups is not built (or KRAFTSIM_PURE_PYTHON=1)",
)


def oracle_files() -> list[Path]:
    """Every .log segment and .checkpoint snapshot under ../shared/oracle (empty if absent)."""
    if not ORACLE.is_dir():
        return []
    return sorted(p for p in ORACLE.rglob("*") if p.is_file() and p.suffix in (".log", ".checkpoint"))


def rel(path: Path) -> str:
    return str(path.relative_to(ORACLE))


# ------------------------------------------------------------------------------ sameness


def same(a: Any, b: Any, path: str = "") -> None:
    """Assert a and b are the same value, type for type; raise AssertionError naming where not."""
    if isinstance(a, RecordType) or isinstance(b, RecordType):
        assert a is b, f"{path}: record type {a!r} is not {b!r}"
        return
    assert type(a) is type(b), f"{path}: type {type(a).__name__} != {type(b).__name__} ({a!r} vs {b!r})"
    if isinstance(a, msgspec.Struct):
        for name in a.__struct_fields__:
            same(getattr(a, name), getattr(b, name), f"{path}.{name}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{path}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{path}[{i}]")
    elif isinstance(a, float):
        assert struct.pack(">d", a) == struct.pack(">d", b), f"{path}: {a!r} != {b!r} (bits)"
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def outcome(fn: Callable[[], Any]) -> tuple[str, Any]:
    """('ok', value) or ('error', (exception type, message))."""
    try:
        return "ok", fn()
    except Exception as e:  # noqa: BLE001 - comparing whatever each path raises
        return "error", (type(e), str(e))


def same_outcome(fast: tuple[str, Any], pure: tuple[str, Any], what: str = "") -> None:
    assert fast[0] == pure[0], f"{what}: fast {fast[0]} {fast[1]!r} but pure {pure[0]} {pure[1]!r}"
    if fast[0] == "error":
        assert fast[1] == pure[1], f"{what}: fast raised {fast[1]!r}, pure raised {pure[1]!r}"
    else:
        same(fast[1], pure[1], what)


# ------------------------------------------------------------------------------ pure vs fast


def pure_read(data: bytes, registry: Any) -> tuple[list, Any]:
    """The pure-Python pipeline that batch_io.read_log_entries must equal."""
    from kraftsim.protocol.batch import TornTail, parse_batch, split_batches
    from kraftsim.protocol.entries import decode_batch

    with fastpath.pure_python():
        out: list = []
        for piece in split_batches(data):
            if isinstance(piece, TornTail):
                return out, piece
            out += decode_batch(parse_batch(piece.data), registry)
        return out, None


def pure_codec(rt: RecordType, version: int) -> tuple[Callable, Callable]:
    """The generated pure-Python decoder and encoder of one record version."""
    return rt.codec.pure_decoder(version), rt.codec.pure_encoder(version)


def fast_codec(rt: RecordType, version: int) -> tuple[Callable, Callable]:
    """The C-backed decoder and encoder for one record version (pure ones as fallback)."""
    dec, enc = pure_codec(rt, version)
    return fastpath.wrap_decoder(rt.codec, version, dec), fastpath.wrap_encoder(rt.codec, version, enc)


def pure_encode(enc: Callable, message: Any) -> bytes:
    out = bytearray()
    with fastpath.pure_python():
        enc(message, out)
    return bytes(out)


def fast_encode(enc: Callable, message: Any) -> bytes:
    out = bytearray()
    enc(message, out)
    return bytes(out)


def versions_to_test(rt: RecordType) -> list[int]:
    """Every valid version up to two past the last layout boundary."""
    schema = rt.schema
    bounds = fastpath._layout_boundaries(schema.body, schema.flexible_versions, schema.versions)
    hi = min(schema.versions.hi, bounds[-1] + 2, MAX_VERSION)
    return [v for v in range(schema.versions.lo, hi + 1)]


# ------------------------------------------------------------------------------ generators


def messages(rt: RecordType, version: int) -> st.SearchStrategy[Any]:
    """Messages for comparing the two codec paths: the project's strategy with edge values
    (integer range ends, NaN, infinities, -0.0) and unknown tagged fields in any order."""
    return ks.messages(rt, version, unknown_tags=True, edge=True, max_size=4)


def invalid_values(f: FieldSpec) -> st.SearchStrategy[Any]:
    """Values the encoder must refuse, or accept exactly as Python's struct/len rules do."""
    t = f.element_type
    bad: list[Any] = [None, "x", 1.5, b"ab", object(), [1], True, 2**64, -(2**64)]
    if t in INT_RANGES:
        lo, hi = INT_RANGES[t]
        bad += [lo - 1, hi + 1]
    if t == "string":
        bad += ["\ud800", b"bytes", 5]
    if t == "uuid":
        bad += [bytearray(16), b"short", "A" * 22]
    return st.sampled_from(bad)


# ------------------------------------------------------------------------------ a schema with everything

KITCHEN_SINK_TOML = """
name = "KitchenSinkRecord"
kind = "metadata"
api_key = 900
versions = "0-5"
flexible_versions = "2+"
doc = "Every type, nullability, tag and version rule the codec has (non-flexible 0-1)."

[[fields]]
name = "B"
type = "bool"
versions = "0+"
[[fields]]
name = "I8"
type = "int8"
versions = "0+"
default = -3
[[fields]]
name = "I16"
type = "int16"
versions = "0+"
[[fields]]
name = "I32"
type = "int32"
versions = "0+"
default = 7
[[fields]]
name = "I64"
type = "int64"
versions = "0+"
[[fields]]
name = "U16"
type = "uint16"
versions = "1+"
[[fields]]
name = "U32"
type = "uint32"
versions = "0+"
[[fields]]
name = "F64"
type = "float64"
versions = "0+"
default = 1.5
[[fields]]
name = "Id"
type = "uuid"
versions = "0+"
[[fields]]
name = "Name"
type = "string"
versions = "0+"
default = "x"
[[fields]]
name = "NullName"
type = "string"
versions = "0+"
nullable_versions = "1+"
[[fields]]
name = "Blob"
type = "bytes"
versions = "0+"
nullable_versions = "0+"
[[fields]]
name = "Strs"
type = "[]string"
versions = "0+"
[[fields]]
name = "Blobs"
type = "[]bytes"
versions = "1+"
[[fields]]
name = "Longs"
type = "[]int64"
versions = "0+"
nullable_versions = "3+"
[[fields]]
name = "Ids"
type = "[]uuid"
versions = "0+"
[[fields]]
name = "Bools"
type = "[]bool"
versions = "0+"
[[fields]]
name = "Floats"
type = "[]float64"
versions = "0+"
[[fields]]
name = "Shorts"
type = "[]uint16"
versions = "0+"
[[fields]]
name = "Inner"
type = "Inner"
versions = "0+"
[[fields]]
name = "Inners"
type = "[]Inner"
versions = "0+"
nullable_versions = "4+"
[[fields]]
name = "Mixed"
type = "int32"
versions = "0+"
tag = 9
tagged_versions = "0+"
doc = "Tagged where flexible, in order where not."
[[fields]]
name = "TaggedStr"
type = "string"
versions = "2+"
nullable_versions = "2+"
tag = 0
tagged_versions = "2+"
null_default = true
[[fields]]
name = "TaggedInt"
type = "int32"
versions = "2+"
tag = 1
tagged_versions = "2+"
default = 5
[[fields]]
name = "TaggedIds"
type = "[]uuid"
versions = "2+"
tag = 7
tagged_versions = "2+"
[[fields]]
name = "TaggedLeaves"
type = "[]Leaf"
versions = "3+"
nullable_versions = "3+"
tag = 4
tagged_versions = "3+"
null_default = true
[[fields]]
name = "TaggedBytes"
type = "bytes"
versions = "2+"
tag = 3
tagged_versions = "2+"
[[fields]]
name = "Removed"
type = "int32"
versions = "0-1"
[[fields]]
name = "Later"
type = "int16"
versions = "5+"
default = -1

[structs.Inner]
versions = "0+"
[[structs.Inner.fields]]
name = "A"
type = "int32"
versions = "0+"
[[structs.Inner.fields]]
name = "S"
type = "string"
versions = "0+"
nullable_versions = "0+"
[[structs.Inner.fields]]
name = "Deep"
type = "[]Leaf"
versions = "0+"
[[structs.Inner.fields]]
name = "T"
type = "int64"
versions = "2+"
tag = 0
tagged_versions = "2+"

[structs.Leaf]
versions = "0+"
[[structs.Leaf.fields]]
name = "X"
type = "uint16"
versions = "0+"
[[structs.Leaf.fields]]
name = "Y"
type = "string"
versions = "0+"
"""

# A struct field absent at a version: the pure encoder compares it with None (the codec's
# default for a struct) and refuses to write it; the fast path must refuse identically.
ABSENT_STRUCT_TOML = """
name = "AbsentStructRecord"
kind = "metadata"
api_key = 901
versions = "0-1"
flexible_versions = "0+"

[[fields]]
name = "Old"
type = "Thing"
versions = "0"
[[fields]]
name = "N"
type = "int32"
versions = "0+"

[structs.Thing]
versions = "0+"
[[structs.Thing.fields]]
name = "V"
type = "int8"
versions = "0+"
"""


def custom_record_type(toml_text: str) -> RecordType:
    return RecordType(parse_schema(tomllib.loads(toml_text), "<test schema>"))


@functools.cache
def distinct_oracle_values() -> tuple[tuple[bytes, bool, bytes | None], ...]:
    """Every distinct record value of the oracle with (control?, key); empty without the oracle."""
    from kraftsim.protocol.batch import parse_batch, split_batches

    seen: dict[bytes, tuple[bool, bytes | None]] = {}
    with fastpath.pure_python():
        for path in oracle_files():
            for piece in split_batches(path.read_bytes()):
                batch = parse_batch(piece.data)
                for rec in batch.records():
                    seen.setdefault(rec.value, (batch.is_control, rec.key))
    return tuple((v, c, k) for v, (c, k) in seen.items())
