"""`kraftsim topics --cluster DIR create|alter|delete|list|describe`: topics of a simulated cluster.

What scenario files do with `create-topics`, `create-partitions` and `delete-topics`, from
the command line. `create` makes the topics named by `--topic` (with kafka-topics' `--config`
and `--replica-assignment`), or COUNT topics named PREFIX0, PREFIX1, ... (the first free
names), as the scenario op names them; `list` prints the names in the active controller's
image, one per line, as `kafka-topics --list` does; `describe` prints what `kafka-topics
--describe` prints (kraftsim.sim.tools.describe_topics).
"""

from __future__ import annotations

import argparse
import sys

from kraftsim.cli.common import kafka_tool, settle

#: kafka-topics --describe's flags that list only the partitions in trouble, and which.
_REPORTS = {"--under-replicated-partitions": "whose ISR is smaller than their replication factor",
            "--unavailable-partitions": "without a leader, or whose leader is not an unfenced broker",
            "--under-min-isr-partitions": "whose ISR is smaller than their min.insync.replicas, or without a leader",
            "--at-min-isr-partitions": "whose ISR is exactly their min.insync.replicas"}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = sub.add_parser("topics", help="create, grow, delete, list and describe the topics of a simulated cluster")
    group.add_argument("--cluster", required=True, metavar="DIR", help="the cluster directory (`cluster create`)")
    cmds = group.add_subparsers(dest="topics_command", metavar="SUBCOMMAND")
    cmds.required = True

    create = cmds.add_parser("create", help="create the topics named by --topic, or COUNT topics named PREFIX0, "
                                            "PREFIX1, ... (in requests of at most 10,000 records, Kafka's limit "
                                            "for one)")
    create.add_argument("--topic", action="append", dest="names", metavar="NAME",
                        help="a topic to create, as kafka-topics --create --topic NAME (repeat it for more); "
                             "without it, --count topics named --prefix and a number")
    create.add_argument("--count", type=int, metavar="N", help="how many topics (default 1)")
    create.add_argument("--partitions", type=int, metavar="P", help="partitions per topic (default 1)")
    create.add_argument("--replication-factor", type=int, metavar="R", help="default: min(3, brokers)")
    create.add_argument("--prefix", metavar="PREFIX", help="name prefix (default topic-)")
    create.add_argument("--config", action="append", default=[], metavar="NAME=VALUE",
                        help="a config of each topic created, as kafka-topics --config (repeat it for more); each "
                             "value is judged as the controller's release judges it")
    create.add_argument("--replica-assignment", metavar="LIST",
                        help="each topic's replicas by partition, as kafka-topics writes them: partitions separated "
                             "by commas, broker ids by colons (\"1:2,2:3\": two partitions); instead of "
                             "--partitions and --replication-factor")
    create.add_argument("--if-not-exists", action="store_true",
                        help="a --topic that exists already is passed over, not an error (as kafka-topics "
                             "--if-not-exists)")
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

    describe = cmds.add_parser("describe", help="kafka-topics --describe: each topic's line and its partitions' lines, "
                                                "as the tool of the cluster's newest release prints them")
    describe.add_argument("--topic", metavar="PATTERN",
                          help="the topics to describe: a name or a regular expression matched against whole "
                               "names (commas separate alternatives), as kafka-topics --topic; default: all")
    describe.add_argument("--topic-id", metavar="ID",
                          help="the one topic to describe, by its id (Kafka's text form); it counts over --topic, "
                               "except the zero id. Described by id, partitions show no ELR (\"N/A\" from 3.8), "
                               "as the admin client asks for them with Metadata")
    describe.add_argument("--exclude-internal", action="store_true", help="leave out internal topics "
                                                                           "(__consumer_offsets, ...)")
    describe.add_argument("--if-exists", action="store_true",
                          help="a --topic that matches nothing is not an error (nothing is printed)")
    for flag, what in _REPORTS.items():
        describe.add_argument(flag, action="store_true", help=f"only partitions {what} (from 3.7 the flags of this "
                                                              "kind combine: a partition any of them names is listed)")
    describe.add_argument("--topics-with-overrides", action="store_true",
                          help="only the lines of topics with a config not at its default, without their partitions")
    describe.add_argument("--partition-size-limit-per-response", metavar="N",
                          help="the most partitions in one DescribeTopicPartitions answer (from 3.8): the tool pages "
                               "through them, so what it prints is the same; checked as the tool checks it")
    describe.set_defaults(run=kafka_tool(_describe))


def _usage_error(text: str) -> int:
    print(f"kraftsim: error: {text}", file=sys.stderr)
    return 2


def _create(args: argparse.Namespace) -> int:
    from kraftsim.scenario.apply import topic_requests
    from kraftsim.scenario.language import MAX_PARTITIONS, MAX_REPLICATION, MAX_TOPICS
    from kraftsim.sim import Simulation, TopicsRefused

    names: list[str] | None = args.names
    if names is not None and (args.count is not None or args.prefix is not None):
        return _usage_error("--topic names the topics: --count and --prefix are for topics named by a number")
    if args.if_not_exists and names is None:
        return _usage_error("--if-not-exists is for topics named by --topic (numbered ones take free numbers)")
    count = len(names) if names is not None else 1 if args.count is None else args.count
    for key, value, most in (("count", count, MAX_TOPICS), ("partitions", args.partitions, MAX_PARTITIONS),
                             ("replication-factor", args.replication_factor, MAX_REPLICATION)):
        if value is not None and not 1 <= value <= most:
            return _usage_error(f"--{key}: expected a positive integer up to {most:,}, got {value}")
    twice = _first_repeated(names or [])
    if twice is not None:
        return _usage_error(f"--topic: {twice!r} is named twice")
    configs = topic_configs(args.config)
    if configs is None:
        malformed = next(item for item in args.config if topic_configs([item]) is None)
        return _usage_error(f"--config: expected NAME=VALUE, got {malformed!r}")
    assignments = None
    if args.replica_assignment is not None:
        if args.replication_factor is not None or args.partitions is not None:
            return _usage_error("--replica-assignment names each partition's replicas: --partitions and "
                                "--replication-factor are for replicas placed by the controller")
        assignments = replica_assignment(args.replica_assignment)
        if assignments is None or len(assignments) > MAX_PARTITIONS:
            return _usage_error(f"--replica-assignment: expected broker ids separated by colons, partitions by commas "
                                f"(\"1:2,2:3\"), got {args.replica_assignment!r}")
    partitions = len(assignments) if assignments is not None else 1 if args.partitions is None else args.partitions
    if count * partitions > MAX_PARTITIONS:
        return _usage_error(f"--count x --partitions: expected at most {MAX_PARTITIONS:,} partitions in all, got "
                            f"{count * partitions:,}")
    with Simulation.open(args.cluster) as sim:
        try:
            for created in topic_requests(sim, count, partitions, args.replication_factor,
                                          "topic-" if args.prefix is None else args.prefix, names=names,
                                          configs=configs or None, assignments=assignments,
                                          existing_ok=args.if_not_exists):
                _say_created(created)
        except TopicsRefused as e:
            _say_created(e.created)  # (the refused request's other topics were created all the same)
            raise
    return 0


def _first_repeated(names: list[str]) -> str | None:
    """The first name given a second time (one pass: a command line may name many topics)."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            return name
        seen.add(name)
    return None


def _say_created(names: list[str]) -> None:
    """kafka-topics' line for each topic created (acknowledged: its request is saved first)."""
    for name in names:
        print(f"Created topic {name}.")


def create_step(args: argparse.Namespace, stdout: str) -> tuple[str, dict[str, object]] | None:
    """The `create-topics` step a `create` that printed `stdout` made (for `serve --record`), or
    None if it created nothing: the topics it named as created (numbered ones are the lowest free
    numbers, and a request refused in part created the others) with the flags it was given."""
    made = [line[len("Created topic "):-1] for line in stdout.splitlines()
            if line.startswith("Created topic ") and line.endswith(".")]
    if not made:
        return None
    configs = topic_configs(args.config) or None
    if args.replica_assignment is not None:
        return "create-topics", {"names": made, "configs": configs,
                                 "assignments": replica_assignment(args.replica_assignment)}
    return "create-topics", {"names": made, "partitions": 1 if args.partitions is None else args.partitions,
                             "replication_factor": args.replication_factor, "configs": configs}


def topic_configs(items: list[str]) -> dict[str, str] | None:
    """kafka-topics' --config values ("retention.ms=1000", spaces around `=` dropped) as a
    dict in their order; None if one is not NAME=VALUE."""
    configs: dict[str, str] = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not name.strip():
            return None
        configs[name.strip()] = value.strip()
    return configs


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


def _describe(args: argparse.Namespace) -> int:
    from kraftsim.sim import Simulation
    from kraftsim.javacompat import uuid_from_string
    from kraftsim.protocol.primitives import Uuid
    from kraftsim.sim.tools.describe_topics import DescribeOptions, describe_topics, topic_pattern
    from kraftsim.versions import ToolFailure

    reports = [flag for flag in _REPORTS if getattr(args, flag[2:].replace("-", "_"))]
    if args.topics_with_overrides and reports:
        return _usage_error(f"--topics-with-overrides lists topics, not partitions: not with {reports[0]}")
    if args.if_exists and args.topic is not None and args.topic_id is not None:
        print("Only topic id will be used when both --topic and --topic-id are specified and topicId is not "
              "Uuid.ZERO_UUID")
    try:  # (what the tool refuses fails before the cluster is opened)
        topic_id = None if args.topic_id is None else uuid_from_string(args.topic_id)
    except ValueError as e:
        raise ToolFailure(str(e)) from None
    if args.topic is not None and (topic_id is None or topic_id == Uuid.ZERO):
        topic_pattern(args.topic)
    options = DescribeOptions(topic=args.topic, topic_id=topic_id, exclude_internal=args.exclude_internal,
                              if_exists=args.if_exists, under_replicated=args.under_replicated_partitions,
                              unavailable=args.unavailable_partitions, under_min_isr=args.under_min_isr_partitions,
                              at_min_isr=args.at_min_isr_partitions, with_overrides=args.topics_with_overrides,
                              partition_size_limit=args.partition_size_limit_per_response)
    with Simulation.open(args.cluster) as sim:
        settle(sim)
        lines = describe_topics(sim, options)
    for line in lines:
        print(line)
    return 0


def _list(args: argparse.Namespace) -> int:
    from kraftsim.sim import SimError, Simulation

    with Simulation.open(args.cluster) as sim:
        settle(sim)
        leader = sim.leader()
        if leader is None:
            raise SimError("no active controller: the topics cannot be listed")
        image = sim.image(leader)
        names = [] if image is None else sorted(t.name for t in image.topics.sorted_topics())
    for name in names:
        print(name)
    return 0
