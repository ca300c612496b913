"""Every config of a broker, as the broker describes itself (DescribeConfigs of its own id:
`kafka-configs --describe --all --entity-type brokers --entity-name N`).

A broker lists the configuration it runs with: what its server.properties sets (with names
its release does not define, and internal configs only when set there) and every other
non-internal config its release defines, each with its current value (its own dynamic value
over the cluster's dynamic default, over server.properties, over the default), as the
release's definitions parse and write it. Each entry names the values behind it from the
first named like it on: the node's dynamic ones, the cluster's, server.properties', the
defaults, for each of its synonyms (log.retention.ms, log.retention.minutes,
log.retention.hours). A password, and a name whose type the release cannot tell, is
described without its value. The entries come in the order of the node's map of them
(`config_descriptions.described_map`). The definitions, defaults and documentation are the
jars' (data/broker_configs.toml); which configs are read-only is what live nodes describe
(data/config_descriptions.toml).
"""

from __future__ import annotations

from collections.abc import Mapping

from kraftsim.controller.broker_config_definitions import KnownConfig, broker_config_definitions, broker_config_docs
from kraftsim.controller.config_descriptions import (
    CONFIG_TYPE_IDS, DEFAULT_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, DescribedConfig, Synonym,
    applied_broker_configs, broker_config_read_only, broker_config_type, broker_synonyms, described_map,
    described_order,
)
from kraftsim.controller.topic_configs import ConfigKey, described_value
from kraftsim.javacompat import string_hash_order
from kraftsim.versions import default_catalog

#: DescribeConfigsResponse.ConfigSource of a value from server.properties.
STATIC_BROKER_CONFIG = 4
_PASSWORD, _UNKNOWN = CONFIG_TYPE_IDS["PASSWORD"], 0


def listed_names(release: str, given: Mapping[str, str]) -> list[str]:
    """The names a node of `release` lists when it runs with `given` (server.properties and
    the dynamic configs it applies), in its order: the given names its release does not list
    on its own (undefined or internal ones), then every non-internal definition (every one
    before 3.5: policy broker_listing_internal), as one
    Scala mutable.HashMap before 4.2 and as two java.util.HashMaps' entries one after the
    other from 4.2 (ConfigHelperUtils)."""
    defs = broker_config_definitions(release).kafka_configs
    hidden = default_catalog().at_release(release).policy("broker_listing_internal") == "hidden"
    listed = [k.name for k in defs if not (hidden and k.internal)]
    extra = sorted(set(given) - set(listed))
    if described_map(release) == "java":
        return string_hash_order(extra) + described_order("java", listed)
    return described_order("scala", listed + extra)


def kafka_config_originals(server_properties: Mapping[str, str]) -> dict[str, str]:
    """The configs a node's KafkaConfig is made of from its server.properties: the same, with
    broker.id and node.id standing for each other where one is missing (KafkaConfig's
    populateSynonyms), so that a KRaft node lists its node.id as its static broker.id too."""
    out = dict(server_properties)
    if "broker.id" not in out and "node.id" in out:
        out["broker.id"] = out["node.id"]
    elif "node.id" not in out and "broker.id" in out:
        out["node.id"] = out["broker.id"]
    return out


def _config_type(release: str, name: str, defs: Mapping[str, KnownConfig]) -> int:
    """The ConfigType a node of `release` describes `name` with: its definition's (`defs`), else
    what the dynamic definitions or a listener prefix say (UNKNOWN, 0, when nothing does)."""
    if name in defs:
        return CONFIG_TYPE_IDS.get(defs[name].type, _UNKNOWN)
    return broker_config_type(release, name)


def describe_node_broker_configs(release: str, static: Mapping[str, str], node_dynamic: Mapping[str, str],
                                 cluster_dynamic: Mapping[str, str], *, documentation: bool = False
                                 ) -> list[DescribedConfig]:
    """A broker of `release` whose server.properties is `static` (`kafka_config_originals`)
    describing its own every config, its dynamic configs `node_dynamic` over the cluster's `cluster_dynamic` (of which
    it applies those `config_descriptions.applied_broker_configs` keeps); see the module
    docstring. With `documentation`, each defined config's text (`broker_config_docs`)."""
    docs = broker_config_docs(release) if documentation else {}
    defs = {k.name: k for k in broker_config_definitions(release).kafka_configs}
    static = kafka_config_originals(static)
    defaults = {n: k.default for n, k in defs.items() if k.default is not None}
    node = applied_broker_configs(release, node_dynamic)
    cluster = applied_broker_configs(release, cluster_dynamic)
    current = {**static, **cluster, **node}
    out = []
    for name in listed_names(release, current):
        config_type = _config_type(release, name, defs)
        hidden = config_type == _UNKNOWN  # (KafkaConfig.maybeSensitive: a type it cannot tell may be a secret)
        chain = [Synonym(n, held[n], source) for held, source in
                 ((node, DYNAMIC_BROKER_CONFIG), (cluster, DYNAMIC_DEFAULT_BROKER_CONFIG),
                  (static, STATIC_BROKER_CONFIG), (defaults, DEFAULT_CONFIG))
                 for n in broker_synonyms(name) if n in held]
        while chain and chain[0].name != name:  # (Kafka drops what comes before the config's own name)
            chain.pop(0)
        key = defs.get(name)
        if hidden or config_type == _PASSWORD:
            value = None
            chain = [s._replace(value=None) for s in chain]
        elif name in current:  # (a definition's value parsed and written back; another name's as given)
            value = current[name] if key is None or key.internal else \
                described_value(ConfigKey(name=name, type=key.type), current[name])
        else:
            value = defaults.get(name)
        out.append(DescribedConfig(name, value, chain[0].source if chain else DEFAULT_CONFIG, config_type,
                                   tuple(chain), docs.get(name), broker_config_read_only(release, name), hidden))
    return out
