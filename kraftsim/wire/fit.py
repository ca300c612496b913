"""A response body cut to the fields its version has.

Handlers build one body for every version of an API; Kafka's generated writers refuse a
non-default value in a field the version lacks (UnsupportedVersionException), so what a
version cannot carry is dropped here, as Kafka's handlers leave those fields unset.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kraftsim.protocol.schema import StructSpec
from kraftsim.wire.codec import default_catalog


def fit(spec: StructSpec, version: int, body: Mapping[str, Any]) -> dict[str, Any]:
    """`body` without the fields (at any depth) that `version` of `spec` does not have."""
    out: dict[str, object] = {}
    for f in spec.fields:
        if f.name not in body or version not in f.versions:
            continue
        value = body[f.name]
        if f.struct is not None and value is not None:
            if isinstance(value, list):
                value = [fit(f.struct, version, v) for v in value]
            else:
                value = fit(f.struct, version, value)
        out[f.name] = value
    return out


def fit_response(api_key: int, version: int, body: Mapping[str, object]) -> dict[str, object]:
    return fit(default_catalog().api(api_key).response.schema.body, version, body)
