"""`kraftsim cluster`: create and operate a simulated KRaft cluster that lives in a directory.

kraftsim's own command (Kafka has no such tool); what it prints of Kafka's (the storage
tool's lines, registration refusals) is Kafka's text. The logic lives in kraftsim.sim.
"""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import IO

from kraftsim.cli import import_cmd
from kraftsim.cli.progress import StatusLine, add_progress_flag, show_progress
from kraftsim.cli.style import paint_prefix
from kraftsim.cli.common import bounded_int, cluster_dir, kafka_tool, new_cluster_dir, node_id, node_id_list
from kraftsim.errors import KraftsimError, UsageError
from kraftsim.scenario.language import MAX_NODES_PER_ROLE, Limits
from kraftsim.sim.ticks.cluster import KNOWN_POLICIES, SimCluster
from kraftsim.sim.tools.health import cluster_health
from kraftsim.sim.tools.narrate import narrator
from kraftsim.sim.tools.directory import (
    EVENTS,
    TICKS,
    catalog_path,
    engine_of,
    simulation_status,
    simulation_status_lines,
)
from kraftsim.sim.node.simnode import BROKER, CONTROLLER
from kraftsim.sim.node.format import EPOCH_MS, clock_text
from kraftsim.sim.simulation import Simulation
from kraftsim.sim.types import RollStopped
from kraftsim.sim.ticks.status import cluster_status, status_lines
from kraftsim.versions import load_catalog
from kraftsim.versions import parse_feature_arg
from kraftsim.storage.safepath import check_output_file
from kraftsim.storage.server_config import node_config_text


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = sub.add_parser("cluster", help="create and operate a simulated KRaft cluster in a directory")
    cmds = group.add_subparsers(dest="cluster_command", metavar="SUBCOMMAND")
    cmds.required = True

    create = cmds.add_parser("create", help="format and start a new cluster of controllers and brokers")
    create.add_argument("dir", metavar="DIR", type=new_cluster_dir, help="the cluster directory (must not exist, or be empty)")
    create.add_argument("--controllers", type=bounded_int(0, MAX_NODES_PER_ROLE, "a number of controllers"),
                        required=True, metavar="N", help=f"controllers (ids 1..N; at most {MAX_NODES_PER_ROLE})")
    create.add_argument("--brokers", type=bounded_int(0, MAX_NODES_PER_ROLE, "a number of brokers"), default=0,
                        metavar="M", help=f"brokers (ids N+1..N+M; at most {MAX_NODES_PER_ROLE})")
    create.add_argument("--release", required=True, metavar="R", help="the Kafka release every node runs, e.g. 3.7")
    create.add_argument("--release-version", "-r", metavar="V",
                        help="kafka-storage format --release-version for every node (default: the release's "
                             "latest production metadata.version)")
    create.add_argument("--feature", "-f", action="append", default=[], metavar="FEATURE=LEVEL",
                        help="kafka-storage format --feature for every node (repeatable)")
    create.add_argument("--seed", type=int, default=0, metavar="S",
                        help="seeds the cluster id, directory ids and incarnation ids (default 0)")
    create.add_argument("--policy", action="append", default=[], choices=KNOWN_POLICIES,
                        help="behaviour beyond Kafka's: kip-778 accepts unsafe lossy metadata.version downgrades "
                             "and writes KIP-778's snapshots")
    create.add_argument("--catalog", metavar="FILE", help="a catalog file adding hypothetical versions or releases")
    create.add_argument("--engine", choices=(EVENTS, TICKS), default=EVENTS,
                        help="events (default): the event-driven simulator (KRaft replication, network, faults; "
                             "the commands crash, stop, start, partition, heal, disk-fault, run); ticks: the "
                             "older simulator in which every node sees the leader's log at once")
    create.add_argument("--combined", type=bounded_int(0, MAX_NODES_PER_ROLE, "a number of combined nodes"), default=0,
                        metavar="K", help=f"K combined broker+controller nodes (ids 1..K come first; at most "
                                          f"{MAX_NODES_PER_ROLE}; not with --engine ticks)")
    create.add_argument("--config", action="append", default=[], type=node_config_arg, metavar="NAME=VALUE",
                        help="a server config every node runs with, as in server.properties: "
                             "unstable.feature.versions.enable=true (3.8 on) or unstable.metadata.versions.enable=true "
                             "(3.7) lets the nodes format, advertise and finalize their release's unstable levels; "
                             "offsets.topic.replication.factor=1 and offsets.topic.num.partitions=N decide how "
                             "__consumer_offsets is made when a client served by `kraftsim serve` first looks for "
                             "a group's coordinator (Kafka's defaults 3 and 50)")
    create.add_argument("--dynamic-quorum", action="store_true",
                        help="format the controllers as a KIP-853 dynamic quorum (--standalone for one, else "
                             "--initial-controllers; kraft.version 1; Kafka 3.9 on; event simulator only)")
    create.set_defaults(run=kafka_tool(_run_create))

    roll = cmds.add_parser("roll", help="restart nodes on another release, one at a time")
    roll.add_argument("dir", metavar="DIR", type=cluster_dir, help="the cluster directory (`cluster create`)")
    roll.add_argument("--release", required=True, metavar="R", help="the release to run")
    roll.add_argument("--nodes", type=node_id_list, metavar="IDS", help="comma-separated node ids (default: every node)")
    roll.set_defaults(run=kafka_tool(_run_roll))

    add = cmds.add_parser("add", help="a new broker or controller joins the cluster")
    add.add_argument("dir", metavar="DIR", type=cluster_dir, help="the cluster directory (`cluster create`)")
    role = add.add_mutually_exclusive_group(required=True)
    role.add_argument("--broker", action="store_const", dest="role", const=BROKER, help="add a broker")
    role.add_argument("--controller", action="store_const", dest="role", const=CONTROLLER,
                      help="add a controller (a voter of a static quorum)")
    add.add_argument("--release", required=True, metavar="R", help="the Kafka release the new node runs (e.g. 4.1.1)")
    add.add_argument("--id", type=node_id, metavar="N", help="the node id (default: the highest id + 1)")
    add.set_defaults(run=kafka_tool(_run_add))

    status = cmds.add_parser("status", help="health first (broken invariants, nodes down, behind or diverged), then "
                                            "nodes, releases, fencing, finalized features, offsets",
                             description="Exit 0 when the cluster is healthy (a leader, every node running and "
                                         "caught up with the committed log, no invariant broken), 1 when it is not "
                                         "(each reason is listed), 2 for bad input.")
    status.add_argument("dir", metavar="DIR", type=cluster_dir, help="the cluster directory (`cluster create`)")
    status.add_argument("--json", action="store_true", help="one JSON object")
    status.set_defaults(run=kafka_tool(_run_status))

    for name, text in (("crash", "the nodes' processes die: what they had not flushed is lost"),
                       ("stop", "clean shutdown of the nodes (a broker's controlled shutdown first)"),
                       ("start", "start the nodes again (optionally on another release)")):
        p = cmds.add_parser(name, help=f"{text} (event simulator)")
        p.add_argument("dir", metavar="DIR", type=cluster_dir, help="the cluster directory (`cluster create`)")
        p.add_argument("--nodes", required=True, metavar="IDS", help="comma-separated node ids, or all")
        if name == "start":
            p.add_argument("--release", metavar="R", help="the release to start on (default: the node's)")
        p.set_defaults(run=kafka_tool(_run_fault), fault=name)
    part = cmds.add_parser("partition", help="split the network into groups (event simulator)")
    part.add_argument("dir", metavar="DIR", type=cluster_dir, help="the cluster directory (`cluster create`)")
    part.add_argument("--group", action="append", required=True, metavar="IDS",
                      help="comma-separated node ids of one group (repeatable); unlisted nodes form one more group")
    part.set_defaults(run=kafka_tool(_run_fault), fault="partition")
    heal = cmds.add_parser("heal", help="make the network whole again (event simulator)")
    heal.add_argument("dir", metavar="DIR", type=cluster_dir, help="the cluster directory (`cluster create`)")
    heal.set_defaults(run=kafka_tool(_run_fault), fault="heal")
    disk = cmds.add_parser("disk-fault", help="damage stopped nodes' metadata logs (event simulator)")
    disk.add_argument("dir", metavar="DIR", type=cluster_dir, help="the cluster directory (`cluster create`)")
    disk.add_argument("--nodes", required=True, metavar="IDS", help="comma-separated ids of stopped or crashed nodes, or all")
    disk.add_argument("--kind", required=True, choices=("torn-tail", "wipe"),
                      help="torn-tail: a partial last batch, cut at start-up as Kafka's recovery does; wipe: the node "
                           "comes back empty and catches up from the leader")
    disk.set_defaults(run=kafka_tool(_run_fault), fault="disk-fault")
    run = cmds.add_parser("run", help="let simulated time pass (event simulator)")
    run.add_argument("dir", metavar="DIR", type=cluster_dir, help="the cluster directory (`cluster create`)")
    run.add_argument("--ms", type=bounded_int(0, 2**31 - 1, "a number of milliseconds"), required=True, metavar="MS",
                     help="how long to let the cluster run, in simulated milliseconds (at most --max-ms)")
    run.add_argument("--max-ms", type=bounded_int(0, 2**31 - 1, "a number of milliseconds"), default=Limits().step_ms,
                     metavar="MS", help="the largest --ms accepted, as a scenario's [limits] step_ms "
                                        f"(default {Limits().step_ms:,}); raise it to run longer on purpose")
    run.add_argument("--until-stable", action="store_true", help="fail (exit 1) unless the cluster is stable by then")
    run.add_argument("--timeline", metavar="FILE", help="append the events to FILE as JSON lines")
    run.add_argument("--json", action="store_true", help="print one JSON object at the end (time, leader, every "
                                                         "invariant) instead of the events")
    add_progress_flag(run)
    run.set_defaults(run=kafka_tool(_run_fault), fault="run")
    import_cmd.add_parser(cmds)


def node_config_arg(text: str) -> tuple[str, str]:
    """--config NAME=VALUE, checked as a simulated node's config (storage.server_config)."""
    name, eq, value = text.partition("=")
    if not eq:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    try:
        return name.strip(), node_config_text(name.strip(), value)  # (the configs together: when the cluster is made)
    except KraftsimError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _leader_text(leader: int | None) -> str:
    """The leader as every command's last line names it: `node 1`, or `none` while no node
    knows of one (right after a start, before the election)."""
    return "none" if leader is None else f"node {leader}"


def _run_create(args: argparse.Namespace) -> int:
    if args.engine == EVENTS:
        features = dict(parse_feature_arg(f) for f in args.feature)
        policy = args.policy[-1] if args.policy else "kafka"
        sim = Simulation.create(args.dir, controllers=args.controllers, brokers=args.brokers, combined=args.combined,
                                release=args.release, release_version=args.release_version, features=features,
                                seed=args.seed, policy=policy, catalog=args.catalog, on_event=narrator(print),
                                dynamic_quorum=args.dynamic_quorum, configs=dict(args.config))
        leader = sim.leader()
        print(f"Created cluster {sim.cluster_id} in {args.dir} with {args.combined} combined, "
              f"{args.controllers} controller(s) and {args.brokers} broker(s) on Kafka {args.release} "
              f"(event simulator, seed {args.seed}); leader: {_leader_text(leader)}.")
        sim.close()
        return 0
    if args.combined:
        raise UsageError("--combined is not available with --engine ticks")
    if args.dynamic_quorum:  # (the ticks engine formats a static quorum: the flag was silently dropped)
        raise UsageError("--dynamic-quorum is not available with --engine ticks")
    cluster = SimCluster.create(args.dir, controllers=args.controllers, brokers=args.brokers, release=args.release,
                                release_version=args.release_version, features=args.feature, seed=args.seed,
                                policies=args.policy, catalog=args.catalog, configs=dict(args.config))
    cluster.close()
    return 0


def _run_roll(args: argparse.Namespace) -> int:
    if engine_of(args.dir) == EVENTS:
        with Simulation.open(args.dir, on_event=narrator(print)) as sim:
            try:
                sim.roll(args.release, args.nodes or "all")
            except RollStopped as stopped:  # (the cluster as the roll left it is saved)
                return _roll_stopped(stopped)
            print(f"Rolled to Kafka {args.release}; leader: {_leader_text(sim.leader())}.")
        return 0
    with SimCluster.open(args.dir) as cluster:
        try:
            cluster.roll(args.release, args.nodes)
        except RollStopped as stopped:
            return _roll_stopped(stopped)
    return 0


def _roll_stopped(stopped: RollStopped) -> int:
    """A roll that stopped at a node: the node, Kafka's text and the nodes left, on stderr."""
    for line in stopped.lines():
        print(line, file=sys.stderr)
    return 1


def _run_add(args: argparse.Namespace) -> int:
    if engine_of(args.dir) == EVENTS:
        with Simulation.open(args.dir, on_event=narrator(print)) as sim:
            nid = sim.add_node(args.role, args.release, args.id)
            print(f"Node {nid} ({args.role}, Kafka {args.release}) joined.")
        return 0
    with SimCluster.open(args.dir) as cluster:
        problem = cluster.add(args.role, args.release, args.id)
    return 1 if problem else 0


def _run_status(args: argparse.Namespace) -> int:
    if engine_of(args.dir) == EVENTS:
        st = simulation_status(args.dir)
        health = cluster_health(args.dir, st)
        if args.json:
            print(json.dumps({**st, "health": health.to_json()}, sort_keys=True))
        else:
            names = {mv.level: mv.version for mv in load_catalog(catalog_path(args.dir)).metadata_versions}
            lines = simulation_status_lines(st, names)
            verdict = [paint_prefix(line, {"Health: OK": "green", "Health: NOT HEALTHY": "red"})
                       for line in health.lines()]
            for line in lines[:2] + verdict + lines[2:]:  # the verdict right after who leads
                print(line)
        return 0 if health.healthy else 1
    cluster = SimCluster.open(args.dir, emit=lambda line: None, passive=True)
    try:
        status = cluster_status(cluster)
        names = {mv.level: mv.version for mv in cluster.catalog.metadata_versions}
    finally:
        cluster.close()
    if args.json:
        print(json.dumps(status, sort_keys=True))
    else:
        for line in status_lines(status, names):
            print(line)
    return 0


def _node_ids(text: str | None) -> list[int] | None:
    """Comma-separated node ids as --nodes/--group give them (refused as roll's --nodes is); None when absent."""
    if text is None:
        return None
    try:
        return node_id_list(text)
    except argparse.ArgumentTypeError as e:
        raise UsageError(f"expected comma-separated node ids: {e}") from None



def _open_timeline(path: str) -> IO[str]:
    """--timeline FILE opened for appending; a file that cannot be made (a folder that refuses
    it, such as one under /proc) is refused as bad input, not reported as a bug."""
    try:
        return open(path, "a", encoding="utf-8")
    except OSError as e:
        raise UsageError(f"--timeline {path}: cannot write it: {e.strerror or e}") from None

def _run_fault(args: argparse.Namespace) -> int:
    """The event simulator's fault and time commands (Simulation's operations)."""
    if engine_of(args.dir) != EVENTS:
        raise KraftsimError(f"{args.dir}: `cluster {args.fault}` needs a cluster of the event simulator "
                            "(this one was made with `cluster create --engine ticks`)")
    if args.fault == "run" and args.ms > args.max_ms:  # refused before the directory is opened or locked
        raise UsageError(f"--ms {args.ms:,} is more than {args.max_ms:,} simulated ms, the limit of one run "
                         f"(as a scenario's [limits] step_ms); pass --max-ms {args.ms} if you mean it")
    timeline: IO[str] | None = None
    if args.fault == "run" and args.timeline:
        check_output_file(Path(args.timeline), [Path(args.dir)], flag="--timeline")  # (appended to once the run starts)
        timeline = _open_timeline(args.timeline)  # before the cluster is opened: a refusal leaves it as it was
    as_json = getattr(args, "json", False)
    status = StatusLine(args.fault == "run" and show_progress(args))
    with timeline if timeline is not None else nullcontext(), \
            Simulation.open(args.dir, on_event=(lambda event: None) if as_json else narrator(status.say(print))) as sim:
        nodes = getattr(args, "nodes", None)
        ids = "all" if nodes == "all" else _node_ids(nodes)  # (an id no node has: InvalidNodes, exit 2)
        chosen: str | list[int] = ids if ids is not None else []  # --nodes is required where it is used
        if args.fault == "crash":
            sim.crash(chosen)
        elif args.fault == "stop":
            sim.stop(chosen)
        elif args.fault == "start":
            sim.start(chosen, args.release)
        elif args.fault == "partition":
            sim.partition([_node_ids(g) or [] for g in args.group])
        elif args.fault == "heal":
            sim.heal()
        elif args.fault == "disk-fault":
            sim.disk_fault(chosen, args.kind)
        elif args.fault == "run":
            if timeline is not None:
                sim.timeline_jsonl(timeline)
            if status.enabled:
                end = clock_text(sim.now_ms + args.ms)
                sim.subscribe(lambda event: status(lambda: f"cluster run: simulated time {clock_text(event.time_ms)} "
                                                           f"of {end}"))
            try:
                if args.until_stable:
                    sim.wait(args.ms)
                else:
                    sim.run(args.ms)
            finally:
                status.clear()
        bad = [r for r in sim.invariants() if not r.ok]
        leader = sim.leader()
        if as_json:
            print(json.dumps({"time_ms": sim.now_ms - EPOCH_MS, "time": clock_text(sim.now_ms), "leader": leader,
                              "invariants": [{"name": r.name, "ok": r.ok, "detail": r.detail}
                                             for r in sim.invariants()]}, sort_keys=True))
        else:
            print(f"Virtual time {clock_text(sim.now_ms)}; leader: {_leader_text(leader)}.")
        for r in bad:
            print(f"Invariant {r.name} broken: {r.detail}", file=sys.stderr)
    return 1 if bad else 0
