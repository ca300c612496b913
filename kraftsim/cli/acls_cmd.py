"""`kraftsim acls --cluster DIR --add|--remove|--list ...`: kafka-acls on a simulated cluster.

`--add` sends one binding to the active controller (CreateAcls). From Kafka 4.4 the host may
be a CIDR range (KIP-1276): refused below metadata.version 4.4-IV1, and malformed notation is
refused, with Kafka's texts (exit 1). `--remove` sends one filter (DeleteAcls) and `--list`
reads the active controller's image, with kafka-acls' defaults: a resource name is matched
as a literal pattern unless `--resource-pattern-type` says otherwise; `--remove` needs a
resource, and with a principal it removes only the bindings of that principal, host (default
`*`) and operation (default All), as kafka-acls builds its filter. Each binding is printed
on a line of its own.
"""

from __future__ import annotations

import argparse
from typing import Any

from kraftsim.cli.common import kafka_tool, settle
from kraftsim.errors import UsageError

#: kafka-acls' text when --add or --remove names no resource.
NO_RESOURCE = ("You must provide at least one resource: --topic <topic> or --cluster or --group <group> or "
               "--delegation-token <Delegation Token ID>")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("acls", help="kafka-acls --add/--remove/--list: the ACL bindings of a simulated cluster "
                                    "(CIDR hosts from 4.4)")
    p.add_argument("--cluster", required=True, metavar="DIR", help="the cluster directory (`cluster create`)")
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--add", action="store_true", help="add one binding (needs a principal and a resource)")
    action.add_argument("--remove", action="store_true",
                        help="remove the bindings on a resource: all of them, or with a principal only those of "
                             "that principal, --host (default *) and --operation (default All), as kafka-acls does")
    action.add_argument("--list", action="store_true",
                        help="list the bindings (of one resource, or all), as the active controller holds them")
    who = p.add_mutually_exclusive_group()
    who.add_argument("--allow-principal", metavar="P", help="e.g. User:alice (--add, --remove)")
    who.add_argument("--deny-principal", metavar="P", help="e.g. User:mallory (--add, --remove)")
    who.add_argument("--principal", metavar="P", help="list only this principal's bindings (--list)")
    p.add_argument("--host", metavar="H", help="host or, from 4.4, CIDR range (--add's default: *; to remove: "
                                               "narrows the bindings removed)")
    p.add_argument("--operation", metavar="OP", help="e.g. Read, Write, Describe, All (--add's default, as "
                                                     "kafka-acls'; to remove: narrows the bindings removed)")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--topic", metavar="NAME", help="the topic the binding is on")
    what.add_argument("--group", metavar="NAME", help="the consumer group the binding is on")
    what.add_argument("--transactional-id", metavar="ID", help="the transactional id the binding is on")
    p.add_argument("--resource-pattern-type", default="literal", choices=["literal", "prefixed", "any", "match"],
                   help="literal (default): the name itself; prefixed: every name that starts with it; to remove "
                        "or list also any (every pattern type, the name exactly) or match (every binding that "
                        "applies to the name)")
    p.add_argument("--force", action="store_true", help="accepted as kafka-acls takes it: kraftsim never asks")
    p.set_defaults(run=kafka_tool(_acls))


def _acls(args: argparse.Namespace) -> int:
    from kraftsim.sim import Simulation

    _check(args)
    resource = _resource(args)
    with Simulation.open(args.cluster) as sim:
        if args.add:
            assert resource is not None
            allow = args.allow_principal is not None  # (an empty --allow-principal is still an allow)
            lines = sim.create_acl(principal=args.allow_principal if allow else args.deny_principal,
                                   host="*" if args.host is None else args.host,
                                   operation="all" if args.operation is None else args.operation,
                                   resource_type=resource[0], resource_name=resource[1],
                                   pattern_type=args.resource_pattern_type, permission="allow" if allow else "deny")
        elif args.remove:
            assert resource is not None
            lines = sim.delete_acls(**_filter(args, resource)) or ["No ACL binding matched."]
        else:
            settle(sim)  # (a reopened cluster's controller replays its log before its image is read)
            lines = sim.list_acls(**_filter(args, resource))
    for line in lines:
        print(line)
    return 0


def _check(args: argparse.Namespace) -> None:
    """What kafka-acls refuses before it sends anything, with its texts (exit 2)."""
    if args.list:
        for flag in ("allow_principal", "deny_principal", "host"):  # (--host stands for --allow-host/--deny-host)
            if getattr(args, flag) is not None:
                raise UsageError(f'Option "[list]" can\'t be used with option "[{flag.replace("_", "-")}]"')
        if args.operation is not None:  # (kafka-acls ignores it; kraftsim says so rather than list what was not asked)
            raise UsageError("--list lists every operation's bindings: --operation does not narrow it")
        return
    if args.principal is not None:
        raise UsageError("The --principal option is only available if --list is set")
    if _resource(args) is None:
        raise UsageError(NO_RESOURCE)
    if args.add:
        if args.allow_principal is None and args.deny_principal is None:
            raise UsageError("You must specify one of: --allow-principal, --deny-principal when trying to add ACLs.")
        if args.resource_pattern_type not in ("literal", "prefixed"):
            raise UsageError(f"A '{args.resource_pattern_type.upper()}' resource pattern type is a filter: "
                             "--add takes literal or prefixed")


def _resource(args: argparse.Namespace) -> tuple[str, str] | None:
    """(resource type, name) of --topic, --group or --transactional-id, or None."""
    for kind, name in (("topic", args.topic), ("group", args.group), ("transactional_id", args.transactional_id)):
        if name is not None:
            return kind, name
    return None


def _filter(args: argparse.Namespace, resource: tuple[str, str] | None) -> dict[str, Any]:
    """The binding filter of --remove or --list, built as kafka-acls builds it."""
    kind, name = resource if resource is not None else ("any", None)
    out: dict[str, Any] = {"resource_type": kind, "resource_name": name,
                           "pattern_type": args.resource_pattern_type if resource is not None else "any"}
    principal = args.allow_principal if args.allow_principal is not None else args.deny_principal
    if principal is not None:  # (kafka-acls --remove with a principal: that entry, its host and operation defaulted)
        out.update(principal=_tool_principal(principal), permission="allow" if args.allow_principal is not None
                   else "deny", host="*" if args.host is None else args.host,
                   operation="all" if args.operation is None else args.operation)
    elif args.principal is not None:
        out["principal"] = _tool_principal(args.principal)
    else:
        out.update(host=args.host, operation="any" if args.operation is None else args.operation)
    return out


def _tool_principal(text: str) -> str:
    from kraftsim.sim.simulation import kafka_principal  # (kafka-acls parses TYPE:NAME before it sends anything)

    return kafka_principal(text)
