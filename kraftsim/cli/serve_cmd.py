"""`kraftsim serve TARGET`: a simulated cluster served over Kafka's protocol (contract 7).

Real Kafka tools and clients connect to its nodes' ports. It prints one ready line when every
listener accepts connections, writes `--ready-file`, lets simulated time follow the wall clock
(times `--speed`), and on SIGTERM or SIGINT (or after `--for MS` simulated) stops listening,
saves the cluster directory, writes `--record`, and exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kraftsim.cli.common import bounded_int
from kraftsim.errors import ClusterBusyError, KraftsimError, UsageError
from kraftsim.storage.safepath import check_output_file, check_writable


def _speed(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not 0 < value <= 10_000:
        raise argparse.ArgumentTypeError(f"expected a number above 0 and at most 10000, got {text}")
    return value


def _host(text: str) -> str:
    """One address to bind to and advertise: clients connect to what the ready line names, so
    an empty one (every interface, advertised as nothing) is refused."""
    host = text.strip().removeprefix("[").removesuffix("]")
    if not host:
        raise argparse.ArgumentTypeError("expected an address clients can connect to, such as 127.0.0.1")
    return host


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("serve", help="serve a simulated cluster over Kafka's protocol to real Kafka tools and clients")
    p.add_argument("target", metavar="TARGET", help="a cluster directory (`kraftsim cluster create`) or a scenario file "
                                                     "(its cluster is created and its steps run first)")
    p.add_argument("--host", type=_host, default="127.0.0.1",
                   help="the address every listener binds to and advertises (default 127.0.0.1)")
    p.add_argument("--ready-file", metavar="PATH", help="write the addresses as JSON here (atomically) once ready")
    p.add_argument("--speed", type=_speed, default=1.0, metavar="X",
                   help="simulated ms per wall-clock ms (default 1)")
    p.add_argument("--record", metavar="FILE", help="write the session as a scenario file when it ends")
    p.add_argument("--for", dest="for_ms", type=bounded_int(0, 2**62, "a number of milliseconds"), metavar="MS",
                   help="stop after this much simulated time (default: until SIGTERM or SIGINT)")
    p.add_argument("--keep", metavar="DIR", help="with a scenario file: build the cluster in DIR (new or empty) and "
                                                 "leave it there (default: a temporary directory)")
    p.add_argument("--no-auto-create-topics", dest="auto_create_topics", action="store_false",
                   help="brokers with auto.create.topics.enable=false (default: a Metadata request for an unknown "
                        "topic creates it, as Kafka's default does)")
    p.set_defaults(run=_run)


def _served_entries(target: Path) -> list[Path]:
    """What of TARGET a file the session writes must not replace: the scenario file served, or
    a cluster directory's own entries (its state file, lock and serve marker, and every folder
    in it). A file of the user's beside them, such as a ready file kept in the cluster's
    folder, is theirs to name."""
    from kraftsim.sim.saved import STATE_FILE
    from kraftsim.storage.dirlock import LOCK_FILE
    from kraftsim.wire.control import MARKER

    if not target.is_dir():
        return [target]
    own = {STATE_FILE, LOCK_FILE, MARKER}
    return [entry for entry in sorted(target.iterdir()) if entry.name in own or entry.is_dir()]


def _run(args: argparse.Namespace) -> int:
    from kraftsim.wire.ready import ready_line, write_ready_file
    from kraftsim.wire.session import Session
    from kraftsim.wire.target import open_target

    for flag, path in (("--record", args.record), ("--ready-file", args.ready_file)):
        if path is not None:
            check_output_file(Path(path), _served_entries(Path(args.target)), flag=flag)
    if args.keep is not None:  # (tried here, or the scenario's cluster would be blamed)
        check_writable(args.keep, flag="--keep", directory=True)
    try:
        opened = open_target(args.target, args.keep)
    except ClusterBusyError:  # another command holds it: try again later (exit 75), as every command says
        raise
    except KraftsimError as e:  # a target that cannot be served as given is bad input (exit 2)
        raise UsageError(str(e)) from None
    session = Session(opened, host=args.host, speed=args.speed, record=args.record, commands=CliCommands(),
                      auto_create_topics=args.auto_create_topics)

    def ready() -> None:
        info = session.served.ready_info()
        if args.ready_file:
            write_ready_file(args.ready_file, info)
        print(ready_line(info), flush=True)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, session.server.stopping.set)
        await session.main(args.for_ms, ready)

    try:
        asyncio.run(main())
    except OSError as e:
        session.finish()
        raise UsageError(f"cannot listen on {args.host}: {e.strerror or e}") from None
    session.finish()
    from kraftsim.sim.node.format import clock_text

    print(f"kraftsim serve: stopped at virtual time {clock_text(session.served.sim.now_ms)}; "
          f"{session.server.answered} request(s) answered", file=sys.stderr)
    return 0


class CliCommands:
    """The cluster, features, topics, leader-election, configs and metadata-quorum commands a served directory receives,
    run with the CLI's own code; the scenario step each one that changes the cluster makes, for --record."""

    def run(self, argv: Sequence[str]) -> int:
        from kraftsim.cli.main import main

        return main(list(argv), forward=False)

    def step(self, argv: Sequence[str], code: int, stdout: str = "") -> tuple[str, dict[str, object]] | None:
        from kraftsim.cli.main import build_parser

        args = build_parser(argv).parse_args(list(argv))
        if args.command == "cluster":  # exit 1: done, but an invariant is broken (or not stable yet)
            if args.cluster_command == "add":  # (the id it printed: the next free one unless given)
                joined = re.search(r"^Node (\d+) \(", stdout, re.MULTILINE)
                return ("add-node", {"role": args.role, "release": args.release, "id": int(joined.group(1))}) \
                    if code == 0 and joined else None
            return _fault_step(args) if code in (0, 1) else None
        if args.command == "leader-election":  # exit 1: some partitions may still have been elected
            return _election_step(args, stdout)
        if args.command == "topics" and args.topics_command == "create":  # exit 1: some may have been created
            from kraftsim.cli.topics_cmd import create_step

            return create_step(args, stdout)
        if code != 0:
            return None
        if args.command == "features":
            return _features_step(args)
        if args.command == "metadata-quorum":
            return _quorum_step(args, stdout)
        if args.command == "configs" and args.alter:
            from kraftsim.cli.configs_cmd import alter_step

            alteration = alter_step(args)
            return alteration.op, {key: value if value or key == "broker" else None
                                   for key, value in alteration.step().items()}
        if args.command == "topics" and args.topics_command in ("alter", "delete"):
            if args.topics_command == "delete":
                return "delete-topics", {"names": list(args.names)}
            from kraftsim.cli.topics_cmd import replica_assignment

            given = args.replica_assignment
            return "create-partitions", {"names": list(args.names), "count": args.partitions,
                                         "assignments": None if given is None else replica_assignment(given)}
        return None


def _quorum_step(args: argparse.Namespace, stdout: str) -> tuple[str, dict[str, object]] | None:
    """A voter change the command made (the id it printed: add-controller may take it from
    --command-config); none for describe or a dry run."""
    if getattr(args, "dry_run", False):
        return None
    if args.quorum_command == "add-controller":
        added = re.search(r"^Added controller (\d+) ", stdout, re.MULTILINE)
        return ("add-controller", {"id": int(added.group(1))}) if added else None
    if args.quorum_command == "remove-controller":
        return "remove-controller", {"id": args.controller_id}
    return None


def _ids(text: str) -> list[int] | str:
    return "all" if text == "all" else sorted(int(i) for i in text.split(","))


def _features_step(args: argparse.Namespace) -> tuple[str, dict[str, object]] | None:
    op = args.features_command
    if op not in ("upgrade", "downgrade", "disable") or args.dry_run:
        return None
    if op == "disable":
        return "features-disable", {"features": list(args.feature or [])}
    levels = {name: int(level) for name, level in (f.split("=", 1) for f in args.feature or [])}
    return f"features-{op}", {"metadata": args.metadata, "release_version": args.release_version,
                              "features": levels or None, "unsafe": getattr(args, "unsafe", False) or None}


def _election_step(args: argparse.Namespace, stdout: str) -> tuple[str, dict[str, object]] | None:
    """The partitions the command printed as elected, named (a replay elects the same ones)."""
    from kraftsim.sim import elected_partitions

    elected = elected_partitions(stdout)
    return ("elect-leaders", {"election_type": args.election_type, "partitions": elected}) if elected else None


def _fault_step(args: argparse.Namespace) -> tuple[str, dict[str, object]] | None:
    cmd = args.cluster_command
    if cmd in ("crash", "stop"):
        return cmd, {"nodes": _ids(args.nodes)}
    if cmd == "start":
        return cmd, {"nodes": _ids(args.nodes), "release": args.release}
    if cmd == "partition":
        return cmd, {"groups": [_ids(g) for g in args.group]}
    if cmd == "heal":
        return cmd, {}
    if cmd == "run":
        return cmd, {"ms": args.ms}
    if cmd == "roll":
        return cmd, {"release": args.release, "nodes": sorted(args.nodes) if args.nodes else "all"}
    if cmd == "disk-fault":
        return cmd, {"nodes": _ids(args.nodes), "kind": args.kind}
    return None


def serve(*args: Any, **kwargs: Any) -> Any:
    """`kraftsim.serve(...)` (kraftsim.wire.api.serve) with the cluster, features, topics, leader-election,
    configs and metadata-quorum commands on its directory handed over to it, as `kraftsim serve` takes them."""
    from kraftsim.wire.api import serve as serve_cluster

    return serve_cluster(*args, commands=CliCommands(), **kwargs)
