"""`kraftsim configs --cluster DIR --alter|--describe --entity-type brokers|topics|users|clients|ips ...`:
kafka-configs' --alter for broker and topic configs (IncrementalAlterConfigs to the simulated
cluster's active controller; a topic's values are judged as the controller's release judges
them) and for client quotas (AlterClientQuotas: `--entity-type users --entity-name U
--entity-type clients --entity-name C` names one entity of two parts, `--entity-default` a
part at its default).

This is how Kafka cordons log directories (KIP-1066, 4.3): set `cordoned.log.dirs` to `*`
or to some of the broker's log directories; the broker reports them in its next heartbeat
(the command lets two heartbeat intervals of simulated time pass) and gets no new replicas
on them. Below metadata.version 4.3-IV0 the controller refuses
with Kafka's text (exit 1).

`--describe` prints what kafka-configs --describe prints (kraftsim.sim.tools.describe_configs).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass

from kraftsim.cli.common import kafka_tool, settle
from kraftsim.versions import release_name_key


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("configs", help="kafka-configs --alter for broker and topic configs and client quotas of a "
                                       "simulated cluster (cordoned.log.dirs cordons log directories), and their "
                                       "--describe")
    p.add_argument("--cluster", required=True, metavar="DIR", help="the cluster directory (`cluster create`)")
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--alter", action="store_true", help="alter the configs of the entity")
    action.add_argument("--describe", action="store_true",
                        help="print the dynamic configs of a topic or a broker, of the cluster-wide default (brokers "
                             "--entity-default), or of every one of the type (no --entity-name), or client quotas "
                             "(and users' SCRAM credentials), as kafka-configs --describe prints them")
    p.add_argument("--all", action="store_true", help="with --describe: every config, not only the dynamic ones "
                                                      "(for a topic, or the brokers' cluster-wide default)")
    p.add_argument("--entity-type", required=True, action="append", choices=ENTITY_TYPES,
                   help="broker or topic configs, or the quotas of users, clients or ips (users and clients may be "
                        "given together)")
    # (one list in the order given, as kafka-configs pairs names with types: None is a default)
    p.add_argument("--entity-name", dest="entity_names", action="append", metavar="NAME",
                   help="the broker id, the topic, the user, the client id or the ip")
    p.add_argument("--entity-default", dest="entity_names", action="append_const", const=None,
                   help="the cluster-wide default of every broker, or the default user, client id or ip")
    p.add_argument("--add-config", metavar="K=V[,K=V]", help="configs to set, e.g. cordoned.log.dirs=*")
    p.add_argument("--delete-config", metavar="K[,K]", help="configs to remove")
    p.set_defaults(run=kafka_tool(_run))


#: kafka-configs splits --add-config at commas and `=` outside square brackets, so that a list
#: value is written `k=[v1,v2]` (ConfigCommand.parseConfigsToBeAdded); the brackets are dropped.
_OUTSIDE_BRACKETS = r"(?=[^\]]*(?:\[|$))"


ENTITY_TYPES = ["brokers", "topics", "users", "clients", "ips"]


def _quota_types() -> Mapping[str, str]:
    """kafka-configs' quota entity types, as the quota requests name them (imported when a
    command needs them, not at start-up)."""
    from kraftsim.sim.tools.describe_configs import QUOTA_TYPES

    return QUOTA_TYPES


def _quota_entity_refused(types: list[str]) -> bool:
    """Whether kafka-configs refuses these quota entity types together: users, clients, or
    both, or ips alone."""
    return len(set(types)) < len(types) or not set(types) <= set(_quota_types()) or ("ips" in types and len(types) > 1)


@dataclass(frozen=True)
class QuotaAlteration:
    """What one `kraftsim configs --alter` of client quotas asks for, as a scenario step holds it."""

    entity: dict[str, str | None]  # entity type -> name, None for the type's default entity
    quotas: dict[str, float]
    to_delete: list[str]
    op: str = "alter-client-quotas"

    def step(self) -> dict[str, object]:
        """The step's keys (docs/scenarios.md)."""
        named = {t: n for t, n in self.entity.items() if n is not None}
        return {"user": named.get("user"), "client_id": named.get("client-id"), "ip": named.get("ip"),
                "default": [t for t, n in self.entity.items() if n is None], "quotas": self.quotas,
                "delete": self.to_delete}


@dataclass(frozen=True)
class ConfigAlteration:
    """What one `kraftsim configs --alter` asks for, as a scenario step holds it."""

    op: str  # "alter-topic-config" or "alter-broker-config"
    entity: str | int | None  # the topic; the broker's id, None for the cluster-wide default
    to_set: dict[str, str]
    to_delete: list[str]

    def step(self) -> dict[str, object]:
        """The step's keys (docs/scenarios.md)."""
        who = "topic" if self.op == "alter-topic-config" else "broker"
        return {who: self.entity, "configs": self.to_set, "delete": self.to_delete}


def alter_step(args: argparse.Namespace) -> ConfigAlteration | QuotaAlteration:
    """The scenario step (`alter-topic-config`, `alter-broker-config` or `alter-client-quotas`)
    the command makes; ValueError with the usage error's text for arguments it refuses."""
    to_set: dict[str, str] = {}
    for item in filter(None, re.split("," + _OUTSIDE_BRACKETS, args.add_config or "")):
        pair = re.split(r"\s*=\s*" + _OUTSIDE_BRACKETS, item)
        if len(pair) != 2 or not pair[0].strip():
            raise ValueError(f"--add-config: expected KEY=VALUE, got {item!r}")
        to_set[pair[0].strip()] = re.sub(r"[\[\]]", "", pair[1]).strip()  # k=[a,b] sets "a,b"
    to_delete = [k.strip() for k in (args.delete_config or "").split(",") if k.strip()]
    if not to_set and not to_delete:
        raise ValueError("give --add-config or --delete-config")
    types, names = list(args.entity_type), list(args.entity_names or [])
    if len(names) != len(types):
        raise ValueError("give one --entity-name or --entity-default for each --entity-type")
    if types[0] in _quota_types():
        return _quota_step(types, names, to_set, to_delete)
    if len(types) > 1:
        raise ValueError(f"--entity-type: {types[0]} takes one entity")
    name = names[0]
    if types[0] == "topics":
        if name is None:
            raise ValueError("--entity-default: topics have no default entity; give --entity-name TOPIC")
        return ConfigAlteration("alter-topic-config", name, to_set, to_delete)
    if name is None:
        return ConfigAlteration("alter-broker-config", None, to_set, to_delete)
    from kraftsim.javacompat import parse_int  # (not at start-up: every command registers this one)

    broker = parse_int(name) if name.isascii() and name.isdigit() else None  # (the id as a broker registers it)
    if broker is None:
        raise ValueError(f"--entity-name: expected a broker id, got {name!r}")
    return ConfigAlteration("alter-broker-config", broker, to_set, to_delete)


def _quota_step(types: list[str], names: list[str | None], to_set: dict[str, str],
                to_delete: list[str]) -> QuotaAlteration:
    """The quota entity kafka-configs' arguments name (users and clients together, or ips
    alone), with the values as numbers (its text for one that is not)."""
    if _quota_entity_refused(types):
        raise ValueError("--entity-type: give users, clients, or both, or ips alone")
    scram = [k for k in [*to_set, *to_delete] if k.startswith("SCRAM-")]
    if scram:
        raise ValueError(f"{scram[0]}: SCRAM credentials are set with the alter-scram-credentials op, or with "
                         "kafka-configs against `kraftsim serve`")
    quotas: dict[str, float] = {}
    for key, value in to_set.items():
        try:
            quotas[key] = float(value)
        except ValueError:
            raise ValueError(f"Cannot parse quota configuration value for {key}: {value}") from None
    return QuotaAlteration({_quota_types()[t]: n for t, n in zip(types, names)}, quotas, to_delete)


def _run(args: argparse.Namespace) -> int:
    return _describe(args) if args.describe else _alter(args)


def _describe(args: argparse.Namespace) -> int:
    from kraftsim.sim import Simulation
    from kraftsim.sim.tools.describe_configs import ConfigsFailure, ConfigsQuery, describe_configs

    types, names = list(args.entity_type), list(args.entity_names or [])
    if args.add_config is not None or args.delete_config is not None:
        return _usage_error("--add-config and --delete-config are for --alter")
    if types[0] in _quota_types():
        return _describe_quotas(args, types, names)
    if len(types) > 1 or len(names) > 1:
        return _usage_error(f"--entity-type {types[0]} takes one entity (or none: every one)")
    name = names[0] if names else None
    default = bool(names) and name is None
    if types[0] == "topics" and default:
        return _usage_error("--entity-default: topics have no default entity; give --entity-name TOPIC")
    query = ConfigsQuery(types[0], name=name, default=default, describe_all=args.all)
    with Simulation.open(args.cluster) as sim:
        settle(sim)
        try:
            lines = describe_configs(sim, query)
        except ConfigsFailure as e:  # (the tool printed the entity's header before it failed)
            print("\n".join(e.lines))
            raise
    for line in lines:
        print(line)
    return 0


def _describe_quotas(args: argparse.Namespace, types: list[str], names: list[str | None]) -> int:
    """Client quotas: each type given pairs with the --entity-name or --entity-default given in
    the same place, or with none (any entity of the type)."""
    from kraftsim.sim import Simulation
    from kraftsim.sim.tools.describe_configs import ConfigsFailure, describe_quota_configs

    if _quota_entity_refused(types):
        return _usage_error("--entity-type: give users, clients, or both, or ips alone")
    if len(names) > len(types):
        return _usage_error("more --entity-name or --entity-default than --entity-type")
    if args.all:
        return _usage_error("--all is for topics and brokers")
    entity: list[tuple[str, str | None]] = []  # (type, name; None: any entity of the type)
    default: list[str] = []
    for i, etype in enumerate(types):
        if i >= len(names):
            entity.append((etype, None))
        elif not names[i]:  # (--entity-default; an empty name too, as kafka-configs reads it)
            default.append(etype)
        else:
            entity.append((etype, names[i]))
    with Simulation.open(args.cluster) as sim:
        settle(sim)
        try:
            lines = describe_quota_configs(sim, entity, default)
        except ConfigsFailure as e:  # (the tool printed the quotas before it failed)
            print("\n".join(e.lines))
            raise
    for line in lines:
        print(line)
    return 0


def _usage_error(text: str) -> int:
    print(f"kraftsim: error: {text}", file=sys.stderr)
    return 2


def _alter(args: argparse.Namespace) -> int:
    from kraftsim.sim import Simulation

    if args.all:
        return _usage_error("--all is for --describe")

    try:
        alteration = alter_step(args)
    except ValueError as e:
        print(f"kraftsim: error: {e}", file=sys.stderr)
        return 2
    if isinstance(alteration, QuotaAlteration):
        with Simulation.open(args.cluster) as sim:
            if _refuses_unheld(alteration.to_delete, sim.client_quotas(alteration.entity)):
                return 1
            lines = sim.alter_client_quotas(alteration.entity, alteration.quotas, alteration.to_delete)
        for line in lines:
            print(line)
        return 0
    from kraftsim.image import BROKER, TOPIC

    to_set, to_delete, entity = alteration.to_set, alteration.to_delete, alteration.entity
    if alteration.op == "alter-topic-config":
        assert isinstance(entity, str)
        with Simulation.open(args.cluster) as sim:
            if _describes_first(sim.tool_release()) and _refuses_unheld(to_delete, sim.held_configs(TOPIC, entity)):
                return 1
            lines = sim.alter_topic_config(entity, to_set, to_delete)
        for line in lines:
            print(line)
        return 0
    assert not isinstance(entity, str)
    with Simulation.open(args.cluster) as sim:
        if _describes_first(sim.tool_release()) and \
                _refuses_unheld(to_delete, sim.held_configs(BROKER, "" if entity is None else str(entity))):
            return 1
        lines = sim.alter_broker_config(entity, to_set, to_delete)
        # Each command is its own session of simulated time: let the brokers heartbeat with the
        # new value (two intervals) before the cluster is saved, as they would before an
        # operator's next command.
        sim.run(2 * sim.config.broker_heartbeat_interval_ms)
    for line in lines:
        print(line)
    return 0


def _describes_first(release: str) -> bool:
    """kafka-configs before 4.4 describes a topic or a broker before it alters one, and refuses
    to delete a config not held; 4.4's sends the change as told (it still reads client quotas
    first). The tool is the cluster's newest release, as an operator's would be."""
    return release_name_key(release) < (4, 4, 0)


def _refuses_unheld(to_delete: list[str], held: Mapping[str, object]) -> bool:
    """kafka-configs describes the entity first and refuses to delete what it does not hold
    (all such names, as given, and nothing is changed): its text printed, True. The check is
    the tool's, not the controller's: a client's own request to delete an unset config is
    taken (and a scenario step, which replays requests, takes it too)."""
    missing = [k for k in to_delete if k not in held]
    if missing:
        print(f"Invalid config(s): {','.join(missing)}", file=sys.stderr)
    return bool(missing)
