"""`kraftsim cluster`: create and operate a simulated KRaft cluster that lives in a directory.

kraftsim's own command (Kafka has no such tool); what it prints of Kafka's (the storage
tool's lines, registration refusals) is Kafka's text. The logic lives in kraftsim.sim.
"""

from __future__ import annotations

import argparse
import json

from kraftsim.cli.common import bounded_int, kafka_tool, node_id, node_id_list
from kraftsim.sim.cluster import KNOWN_POLICIES, SimCluster
from kraftsim.sim.node import BROKER, CONTROLLER
from kraftsim.sim.status import cluster_status, status_lines


def register(sub: argparse._SubParsersAction) -> None:
    group = sub.add_parser("cluster", help="create and operate a simulated KRaft cluster in a directory")
    cmds = group.add_subparsers(dest="cluster_command", metavar="SUBCOMMAND")
    cmds.required = True

    create = cmds.add_parser("create", help="format and start a new cluster of controllers and brokers")
    create.add_argument("dir", metavar="DIR", help="the cluster directory (must not exist, or be empty)")
    create.add_argument("--controllers", type=bounded_int(1, 100, "a number of controllers"), required=True,
                        metavar="N", help="controllers (ids 1..N; at most 100)")
    create.add_argument("--brokers", type=bounded_int(0, 100, "a number of brokers"), default=0, metavar="M",
                        help="brokers (ids N+1..N+M; at most 100)")
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
    create.set_defaults(run=kafka_tool(_run_create))

    roll = cmds.add_parser("roll", help="restart nodes on another release, one at a time")
    roll.add_argument("dir", metavar="DIR")
    roll.add_argument("--release", required=True, metavar="R", help="the release to run")
    roll.add_argument("--nodes", type=node_id_list, metavar="IDS", help="comma-separated node ids (default: every node)")
    roll.set_defaults(run=kafka_tool(_run_roll))

    add = cmds.add_parser("add", help="a new broker or controller joins the cluster")
    add.add_argument("dir", metavar="DIR")
    role = add.add_mutually_exclusive_group(required=True)
    role.add_argument("--broker", action="store_const", dest="role", const=BROKER)
    role.add_argument("--controller", action="store_const", dest="role", const=CONTROLLER)
    add.add_argument("--release", required=True, metavar="R")
    add.add_argument("--id", type=node_id, metavar="N", help="the node id (default: the highest id + 1)")
    add.set_defaults(run=kafka_tool(_run_add))

    status = cmds.add_parser("status", help="nodes, releases, supported ranges, fencing, finalized features, offsets")
    status.add_argument("dir", metavar="DIR")
    status.add_argument("--json", action="store_true", help="one JSON object")
    status.set_defaults(run=kafka_tool(_run_status))


def _run_create(args: argparse.Namespace) -> int:
    cluster = SimCluster.create(args.dir, controllers=args.controllers, brokers=args.brokers, release=args.release,
                                release_version=args.release_version, features=args.feature, seed=args.seed,
                                policies=args.policy, catalog=args.catalog)
    cluster.close()
    return 0


def _run_roll(args: argparse.Namespace) -> int:
    with SimCluster.open(args.dir) as cluster:
        problems = cluster.roll(args.release, args.nodes)
    return 1 if problems else 0


def _run_add(args: argparse.Namespace) -> int:
    with SimCluster.open(args.dir) as cluster:
        problem = cluster.add(args.role, args.release, args.id)
    return 1 if problem else 0


def _run_status(args: argparse.Namespace) -> int:
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
