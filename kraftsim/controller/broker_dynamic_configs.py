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
at the default a per-broker config. What passes makes the broker's new configuration: its
static configs (a served node's are Kafka's defaults) under the dynamic ones it holds, the
resource's changed; that configuration's own rules on dynamic configs come next
(log.roll.ms at least 1, log.roll.jitter.ms at least 0, log.retention.ms not 0, at least 1 MB of
log.cleaner.dedupe.buffer.size per log.cleaner.threads: "requirement failed: ...", and "/ by
zero" for no cleaner thread). Then each part of the broker that a changed config reconfigures
checks it; of those kraftsim models the thread pools (num.io.threads, num.replica.fetchers,
num.recovery.threads.per.data.dir, background.threads: at least half and at most double the
current count), the log cleaner (log.cleaner.threads likewise; its other configs and
message.max.bytes leave the count as it is), the log defaults (DynamicLogConfig, which checks
nothing more while no local retention of tiered storage is set) and the producer state (nothing
past the definitions' ranges), by the parts the release's jars say each config reconfigures
(`reconfigured_by`). A change of only the replication throttle rates or of names Kafka does not
define reconfigures nothing and is forwarded.

The rest is not modelled, and `broker_change_check` says so rather than guess: APPEND and
SUBTRACT, listener-prefixed names, several names refused by one check (the broker writes them in
its hash set's order), validators kraftsim does not reproduce (class names, 4.2's lists), configs
the new configuration checks together with others (listeners, SASL, connection quotas), tiered
storage's local retention, and changes of any other dynamic config (listeners, SSL and SASL,
connection quotas, remote storage, the coordinators, ...), whose reconfiguration checks are not
modelled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from kraftsim.controller.broker_config_definitions import (
    LISTENER_PREFIXED, BrokerConfigDefinitions, DynamicKey, broker_config_definitions,
)
from kraftsim.controller.configs import OP_DELETE, OP_SET, AlterableConfig
from kraftsim.controller.topic_configs import config_value_error, described_value
from kraftsim.javacompat import java_int_division, parse_int

#: The broker's quota configs (QuotaConfigs.brokerQuotaConfigs): changing them reconfigures nothing here.
THROTTLE_RATES = frozenset(("leader.replication.throttled.rate", "follower.replication.throttled.rate",
                            "replica.alter.log.dirs.io.max.bytes.per.second"))
#: The broker's thread pools (DynamicThreadPool.ReconfigurableConfigs).
THREAD_POOLS = frozenset(("num.io.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir",
                          "background.threads"))
CLEANER_THREADS, DEDUPE_BUFFER = "log.cleaner.threads", "log.cleaner.dedupe.buffer.size"
#: Custom names a metrics reporter may take as its own reconfigurable configs.
_REPORTER_PREFIX = "metrics."
#: The local retention of tiered storage, which DynamicLogConfig checks against the retention.
_LOCAL_RETENTION = ("log.local.retention.ms", "log.local.retention.bytes")
#: The parts of a broker whose checks of their reconfiguration are modelled: the log defaults
#: (nothing while no local retention is set) and the log cleaner (its thread count: a change of
#: its other configs leaves that as it is).
_MODELLED_PARTS = frozenset(("DynamicLogConfig", "LogCleaner", "ProducerStateManager"))
#: The producer state's check (producer.id.expiration.ms not below 0), which its definition's
#: range (at least 1) already makes: modelled while that range holds.
_PRODUCER_EXPIRATION = "producer.id.expiration.ms"
#: Log configs whose reconfiguration is not modelled (tiered storage, cordoned log directories).
_LOG_UNMODELLED = frozenset((*_LOCAL_RETENTION, "log.remote.copy.lag.ms", "log.remote.copy.lag.bytes",
                             "cordoned.log.dirs"))
#: Dynamic configs the new configuration checks together with others (KafkaConfig's rules on
#: listeners, SASL and connection quotas): not modelled.
_RULED_ELSEWHERE = ("listeners", "advertised.listeners", "listener.security.protocol.map", "sasl.enabled.mechanisms",
                    "sasl.mechanism.inter.broker.protocol", "principal.builder.class", "max.connections.per.ip",
                    "max.connections.per.ip.overrides")


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
    own, default = _as_loaded(defs, held.own, True), _as_loaded(defs, held.default, False)
    before = own if per_broker else default
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
    return _reconfiguration(defs, changed, props, own, default, per_broker)


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
                     own: dict[str, str] | BrokerCheck, default: dict[str, str] | BrokerCheck,
                     per_broker: bool) -> BrokerCheck:
    """The new configuration's own rules (KafkaConfig's), then the checks of the parts of the
    broker that `changed` reconfigures (processReconfiguration), on the held configs as the
    broker loaded them (`own`, `default`; a BrokerCheck: why kraftsim cannot say)."""
    if isinstance(own, BrokerCheck):
        return own
    if isinstance(default, BrokerCheck):
        return default
    layers = (own, props) if not per_broker else (props, default)  # (the broker's own values come first)
    if (ruled := _new_configuration(defs, layers)) is not FORWARDED:
        return ruled
    counted, logged = [], []
    for name in changed:
        parts = defs.reconfigured_by.get(name, ())
        if name in THREAD_POOLS or name == CLEANER_THREADS:
            counted.append(name)
        elif parts and set(parts) <= _MODELLED_PARTS and name not in _LOG_UNMODELLED and \
                ("ProducerStateManager" not in parts or (defs.dynamic_by_name[_PRODUCER_EXPIRATION].at_least or -1) >= 0):
            if "DynamicLogConfig" in parts:
                logged.append(name)
        elif (name in defs.known or name.startswith(_REPORTER_PREFIX)) and name not in THROTTLE_RATES:
            return BrokerCheck(unmodelled=f"a change of {name} (its reconfiguration is not modelled)")
    if logged and any(name in layer for layer in (own, default, props) for name in _LOCAL_RETENTION):
        return BrokerCheck(unmodelled="log configs beside a local retention (tiered storage)")
    if not counted:
        return FORWARDED
    if len(counted) > 1:
        return BrokerCheck(unmodelled=f"several thread counts changed at once ({', '.join(counted)})")
    name = counted[0]
    key = defs.dynamic_by_name[name]
    current, new = _effective(key, (own, default)), _effective(key, layers)
    if current is None or new is None:
        return BrokerCheck(unmodelled=f"{name} without a default")
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
    if new < current // 2:
        return _reconfigurable_refusal(f"Log cleaner threads cannot be reduced to less than half the current value "
                                       f"{current}")
    if new > current * 2:
        return _reconfigurable_refusal(f"Log cleaner threads cannot be increased to more than double the current "
                                       f"value {current}")
    return FORWARDED


def _new_configuration(defs: BrokerConfigDefinitions, layers: Sequence[Mapping[str, str]]) -> BrokerCheck:
    """The rules the broker's new configuration itself checks on dynamic configs (KafkaConfig's
    requirements, in its order), by their values under `layers` or their static defaults; a
    failure is its IllegalArgumentException's or ArithmeticException's text."""
    if any(name in layer for layer in layers for name in _RULED_ELSEWHERE):
        return BrokerCheck(unmodelled="a broker config the new configuration checks with others (listeners, "
                                      "SASL, connection quotas)")
    roll, jitter, retention = (_effective(defs.dynamic_by_name[n], layers) if n in defs.dynamic_by_name else None
                               for n in ("log.roll.ms", "log.roll.jitter.ms", "log.retention.ms"))
    if roll is not None and roll < 1:
        return BrokerCheck("requirement failed: log.roll.ms must be greater than or equal to 1")
    if jitter is not None and jitter < 0:
        return BrokerCheck("requirement failed: log.roll.jitter.ms must be greater than or equal to 0")
    if retention == 0:  # (a negative one is unlimited)
        return BrokerCheck("requirement failed: log.retention.ms must be unlimited (-1) or, greater than or equal to 1")
    threads = _effective(defs.dynamic_by_name[CLEANER_THREADS], layers)
    dedupe = _effective(defs.dynamic_by_name[DEDUPE_BUFFER], layers)
    if threads is None or dedupe is None:
        return BrokerCheck(unmodelled=f"{CLEANER_THREADS} or {DEDUPE_BUFFER} without a default")
    if threads == 0:
        return BrokerCheck("/ by zero")
    if java_int_division(dedupe, threads) <= 1024 * 1024:
        return BrokerCheck("requirement failed: log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread.")
    return FORWARDED


def _effective(key: DynamicKey, layers: Sequence[Mapping[str, str]]) -> int | None:
    """The value of an INT or LONG config under `layers` (first wins), or its default (None: null)."""
    for layer in layers:
        if key.name in layer:
            return int(described_value(key, layer[key.name]))
    return None if key.default is None else int(key.default)


def _reconfigurable_refusal(why: str) -> BrokerCheck:
    """A reconfigurable's ConfigException, as the broker wraps it (ConfigException(name, value)
    with the exception as the value and "Invalid dynamic configuration" as the name)."""
    return BrokerCheck(f"Invalid value org.apache.kafka.common.config.ConfigException: {why} for configuration "
                       "Invalid dynamic configuration")
