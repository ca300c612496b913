"""`kraftsim leader-election --cluster DIR --election-type TYPE ...`: kafka-leader-election on a
simulated cluster (one ElectLeaders request to its active controller).

The partitions are named as Kafka's tool names them: `--all-topic-partitions`, `--topic T
--partition P`, or `--path-to-json-file F` holding `{"partitions": [{"topic": "t",
"partition": 0}, ...]}`. The tool's lines are printed as Kafka prints them; a partition that
could not be elected prints "N replica(s) could not be elected" on stderr, and the checks
Kafka's tool makes of its options and file fail with its texts. Either exits 1, except on a
cluster whose newest release is 3.7.0: that release's tool exits 0 after any failure
(KAFKA-16410), and so does this command there.
"""

from __future__ import annotations

import argparse
import json
import sys

from kraftsim import jsoninput
from kraftsim.cli.common import INT32_MAX, INT32_MIN, bounded_int, kafka_tool
from kraftsim.errors import UsageError
from kraftsim.regular_file import open_input
from kraftsim.versions import ToolFailure


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("leader-election", help="kafka-leader-election: elect the preferred leader, or a live replica of a "
                                               "leaderless partition, in a simulated cluster")
    p.add_argument("--cluster", required=True, metavar="DIR", help="the cluster directory (`cluster create`)")
    p.add_argument("--election-type", required=True, type=str.lower, choices=["preferred", "unclean"],
                   metavar="TYPE", help="preferred (the first replica, if it is in the ISR) or unclean (any live "
                                        "replica of a partition without a leader)")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--all-topic-partitions", action="store_true", help="every partition of every topic")
    which.add_argument("--topic", metavar="NAME", help="the topic of the partition named by --partition")
    which.add_argument("--path-to-json-file", metavar="FILE",
                       help='the partitions, as {"partitions": [{"topic": "t", "partition": 0}, ...]}')
    p.add_argument("--partition", type=bounded_int(INT32_MIN, INT32_MAX, "a partition"), metavar="P",
                   help="the partition of --topic")
    p.set_defaults(run=kafka_tool(_elect))


#: The largest --path-to-json-file read: a million partitions (the controller's bound on one
#: request) of long topic names fit in it.
MAX_JSON_BYTES = 128 * 1024 * 1024


def _from_json(path: str) -> dict[str, list[int]]:
    """The partitions a kafka-leader-election JSON file names, grouped by topic in file order
    (at most the controller's bound on one request)."""
    from kraftsim.controller import MAX_ELECTION_PARTITIONS

    try:
        with open_input(path) as f:  # (a FIFO nobody writes to: refused after a while, not waited on forever)
            raw = f.read(MAX_JSON_BYTES + 1)
    except OSError as e:
        raise UsageError(f"kraftsim: error: --path-to-json-file {path}: {e.strerror or e}") from None
    if len(raw) > MAX_JSON_BYTES:  # (/dev/zero was read until memory ran out)
        raise UsageError(f"kraftsim: error: --path-to-json-file {path}: more than {MAX_JSON_BYTES:,} bytes: not a "
                         "partition list kraftsim reads")
    try:
        data = jsoninput.loads(raw.decode("utf-8"))  # (nesting too deep: a ValueError, not an internal error)
    except (UnicodeDecodeError, ValueError) as e:
        raise UsageError(f"kraftsim: error: --path-to-json-file {path}: {e}") from None
    if isinstance(data, dict) and "partitions" not in data:
        raise ToolFailure('Replica election data is missing "partitions" field')
    entries = data.get("partitions") if isinstance(data, dict) else None
    if not isinstance(entries, list) or len(entries) > MAX_ELECTION_PARTITIONS:
        raise UsageError(f'kraftsim: error: --path-to-json-file {path}: expected {{"partitions": [{{"topic": "t", '
                         f'"partition": 0}}, ...]}} with at most {MAX_ELECTION_PARTITIONS:,} partitions')
    wanted: dict[str, list[int]] = {}
    seen: set[tuple[str, int]] = set()
    duplicates: list[str] = []
    for entry in entries:
        topic, pid = (entry.get("topic"), entry.get("partition")) if isinstance(entry, dict) else (None, None)
        if not isinstance(topic, str) or not isinstance(pid, int) or isinstance(pid, bool) or \
                not INT32_MIN <= pid <= INT32_MAX:  # (a partition id is an int32 on the wire)
            raise UsageError(f"kraftsim: error: --path-to-json-file {path}: each partition needs a string \"topic\" "
                             f"and an integer \"partition\", got {json.dumps(entry)[:200]}")
        if (topic, pid) in seen:
            duplicates.append(f"{topic}-{pid}")
        seen.add((topic, pid))
        wanted.setdefault(topic, []).append(pid)
    if duplicates:  # (Kafka's tool refuses these before it sends anything)
        raise ToolFailure(f"Replica election data contains duplicate partitions: [{', '.join(dict.fromkeys(duplicates))}]")
    return wanted


def _named_partitions(args: argparse.Namespace) -> dict[str, list[int]] | None:
    """The partitions the options name (None: every partition), checked as Kafka's tool checks them."""
    if args.topic is not None and args.partition is None:
        raise ToolFailure("Missing required option(s): partition")
    if args.topic is None and args.partition is not None:
        raise ToolFailure("Option partition is only allowed if topic is used")
    if args.all_topic_partitions:
        return None
    if args.topic is not None:
        return {args.topic: [args.partition]}
    return _from_json(args.path_to_json_file)


def _refusal_exits_zero(cluster: str) -> bool:
    """Whether the cluster's tool exits 0 after refusing its options or file (3.7.0's does); a
    cluster that cannot be opened leaves the refusal as it is (one held by another command is
    said so, as on the tool's other paths)."""
    from kraftsim.errors import ClusterBusyError, KraftsimError
    from kraftsim.sim import Simulation
    from kraftsim.sim.tools.leader_election import failure_exits_zero

    try:
        with Simulation.open(cluster) as sim:
            return failure_exits_zero(sim)
    except ClusterBusyError:
        raise
    except KraftsimError:
        return False


def _elect(args: argparse.Namespace) -> int:
    from kraftsim.sim import Simulation, leader_election

    try:
        partitions = _named_partitions(args)
    except ToolFailure as refused:
        if not _refusal_exits_zero(args.cluster):
            raise
        print(refused, file=sys.stderr)
        return 0
    with Simulation.open(args.cluster) as sim:
        out = leader_election(sim, args.election_type, partitions)
    for line in out.lines:
        print(line)
    if out.failure is not None:
        print(out.failure, file=sys.stderr)
    return out.exit_code
