"""Hypothesis strategies for kraftsim messages, driven by the record schemas.

Nothing here is written per record type: every strategy walks a `RecordSchema` (or a
nested `StructSpec`) and derives values from each field's type, versions, nullability,
tag and default, so a record type or version added as a schema file is covered at once.

    from kraftsim.testing import strategies as ks

    @given(ks.record_versions().flatmap(lambda rv: ks.messages(*rv).map(lambda m: (*rv, m))))
    def test_round_trip(rv_m): ...

Main entry points:

- `messages(record_type, version)`: valid messages of that record type for that version.
  Fields absent at the version keep their defaults; a field is None only where it is
  nullable at that version; tagged fields are often left at their default (so both the
  "omitted" and the "written" paths are exercised); ints cover their whole type range,
  uint16/uint32 are unsigned, float64 is finite, strings are unicode, uuids are random
  16-byte values (sometimes the zero uuid), nested structs and arrays are small. For a
  control record the leading `Version` field equals `version`, as Kafka writes it.
  `unknown_tags=True` also adds random unknown tagged fields to every struct.
- `record_versions(registry)`: a (RecordType, version) pair over every record type and
  every valid version; `all_record_versions(registry)` is the same list, for parametrize.
- `unknown_tagged_fields(spec, version)`: `_unknown` tuples with tags the schema does not
  use at that version.
- `field_values(field, version, nested)` / `non_default_values(...)`: values of one field.
- `payloads(registry)`, `metadata_payloads`, `control_payloads`: `entries.Payload`s to
  build batches from.

Cluster-level strategies, documented in kraftsim.testing.cluster_strategies and
re-exported here: `releases`, `metadata_versions`, `feature_levels` (valid for a
release), `clusters`, `op_sequences`, `fault_schedules`, `record_batches` and
`hypothetical_catalogs` (extra metadata.versions with or without metadata changes, extra
features with dependencies, extra record versions).

This module imports hypothesis; it is meant for tests and for users who have it.
"""

from __future__ import annotations

from typing import Any, Iterable

try:
    from hypothesis import strategies as st
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(
        "kraftsim.testing.strategies needs hypothesis (pip install hypothesis, or kraftsim[test])"
    ) from e

from kraftsim.protocol.entries import Payload
from kraftsim.protocol.primitives import Uuid
from kraftsim.protocol.registry import RecordType, Registry, default_registry
from kraftsim.protocol.schema import FieldSpec, StructSpec

__all__ = [
    "INT_RANGES",
    "all_record_versions",
    "control_payloads",
    "field_values",
    "messages",
    "metadata_payloads",
    "non_default_values",
    "payloads",
    "record_batches",
    "record_versions",
    "struct_values",
    "unknown_tagged_fields",
    "used_tags",
    "uuids",
]

INT_RANGES: dict[str, tuple[int, int]] = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}

# Largest tag an unknown tagged field gets: Kafka reads tags as unsigned varints into an int.
MAX_TAG = 2**31 - 1

DEFAULT_MAX_SIZE = 3  # elements per array, also bounds the length of strings and bytes / 4


def uuids() -> st.SearchStrategy[Uuid]:
    """Kafka uuids: random 16 bytes, with the zero uuid and Kafka's ONE_UUID now and then."""
    return st.one_of(
        st.just(Uuid.ZERO),
        st.just(Uuid.from_longs(0, 1)),
        st.binary(min_size=16, max_size=16).map(Uuid),
    )


def _scalar(type_name: str, max_size: int, edge: bool = False) -> st.SearchStrategy[object]:
    """Values of a scalar type; `edge` adds the values codecs get wrong: the ends of
    integer ranges, 0 and ±1 often, and NaN, infinities and -0.0 for floats."""
    if type_name in INT_RANGES:
        lo, hi = INT_RANGES[type_name]
        if edge:
            return st.one_of(st.integers(lo, hi), st.sampled_from([lo, hi, 0, -1 if lo < 0 else 1]))
        return st.integers(lo, hi)
    if type_name == "bool":
        return st.booleans()
    if type_name == "float64":
        if edge:
            return st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.just(-0.0))
        return st.floats(allow_nan=False, allow_infinity=False)
    if type_name == "string":
        return st.text(max_size=4 * max_size)
    if type_name == "bytes":
        return st.binary(max_size=4 * max_size)
    if type_name == "uuid":
        return uuids()
    raise ValueError(f"no strategy for type {type_name!r}")


def used_tags(spec: StructSpec, version: int) -> frozenset[int]:
    """Tags of the struct's own tagged fields at `version`."""
    return frozenset(f.tag for f in spec.fields if f.present_in(version) and f.tagged_in(version))  # type: ignore[misc]


def unknown_tagged_fields(spec: StructSpec, version: int, max_fields: int = 3, *,
                          any_order: bool = False) -> st.SearchStrategy[tuple[tuple[int, bytes], ...]]:
    """`_unknown` values: (tag, payload) pairs in ascending tag order, tags unused at `version`.

    The order is the one a decoder produces for bytes Kafka wrote (ascending tags), so a
    message carrying them survives encode-then-decode unchanged. `any_order=True` gives
    pairs in any order with repeated tags too, for checking that two encoders agree on
    whatever a caller passes.
    """
    taken = used_tags(spec, version)
    tag = st.one_of(st.integers(0, 40), st.integers(0, MAX_TAG)).filter(lambda t: t not in taken)
    if any_order:
        return st.lists(st.tuples(tag, st.binary(max_size=12)), max_size=max_fields).map(tuple)
    pairs = st.lists(st.tuples(tag, st.binary(max_size=12)), max_size=max_fields, unique_by=lambda kv: kv[0])
    return pairs.map(lambda kvs: tuple(sorted(kvs)))


def field_values(f: FieldSpec, version: int, nested: dict[str, type], *, flexible: bool = True,
                 unknown_tags: bool = False, max_size: int = DEFAULT_MAX_SIZE,
                 edge: bool = False) -> st.SearchStrategy[object]:
    """Values of field `f` as written at `version` (None included only if nullable there)."""
    elem = f.element_type
    if f.struct is not None:
        struct = f.struct
        item: st.SearchStrategy[Any] = st.deferred(
            lambda: struct_values(struct, nested[struct.name], nested, version, flexible=flexible,
                                  unknown_tags=unknown_tags, max_size=max_size, edge=edge)
        )
    else:
        item = _scalar(elem, max_size, edge)
    if f.is_array:
        unique_by = None
        if f.struct is not None:
            key = next((k for k in f.struct.fields if k.map_key and k.present_in(version)), None)
            if key is not None:
                unique_by = (lambda e, name=key.py_name: getattr(e, name))
        value = st.lists(item, max_size=max_size, unique_by=unique_by) if unique_by else st.lists(item, max_size=max_size)
    else:
        value = item
    if f.nullable_in(version):
        value = st.one_of(st.none(), value)
    return value


def non_default_values(f: FieldSpec, nested: dict[str, type], version: int | None = None,
                       max_size: int = DEFAULT_MAX_SIZE) -> st.SearchStrategy[Any]:
    """Values of `f` that differ from its default (at `version`, or its first version).

    Used to check that writing such a value at a version lacking the field is refused.
    """
    v = f.versions.lo if version is None else version
    base = field_values(f, v, nested, max_size=max_size)
    default = f.default_value()
    if f.struct is not None and not f.is_array:
        cls = nested[f.struct.name]
        return base.filter(lambda x: x != cls())
    return base.filter(lambda x: x != default)


def struct_values(spec: StructSpec, cls: type, nested: dict[str, type], version: int, *, flexible: bool = True,
                  unknown_tags: bool = False, max_size: int = DEFAULT_MAX_SIZE,
                  fixed: dict[str, object] | None = None, edge: bool = False) -> st.SearchStrategy[object]:
    """Instances of `cls` (the Struct of `spec`) valid at `version`.

    Fields absent at `version` are not passed, so they keep their defaults. Tagged fields
    are their default about a third of the time. `fixed` pins fields by Python name.
    `edge=True`: edge scalar values, and unknown tagged fields in any order (see
    `_scalar`, `unknown_tagged_fields`).
    """
    fixed = fixed or {}
    kwargs: dict[str, st.SearchStrategy[object]] = {}
    for f in spec.fields:
        if not f.present_in(version):
            continue
        if f.py_name in fixed:
            kwargs[f.py_name] = st.just(fixed[f.py_name])
            continue
        value = field_values(f, version, nested, flexible=flexible, unknown_tags=unknown_tags, max_size=max_size,
                             edge=edge)
        if flexible and f.tagged_in(version):
            default = f.default_value()
            if isinstance(default, list):  # a fresh list per example: messages may be mutated
                dflt: st.SearchStrategy[object] = st.builds(lambda d=tuple(default): list(d))
            else:
                dflt = st.just(default)
            value = st.one_of(dflt, value)
        kwargs[f.py_name] = value
    if unknown_tags and flexible:
        kwargs["_unknown"] = unknown_tagged_fields(spec, version, any_order=edge)
    return st.fixed_dictionaries(kwargs).map(lambda kw: cls(**kw))


def messages(record_type: RecordType, version: int, *, unknown_tags: bool = False,
             max_size: int = DEFAULT_MAX_SIZE, edge: bool = False) -> st.SearchStrategy[object]:
    """Valid messages of `record_type` at `version` (see the module docstring); `edge=True`
    for codec comparisons (see `struct_values`)."""
    schema = record_type.schema
    if version not in schema.versions:
        raise ValueError(f"{record_type.name} has no version {version} (valid: {schema.versions})")
    flexible = version in schema.flexible_versions
    fixed: dict[str, object] = {}
    if schema.kind == "control":
        vf = next((f for f in schema.body.fields if f.name == "Version"), None)
        if vf is not None and vf.present_in(version):
            fixed[vf.py_name] = version
    return struct_values(schema.body, record_type.cls, record_type.nested, version, flexible=flexible,
                         unknown_tags=unknown_tags, max_size=max_size, fixed=fixed, edge=edge)


def all_record_versions(registry: Registry | None = None, kinds: Iterable[str] = ("metadata", "control")) -> list[tuple[RecordType, int]]:
    """Every (record type, valid version) pair, metadata by apiKey then control by type id."""
    registry = registry or default_registry()
    kinds = set(kinds)
    types: list[RecordType] = []
    if "metadata" in kinds:
        types += registry.metadata_types()
    if "control" in kinds:
        types += registry.control_types()
    return [(rt, v) for rt in types for v in range(rt.schema.versions.lo, rt.schema.versions.hi + 1)]


def record_versions(registry: Registry | None = None, kinds: Iterable[str] = ("metadata", "control")) -> st.SearchStrategy[tuple[RecordType, int]]:
    """A (record type, version) pair, sampled over every record type and valid version."""
    return st.sampled_from(all_record_versions(registry, kinds))


def _payload(rt: RecordType, version: int, unknown_tags: bool) -> st.SearchStrategy[Payload]:
    return messages(rt, version, unknown_tags=unknown_tags).map(lambda m: Payload(rt, version, m))


def metadata_payloads(registry: Registry | None = None, *, unknown_tags: bool = False) -> st.SearchStrategy[Payload]:
    """A metadata record to append: a Payload of any metadata type at any valid version."""
    return record_versions(registry, ("metadata",)).flatmap(lambda rv: _payload(rv[0], rv[1], unknown_tags))


def record_batches(registry: Registry | None = None, max_size: int = 5) -> st.SearchStrategy[list[Payload]]:
    """The metadata records of one batch to append: 1 to `max_size` payloads."""
    return st.lists(metadata_payloads(registry), min_size=1, max_size=max_size)


def control_payloads(registry: Registry | None = None, *, unknown_tags: bool = False) -> st.SearchStrategy[Payload]:
    """A control record to append; its message's `Version` equals the payload version."""
    return record_versions(registry, ("control",)).flatmap(lambda rv: _payload(rv[0], rv[1], unknown_tags))


def payloads(registry: Registry | None = None, *, control: bool = False, unknown_tags: bool = False) -> st.SearchStrategy[Payload]:
    """`control_payloads` if `control`, else `metadata_payloads`."""
    return (control_payloads if control else metadata_payloads)(registry, unknown_tags=unknown_tags)


# Cluster-level strategies (releases, metadata versions, feature levels, clusters, op
# sequences, fault schedules, record batches, hypothetical catalogs) live in their own module.
from kraftsim.testing.cluster_strategies import (  # noqa: E402
    clusters, fault_schedules, feature_levels, hypothetical_catalogs, metadata_versions, op_sequences, releases,
)

__all__ += ["clusters", "fault_schedules", "feature_levels", "hypothetical_catalogs", "metadata_versions",
            "op_sequences", "releases"]
