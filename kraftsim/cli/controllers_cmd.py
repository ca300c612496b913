"""`kraftsim controllers --cluster DIR unregister --id N`: controller unregistration (KIP-1312,
Kafka 4.4) on a simulated cluster. Below metadata.version 4.4-IV2, or for an id that is not
registered, the controller refuses with Kafka's text (exit 1).
"""

from __future__ import annotations

import argparse

from kraftsim.cli.common import INT32_MAX, INT32_MIN, bounded_int, kafka_tool


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = sub.add_parser("controllers", help="unregister a controller of a simulated cluster (Kafka 4.4)")
    group.add_argument("--cluster", required=True, metavar="DIR", help="the cluster directory (`cluster create`)")
    cmds = group.add_subparsers(dest="controllers_command", metavar="SUBCOMMAND")
    cmds.required = True
    un = cmds.add_parser("unregister", help="remove a controller's registration (UnregisterControllerRecord)")
    un.add_argument("--id", required=True, type=bounded_int(INT32_MIN, INT32_MAX, "a controller id"), metavar="N",
                    help="the controller id")
    un.set_defaults(run=kafka_tool(_unregister))


def _unregister(args: argparse.Namespace) -> int:
    from kraftsim.sim import Simulation

    with Simulation.open(args.cluster) as sim:
        lines = sim.unregister_controller(args.id)
    for line in lines:
        print(line)
    return 0
