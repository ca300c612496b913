"""IncrementalAlterConfigs and the legacy AlterConfigs (`kafka-configs --alter`; the tool of 3.x
sends broker configs with the legacy one) on topics, brokers and client-metrics subscriptions
(`kafka-client-metrics --alter|--delete`), answered as Kafka answers them.

A broker first checks the request itself (ConfigAdminManager's preprocessing): a resource
named twice, a config key named twice in one resource, or a value missing where the operation
needs one are refused there (INVALID_REQUEST); the rest goes to the active controller, which
judges each topic's resulting configs by its release's definitions. A controller listener
(`--bootstrap-controller`) takes the request as Kafka's ControllerApis does: a resource named
again is answered "Duplicate resource." and the rest goes to the controller.

Topics are carried out on either listener. A broker's configs (`--entity-type brokers`, a
broker id or the cluster-wide default) are carried out through a controller listener, where
Kafka's controller checks nothing but the broker's id. Through a broker listener the broker
first checks them against its release's dynamic-config rules (ConfigAdminManager,
DynamicBrokerConfig: `controller.broker_dynamic_configs`), which refuse with INVALID_REQUEST or
forward the change. A request kraftsim cannot answer as Kafka would (a broker change whose answer
depends on checks kraftsim does not model, broker loggers, groups, a subscription's selector
whose regex kraftsim cannot judge as Java does) is not carried out (the connection closes and
`serve` says so once, and why) rather than accepted wrongly. A subscription goes to the
controller, which checks what the change leaves it with (kraftsim.controller.client_metrics).
The answers keep the request's order.
Each change is recorded as an `alter-topic-config`, `alter-broker-config` or
`alter-client-metrics` step holding the values it left (an append or subtract as the value it
made; a config a legacy AlterConfigs left out as deleted).

Both requests take the same path; they differ in what a resource's configs mean (operations, or
the resource's whole set) and in the controller's call.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from kraftsim.controller import (
    OP_APPEND, OP_DELETE, OP_SET, OP_SUBTRACT, RESOURCE_TYPE_NAMES, AlterableConfig, AlterConfigsResource,
)
from kraftsim.controller import HeldBrokerConfigs, broker_change_check, client_metrics_check, incremental_configs_after
from kraftsim.controller import group_config_check, has_client_metrics, has_group_configs
from kraftsim.image import BROKER, CLIENT_METRICS, GROUP, TOPIC
from kraftsim.javacompat import parse_int
from kraftsim.wire.admin_handlers import ask_controller
from kraftsim.wire.handlers import Body, Handler, NotCarriedOut, code, release_of
from kraftsim.wire.served import CONTROLLER, Listener, ServedCluster

ALTER_CONFIGS_KEY, INCREMENTAL_ALTER_CONFIGS_KEY = 33, 44


def _resource(r: Mapping[str, Any]) -> AlterConfigsResource:
    """A resource of either request (a legacy one's configs have no operation: each is a SET)."""
    return AlterConfigsResource(int(r["ResourceType"]), r["ResourceName"],
                                tuple(AlterableConfig(c["Name"], int(c.get("ConfigOperation", OP_SET)), c.get("Value"))
                                      for c in r.get("Configs") or []))


def _answer(r: AlterConfigsResource, error: str, message: str | None) -> Body:
    return {"ErrorCode": code(error), "ErrorMessage": message, "ResourceType": r.resource_type,
            "ResourceName": r.resource_name}


def _broker_check(r: AlterConfigsResource, repeated: bool) -> str | None:
    """The broker's refusal of one resource before forwarding (ConfigAdminManager.preprocess)."""
    if repeated:
        return "Each resource must appear at most once."
    if len({c.name for c in r.configs}) < len(r.configs):
        return "Error due to duplicate config keys"
    nulls = [c.name for c in r.configs if c.config_operation != OP_DELETE and c.value is None]
    return f"Null value not supported for : {', '.join(nulls)}" if nulls else None


def _broker_held(served: ServedCluster, listener: Listener) -> HeldBrokerConfigs:
    """The dynamic broker configs the listener's node holds (its configRepository): its own and
    the cluster-wide default."""
    image = served.sim.image(listener.node_id)
    if image is None:
        return HeldBrokerConfigs({}, {})
    return HeldBrokerConfigs(image.configs.config(BROKER, str(listener.node_id)), image.configs.config(BROKER, ""))


def _not_carried_out(served: ServedCluster, r: AlterConfigsResource, legacy: bool) -> str | None:
    """What of `r` kraftsim cannot answer as Kafka does (see the module docstring), beyond
    what a broker's check leaves unmodelled, or None."""
    if r.resource_type == TOPIC:
        return None
    if r.resource_type == CLIENT_METRICS:
        return _resulting_configs_unmodelled(served, r, legacy)
    if r.resource_type == GROUP:
        if any(c.config_operation in (OP_APPEND, OP_SUBTRACT) for c in r.configs) and not legacy:
            return "GROUP configs appended to or subtracted from"
        return _resulting_configs_unmodelled(served, r, legacy)
    if r.resource_type != BROKER:
        return f"{RESOURCE_TYPE_NAMES.get(r.resource_type, str(r.resource_type))} configs"
    node = parse_int(r.resource_name) if r.resource_name else None
    if node is not None and str(node) != r.resource_name:  # (Kafka takes it; a recording names the broker by its id)
        return f"BROKER configs named {r.resource_name!r} for broker {node}"
    return None


def _resulting_configs_unmodelled(served: ServedCluster, r: AlterConfigsResource, legacy: bool) -> str | None:
    """What of the active controller's check of the configs `r` would leave its subscription
    or group with kraftsim cannot reproduce, or None."""
    leader = served.sim.leader()
    node = served.sim.running_node(leader) if leader is not None else None
    if node is None:
        return None  # (no controller to judge it: the request is answered as without one)
    if legacy:
        after = {c.name: c.value for c in r.configs if c.value is not None}
    else:
        after = incremental_configs_after(r.resource_type, _held(served, r), r.configs)
    release = node.state.release
    if r.resource_type == GROUP:
        why = group_config_check(release, after).unmodelled if has_group_configs(release) else None
    else:
        why = client_metrics_check(release, r.resource_name, after).unmodelled
    return None if why is None else f"{RESOURCE_TYPE_NAMES[r.resource_type]} configs: {why}"


def incremental_alter_configs(served: ServedCluster, listener: Listener, version: int,
                              body: Mapping[str, Any]) -> Body:
    return _alter_configs(served, listener, body, legacy=False)


def legacy_alter_configs(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, Any]) -> Body:
    return _alter_configs(served, listener, body, legacy=True)


def _alter_configs(served: ServedCluster, listener: Listener, body: Mapping[str, Any], *, legacy: bool) -> Body:
    resources = [_resource(r) for r in body.get("Resources") or []]
    validate_only = bool(body.get("ValidateOnly", False))
    keys = Counter((r.resource_type, r.resource_name) for r in resources)
    answers: dict[int, Body] = {}
    others: set[str] = set()
    if listener.role == CONTROLLER:  # (the second of a name is answered; the first and any later one are not)
        seen: Counter[tuple[int, str]] = Counter()
        for i, r in enumerate(resources):
            key = (r.resource_type, r.resource_name)
            if keys[key] > 1:
                answers[i] = _answer(r, "INVALID_REQUEST", "Duplicate resource.") if seen[key] == 1 else {}
                seen[key] += 1
    else:
        release = release_of(served, listener)
        for i, r in enumerate(resources):
            refused_here = _broker_check(r, keys[(r.resource_type, r.resource_name)] > 1)
            if refused_here is None and r.resource_type == CLIENT_METRICS and not has_client_metrics(release):
                refused_here = f"Unknown resource type {r.resource_type}"  # (before 3.7: live 3.6.2)
            if refused_here is None and r.resource_type == BROKER:
                check = broker_change_check(release, listener.node_id, r.resource_name,
                                            r.configs, _broker_held(served, listener), legacy=legacy)
                if check.unmodelled is not None:
                    others.add(f"BROKER configs through a broker listener: {check.unmodelled} (through a controller "
                               "listener, --bootstrap-controller, they are carried out)")
                refused_here = check.refusal
            if refused_here is not None:
                answers[i] = _answer(r, "INVALID_REQUEST", refused_here)
    # (what the broker refused is answered before anything is forwarded, so nothing else of it matters)
    others |= {why for i, r in enumerate(resources)
               if i not in answers and (why := _not_carried_out(served, r, legacy)) is not None}
    if others:
        request = "AlterConfigs" if legacy else "IncrementalAlterConfigs"
        raise NotCarriedOut(f"{request} of {' and '.join(sorted(others))}")
    sent = [(i, r) for i, r in enumerate(resources) if i not in answers]
    if sent:
        at = served.sim.now_ms
        # (what a legacy request deletes by leaving it out: the configs held before it)
        left_out = {i: [k for k in _held(served, r) if k not in {c.name for c in r.configs}] if legacy else []
                    for i, r in sent}
        send = served.sim.send_legacy_alter_configs if legacy else served.sim.send_incremental_alter_configs
        result = ask_controller(served, listener, lambda: send([r for _, r in sent], validate_only))
        if isinstance(result, tuple):
            answers.update((i, _answer(r, *result)) for i, r in sent)
        else:
            for (i, r), a in zip(sent, result.response.responses):
                answers[i] = {"ErrorCode": a.error_code, "ErrorMessage": a.error_message,
                              "ResourceType": a.resource_type, "ResourceName": a.resource_name}
                if a.error_code == 0 and not validate_only and (r.configs or left_out[i]):
                    _record(served, r, left_out[i], at)  # (an empty change changes nothing)
    return {"Responses": [answers[i] for i in range(len(resources)) if answers[i]]}


def _held(served: ServedCluster, r: AlterConfigsResource) -> Mapping[str, str]:
    """The configs the active controller's image holds for `r`'s resource."""
    leader = served.sim.leader()
    image = served.sim.image(leader) if leader is not None else None
    return image.configs.config(r.resource_type, r.resource_name) if image is not None else {}


def _record(served: ServedCluster, r: AlterConfigsResource, left_out: list[str], at: int) -> None:
    """The change as the `alter-topic-config`, `alter-broker-config`, `alter-client-metrics` or
    `alter-group-config` step that makes it again: the values it left, and the configs it deleted (`left_out`: by
    leaving them out)."""
    now = _held(served, r)
    configs = {c.name: now[c.name] for c in r.configs if c.config_operation != OP_DELETE and c.name in now}
    delete = [c.name for c in r.configs if c.name not in configs] + left_out
    changed = {"configs": configs or None, "delete": delete or None}
    if r.resource_type == TOPIC:
        served.record("alter-topic-config", {"topic": r.resource_name, **changed}, at)
    elif r.resource_type == CLIENT_METRICS:
        served.record("alter-client-metrics", {"name": r.resource_name, **changed}, at)
    elif r.resource_type == GROUP:
        served.record("alter-group-config", {"group": r.resource_name, **changed}, at)
    else:  # (a broker's id, or "" for the cluster-wide default: the step's broker left out)
        served.record("alter-broker-config", {"broker": int(r.resource_name) if r.resource_name else None,
                                              **changed}, at)


HANDLERS: dict[int, Handler] = {ALTER_CONFIGS_KEY: legacy_alter_configs,
                                INCREMENTAL_ALTER_CONFIGS_KEY: incremental_alter_configs}
