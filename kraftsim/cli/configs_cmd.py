"""`kraftsim configs --cluster DIR --alter --entity-type brokers|topics ...`: kafka-configs'
--alter for broker and topic configs on a simulated cluster (IncrementalAlterConfigs to its
active controller; a topic's values are judged as the controller's release judges them).

This is how Kafka cordons log directories (KIP-1066, 4.3): set `cordoned.log.dirs` to `*`
or to some of the broker's log directories; the broker reports them in its next heartbeat
(the command lets two heartbeat intervals of simulated time pass) and gets no new replicas
on them. Below metadata.version 4.3-IV0 the controller refuses
with Kafka's text (exit 1).
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass

from kraftsim.cli.common import kafka_tool


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("configs", help="kafka-configs --alter for broker and topic configs of a simulated cluster "
                                       "(cordoned.log.dirs cordons log directories)")
    p.add_argument("--cluster", required=True, metavar="DIR", help="the cluster directory (`cluster create`)")
    p.add_argument("--alter", action="store_true", required=True, help="alter the configs of the entity")
    p.add_argument("--entity-type", required=True, choices=["brokers", "topics"], help="broker or topic configs")
    who = p.add_mutually_exclusive_group(required=True)
    who.add_argument("--entity-name", metavar="NAME", help="the broker id, or the topic")
    who.add_argument("--entity-default", action="store_true", help="the cluster-wide default of every broker")
    p.add_argument("--add-config", metavar="K=V[,K=V]", help="configs to set, e.g. cordoned.log.dirs=*")
    p.add_argument("--delete-config", metavar="K[,K]", help="configs to remove")
    p.set_defaults(run=kafka_tool(_alter))


#: kafka-configs splits --add-config at commas and `=` outside square brackets, so that a list
#: value is written `k=[v1,v2]` (ConfigCommand.parseConfigsToBeAdded); the brackets are dropped.
_OUTSIDE_BRACKETS = r"(?=[^\]]*(?:\[|$))"


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


def alter_step(args: argparse.Namespace) -> ConfigAlteration:
    """The scenario step (`alter-topic-config` or `alter-broker-config`) the command makes;
    ValueError with the usage error's text for arguments it refuses."""
    to_set: dict[str, str] = {}
    for item in filter(None, re.split("," + _OUTSIDE_BRACKETS, args.add_config or "")):
        pair = re.split(r"\s*=\s*" + _OUTSIDE_BRACKETS, item)
        if len(pair) != 2 or not pair[0].strip():
            raise ValueError(f"--add-config: expected KEY=VALUE, got {item!r}")
        to_set[pair[0].strip()] = re.sub(r"[\[\]]", "", pair[1]).strip()  # k=[a,b] sets "a,b"
    to_delete = [k.strip() for k in (args.delete_config or "").split(",") if k.strip()]
    if not to_set and not to_delete:
        raise ValueError("give --add-config or --delete-config")
    if args.entity_type == "topics":
        if args.entity_default:
            raise ValueError("--entity-default: topics have no default entity; give --entity-name TOPIC")
        return ConfigAlteration("alter-topic-config", args.entity_name, to_set, to_delete)
    if args.entity_default:
        return ConfigAlteration("alter-broker-config", None, to_set, to_delete)
    from kraftsim.javacompat import parse_int  # (not at start-up: every command registers this one)

    name = args.entity_name
    broker = parse_int(name) if name.isascii() and name.isdigit() else None  # (the id as a broker registers it)
    if broker is None:
        raise ValueError(f"--entity-name: expected a broker id, got {name!r}")
    return ConfigAlteration("alter-broker-config", broker, to_set, to_delete)


def _alter(args: argparse.Namespace) -> int:
    from kraftsim.sim import Simulation

    try:
        alteration = alter_step(args)
    except ValueError as e:
        print(f"kraftsim: error: {e}", file=sys.stderr)
        return 2
    to_set, to_delete, entity = alteration.to_set, alteration.to_delete, alteration.entity
    if alteration.op == "alter-topic-config":
        assert isinstance(entity, str)
        with Simulation.open(args.cluster) as sim:
            lines = sim.alter_topic_config(entity, to_set, to_delete)
        for line in lines:
            print(line)
        return 0
    assert not isinstance(entity, str)
    with Simulation.open(args.cluster) as sim:
        lines = sim.alter_broker_config(entity, to_set, to_delete)
        # Each command is its own session of simulated time: let the brokers heartbeat with the
        # new value (two intervals) before the cluster is saved, as they would before an
        # operator's next command.
        sim.run(2 * sim.config.broker_heartbeat_interval_ms)
    for line in lines:
        print(line)
    return 0
