"""A broker's own check of a change to its dynamic configs, made before it forwards the change
to the controller (ConfigAdminManager's preprocessing, DynamicBrokerConfig.validate), for the
broker configs kraftsim models there: the replication throttle rates, which
`kafka-reassign-partitions --throttle` sets and its `--verify` removes.

The resource's name must be blank (the cluster-wide default) or the receiving broker's id. The
broker then builds the configs the resource would have: for an incremental change, the ones it
holds (dropping any its definitions refuse, as it does when it loads them) with each SET and
DELETE applied; for a legacy AlterConfigs, the request's configs alone. It parses them by its
definitions (each rate a LONG, at least 0), in definition order; the first refusal is the
answer, INVALID_REQUEST with ConfigException's text.

Any other broker config also passes DynamicBrokerConfig's reconfiguration checks (thread pools,
listeners, the log cleaner, ...), which kraftsim does not model: `broker_change_modelled` says whether a change
stays within what is modelled, and a caller does not carry out one that does not.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from kraftsim.controller.configs import OP_DELETE, OP_SET, AlterableConfig
from kraftsim.controller.topic_configs import ConfigKey, config_value_error
from kraftsim.javacompat import parse_int

#: The broker's quota configs (QuotaConfigs.brokerQuotaConfigs), in definition order.
THROTTLE_RATES = tuple(ConfigKey(name=name, type="LONG", at_least=0) for name in (
    "leader.replication.throttled.rate", "follower.replication.throttled.rate",
    "replica.alter.log.dirs.io.max.bytes.per.second"))
_BY_NAME = {key.name: key for key in THROTTLE_RATES}


def broker_change_modelled(held: Iterable[str], configs: Sequence[AlterableConfig]) -> bool:
    """Whether a change of `configs` to a broker resource holding `held` is one whose check on
    a broker kraftsim models: only SETs and DELETEs, of throttle rates, on throttle rates."""
    return all(c.config_operation in (OP_SET, OP_DELETE) and c.name in _BY_NAME for c in configs) and \
        all(name in _BY_NAME for name in held)


def broker_config_error(node_id: int, resource_name: str, held: Mapping[str, str],
                        configs: Sequence[AlterableConfig], *, legacy: bool) -> str | None:
    """The receiving broker's refusal of a `broker_change_modelled` change (INVALID_REQUEST's message), or None
    when it forwards the change."""
    if resource_name:
        named = parse_int(resource_name)
        if named is None:
            return f"Node id must be an integer, but it is: {resource_name}"
        if named != node_id:
            return f"Unexpected broker id, expected {node_id}, but received {resource_name}"
    if legacy:
        props = {c.name: c.value for c in configs if c.value is not None}
    else:
        props = {name: value for name, value in held.items() if config_value_error(_BY_NAME[name], value) is None}
        for c in configs:
            if c.config_operation == OP_DELETE:
                props.pop(c.name, None)
            elif c.value is not None:
                props[c.name] = c.value
    for key in THROTTLE_RATES:
        if key.name in props and (why := config_value_error(key, props[key.name])) is not None:
            return why
    return None
