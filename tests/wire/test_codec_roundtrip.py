"""Every request and response at every version: bodies drawn from the schema survive
encode then decode, the C fast path writes the same bytes as the generated Python code,
and fields absent at a version come back as their defaults."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftsim.protocol import fastpath
from kraftsim.protocol.primitives import Uuid
from kraftsim.protocol.schema import FieldSpec, StructSpec
from kraftsim.wire import encode_request, encode_response, parse_request, parse_response
from kraftsim.wire.codec import default_catalog

_INTS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_SCALARS: dict[str, st.SearchStrategy[Any]] = {
    "bool": st.booleans(),
    "uint16": st.integers(0, 2**16 - 1),
    "uint32": st.integers(0, 2**32 - 1),
    "float64": st.floats(allow_nan=False),
    "string": st.text(max_size=12),
    "bytes": st.binary(max_size=12),
    "uuid": st.binary(min_size=16, max_size=16).map(Uuid),
    **{t: st.integers(-(2 ** (b - 1)), 2 ** (b - 1) - 1) for t, b in _INTS.items()},
}


def value_strategy(f: FieldSpec, version: int) -> st.SearchStrategy[Any]:
    if f.struct is not None:
        elem = body_strategy(f.struct, version)
    else:
        elem = _SCALARS[f.element_type]
    value = st.lists(elem, max_size=3) if f.is_array else elem
    return st.none() | value if f.nullable_in(version) else value


def body_strategy(spec: StructSpec, version: int) -> st.SearchStrategy[dict[str, Any]]:
    """Bodies with some of the fields present at `version` (the others are left to defaults)."""
    present = {f.name: value_strategy(f, version) for f in spec.fields if f.present_in(version)}
    return st.fixed_dictionaries({}, optional=present)


def filled(spec: StructSpec, body: dict[str, Any]) -> dict[str, Any]:
    """What a reader sees: every field, defaults where the body has none."""
    out = {}
    for f in spec.fields:
        if f.name not in body:
            value = f.default_value()
            out[f.name] = filled(f.struct, {}) if f.struct is not None and not f.is_array and not f.null_default else value
            continue
        value = body[f.name]
        if f.struct is not None and value is not None:
            value = [filled(f.struct, e) for e in value] if f.is_array else filled(f.struct, value)
        out[f.name] = value
    return out


CATALOG = default_catalog()
CASES = [
    (api.key, kind, version)
    for api in CATALOG.apis.values()
    for kind, message in (("request", api.request), ("response", api.response))
    for version in range(message.versions[0], message.versions[1] + 1)
]


def _id(case: tuple[int, str, int]) -> str:
    key, kind, version = case
    return f"{CATALOG.apis[key].name}-{kind}-v{version}"


@pytest.mark.parametrize("case", CASES, ids=_id)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), correlation_id=st.integers(-(2**31), 2**31 - 1))
def test_round_trip(case: tuple[int, str, int], data: st.DataObject, correlation_id: int) -> None:
    key, kind, version = case
    api = CATALOG.apis[key]
    message = api.request if kind == "request" else api.response
    body = data.draw(body_strategy(message.schema.body, version))
    if kind == "request":
        client_id = data.draw(st.none() | st.text(max_size=8))
        frame = encode_request(key, version, correlation_id, body, client_id=client_id)
        with fastpath.pure_python():
            assert encode_request(key, version, correlation_id, body, client_id=client_id) == frame
        req = parse_request(frame[4:])
        assert (req.api_key, req.api_version, req.correlation_id, req.client_id) == (key, version, correlation_id, client_id or "")
        assert req.body == filled(message.schema.body, body)
    else:
        frame = encode_response(key, version, correlation_id, body)
        with fastpath.pure_python():
            assert encode_response(key, version, correlation_id, body) == frame
            assert parse_response(key, version, frame[4:]) == (correlation_id, filled(message.schema.body, body))
        assert parse_response(key, version, frame[4:]) == (correlation_id, filled(message.schema.body, body))
