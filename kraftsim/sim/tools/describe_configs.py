"""`kafka-configs --describe` against a simulated cluster: the lines Kafka's tool prints.

For each entity the tool prints a header and then the entries of one DescribeConfigs answer
(with synonyms) whose source is the entity's dynamic one: a topic's own values, a broker's own
dynamic values, the cluster-wide default's; `--all` keeps every entry. A topic is described
by the lowest-id unfenced broker, as `topics describe` reads it, a broker by itself, the
cluster-wide default by the lowest-id unfenced broker. The tool is of the cluster's newest
release, as an operator's would be (`Simulation.tool_release`). Without a name it lists every
topic (in the order of the admin client's HashMap of names), or every unfenced broker and
then the default.

A broker's own every config (`--all` for a broker) includes its listeners, which a simulated
node has only while it is served: that one is `kraftsim serve` and Kafka's tool.

Client quotas (users, clients, ips) come from one DescribeClientQuotas with a strict filter of
the types given (an entity of each, its default, or any), in the order of the admin client's
HashMap of entities (keyed by the entity's map of names); users alone, without a default,
are followed by their SCRAM credentials (one DescribeUserScramCredentials, from 3.5).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kraftsim.controller import DescribedConfig, describe_broker_configs, describe_node_broker_configs
from kraftsim.controller import describe_topic_configs
from kraftsim.image import (
    BROKER, MATCH_DEFAULT, MATCH_EXACT, MATCH_SPECIFIED, TOPIC, QuotaFilterError, describe_quotas, describe_scram_users,
    mechanism_name,
)
from kraftsim.javacompat import double_to_string, hash_map_order, parse_int, sized_capacity, string_hash, string_hash_order
from kraftsim.sim.node.api_versions import broker_serves
from kraftsim.sim.tools.tool_view import ToolView, tool_view
from kraftsim.storage import topic_name_error
from kraftsim.versions import ToolFailure, release_name_key

if TYPE_CHECKING:
    from kraftsim.sim.simulation import Simulation

#: DescribeConfigsResponse's ConfigSource values, as the tool prints them.
SOURCE_NAMES = {0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG",
                3: "DYNAMIC_DEFAULT_BROKER_CONFIG", 4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG",
                6: "DYNAMIC_BROKER_LOGGER_CONFIG", 7: "CLIENT_METRICS_CONFIG", 8: "GROUP_CONFIG"}
_TOPIC_SOURCE, _BROKER_SOURCE, _DEFAULT_BROKER_SOURCE = 1, 2, 3
#: The first release whose tool lists the entries by name (before: the admin client's Config,
#: a HashMap filled in the answer's order).
_SORTED_ENTRIES = (3, 5, 0)
#: The first release whose tool says that a named topic or broker it cannot find does not
#: exist (before: it prints the header and then fails on the answer).
_SAYS_MISSING = (4, 1, 0)


#: DescribeUserScramCredentials: a broker without it fails the tool's users' description.
_DESCRIBE_USER_SCRAM_CREDENTIALS = 50
#: kafka-configs' quota entity types, as the quota requests (Describe- and AlterClientQuotas) name them,
#: in the tool's order.
QUOTA_TYPES = {"users": "user", "clients": "client-id", "ips": "ip"}
_QUOTA_TYPE_TEXT = {"user": "user-principal", "client-id": "client-id", "ip": "ip"}


@dataclass(frozen=True)
class ConfigsQuery:
    """kafka-configs --describe's options for topics and brokers."""

    entity_type: str  # "topics" or "brokers"
    name: str | None = None  # --entity-name; None: every entity of the type
    default: bool = False  # --entity-default (brokers)
    describe_all: bool = False  # --all


def describe_configs(sim: Simulation, query: ConfigsQuery) -> list[str]:
    """kafka-configs --describe against the simulated cluster `sim` (see the module's text)."""
    if query.entity_type not in ("topics", "brokers"):
        raise ValueError(f"not a config entity type: {query.entity_type}")
    view = tool_view(sim, "kafka-configs")
    if query.entity_type == "topics":
        return _topics(view, query)
    return _brokers(sim, view, query)


def _topics(view: ToolView, query: ConfigsQuery) -> list[str]:
    """The topics' lines, as the broker asked describes them."""
    image, tool = view.image, view.tool
    if query.name is not None:
        names = [query.name]
        error = topic_name_error(query.name) if query.name else None
        if error is not None:
            raise ToolFailure(error)
    else:
        names = hash_map_order(sorted(t.name for t in image.topics.sorted_topics()), string_hash)
    node_dynamic, cluster_dynamic = image.configs.config(BROKER, str(view.broker)), image.configs.config(BROKER, "")
    lines: list[str] = []
    for name in names:
        if image.topics.get_topic_by_name(name) is None:
            _missing(lines, tool, "topic", name, f"The topic '{name}' does not exist.")
            continue
        lines.append(f"{'All' if query.describe_all else 'Dynamic'} configs for topic {name} are:")
        described = describe_topic_configs(view.broker_release, image.configs.config(TOPIC, name), node_dynamic,
                                           cluster_dynamic)
        lines += _entries(described, None if query.describe_all else _TOPIC_SOURCE, tool)
    return lines


def _brokers(sim: Simulation, view: ToolView, query: ConfigsQuery) -> list[str]:
    """The brokers' lines: each broker as it describes itself, the cluster-wide default as the
    broker asked describes it."""
    image, tool, running = view.image, view.tool, view.running
    cluster_dynamic = image.configs.config(BROKER, "")
    named = [] if query.default else [query.name] if query.name is not None else [str(b) for b in view.live]
    if named and query.describe_all:
        raise ToolFailure("a broker's every config (--all) includes its listeners, which a simulated broker has only "
                          "while served: run `kraftsim serve` and Kafka's kafka-configs --describe --all")
    lines: list[str] = []
    for name in named:
        node = parse_int(name)  # (Scala's toInt)
        if node is None:
            raise ToolFailure(f"The entity name for brokers must be a valid integer broker id, found: {name}")
        if node not in view.live or node not in running:  # (the admin client knows the brokers DescribeCluster lists)
            _missing(lines, tool, "broker", name, f"No broker {name} answers: Kafka's tool waits for it and then "
                                                     "fails (java.util.concurrent.TimeoutException).")
            continue
        lines.append(f"Dynamic configs for broker {name} are:")
        described = describe_node_broker_configs(running[node], sim.node_configs(node),
                                                 image.configs.config(BROKER, name), cluster_dynamic)
        lines += _entries(described, _BROKER_SOURCE, tool)
    if query.default or query.name is None:
        lines.append("Default configs for brokers in the cluster are:")
        lines += _entries(describe_broker_configs(view.broker_release, None, cluster_dynamic),
                          None if query.describe_all else _DEFAULT_BROKER_SOURCE, tool)
    return lines


def _missing(lines: list[str], tool: str, kind: str, name: str, failure: str) -> None:
    """A named entity the cluster does not have: said by the newer tools (exit 0); the older
    ones print its header and then fail on the answer."""
    if release_name_key(tool) >= _SAYS_MISSING:
        lines.append(f"The {kind} '{name}' doesn't exist and doesn't have dynamic config.")
        return
    lines.append(f"Dynamic configs for {kind} {name} are:")
    raise ConfigsFailure(lines, failure)


class ConfigsFailure(ToolFailure):
    """The tool failed after it printed `lines`."""

    def __init__(self, lines: list[str], text: str) -> None:
        super().__init__(text)
        self.lines = list(lines)


def _entries(described: Sequence[DescribedConfig], source: int | None, tool: str) -> list[str]:
    """The line of each entry from `source` (None: every entry), in the order of the tool of
    release `tool`."""
    kept = [c for c in described if source is None or c.source == source]
    if release_name_key(tool) >= _SORTED_ENTRIES:
        kept.sort(key=lambda c: c.name)
    else:  # (the admin client's Config: a HashMap of the whole answer, filled in its order)
        order = {n: i for i, n in enumerate(hash_map_order([c.name for c in described], string_hash))}
        kept.sort(key=lambda c: order[c.name])
    return [f"  {c.name}={_text(c.value)} sensitive={'true' if c.sensitive else 'false'} synonyms={{"
            + ", ".join(f"{SOURCE_NAMES.get(s.source, 'UNKNOWN')}:{s.name}={_text(s.value)}" for s in c.synonyms) + "}"
            for c in kept]


def _text(value: str | None) -> str:
    return "null" if value is None else value


def describe_quota_configs(sim: Simulation, entity: Sequence[tuple[str, str | None]], default: Sequence[str]
                           ) -> list[str]:
    """kafka-configs --describe of client quotas: `entity` pairs each type given (users,
    clients, ips) with its --entity-name (None: any entity of the type), `default` names the
    types given with --entity-default."""
    view = tool_view(sim, "kafka-configs")
    components = [(QUOTA_TYPES[t], MATCH_SPECIFIED if n is None else MATCH_EXACT, n) for t, n in entity] + \
        [(QUOTA_TYPES[t], MATCH_DEFAULT, None) for t in default]
    try:
        found = describe_quotas(view.image.client_quotas, components, True)
    except QuotaFilterError as e:
        raise ToolFailure(str(e)) from None
    lines = [_quota_line(dict(e), quotas) for e, quotas in
             hash_map_order(found, lambda f: _entity_hash(dict(f[0])), initial=sized_capacity(len(found)))]
    types = [t for t, _ in entity] + list(default)
    if "clients" in types or "ips" in types or default:
        return lines
    if not broker_serves(view.broker_release, _DESCRIBE_USER_SCRAM_CREDENTIALS):
        raise ConfigsFailure(lines, "The broker does not support DESCRIBE_USER_SCRAM_CREDENTIALS")
    for user, held in describe_scram_users(view.image.scram, [n for _, n in entity if n is not None]):
        if not isinstance(held, tuple):  # (a user without credentials is left out)
            infos = ", ".join(f"{mechanism_name(m)}=iterations={i}" for m, i in held)
            lines.append(f"SCRAM credential configs for user-principal '{user}' are {infos}")
    return lines


def _entity_hash(entity: dict[str, str | None]) -> int:
    """ClientQuotaEntity.hashCode: Objects.hash of its map of names (a null name hashes as 0)."""
    total = sum(string_hash(k) ^ (string_hash(v) if v is not None else 0) for k, v in entity.items())
    return (31 + total) & 0xFFFFFFFF


def _quota_line(entity: dict[str, str | None], quotas: Mapping[str, float]) -> str:
    parts = [f"{_QUOTA_TYPE_TEXT[t]} '{entity[t]}'" if entity[t] is not None else f"the default {_QUOTA_TYPE_TEXT[t]}"
             for t in _QUOTA_TYPE_TEXT if t in entity]
    # (the broker's map of values, then the admin client's HashMap sized for them)
    keys = hash_map_order(string_hash_order(list(quotas)), string_hash, initial=sized_capacity(len(quotas)))
    return f"Quota configs for {', '.join(parts)} are {', '.join(f'{k}={double_to_string(quotas[k])}' for k in keys)}"

