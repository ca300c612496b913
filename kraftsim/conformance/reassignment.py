"""Partition reassignments with Kafka's own `kafka-reassign-partitions`, against a live Kafka
cluster and against `kraftsim serve` of the same shape and release.

Both sides are one combined node (node 1, broker and controller) and one broker (node 2): two
server JVMs, and the tool's as a third. Each side runs the same script (`script`): a topic
created with `kafka-topics --replica-assignment`, one AlterPartitionReassignments request of
partitions the controller refuses (sent with kraftsim's wire client: the tool checks brokers and
partitions before it asks), a plan that moves one partition and grows
another (`--execute --throttle`), the topic's and broker 2's configs (`kafka-configs
--describe`: the throttles the tool set), `--verify` until both are done (which clears the
throttles through each broker's own listener), two plans the tool refuses (a broker that
does not exist, a partition that does not exist), `--cancel` with nothing under way, from 4.1 a
plan that grows a partition with `--disallow-replication-factor-change` (refused), then a
reassignment that cannot finish (its new replica's broker is killed just before: Kafka still
counts it alive until its session times out, so the tool sends the plan), `--verify` and
ListPartitionReassignments while it is under way, `--cancel`, and `--verify` after the cancel.
Each run is reported as its exit code and its stdout, the side's addresses and log directories
masked. The later `--verify` and `--cancel` runs keep the throttles (`--preserve-throttles`;
there are none). Every process is bounded and killed with its process group when the run ends.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kraftsim.conformance.dist import KafkaDist, KafkaUnavailable
from kraftsim.conformance.node import free_port
from kraftsim.conformance.live_cluster import LiveCluster
from kraftsim.conformance.reregistration import node_config
from kraftsim.conformance.tools import run_tool

#: One tool run: its exit code and its stdout, the side's addresses replaced by ADDRESS.
Outcome = tuple[int, str]
TOPIC = "moves"
#: The topic's partitions: replicas per partition.
ASSIGNMENT = ((1,), (2,), (1,))
#: Moves partition 0 to broker 2 and grows partition 1 to both brokers.
MOVE = ((0, (2,)), (1, (2, 1)))
UNKNOWN_BROKER = ((0, (7,)),)
UNKNOWN_PARTITION = ((5, (1,)),)
#: Grows partition 0 (on broker 2 after MOVE), with --disallow-replication-factor-change (4.1+, KIP-860).
GROW = ((0, (2, 1)),)
#: Partition 2 to broker 2, killed just before: it cannot catch up.
STUCK = ((2, (2,)),)
#: Partitions the controller refuses, sent as one AlterPartitionReassignments v0 request (the tool
#: checks brokers and partitions itself, so these reach the controller only from a client).
REFUSED: tuple[tuple[str, int, list[int] | None], ...] = (("nope", 0, [1]), (TOPIC, 9, [1]), (TOPIC, 0, []), (TOPIC, 0, [1, 9]), (TOPIC, 0, [2, 1, 2]),
           (TOPIC, 0, [-1]), (TOPIC, 1, None))
#: MOVE's inter-broker throttle, bytes a second (the tool sets it on both brokers and the
#: moving replicas on the topic, and its last `--verify` clears them).
THROTTLE = 10_000_000
#: The most `--verify` runs that wait for a reassignment to finish, one second apart.
VERIFY_TRIES = 30


def plan_json(moves: Sequence[tuple[int, Sequence[int]]]) -> str:
    """A `--reassignment-json-file` for `moves` of TOPIC."""
    return json.dumps({"version": 1, "partitions": [{"topic": TOPIC, "partition": p, "replicas": list(r)}
                                                    for p, r in moves]})


def disallows_replication_factor_change(dist: KafkaDist) -> bool:
    """Whether the release's tool has --disallow-replication-factor-change (4.1+)."""
    major, minor = (int(x) for x in dist.release.version.split(".")[:2])
    return (major, minor) >= (4, 1)


@dataclass
class Side:
    """What the script needs of a cluster: its bootstrap servers, a way to kill broker 2, and
    each node's log directory (the 4.2+ tool prints them in its rollback plan; masked as
    LOGDIR-N)."""

    bootstrap: str
    kill_broker: Callable[[], None]
    log_dirs: dict[int, str]

    def masked(self, text: str) -> str:
        for node, path in sorted(self.log_dirs.items()):
            text = text.replace(path, f"LOGDIR-{node}")
        return text.replace(self.bootstrap, "ADDRESS")


def _raw(bootstrap: str, api: str, body: dict[str, object]) -> Outcome:
    """One request with kraftsim's wire client, its answer as sorted JSON (exit code 0)."""
    from kraftsim.conformance.wire_client import WireClient

    host, port = bootstrap.rsplit(":", 1)
    with WireClient(host, int(port)) as client:
        return 0, json.dumps(client.request(api, 0, body), sort_keys=True, default=str)


def refused_by_the_controller(bootstrap: str) -> Outcome:
    """REFUSED, through the broker at `bootstrap`."""
    topics: dict[str, list[dict[str, object]]] = {}
    for name, pid, replicas in REFUSED:
        topics.setdefault(name, []).append({"PartitionIndex": pid, "Replicas": replicas})
    return _raw(bootstrap, "AlterPartitionReassignments",
                {"TimeoutMs": 30000, "Topics": [{"Name": n, "Partitions": ps} for n, ps in topics.items()]})


def ongoing(bootstrap: str) -> Outcome:
    """ListPartitionReassignments of every topic, through the broker at `bootstrap`."""
    return _raw(bootstrap, "ListPartitionReassignments", {"TimeoutMs": 30000, "Topics": None})


def script(dist: KafkaDist, side: Side, work: Path) -> list[Outcome]:
    """The tool runs of the module docstring against `side`, in order."""
    work.mkdir(parents=True, exist_ok=True)
    outcomes: list[Outcome] = []

    def tool(tool_name: str, *args: str) -> Outcome:
        done = run_tool(dist, tool_name, ["--bootstrap-server", side.bootstrap, *args])
        return done.code, side.masked(done.stdout)

    def reassign(action: str, moves: Sequence[tuple[int, Sequence[int]]], *more: str) -> Outcome:
        path = work / f"plan-{len(outcomes)}.json"
        path.write_text(plan_json(moves), encoding="utf-8")
        return tool("reassign-partitions", action, "--reassignment-json-file", str(path), *more)

    def verify_until_done(moves: Sequence[tuple[int, Sequence[int]]]) -> Outcome:
        """--verify until every partition is completed, when it clears the throttles. (A live
        broker's metadata can trail the controller: just after completion the tool may see no
        reassignment in the controller's list but the old replica set in the broker's metadata,
        "There is no active reassignment".)"""
        for _ in range(VERIFY_TRIES):
            found = reassign("--verify", moves)
            if "still in progress" not in found[1] and "no active reassignment" not in found[1]:
                return found
            time.sleep(1)
        return found

    def verify_settled(moves: Sequence[tuple[int, Sequence[int]]]) -> Outcome:
        """--verify until two runs in a row print the same (the brokers' metadata caught up)."""
        last = reassign("--verify", moves, "--preserve-throttles")
        for _ in range(VERIFY_TRIES):
            time.sleep(1)
            found = reassign("--verify", moves, "--preserve-throttles")
            if found == last:
                return found
            last = found
        return last

    made = tool("topics", "--create", "--topic", TOPIC, "--replica-assignment",
                ",".join(":".join(map(str, r)) for r in ASSIGNMENT))
    if made[0] != 0:
        raise KafkaUnavailable(f"the topic was not created: {made[1][:300]}")
    outcomes.append(refused_by_the_controller(side.bootstrap))
    outcomes.append(reassign("--execute", MOVE, "--throttle", str(THROTTLE)))
    outcomes.append(tool("configs", "--describe", "--entity-type", "topics", "--entity-name", TOPIC))
    outcomes.append(tool("configs", "--describe", "--entity-type", "brokers", "--entity-name", "2"))
    outcomes.append(verify_until_done(MOVE))
    outcomes.append(reassign("--execute", UNKNOWN_BROKER))
    outcomes.append(reassign("--execute", UNKNOWN_PARTITION))
    outcomes.append(reassign("--cancel", MOVE, "--preserve-throttles"))
    if disallows_replication_factor_change(dist):
        outcomes.append(reassign("--execute", GROW, "--disallow-replication-factor-change"))
    side.kill_broker()
    outcomes.append(reassign("--execute", STUCK))
    outcomes.append(reassign("--verify", STUCK, "--preserve-throttles"))
    outcomes.append(ongoing(side.bootstrap))
    outcomes.append(reassign("--cancel", STUCK, "--preserve-throttles"))
    outcomes.append(verify_settled(STUCK))
    return outcomes


class LivePair(LiveCluster):
    """A live combined node (1) and broker (2) on 127.0.0.1, formatted by the release's tool."""

    def __init__(self, dist: KafkaDist, work: Path) -> None:
        self.work = work
        controller_port, self.ports = free_port(), {1: free_port(), 2: free_port()}
        super().__init__(dist, {node: node_config(work / f"node-{node}", node, roles, controller_port, self.ports[node])
                                for node, roles in ((1, "broker,controller"), (2, "broker"))}, (1, 2))


def measure(dist: KafkaDist, work: Path) -> list[Outcome]:
    """The script against a live cluster."""
    with LivePair(dist, work / "live") as pair:
        # (the tool is given node 1 only: broker 2 is killed halfway)
        side = Side(f"127.0.0.1:{pair.ports[1]}", lambda: pair.kill(2),
                    {n: str(pair.work / f"node-{n}" / "data") for n in (1, 2)})
        return script(dist, side, work / "live-plans")


def served(dist: KafkaDist, work: Path) -> list[Outcome]:
    """The same script against `kraftsim serve` of the same shape and release."""
    from kraftsim.wire import serve

    directory = work / "served"
    with serve(combined=1, brokers=1, release=dist.release.version, directory=directory) as k:
        side = Side(k.address(1), lambda: k.crash(2), {n: str(directory / f"node-{n}") for n in (1, 2)})
        return script(dist, side, work / "served-plans")
