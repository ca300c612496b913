"""Client quotas (`kafka-configs --entity-type users|clients|ips`), answered as Kafka answers them.

AlterClientQuotas goes to the active controller (a broker forwards it, KIP-590), which checks
each entity and quota with its own texts (kraftsim.controller.client_quotas); each accepted
entity's change is recorded as an `alter-client-quotas` step. DescribeClientQuotas (broker
listeners only, as in Kafka) is answered from the node's own image, as Kafka's nodes answer it
(ClientQuotasImage.describe): a node behind the controller describes what it has applied.

Described entities come in kraftsim's entity order rather than the order of the broker's hash
map; Kafka's Admin client indexes them by entity, so its tools print the same either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kraftsim.controller import EntityData, EntryData, QuotaOp
from kraftsim.image import QuotaFilterError, describe_quotas
from kraftsim.javacompat import string_hash_order
from kraftsim.wire.admin_handlers import ask_controller
from kraftsim.wire.handlers import Body, Handler, code
from kraftsim.wire.served import Listener, ServedCluster

DESCRIBE_CLIENT_QUOTAS_KEY, ALTER_CLIENT_QUOTAS_KEY = 48, 49
#: The op's keys for the entity types a step names.
_STEP_KEYS = {"user": "user", "client-id": "client_id", "ip": "ip"}


def _entry(e: Mapping[str, Any]) -> EntryData:
    return EntryData(tuple(EntityData(p["EntityType"], p.get("EntityName")) for p in e.get("Entity") or []),
                     tuple(QuotaOp(o["Key"], float(o.get("Value", 0.0)), bool(o.get("Remove", False)))
                           for o in e.get("Ops") or []))


def _entity_body(entity: tuple[EntityData, ...]) -> list[Body]:
    return [{"EntityType": p.entity_type, "EntityName": p.entity_name} for p in entity]


def alter_client_quotas(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, Any]) -> Body:
    entries = [_entry(e) for e in body.get("Entries") or []]
    validate_only = bool(body.get("ValidateOnly", False))
    at = served.sim.now_ms
    result = ask_controller(served, listener, lambda: served.sim.send_alter_client_quotas(entries, validate_only))
    if isinstance(result, tuple):
        return {"Entries": [{"ErrorCode": code(result[0]), "ErrorMessage": result[1], "Entity": _entity_body(e.entity)}
                            for e in entries]}
    answers = result.response.entries
    if not validate_only:
        for answer in answers:
            if answer.error_code == 0:
                _record(served, next(e for e in entries if e.entity == answer.entity), at)
    return {"Entries": [{"ErrorCode": a.error_code, "ErrorMessage": a.error_message, "Entity": _entity_body(a.entity)}
                        for a in answers]}


def _record(served: ServedCluster, entry: EntryData, at: int) -> None:
    """The change as the `alter-client-quotas` step that makes it again (a key set twice is
    refused by the controller: the request's ops are the change)."""
    entity = {p.entity_type: p.entity_name for p in entry.entity}
    args: dict[str, object] = {_STEP_KEYS[t]: n for t, n in entity.items() if n is not None}
    args["default"] = [t for t, n in entity.items() if n is None] or None
    args["quotas"] = {o.key: o.value for o in entry.ops if not o.remove} or None
    args["delete"] = [o.key for o in entry.ops if o.remove] or None
    served.record("alter-client-quotas", args, at)


def describe_client_quotas(served: ServedCluster, listener: Listener, version: int,
                           body: Mapping[str, Any]) -> Body:
    image = served.sim.image(listener.node_id)
    components = [(c["EntityType"], int(c["MatchType"]), c.get("Match")) for c in body.get("Components") or []]
    try:
        found = describe_quotas(image.client_quotas, components, bool(body.get("Strict", False))) \
            if image is not None else []
    except QuotaFilterError as e:
        return {"ErrorCode": code(e.error), "ErrorMessage": str(e), "Entries": None}
    entries = []
    for entity, quotas in found:
        parts = dict(entity)
        entries.append({"Entity": [{"EntityType": t, "EntityName": parts[t]} for t in string_hash_order(list(parts))],
                        "Values": [{"Key": k, "Value": quotas[k]} for k in string_hash_order(list(quotas))]})
    return {"ErrorCode": 0, "ErrorMessage": "", "Entries": entries}  # (Kafka leaves its default, "")


HANDLERS: dict[int, Handler] = {ALTER_CLIENT_QUOTAS_KEY: alter_client_quotas,
                                DESCRIBE_CLIENT_QUOTAS_KEY: describe_client_quotas}
