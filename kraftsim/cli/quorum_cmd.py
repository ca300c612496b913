"""`kraftsim metadata-quorum`: Kafka's kafka-metadata-quorum against a simulated cluster.

The subcommands, flags, lines and error texts are kafka-metadata-quorum's (contract 3);
`--cluster DIR` stands for `--bootstrap-server`/`--bootstrap-controller`. The tool acts as
the release of the cluster's active controller unless `--release` names another: before
3.9 it has no add-controller/remove-controller, no DirectoryId column, and prints the
voters as a list of ids. A refusal from the quorum prints the admin client's exception
line (`org.apache.kafka.common.errors.X: text`) and exits 1, as Kafka's tool does (without
its stack trace).

`describe` looks without changing the cluster: it runs a copy of the directory until its
quorum settles and reports what DescribeQuorum answers there (times are virtual). The
changes act on the cluster itself (`add-controller`, `remove-controller`); for
add-controller, `--command-config` is the new controller's configuration as in Kafka
(node.id, process.roles with controller) or `--controller-id N` names a controller node
of the cluster (kraftsim's shorthand; `cluster add-node --role controller` starts one).
"""

from __future__ import annotations

import argparse
import base64
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

from kraftsim.cli.common import INT32_MAX, INT32_MIN, bounded_int, cluster_dir, kafka_tool, node_id
from kraftsim.controller import exception_text
from kraftsim.errors import KraftsimError, UsageError
from kraftsim.versions import ToolFailure

if TYPE_CHECKING:
    from kraftsim.sim import QuorumInfo, ReplicaInfo, Simulation

HEADERS = ("NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp", "LastCaughtUpTimestamp", "Status")


def _tool(run: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """kafka_tool (Kafka's refusals: their text alone, exit 1), but input kraftsim cannot use
    (UsageError: no cluster there, an unknown release) exits 2 as everywhere else."""
    wrapped = kafka_tool(run)

    def checked(args: argparse.Namespace) -> int:
        _check_cluster(args.cluster, args.release)  # before kafka_tool, which would make its UsageError exit 1
        return wrapped(args)

    return checked


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = sub.add_parser("metadata-quorum", help="kafka-metadata-quorum: describe the KRaft quorum of a simulated "
                                                   "cluster, add or remove controllers (KIP-853)")
    group.add_argument("--cluster", required=True, metavar="DIR", help="the simulated cluster (`cluster create`)")
    group.add_argument("--release", metavar="R", help="act as this Kafka release's tool (default: the release of "
                                                      "the cluster's active controller)")
    group.add_argument("--command-config", metavar="FILE",
                       help="Property file containing configs to be passed to Admin Client. For add-controller, the "
                            "file is used to specify the controller properties as well.")
    cmds = group.add_subparsers(dest="quorum_command", metavar="SUBCOMMAND")
    cmds.required = True
    describe = cmds.add_parser("describe", help="Describe the metadata quorum info")
    describe.add_argument("--status", action="store_true", help="A short summary of the quorum status and the other "
                          "provides detailed information about the status of replication.")
    describe.add_argument("--replication", action="store_true",
                          help="Detailed information about the status of replication")
    describe.add_argument("--human-readable", action="store_true", help="Human-readable output")
    describe.set_defaults(run=_tool(_describe))
    add = cmds.add_parser("add-controller", help="Add a controller to the KRaft controller cluster")
    add.add_argument("--dry-run", action="store_true", help="True if we should print what would be done, but not do it.")
    add.add_argument("--controller-id", type=node_id, metavar="N",
                     help="kraftsim: the controller node to add (instead of its --command-config)")
    add.set_defaults(run=_tool(_add))
    rm = cmds.add_parser("remove-controller", help="Remove a controller from the KRaft controller cluster")
    rm.add_argument("--controller-id", "-i", type=bounded_int(INT32_MIN, INT32_MAX, "a controller id"), required=True,
                    metavar="ID",
                    help="The id of the controller to remove.")
    rm.add_argument("--controller-directory-id", "-d", required=True, metavar="DIR_ID",
                    help="The directory ID of the controller to remove.")
    rm.add_argument("--dry-run", action="store_true", help="True if we should print what would be done, but not do it.")
    rm.set_defaults(run=_tool(_remove))


# ---------------------------------------------------------------------------- the tool's release


def _kip_853(sim: Simulation, release: str | None) -> bool:
    """Whether the tool (its release) knows KIP-853: add/remove-controller, directory ids."""
    name = release or _leader_release(sim)
    catalog = sim.catalog.at_release(name) if name else sim.catalog
    return bool(catalog.supported_features().get("kraft.version", (0, 0))[1] >= 1)


def _leader_release(sim: Simulation) -> str | None:
    leader = sim.leader()
    nodes = {n.id: n for n in sim.nodes()}
    if leader is not None:
        release: str | None = nodes[leader].release
        return release
    running = [n for n in sim.nodes() if n.state == "running" and "controller" in n.roles]
    return running[0].release if running else None


def _refused(error: str, text: str) -> ToolFailure:
    return ToolFailure(exception_text(error, text))


# ---------------------------------------------------------------------------- describe


def _describe(args: argparse.Namespace) -> int:
    from kraftsim.sim import SimError, Simulation

    if args.status and args.replication:
        raise ToolFailure("Only one of --status or --replication should be specified with describe sub-command")
    if args.status and args.human_readable:
        raise ToolFailure("The option --human-readable is only supported along with --replication")
    if not args.status and not args.replication:
        raise ToolFailure("One of --status or --replication must be specified with describe sub-command")
    with tempfile.TemporaryDirectory(prefix="kraftsim-quorum-") as tmp:
        copy = Path(tmp) / "cluster"
        shutil.copytree(args.cluster, copy, symlinks=True)
        sim = Simulation.open(copy, durable=False)
        try:
            sim.until_stable(sim.config.request_timeout_ms * 5)
            kip853 = _kip_853(sim, args.release)
            try:
                info = sim.quorum_info()
            except SimError:  # no leader: the admin client's call times out
                raise _refused("REQUEST_TIMED_OUT", "Timed out waiting for a node assignment. "
                                                    "Call: describeMetadataQuorum") from None
            now = sim.now_ms
        finally:
            sim.close_files()
    lines = status_lines(info, kip853) if args.status else replication_lines(info, kip853, args.human_readable, now)
    for line in lines:
        print(line)
    return 0


def status_lines(info: QuorumInfo, kip853: bool) -> list[str]:
    """describe --status, as MetadataQuorumCommand.handleDescribeStatus prints it."""
    leader = info.leader
    lagging = min(info.voters, key=lambda v: v.log_end_offset)  # (the first of the least advanced)
    if lagging is leader:
        lag_ms = 0
    elif leader.last_caught_up_ms >= 0 and lagging.last_caught_up_ms >= 0:
        lag_ms = leader.last_caught_up_ms - lagging.last_caught_up_ms
    else:
        lag_ms = -1
    if kip853:
        voters, observers = _nodes_text(info.voters), _nodes_text(info.observers)
    else:
        voters = "[" + ",".join(str(v.node_id) for v in info.voters) + "]"
        observers = "[" + ",".join(str(o.node_id) for o in info.observers) + "]"
    return [f"ClusterId:              {info.cluster_id}",
            f"LeaderId:               {info.leader_id}",
            f"LeaderEpoch:            {info.leader_epoch}",
            f"HighWatermark:          {info.high_watermark}",
            f"MaxFollowerLag:         {leader.log_end_offset - lagging.log_end_offset}",
            f"MaxFollowerLagTimeMs:   {lag_ms}",
            f"CurrentVoters:          {voters}",
            f"CurrentObservers:       {observers}"]


def _nodes_text(replicas: Iterable[ReplicaInfo]) -> str:
    from kraftsim.protocol.primitives import Uuid

    parts = []
    for r in replicas:
        did = "null" if r.directory_id == Uuid.ZERO else f'"{r.directory_id}"'
        text = f'{{"id": {r.node_id}, "directoryId": {did}'
        if r.endpoints:
            text += ', "endpoints": [' + ", ".join(f'"{e}"' for e in r.endpoints) + "]"
        parts.append(text + "}")
    return "[" + ", ".join(parts) + "]"


def replication_lines(info: QuorumInfo, kip853: bool, human: bool, now_ms: int) -> list[str]:
    """describe --replication: ToolsUtils.prettyPrintTable (each cell padded, then a tab)."""
    leader = info.leader

    def when(ms: int) -> str:
        return "-1" if ms < 0 else f"{now_ms - ms} ms ago" if human else str(ms)

    rows = []
    for status, group in (("Leader", [leader]), ("Follower", [v for v in info.voters if v is not leader]),
                          ("Observer", list(info.observers))):
        for r in group:
            row = [str(r.node_id), str(r.directory_id), str(r.log_end_offset), str(r.lag(leader)),
                   when(r.last_fetch_ms), when(r.last_caught_up_ms), status]
            rows.append(row if kip853 else row[:1] + row[2:])
    headers = list(HEADERS if kip853 else HEADERS[:1] + HEADERS[2:])
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    return ["".join(c.ljust(w) + "\t" for c, w in zip(row, widths)) for row in [headers] + rows]


# ---------------------------------------------------------------------------- add and remove


def _add(args: argparse.Namespace) -> int:
    from kraftsim.sim import Simulation, VoterChangeRefused

    nid = args.controller_id
    if nid is None:
        if args.command_config is None:
            raise ToolFailure("You must supply the configuration file of the controller you are adding when using "
                              "add-controller.")
        nid = _controller_id(args.command_config)
    with Simulation.open(args.cluster) as sim:
        _need_kip_853(sim, args.release, "add-controller")
        if nid not in {n.id for n in sim.nodes()}:
            raise ToolFailure(f"Unable to read meta.properties from {Path(args.cluster) / f'node-{nid}'}")
        did = sim.directory_id(nid)
        if not args.dry_run:
            try:
                sim.add_controller(nid)
            except VoterChangeRefused as e:
                raise _refused(e.error, str(e)) from None
    verb = "DRY RUN of adding" if args.dry_run else "Added"
    print(f"{verb} controller {nid} with directory id {did} and endpoints: CONTROLLER://node-{nid}:9093")
    return 0


def _remove(args: argparse.Namespace) -> int:
    from kraftsim.protocol.primitives import Uuid
    from kraftsim.sim import Simulation, VoterChangeRefused

    if args.controller_id < 0:
        raise ToolFailure(f"Invalid negative --controller-id: {args.controller_id}")
    try:
        did = Uuid(java_uuid_bytes(args.controller_directory_id))
    except ValueError as e:
        raise ToolFailure(f"Failed to parse --controller-directory-id: {e}") from None
    with Simulation.open(args.cluster) as sim:
        _need_kip_853(sim, args.release, "remove-controller")
        if not args.dry_run:
            try:
                sim.remove_controller(args.controller_id, str(did))
            except VoterChangeRefused as e:
                raise _refused(e.error, str(e)) from None
    print(f"{'DRY RUN of removing ' if args.dry_run else 'Removed '} KRaft controller {args.controller_id} "
          f"with directory id {did}")
    return 0


def java_uuid_bytes(text: str) -> bytes:
    """The 16 bytes of Kafka's Uuid.fromString(text) (Java's URL-safe Base64 decoder), or
    ValueError with the message Java's exception carries."""
    if len(text) > 24:
        raise ValueError(f"Input string with prefix `{text[:24]}` is too long to be decoded as a base64 UUID")
    body = text.rstrip("=")
    for ch in body:
        if not (ch.isascii() and (ch.isalnum() or ch in "-_")):
            raise ValueError(f"Illegal base64 character {ord(ch):x}")
    if len(body) % 4 == 1:
        raise ValueError("Last unit does not have enough valid bits")
    raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    if len(raw) != 16:
        raise ValueError(f"Input string `{text}` decoded as {len(raw)} bytes, which is not equal to the expected "
                         "16 bytes of a base64-encoded UUID")
    return raw


def _need_kip_853(sim: Simulation, release: str | None, command: str) -> None:
    if not _kip_853(sim, release):  # the tool before 3.9 (KIP-853) has describe only: argparse4j refuses, exit 1
        raise ToolFailure(f"kafka-metadata-quorum: error: argument command: invalid choice: '{command}' "
                          "(choose from 'describe')")


def _controller_id(path: str) -> int:
    """MetadataQuorumCommand.getControllerId on the configuration file, with its texts."""
    from kraftsim.regular_file import UnreadableFile, require_regular_file
    from kraftsim.storage.java_properties import load_properties

    p = Path(path)
    if not p.exists():
        raise ToolFailure(f"Properties file {path} does not exists!")
    try:
        if not p.is_dir():  # (a folder fails below, in Java's words)
            require_regular_file(p)  # a device such as /dev/zero never ends, a FIFO waits for a writer
        raw = p.read_bytes()
    except UnreadableFile as e:
        raise ToolFailure(f"{path} ({e.reason})") from None
    except OSError as e:  # (as Java's FileInputStream says it: "NAME (Is a directory)")
        raise ToolFailure(f"{path} ({e.strerror or e})") from None
    props = load_properties(raw.decode("latin-1"))
    if "node.id" not in props:
        raise ToolFailure("node.id not found in configuration file. Is this a valid controller configuration file?")
    try:
        nid = int(props["node.id"])
    except ValueError:
        raise ToolFailure(f'For input string: "{props["node.id"]}"') from None
    if nid < 0:
        raise ToolFailure("node.id was negative in configuration file. Is this a valid controller configuration file?")
    if "controller" not in props.get("process.roles", ""):
        raise ToolFailure("process.roles did not contain 'controller' in configuration file. Is this a valid "
                          "controller configuration file?")
    return nid


def _check_cluster(path: str, release: str | None) -> None:
    """Input kraftsim cannot work with (exit 2): no event-simulator cluster there, a release
    the cluster's catalog does not know."""
    from kraftsim.sim.tools.directory import EVENTS, catalog_path, engine_of
    from kraftsim.versions import load_catalog

    cluster_dir(path)
    if engine_of(path) != EVENTS:
        raise UsageError(f"{path}: a tick-simulator cluster (--engine ticks) has no raft quorum to describe; "
                         "use the event simulator")
    if release is not None:
        try:
            load_catalog(catalog_path(path)).find_release(release)
        except KraftsimError as e:
            raise UsageError(str(e)) from None


__all__ = ["register", "replication_lines", "status_lines"]
