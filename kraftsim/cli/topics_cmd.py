"""`kraftsim topics --cluster DIR create|alter|delete|list`: topics of a simulated cluster.

What scenario files do with `create-topics`, `create-partitions` and `delete-topics`, from
the command line.
Created topics are named PREFIX0, PREFIX1, ... (the first free names), as the scenario op
names them; `list` prints the names in the active controller's image, one per line, as
`kafka-topics --list` does.
"""

from __future__ import annotations

import argparse
import sys

from kraftsim.cli.common import kafka_tool

#: How long (simulated) `list` lets a reopened cluster settle before it reads the leader's image.
SETTLE_MS = 60_000


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = sub.add_parser("topics", help="create, grow, delete and list the topics of a simulated cluster")
    group.add_argument("--cluster", required=True, metavar="DIR", help="the cluster directory (`cluster create`)")
    cmds = group.add_subparsers(dest="topics_command", metavar="SUBCOMMAND")
    cmds.required = True

    create = cmds.add_parser("create", help="create COUNT topics named PREFIX0, PREFIX1, ... (in requests of "
                                            "at most 10,000 records, Kafka's limit for one)")
    create.add_argument("--count", type=int, default=1, metavar="N", help="how many topics (default 1)")
    create.add_argument("--partitions", type=int, default=1, metavar="P", help="partitions per topic (default 1)")
    create.add_argument("--replication-factor", type=int, metavar="R", help="default: min(3, brokers)")
    create.add_argument("--prefix", default="topic-", metavar="PREFIX", help="name prefix (default topic-)")
    create.set_defaults(run=kafka_tool(_create))

    alter = cmds.add_parser("alter", help="grow topics to more partitions (kafka-topics --alter --partitions), "
                                          "in one CreatePartitions request")
    alter.add_argument("names", nargs="+", metavar="NAME", help="the topics to grow")
    alter.add_argument("--partitions", type=int, required=True, metavar="P",
                       help="the new partition count of each (more than it has)")
    alter.add_argument("--replica-assignment", metavar="LIST",
                       help="the new partitions' replicas, as kafka-topics writes them: partitions separated by "
                            "commas, broker ids by colons (\"1:2,2:3\" for two new partitions); default: placed as "
                            "for a new topic")
    alter.set_defaults(run=kafka_tool(_alter))

    delete = cmds.add_parser("delete", help="delete topics by name")
    delete.add_argument("names", nargs="+", metavar="NAME", help="the topics to delete")
    delete.set_defaults(run=kafka_tool(_delete))

    lst = cmds.add_parser("list", help="topic names, one per line")
    lst.set_defaults(run=kafka_tool(_list))


def _create(args: argparse.Namespace) -> int:
    from kraftsim.scenario.apply import topic_requests
    from kraftsim.scenario.language import MAX_PARTITIONS, MAX_REPLICATION, MAX_TOPICS
    from kraftsim.sim import Simulation

    for key, most in (("count", MAX_TOPICS), ("partitions", MAX_PARTITIONS), ("replication_factor", MAX_REPLICATION)):
        value = getattr(args, key)
        if value is not None and not 1 <= value <= most:
            print(f"kraftsim: error: --{key.replace('_', '-')}: expected a positive integer up to {most:,}, got {value}",
                  file=sys.stderr)
            return 2
    if args.count * args.partitions > MAX_PARTITIONS:
        print(f"kraftsim: error: --count x --partitions: expected at most {MAX_PARTITIONS:,} partitions in all, got "
              f"{args.count * args.partitions:,}", file=sys.stderr)
        return 2
    with Simulation.open(args.cluster) as sim:
        for created in topic_requests(sim, args.count, args.partitions, args.replication_factor, args.prefix):
            for name in created:  # (acknowledged: each request's topics are saved before they are named)
                print(f"Created topic {name}.")
    return 0


def replica_assignment(text: str) -> list[list[int]] | None:
    """kafka-topics' --replica-assignment ("1:2,2:3") as lists of broker ids; None if malformed."""
    try:
        return [[int(b) for b in part.split(":")] for part in text.split(",")]
    except ValueError:
        return None


def _alter(args: argparse.Namespace) -> int:
    from kraftsim.scenario.language import MAX_PARTITIONS
    from kraftsim.sim import Simulation

    if not 1 <= args.partitions <= MAX_PARTITIONS:
        print(f"kraftsim: error: --partitions: expected a positive integer up to {MAX_PARTITIONS:,}, got "
              f"{args.partitions}", file=sys.stderr)
        return 2
    assignments = None
    if args.replica_assignment is not None:
        assignments = replica_assignment(args.replica_assignment)
        if assignments is None or len(assignments) > MAX_PARTITIONS:
            print(f"kraftsim: error: --replica-assignment: expected broker ids separated by colons, partitions by "
                  f"commas (\"1:2,2:3\"), got {args.replica_assignment!r}", file=sys.stderr)
            return 2
    with Simulation.open(args.cluster) as sim:
        sim.create_partitions(args.names, args.partitions, assignments)
    return 0  # (kafka-topics --alter prints nothing when it succeeds)


def _delete(args: argparse.Namespace) -> int:
    from kraftsim.sim import Simulation

    with Simulation.open(args.cluster) as sim:
        sim.delete_topics(args.names)
    for name in args.names:
        print(f"Deleted topic {name}.")
    return 0


def _list(args: argparse.Namespace) -> int:
    from kraftsim.sim import SimError, Simulation

    with Simulation.open(args.cluster) as sim:
        try:
            sim.wait(SETTLE_MS)  # a reopened cluster's nodes replay their logs (and elect a leader) first
        except SimError:
            pass  # not settled (no leader, or a node behind): a leader's image is still what is listed
        leader = sim.leader()
        if leader is None:
            raise SimError("no active controller: the topics cannot be listed")
        image = sim.image(leader)
        names = [] if image is None else sorted(t.name for t in image.topics.sorted_topics())
    for name in names:
        print(name)
    return 0
