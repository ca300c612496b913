"""A broker's own check of a change to its dynamic configs, made before it forwards the change
to the controller (ConfigAdminManager's preprocessing → DynamicBrokerConfig.validate), by its
release's definitions (data/broker_configs.toml, `broker_config_definitions`).

The resource's name must be blank (the cluster-wide default) or the receiving broker's id. The
broker then builds the configs the resource would have: for an incremental change, the ones it
holds (less those it ignores when it loads them: invalid values, configs it does not update
dynamically, security configs without a listener prefix, per-broker configs at the default)
with each SET and DELETE applied; for a legacy AlterConfigs, the request's configs alone. It
refuses, in this order and with INVALID_REQUEST: a config it does not update dynamically
("Cannot update these configs dynamically: Set(...)"), a security config without its listener
prefix, a value its definition's type or validator refuses (the first in definition order), and
at the default a per-broker config. What passes is applied to the receiving broker's current
configuration (its static configs, a served node's being Kafka's defaults, under the dynamic
ones it holds), and the parts of the broker that the changed configs reconfigure check it; of
those kraftsim models the thread pools (num.io.threads, num.replica.fetchers,
num.recovery.threads.per.data.dir, background.threads: at least half and at most double the
current size) and log.cleaner.threads (likewise, and 0 divides by zero). A change of only the
replication throttle rates or of names Kafka does not define reconfigures nothing and is forwarded.

The rest is not modelled, and `broker_change_check` says so rather than guess: APPEND and
SUBTRACT, listener-prefixed names, several names refused by one check (the broker writes them in
its hash set's order), validators kraftsim does not reproduce (class names, 4.2's lists), and
changes of any other dynamic config (listeners, the log cleaner's buffers, log configs, ...),
whose reconfiguration checks are not modelled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from kraftsim.controller.broker_config_definitions import (
    LISTENER_PREFIXED, BrokerConfigDefinitions, DynamicKey, broker_config_definitions,
)
from kraftsim.controller.configs import OP_DELETE, OP_SET, AlterableConfig
from kraftsim.controller.topic_configs import config_value_error, described_value
from kraftsim.javacompat import parse_int

#: The broker's quota configs (QuotaConfigs.brokerQuotaConfigs): changing them reconfigures nothing here.
THROTTLE_RATES = frozenset(("leader.replication.throttled.rate", "follower.replication.throttled.rate",
                            "replica.alter.log.dirs.io.max.bytes.per.second"))
#: The broker's thread pools (DynamicThreadPool.ReconfigurableConfigs).
THREAD_POOLS = frozenset(("num.io.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir",
                          "background.threads"))
CLEANER_THREADS, DEDUPE_BUFFER = "log.cleaner.threads", "log.cleaner.dedupe.buffer.size"
#: Custom names a metrics reporter may take as its own reconfigurable configs.
_REPORTER_PREFIX = "metrics."


class BrokerCheck(msgspec.Struct, frozen=True):
    """The receiving broker's answer to one resource: `refusal` (INVALID_REQUEST's message), or
    `unmodelled` (why kraftsim cannot say), or neither: it forwards the change."""

    refusal: str | None = None
    unmodelled: str | None = None


FORWARDED = BrokerCheck()


class HeldBrokerConfigs(msgspec.Struct, frozen=True):
    """The dynamic configs the receiving broker holds: its own and the cluster-wide default."""

    own: Mapping[str, str]
    default: Mapping[str, str]


def broker_change_check(release: str, node_id: int, resource_name: str, configs: Sequence[AlterableConfig],
                        held: HeldBrokerConfigs, *, legacy: bool) -> BrokerCheck:
    """What a broker of `release` with id `node_id` answers to a change of `configs` to the broker
    resource `resource_name` (see the module docstring)."""
    if resource_name:
        named = parse_int(resource_name)
        if named is None:
            return BrokerCheck(f"Node id must be an integer, but it is: {resource_name}")
        if named != node_id:
            return BrokerCheck(f"Unexpected broker id, expected {node_id}, but received {resource_name}")
    if any(c.config_operation not in (OP_SET, OP_DELETE) for c in configs):
        return BrokerCheck(unmodelled="APPEND and SUBTRACT of broker configs")
    defs = broker_config_definitions(release)
    per_broker = bool(resource_name)
    before = _as_loaded(defs, held.own if per_broker else held.default, per_broker)
    if isinstance(before, BrokerCheck):
        return before
    if legacy:
        props = {c.name: c.value for c in configs if c.value is not None}
    else:
        props = dict(before)
        for c in configs:
            if c.config_operation == OP_DELETE:
                props.pop(c.name, None)
            elif c.value is not None:
                props[c.name] = c.value
    checked = _validate_configs(defs, props, per_broker)
    if checked is not FORWARDED:
        return checked
    changed = sorted(n for n in props.keys() | before.keys() if props.get(n) != before.get(n))
    return _reconfiguration(defs, changed, props, held, per_broker)


def validate_configs(release: str, props: Mapping[str, str], per_broker: bool) -> BrokerCheck:
    """DynamicBrokerConfig.validateConfigs of `release` on a resource's resulting configs `props`
    (`per_broker`: one broker's, else the cluster-wide default): the checks before any
    reconfiguration."""
    return _validate_configs(broker_config_definitions(release), props, per_broker)


def _as_loaded(defs: BrokerConfigDefinitions, held: Mapping[str, str],
               per_broker: bool) -> dict[str, str] | BrokerCheck:
    """The held configs the broker keeps when it loads them (fromPersistentProps), or why
    kraftsim cannot say."""
    kept = {}
    for name, value in held.items():
        if LISTENER_PREFIXED.fullmatch(name):
            return BrokerCheck(unmodelled="a listener-prefixed broker config held")
        key = defs.dynamic_by_name.get(name)
        if key is not None and (key.unmodelled is not None or key.type == "PASSWORD"):
            return BrokerCheck(unmodelled=f"a held {name} ({key.unmodelled or 'a password'})")
        if name in defs.non_dynamic or name in defs.security or (not per_broker and name in defs.per_broker):
            continue
        if key is not None and config_value_error(key, value) is not None:
            continue
        kept[name] = value
    return kept


def _validate_configs(defs: BrokerConfigDefinitions, props: Mapping[str, str], per_broker: bool) -> BrokerCheck:
    """DynamicBrokerConfig.validateConfigs on the resource's resulting configs."""
    if any(LISTENER_PREFIXED.fullmatch(n) for n in props):
        return BrokerCheck(unmodelled="listener-prefixed broker configs")
    for kind, found, text in (
            ("non_dynamic", [n for n in props if n in defs.non_dynamic], "Cannot update these configs dynamically"),
            ("security", [n for n in props if n in defs.security],
             "These security configs can be dynamically updated only per-listener using the listener prefix")):
        if refused := _refused(defs, kind, found, text):
            return refused
    for key in defs.dynamic:
        if key.name in props:
            if key.unmodelled is not None:
                return BrokerCheck(unmodelled=f"a value of {key.name} ({key.unmodelled})")
            if (why := config_value_error(key, props[key.name])) is not None:
                return BrokerCheck(why)
    if not per_broker and (refused := _refused(
            defs, "per_broker", [n for n in props if n in defs.per_broker],
            "Cannot update these configs at default cluster level, broker id must be specified")):
        return refused
    return FORWARDED


def _refused(defs: BrokerConfigDefinitions, kind: str, names: list[str], text: str) -> BrokerCheck | None:
    if len(names) > 1:  # (the broker names them in its hash set's order)
        return BrokerCheck(unmodelled=f"several broker configs refused at once ({', '.join(sorted(names))})")
    return BrokerCheck(f"{text}: {defs.shown(kind, names)}") if names else None


def _reconfiguration(defs: BrokerConfigDefinitions, changed: Sequence[str], props: Mapping[str, str],
                     held: HeldBrokerConfigs, per_broker: bool) -> BrokerCheck:
    """The checks of the parts of the broker that `changed` reconfigures (processReconfiguration)."""
    counted = [n for n in changed if n in THREAD_POOLS or n == CLEANER_THREADS]
    for name in changed:
        if name in THROTTLE_RATES or name in counted:
            continue
        if name in defs.known or name.startswith(_REPORTER_PREFIX):
            return BrokerCheck(unmodelled=f"a change of {name} (its reconfiguration is not modelled)")
    if not counted:
        return FORWARDED
    if len(counted) > 1:
        return BrokerCheck(unmodelled=f"several thread counts changed at once ({', '.join(counted)})")
    name = counted[0]
    own = _as_loaded(defs, held.own, True)
    default = _as_loaded(defs, held.default, False)
    assert not isinstance(own, BrokerCheck) and not isinstance(default, BrokerCheck)
    key = defs.dynamic_by_name[name]
    layers = (own, props) if not per_broker else (props, default)  # (the broker's own values come first)
    current = _effective(key, (own, default))
    new = _effective(key, layers)
    if new == current:
        return FORWARDED
    if name in THREAD_POOLS:
        failed = f"Dynamic thread count update validation failed for {name}={new}"
        if new < current // 2:
            return _reconfigurable_refusal(f"{failed}, value should be at least half the current value {current}")
        if new > current * 2:
            return _reconfigurable_refusal(f"{failed}, value should not be greater than double the current value "
                                           f"{current}")
        return FORWARDED
    return _cleaner_threads(defs, new, current, own, default)


def _cleaner_threads(defs: BrokerConfigDefinitions, new: int, current: int, own: Mapping[str, str],
                     default: Mapping[str, str]) -> BrokerCheck:
    """The new configuration's own rule (dedupe buffer per thread: divided by the count), then the
    log cleaner's check."""
    if DEDUPE_BUFFER in own or DEDUPE_BUFFER in default or defs.dynamic_by_name[DEDUPE_BUFFER].default is None:
        return BrokerCheck(unmodelled=f"{CLEANER_THREADS} with {DEDUPE_BUFFER} set dynamically")
    if new == 0:
        return BrokerCheck("/ by zero")
    if int(defs.dynamic_by_name[DEDUPE_BUFFER].default or 0) // new <= 1024 * 1024:
        return BrokerCheck(unmodelled=f"{CLEANER_THREADS} past 1 MB of {DEDUPE_BUFFER} per thread")
    if new < current // 2:
        return _reconfigurable_refusal(f"Log cleaner threads cannot be reduced to less than half the current value "
                                       f"{current}")
    if new > current * 2:
        return _reconfigurable_refusal(f"Log cleaner threads cannot be increased to more than double the current "
                                       f"value {current}")
    return FORWARDED


def _effective(key: DynamicKey, layers: Sequence[Mapping[str, str]]) -> int:
    """The value of an INT config under `layers` (first wins), or its default."""
    for layer in layers:
        if key.name in layer:
            return int(described_value(key, layer[key.name]))
    return int(key.default or 0)


def _reconfigurable_refusal(why: str) -> BrokerCheck:
    """A reconfigurable's ConfigException, as the broker wraps it (ConfigException(name, value)
    with the exception as the value and "Invalid dynamic configuration" as the name)."""
    return BrokerCheck(f"Invalid value org.apache.kafka.common.config.ConfigException: {why} for configuration "
                       "Invalid dynamic configuration")
