"""`kraftsim acls --cluster DIR --add ...`: kafka-acls' --add on a simulated cluster (one
binding, CreateAcls to its active controller). From Kafka 4.4 the host may be a CIDR range
(KIP-1276): refused below metadata.version 4.4-IV1, and malformed notation is refused, with
Kafka's texts (exit 1).
"""

from __future__ import annotations

import argparse

from kraftsim.cli.common import kafka_tool


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("acls", help="kafka-acls --add: add an ACL binding to a simulated cluster (CIDR hosts from 4.4)")
    p.add_argument("--cluster", required=True, metavar="DIR", help="the cluster directory (`cluster create`)")
    p.add_argument("--add", action="store_true", required=True, help="add the binding")
    who = p.add_mutually_exclusive_group(required=True)
    who.add_argument("--allow-principal", metavar="P", help="e.g. User:alice")
    who.add_argument("--deny-principal", metavar="P", help="e.g. User:mallory")
    p.add_argument("--host", default="*", metavar="H", help="host or, from 4.4, CIDR range (default: *)")
    p.add_argument("--operation", required=True, metavar="OP", help="e.g. Read, Write, Describe, All")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--topic", metavar="NAME", help="the topic the binding is on")
    what.add_argument("--group", metavar="NAME", help="the consumer group the binding is on")
    p.add_argument("--resource-pattern-type", default="literal", choices=["literal", "prefixed"],
                   help="literal (default): the name itself; prefixed: every name that starts with it")
    p.set_defaults(run=kafka_tool(_add))


def _add(args: argparse.Namespace) -> int:
    from kraftsim.sim import Simulation

    allow = args.allow_principal is not None  # (an empty --allow-principal is still an allow)
    principal = args.allow_principal if allow else args.deny_principal
    kind, name = ("topic", args.topic) if args.topic is not None else ("group", args.group)
    with Simulation.open(args.cluster) as sim:
        lines = sim.create_acl(principal=principal, host=args.host, operation=args.operation,
                               resource_type=kind, resource_name=name, pattern_type=args.resource_pattern_type,
                               permission="allow" if allow else "deny")
    for line in lines:
        print(line)
    return 0
