"""`kraftsim metadata-shell`: kafka-metadata-shell over a snapshot, a segment, a log directory
or a simulated node.

As Kafka's tool: `--snapshot/-s PATH` and a command as arguments (`ls`, `cat`, `find`,
`tree`) print one answer and exit 0, whatever the answer says; with no command the shell
is interactive (readline history and completion on a terminal; on other input, prompts and
answers as Kafka's shell gives them on a dumb terminal). kraftsim's additions:
`--cluster DIR --node ID` (a simulated node's metadata), any log directory as PATH, and
`--release R` (whose shell to mirror; default: the release the registered nodes run).

Deliberate differences (policy "kraftsim exit statuses"): a missing PATH prints Kafka's
first line ("Unexpected error: java.nio.file.NoSuchFileException: PATH") without the Java
stack trace and exits 2, not 1; a file kraftsim cannot read exits 2 with one line; the
answer is always on the whole file (Kafka's shell can answer before its loader has caught
up on a large file, from an empty or earlier image).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kraftsim.errors import KraftsimError, UsageError
from kraftsim.versions import load_catalog

EXIT_BAD_INPUT = 2
EXIT_TOOL_FAILED = 1


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "metadata-shell", help="kafka-metadata-shell: browse the image of a snapshot, log or simulated node",
        description="Kafka's metadata shell over kraftsim's image of a snapshot (--snapshot) or of a simulated "
                    "node (--cluster, --node): /image/... (features, cluster, topics, configs, clientQuotas, "
                    "producerIds, acls, scram, delegationToken, provenance) and /local/... as Kafka's shell shows "
                    "them. With a command (ls, cat, find, tree) it prints the answer and exits 0; without one it is "
                    "interactive (cd, pwd, history, help, man, exit too).",
        epilog="exit status: 0 whatever a command answers (as Kafka's shell); 1 when the command fails as Kafka's "
               "shell fails (its 'Unexpected error: ...' line on stderr); 2 for a missing or unreadable file or a "
               "bad flag.")
    p.add_argument("--snapshot", "-s", metavar="SNAPSHOT",
                   help="the snapshot file to read (also: a .log segment, a bootstrap.checkpoint, or a "
                        "__cluster_metadata-0 directory or the log directory holding one)")
    p.add_argument("--cluster", metavar="DIR", help="a simulated cluster directory (`cluster create`); with --node")
    p.add_argument("--node", type=int, metavar="ID", help="the node of --cluster whose metadata to browse")
    p.add_argument("--release", metavar="R",
                   help="the Kafka release whose shell to mirror, e.g. 3.9.1 or 4.0 (its tree, its texts, "
                        "/local/version); default: the release the registered nodes run")
    p.add_argument("--catalog", metavar="FILE",
                   help="a catalog file adding hypothetical metadata versions, features, releases or record types")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="command", help="the command to run")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from kraftsim.shell import ShellFault, interactive_loop, open_shell, run_noninteractive, stdin_is_terminal

    path = _target(args)
    if not path.exists():
        print(f"Unexpected error: java.nio.file.NoSuchFileException: {path}", file=sys.stderr)
        return EXIT_BAD_INPUT
    catalog = load_catalog(args.catalog)
    try:
        loaded = open_shell(path, catalog, args.release)
    except KraftsimError as e:
        raise UsageError(str(e)) from None
    for fault in loaded.faults:
        print(f"kraftsim metadata-shell: {fault}", file=sys.stderr)
    try:
        if args.command:
            run_noninteractive(loaded, list(args.command), sys.stdout)
        else:
            interactive_loop(loaded, sys.stdin, sys.stdout, tty=stdin_is_terminal())
    except ShellFault as e:
        sys.stdout.flush()
        print(f"Unexpected error: {e}", file=sys.stderr)
        return EXIT_TOOL_FAILED
    return 0


def _target(args: argparse.Namespace) -> Path:
    if args.cluster is not None or args.node is not None:
        if args.snapshot is not None:
            raise UsageError("give --snapshot or --cluster DIR --node ID, not both")
        if args.cluster is None or args.node is None:
            raise UsageError("--cluster and --node go together: the node of the cluster whose metadata to browse")
        from kraftsim.cli.common import cluster_dir
        from kraftsim.sim.node import simnode as node

        cluster_dir(args.cluster)  # (a folder that is no cluster is said to be one, not to lack the node)
        directory = node.node_directory(Path(args.cluster), args.node)
        if not directory.is_dir():
            raise UsageError(f"{args.cluster}: no node {args.node} (no directory {directory})")
        return directory
    if args.snapshot is None:
        raise UsageError("argument --snapshot/-s is required (or --cluster DIR --node ID)")
    return Path(args.snapshot)
