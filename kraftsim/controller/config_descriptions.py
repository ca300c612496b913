"""Configs as a node describes them: every config of a topic, and a broker's dynamic configs,
each with its value and where that value comes from.

Two answers carry a topic's. A broker's DescribeConfigs (Kafka's ConfigHelper) lists every
config its release defines in the order of the map it builds (`described_order`), each with
its synonyms: the topic's own value, then the broker configs behind it as the node holds them
(its own dynamic value, the cluster's dynamic default, its default), from the first that is
named like the config's broker synonym on. A controller's CreateTopics answer (from v5:
KafkaConfigSchema) lists them by name with their sources only, the topic's own values as they
were given. A broker's dynamic configs are those of its release it applies: it drops the
others, whatever the metadata holds (DynamicBrokerConfig). The values a node with no static
configs (as a served node has none) falls back on, which broker config stands behind each
topic config, and which broker configs a node applies dynamically are data read from live
nodes of each release (data/config_descriptions.toml, written by
kraftsim.conformance.config_descriptions).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from typing import NamedTuple

import msgspec

from kraftsim.controller.topic_configs import ConfigKey, described_value, topic_configs
from kraftsim.javacompat import parse_int, scala_hash_map_order, string_hash, string_hash_order
from kraftsim.versions import entry_for_release, release_name_key

#: DescribeConfigsResponse.ConfigSource values a described topic config can have.
TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, DEFAULT_CONFIG = 1, 2, 3, 5
#: DescribeConfigsResponse's ConfigType of each ConfigDef type (0: UNKNOWN).
CONFIG_TYPE_IDS = {"BOOLEAN": 1, "STRING": 2, "INT": 3, "SHORT": 4, "LONG": 5, "DOUBLE": 6, "LIST": 7, "CLASS": 8,
                   "PASSWORD": 9}
#: The broker configs that are synonyms of one another (DynamicBrokerConfig.brokerConfigSynonyms,
#: by the first of each list); every other broker config is its own only synonym.
MULTI_NAME_SYNONYMS: Mapping[str, tuple[str, ...]] = {
    "log.roll.ms": ("log.roll.ms", "log.roll.hours"),
    "log.roll.jitter.ms": ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    "log.flush.interval.ms": ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
    "log.retention.ms": ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
}
#: The topic configs whose broker synonym has no default, so that a node describing them by
#: default names none (ServerTopicConfigSynonyms): the data cannot say which it is.
_UNDEFAULTED_SYNONYMS = {"segment.ms": "log.roll.ms", "segment.jitter.ms": "log.roll.jitter.ms",
                         "flush.ms": "log.flush.interval.ms", "retention.ms": "log.retention.ms"}
#: Milliseconds per unit of the synonyms counted in other units (ConfigSynonym's converters).
_MILLIS_PER_UNIT = {"log.roll.hours": 3_600_000, "log.roll.jitter.hours": 3_600_000,
                    "log.retention.minutes": 60_000, "log.retention.hours": 3_600_000}
#: A broker config set for one listener (DynamicBrokerConfig.ListenerConfigRegex).
_LISTENER_PREFIX = re.compile(r"listener\.name\.[^.]*\.(.*)")
#: The configs a listener overrides for one SASL mechanism (listener.name.L.M.config).
_LISTENER_MECHANISM_CONFIGS = ("sasl.jaas.config", "sasl.login.callback.handler.class", "sasl.login.class",
                               "sasl.server.callback.handler.class", "connections.max.reauth.ms")
#: The maps DescribeConfigs may list a topic's configs in (see `described_order`).
DESCRIBE_ORDERS = ("scala", "java")


class Synonym(NamedTuple):
    name: str
    value: str | None
    source: int


class DescribedConfig(NamedTuple):
    """One config of a DescribeConfigs answer."""

    name: str
    value: str | None
    source: int
    config_type: int
    synonyms: tuple[Synonym, ...]
    documentation: str | None
    read_only: bool = False
    #: Described as sensitive though no password: a broker's or a topic's name whose type its
    #: release cannot tell (KafkaConfig.maybeSensitive).
    hidden: bool = False

    @property
    def sensitive(self) -> bool:
        """A secret (PASSWORD, or `hidden`), described without its value."""
        return self.config_type == CONFIG_TYPE_IDS["PASSWORD"] or self.hidden


class _Release(msgspec.Struct, frozen=True, kw_only=True):
    since: str
    read_from: str
    order: str
    defaults: dict[str, str]
    #: CreateTopics' defaults where they are not `defaults` (3.3-3.5 controllers list the tiered
    #: storage configs their brokers do not describe).
    created_defaults: dict[str, str] = {}
    synonyms: dict[str, str]
    broker_defaults: dict[str, str]
    #: The broker configs a node defines and applies when set dynamically, with their ConfigType.
    dynamic_broker_configs: dict[str, int]
    #: Those it defines and drops when set dynamically.
    read_only_broker_configs: frozenset[str]
    #: The replication quotas (not defined by its broker configs), with their ConfigType, and
    #: whether it describes them as read-only.
    quota_broker_configs: dict[str, int]
    quota_configs_described_read_only: bool


class _Doc(msgspec.Struct, frozen=True):
    name: str
    since: str
    text: str


class _Data(msgspec.Struct, frozen=True):
    release: tuple[_Release, ...]
    doc: tuple[_Doc, ...] = ()


@cache
def _data() -> _Data:
    """The data file, its entries and texts in release order."""
    text = resources.files("kraftsim.controller").joinpath("data/config_descriptions.toml").read_text("utf-8")
    data = msgspec.convert(tomllib.loads(text), _Data)
    return _Data(tuple(sorted(data.release, key=lambda e: release_name_key(e.since))),
                 tuple(sorted(data.doc, key=lambda d: release_name_key(d.since))))


@cache
def _entry(release: str) -> _Release:
    """The entry for `release`: the last from its release or before (the first for older ones)."""
    return entry_for_release(_data().release, release)


@cache
def _docs(release: str) -> Mapping[str, str]:
    """Each config's documentation as of `release` (the last text from its release or before)."""
    key = release_name_key(release)
    return {d.name: d.text for d in _data().doc if release_name_key(d.since) <= key}


def described_order(rule: str, names: Sequence[str]) -> list[str]:
    """The order DescribeConfigs lists configs `names` (in definition order) in: a Scala
    mutable.HashMap of them ("scala", ConfigHelper in Scala), or a java.util.HashMap they were
    put into in that order ("java", ConfigHelperUtils from 4.4)."""
    if rule == "java":
        return string_hash_order(list(names))
    return scala_hash_map_order(list(names), string_hash)


def described_order_rule(release: str) -> str:
    """The rule (one of DESCRIBE_ORDERS) by which a broker of `release` orders the configs of a
    DescribeConfigs answer built from definitions (`described_order`)."""
    return _entry(release).order


def broker_synonym(release: str, name: str) -> str | None:
    """The broker config topic config `name` inherits from on a node of `release`, if any."""
    entry = _entry(release)
    if name not in entry.defaults:
        return None
    return entry.synonyms.get(name) or _UNDEFAULTED_SYNONYMS.get(name)


def broker_synonyms(name: str) -> tuple[str, ...]:
    """The broker configs that stand for broker config `name`: those of its multi-name group,
    or itself and, for a listener's own value, the config it overrides."""
    for names in MULTI_NAME_SYNONYMS.values():
        if name in names:
            return names
    prefixed = _LISTENER_PREFIX.fullmatch(name)
    if prefixed is not None:
        base = prefixed.group(1)
        return name, next((m for m in _LISTENER_MECHANISM_CONFIGS if base.endswith(m)), base)
    return (name,)


def _in_millis(name: str, raw: str) -> str:
    """A synonym's value in its topic config's unit (hours and minutes to milliseconds)."""
    per_unit = _MILLIS_PER_UNIT.get(name)
    if per_unit is None:
        return raw
    number = parse_int(raw.strip(), 64)
    return raw if number is None else str(number * per_unit)


def _keys(release: str) -> dict[str, ConfigKey]:
    return {k.name: k for k in topic_configs(release).keys}


def describe_topic_configs(release: str, own: Mapping[str, str], node_dynamic: Mapping[str, str],
                           cluster_dynamic: Mapping[str, str], *, documentation: bool = False) -> list[DescribedConfig]:
    """A broker of `release` describing a topic whose own configs are `own`, on a node whose
    dynamic broker configs are `node_dynamic` over the cluster's `cluster_dynamic` (of which
    it applies those of `applied_broker_configs`): every config, in the node's order. A config
    of the topic that the release does not define (message.format.version held from 3.x on a
    4.0-4.2 node; from 4.3 the replay drops such a record) has no type the node can tell, so
    it is described as a possible secret, as a broker name is (`DescribedConfig.hidden`): no
    value, here or in its synonym, ConfigType UNKNOWN, no documentation
    (ConfigHelper.createTopicConfigEntry, every release)."""
    entry, keys = _entry(release), _keys(release)
    node_dynamic, cluster_dynamic = applied_broker_configs(release, node_dynamic), applied_broker_configs(release,
                                                                                                         cluster_dynamic)
    defined = [n for n in keys if n in entry.defaults]
    unknown = [n for n in own if n not in entry.defaults]
    if entry.order == "java":  # (the topic's values the definitions lack come first there)
        names = string_hash_order(unknown) + described_order("java", defined)
    else:
        names = described_order("scala", defined + sorted(unknown))
    docs = _docs(release) if documentation else {}
    out = []
    for name in names:
        key = keys.get(name)
        s = broker_synonym(release, name)
        behind = broker_synonyms(s) if s is not None else ()
        chain = [Synonym(n, node_dynamic[n], DYNAMIC_BROKER_CONFIG) for n in behind if n in node_dynamic] + \
            [Synonym(n, cluster_dynamic[n], DYNAMIC_DEFAULT_BROKER_CONFIG) for n in behind if n in cluster_dynamic] + \
            [Synonym(n, entry.broker_defaults[n], DEFAULT_CONFIG) for n in behind if n in entry.broker_defaults]
        while chain and chain[0].name != s:  # (Kafka drops what comes before the synonym's own name)
            chain.pop(0)
        if name in own:
            value: str | None = None if key is None else described_value(key, own[name])
            chain.insert(0, Synonym(name, value, TOPIC_CONFIG))
        else:
            value = entry.defaults.get(name)
            for n in behind:  # (the node's value: its own dynamic config over the cluster's, ms before hours)
                held = node_dynamic.get(n, cluster_dynamic.get(n))
                if held is not None:
                    converted = _in_millis(n, held)
                    value = converted if key is None else described_value(key, converted)
                    break
        out.append(DescribedConfig(name, value, chain[0].source if chain else DEFAULT_CONFIG,
                                   CONFIG_TYPE_IDS.get(key.type, 0) if key is not None else 0, tuple(chain),
                                   docs.get(name) if key is not None else None, hidden=key is None))
    return out


def created_topic_configs(release: str, own: Mapping[str, str], node_dynamic: Mapping[str, str],
                          cluster_dynamic: Mapping[str, str]) -> list[tuple[str, str | None, int]]:
    """A controller of `release` answering CreateTopics (v5 on) for a topic made with configs
    `own`, its own dynamic broker configs `node_dynamic` over the cluster's `cluster_dynamic`:
    (name, value, source) of every config, by name; values as given or held, not parsed. (The
    controller reads every synonym the metadata holds, log.retention.hours included, which a
    broker ignores: the two can differ.)"""
    entry = _entry(release)
    defaults = entry.created_defaults or entry.defaults
    out: list[tuple[str, str | None, int]] = []
    for name in sorted(defaults):
        if name in own:
            out.append((name, own[name], TOPIC_CONFIG))
            continue
        s = broker_synonym(release, name)
        behind = broker_synonyms(s) if s is not None else ()
        found = next(((n, held[n], source) for held, source in ((node_dynamic, DYNAMIC_BROKER_CONFIG),
                                                                (cluster_dynamic, DYNAMIC_DEFAULT_BROKER_CONFIG))
                      for n in behind if n in held), None)
        if found is None:
            out.append((name, defaults[name], DEFAULT_CONFIG))
        else:
            out.append((name, _in_millis(found[0], found[1]), found[2]))
    return out


def applied_broker_configs(release: str, held: Mapping[str, str]) -> dict[str, str]:
    """Of the dynamic broker configs `held` (for a node, or the cluster's default), those a
    node of `release` applies: it drops the configs it defines as not dynamic
    (DynamicBrokerConfig: log.retention.hours, say), whatever the metadata holds, and keeps
    the names it does not define (the replication throttle rates)."""
    dropped = _entry(release).read_only_broker_configs
    return {n: v for n, v in held.items() if n not in dropped}


def describe_broker_configs(release: str, node_dynamic: Mapping[str, str] | None,
                            cluster_dynamic: Mapping[str, str]) -> list[DescribedConfig]:
    """A broker of `release` describing its dynamic configs `node_dynamic` over the cluster's
    `cluster_dynamic`, those it applies (`applied_broker_configs`); `node_dynamic` None: the
    cluster's default resource, whose entries name only the cluster's values as synonyms, in
    the order of the node's map of them (a Scala mutable.HashMap). A node's own entries (by
    name) name every synonym it holds, down to the defaults; a secret (PASSWORD), and a name
    whose type the release cannot tell, is described without its value. A node's every config, static and default ones too, is
    kraftsim.controller.broker_config_listing's."""
    entry = _entry(release)
    cluster = applied_broker_configs(release, cluster_dynamic)
    node = applied_broker_configs(release, node_dynamic) if node_dynamic is not None else {}
    if node_dynamic is None:
        names = scala_hash_map_order(sorted(cluster), string_hash)
    else:
        names = sorted(set(node) | set(cluster))
    out = []
    for name in names:
        behind = broker_synonyms(name)
        chain = [Synonym(n, cluster[n], DYNAMIC_DEFAULT_BROKER_CONFIG) for n in behind if n in cluster]
        if node_dynamic is not None:
            chain = [Synonym(n, node[n], DYNAMIC_BROKER_CONFIG) for n in behind if n in node] + chain + \
                [Synonym(n, entry.broker_defaults[n], DEFAULT_CONFIG) for n in behind if n in entry.broker_defaults]
        while chain and chain[0].name != name:  # (Kafka drops what comes before the config's own name)
            chain.pop(0)
        config_type = broker_config_type(release, name)
        hidden = config_type == 0  # (KafkaConfig.maybeSensitive: a type it cannot tell may be a secret)
        if hidden or config_type == CONFIG_TYPE_IDS["PASSWORD"]:  # (a secret: no value, here or in its synonyms)
            chain = [s._replace(value=None) for s in chain]
        value = chain[0].value if chain else None
        out.append(DescribedConfig(name, value, chain[0].source if chain else DEFAULT_CONFIG, config_type,
                                   tuple(chain), None, broker_config_read_only(release, name), hidden))
    return out


def broker_config_read_only(release: str, name: str) -> bool:
    """Whether a node of `release` describes broker config `name` as read-only: every name it
    does not update dynamically (the replication quotas too, before 4.4)."""
    entry = _entry(release)
    if name in entry.quota_broker_configs:
        return entry.quota_configs_described_read_only
    return name not in entry.dynamic_broker_configs


def described_map(release: str) -> str:
    """The map a node of `release` lists a resource's described configs from (see
    `described_order`): "scala" (ConfigHelper in Scala) or "java" (ConfigHelperUtils)."""
    return _entry(release).order


def broker_config_type(release: str, name: str) -> int:
    """The ConfigType a node of `release` describes dynamic broker config `name` with
    (PASSWORD, 9: a secret, described without its value); for a listener's own value, that of
    the config it overrides; UNKNOWN (0) for another name its broker configs do not define
    (the replication quotas aside)."""
    entry = _entry(release)
    known = entry.dynamic_broker_configs.get(name, entry.quota_broker_configs.get(name))
    if known is not None:
        return known
    prefixed = _LISTENER_PREFIX.fullmatch(name)
    if prefixed is not None:  # (a listener's own value: the type of the config it overrides)
        parts = prefixed.group(1).split(".")
        for base in (".".join(parts[i:]) for i in range(len(parts))):  # (after a SASL mechanism too)
            if base in entry.dynamic_broker_configs:
                return entry.dynamic_broker_configs[base]
    return 0
