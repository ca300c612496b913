"""Client quotas: Kafka's AlterClientQuotas on the controller (ClientQuotaControlManager).

An entity is a set of (type, name) pairs: "user" and/or "client-id", or "ip" alone; a
None name is the default entity of that type. Each changed quota becomes one
ClientQuotaRecord (Remove=true to delete); unchanged values and removals of absent keys
write nothing. All records commit atomically; errors are per entity. IP entities must be
IP literals: kraftsim resolves no host names.
"""

from __future__ import annotations

import ipaddress
import math
import tomllib
from functools import cache
from typing import Any
from importlib import resources

import msgspec

from kraftsim.controller.api_errors import NONE, ApiError
from kraftsim.controller.context import ControllerContext, registry_of
from kraftsim.controller.result import ControllerResult, accepted
from kraftsim.javacompat import hash_map_order, string_hash
from kraftsim.protocol.entries import Payload

USER, CLIENT_ID, IP = "user", "client-id", "ip"
_LIMITS = {"SHORT": (32767, "a SHORT"), "INT": (2147483647, "an INT"), "LONG": (9223372036854775807, "a LONG")}


@cache
def quota_keys() -> dict[str, Any]:
    """Quota keys and their types by entity kind (data/client_quotas.toml)."""
    text = resources.files("kraftsim.controller").joinpath("data/client_quotas.toml").read_text("utf-8")
    return tomllib.loads(text)


class EntityData(msgspec.Struct, frozen=True):
    entity_type: str
    entity_name: str | None = None  # None: the default entity


class QuotaOp(msgspec.Struct, frozen=True):
    key: str
    value: float = 0.0
    remove: bool = False


class EntryData(msgspec.Struct, frozen=True):
    entity: tuple[EntityData, ...]
    ops: tuple[QuotaOp, ...]


class AlterClientQuotasRequest(msgspec.Struct, frozen=True):
    entries: tuple[EntryData, ...]
    validate_only: bool = False


class EntryResult(msgspec.Struct, frozen=True):
    entity: tuple[EntityData, ...]
    error_code: int = 0
    error_message: str | None = None


class AlterClientQuotasResponse(msgspec.Struct, frozen=True):
    entries: tuple[EntryResult, ...]


#: The table size of the HashMap<String, String> Kafka builds a record's entity list from.
ENTITY_MAP_BUCKETS = 4


def _entity_text(entity: dict[str, str | None]) -> str:
    inner = ", ".join(f"{k}={'null' if v is None else v}" for k, v in entity.items())
    return f"ClientQuotaEntity(entries={{{inner}}})"


def _entity_error(entity: dict[str, str | None]) -> tuple[dict[str, str], ApiError]:
    """(config keys, error) for an entity: its types, names and their combination."""
    if not entity:
        return {}, ApiError("INVALID_REQUEST", "Invalid empty client quota entity")
    for etype, name in entity.items():
        if etype not in (USER, CLIENT_ID, IP):
            return {}, ApiError("INVALID_REQUEST", f"Unhandled client quota entity type: {etype}")
        if name is not None and not name:
            return {}, ApiError("INVALID_REQUEST", f"Empty {etype} not supported")
    keys = quota_keys()["keys"]
    if IP in entity:
        if USER in entity or CLIENT_ID in entity:
            return {}, ApiError("INVALID_REQUEST", "Invalid quota entity combination, IP entity shouldnot be "
                                                   "combined with User or ClientId")
        ip = entity[IP]
        if ip is not None:
            try:
                ipaddress.ip_address(ip)
            except ValueError:
                return {}, ApiError("INVALID_REQUEST", f"{ip} is not a valid IP or resolvable host.")
        return keys["ip"], NONE
    return keys["user_client"], NONE


def _value_error(valid: dict[str, str], key: str, value: float, check: str) -> ApiError:
    """The controller's refusal of `value` for quota `key`, as policy client_quota_value_check `check` says."""
    ctype = valid.get(key)
    if ctype is None:
        return ApiError("INVALID_REQUEST", f"Invalid configuration key {key}")
    if check == "long-value":
        if ctype != "DOUBLE" and abs(_java_long(value + 1e-6) - value) > 1e-6:
            return ApiError("INVALID_REQUEST", f"Configuration {key} must be a Long value")
        return NONE
    if value <= 0.0:
        return ApiError("INVALID_REQUEST", f"Quota {key} must be greater than 0")
    if ctype == "DOUBLE":
        return NONE
    limit, article = _LIMITS[ctype]
    if value > limit:
        return ApiError("INVALID_REQUEST", f"Proposed value for {key} is too large for {article}.")
    if abs(math.fmod(value, 1.0)) > 1e-6:
        return ApiError("INVALID_REQUEST", f"{key} cannot be a fractional value.")
    return NONE


def _java_long(value: float) -> float:
    """Double.longValue(): toward zero, saturated at Long's bounds (NaN is 0)."""
    if math.isnan(value):
        return 0.0
    return float(max(-2**63, min(2**63 - 1, math.trunc(value)))) if math.isfinite(value) else \
        float(2**63 - 1 if value > 0 else -2**63)


def alter_client_quotas(ctx: ControllerContext, req: AlterClientQuotasRequest) -> ControllerResult:
    """Kafka's alterClientQuotas: entries are checked and turned into ClientQuotaRecords one
    by one; a repeated quota key, or a repeated entity, is refused with Kafka's texts."""
    rt = registry_of(ctx)["ClientQuotaRecord"]
    entity_cls = rt.nested["EntityData"]
    records: list[Payload] = []
    results: dict[tuple[tuple[str, str | None], ...], tuple[tuple[EntityData, ...], ApiError]] = {}
    check = ctx.catalog.policy("client_quota_value_check")
    for entry in req.entries:
        entity: dict[str, str | None] = {}
        for e in entry.entity:
            entity[e.entity_type] = e.entity_name
        ident = tuple(sorted(entity.items(), key=lambda kv: kv[0]))
        ops: dict[str, float | None] = {}
        for op in entry.ops:
            if op.key in ops:
                results[ident] = (entry.entity, ApiError(
                    "INVALID_REQUEST", f"Duplicate quota key {op.key} not updating quota for this entity "
                                       f"{_entity_text(entity)}"))
            else:
                ops[op.key] = None if op.remove else op.value
        if ident in results:
            results[ident] = (entry.entity, ApiError("INVALID_REQUEST",
                                                     f"Ignoring duplicate entity {_entity_text(entity)}"))
            continue
        valid, err = _entity_error(entity)
        if not err.ok:
            results[ident] = (entry.entity, err)
            continue
        current = ctx.image.client_quotas.quotas(ident)
        order = hash_map_order(list(entity), string_hash, initial=ENTITY_MAP_BUCKETS)
        new_records = []
        for key, value in ops.items():
            parts = [entity_cls(entity_type=t, entity_name=entity[t]) for t in order]
            if value is None:
                if key in current:
                    new_records.append(Payload(rt, 0, rt.new(entity=parts, key=key, remove=True)))
                continue
            err = _value_error(valid, key, value, check)
            if not err.ok:
                break
            if current.get(key) != value:
                new_records.append(Payload(rt, 0, rt.new(entity=parts, key=key, value=float(value))))
        results[ident] = (entry.entity, err)
        if err.ok:
            records += new_records
    response = AlterClientQuotasResponse(tuple(EntryResult(ent, e.code, e.message) for ent, e in results.values()))
    return accepted([] if req.validate_only else records, response)
