"""Entry point of the `kraftsim` command.

Each command group lives in its own module exposing `register(subparsers)`; this module
only assembles them and turns every failure into one clear line on stderr.

Start-up stays fast because only the module of the command being run is imported: the
others are listed in --help from the table below (a test keeps its help texts equal to
the modules' own). Adding a command is one line in COMMANDS.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import re
import signal
import sys
import traceback
from typing import NamedTuple, NoReturn, Sequence

from kraftsim import __version__
from kraftsim.textsafe import guard
from kraftsim.errors import ClusterBusyError, KraftsimError, UsageError

# Exit statuses, the same for every command.
EXIT_OK = 0
EXIT_FAILED = 1  # a check failed, or the (Kafka) tool refused the request
EXIT_USAGE = 2  # usage or invalid input (argparse's own status)
EXIT_INTERNAL = 70  # a bug in kraftsim (EX_SOFTWARE); --debug shows the traceback
EXIT_BUSY = 75  # another command holds the cluster directory (EX_TEMPFAIL): try again later
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 128 + 15

EXIT_STATUS_HELP = (
    "exit status: 0 ok; 1 a check failed or the request was refused; 2 usage or invalid input; "
    "70 internal error (a bug in kraftsim: rerun with --debug for the traceback and report it); "
    "75 the cluster directory is in use by another command (named in the message): try again later; "
    "130 interrupted; 141 the reader of the output went away (e.g. `| head`); 143 terminated (SIGTERM). "
    "The same flag means the same thing in every command: --at OFFSET the state after every record below "
    "OFFSET; --metadata MV a metadata.version (--release-version where Kafka's tools say so); --release R a "
    "Kafka release"
)


class Command(NamedTuple):
    name: str
    module: str
    help: str


# Command groups, in the order they appear in --help: name, module, the module's own help text.
COMMANDS = (
    Command("demo", "kraftsim.cli.demo_cmd", "the whole chain: shipped what-if scenarios (upgrade, failed rollback, lossy downgrade, a crash mid-roll) with HTML reports, their logs verified, then the downgrade-matrix and snapshot-cost jobs on Spark"),
    Command("export", "kraftsim.cli.export_cmd", "write metadata records (or image entities) as Parquet, streaming"),
    Command("log", "kraftsim.cli.log_cmd", "read and check metadata log segments, snapshots and bootstrap files"),
    Command("storage", "kraftsim.cli.storage_cmd", "kafka-storage: format log directories, version mapping, feature dependencies"),
    Command("replay", "kraftsim.cli.replay_cmd", "load a metadata log, snapshot or bootstrap file, summarize and verify the image"),
    Command("snapshot", "kraftsim.cli.snapshot_cmd", "create KRaft snapshots from a log, compare snapshots and images"),
    Command("downgrade-report", "kraftsim.cli.downgrade_cmd", "would lowering metadata.version lose data, what exactly, and what Kafka's controller would answer"),
    Command("cluster", "kraftsim.cli.cluster_cmd", "create and operate a simulated KRaft cluster in a directory"),
    Command("features", "kraftsim.cli.features_cmd", "kafka-features: describe, upgrade, downgrade or disable feature flags of a simulated cluster"),
    Command("snapshot-cost", "kraftsim.cli.snapshot_cost_cmd", "the size of a cluster's snapshot and the time to write and load it, in kraftsim and (--with-kafka) in Kafka's own code, warm and cold"),
    Command("spark", "kraftsim.cli.spark_cmd", "run the data pipeline's jobs on Spark (embedded local[*] by default)"),
    Command("scenario", "kraftsim.cli.scenario_cmd", "run what-if scenarios: a cluster, steps and expected outcomes in a TOML file"),
    Command("topics", "kraftsim.cli.topics_cmd", "create, grow, delete, list and describe the topics of a simulated cluster"),
    Command("configs", "kraftsim.cli.configs_cmd", "kafka-configs --alter for broker and topic configs and client quotas of a simulated cluster (cordoned.log.dirs cordons log directories), and their --describe"),
    Command("leader-election", "kraftsim.cli.leader_election_cmd", "kafka-leader-election: elect the preferred leader, or a live replica of a leaderless partition, in a simulated cluster"),
    Command("acls", "kraftsim.cli.acls_cmd", "kafka-acls --add/--remove/--list: the ACL bindings of a simulated cluster (CIDR hosts from 4.4)"),
    Command("metadata-quorum", "kraftsim.cli.quorum_cmd", "kafka-metadata-quorum: describe the KRaft quorum of a simulated cluster, add or remove controllers (KIP-853)"),
    Command("controllers", "kraftsim.cli.controllers_cmd", "unregister a controller of a simulated cluster (Kafka 4.4)"),
    Command("serve", "kraftsim.cli.serve_cmd", "serve a simulated cluster over Kafka's protocol to real Kafka tools and clients"),
    Command("metadata-shell", "kraftsim.cli.shell_cmd", "kafka-metadata-shell: browse the image of a snapshot, log or simulated node"),
    Command("kafka", "kraftsim.cli.kafka_cmd", "fetch real Kafka releases (jars from Maven Central) to compare with"),
    Command("conformance", "kraftsim.cli.conformance_cmd", "compare kraftsim with real Kafka releases, case by case"),
)


class Parser(argparse.ArgumentParser):
    """argparse without prefix matching (`--release` must never be taken for
    `--release-version`), and with "did you mean" after an unknown command or flag."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        #: What this parser was given (a subcommand's parser: what follows its command word).
        self.given = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(self.given, namespace)

    def error(self, message: str) -> NoReturn:
        super().error(message + did_you_mean(message, self) + self._misplaced(message))

    def _misplaced(self, message: str) -> str:
        """" (--cluster goes before the subcommand: ...)" when a flag this parser requires was
        given, but after its subcommand word (where that subcommand's parser took it)."""
        missing = re.match(r"the following arguments are required: (--[\w-]+)", message)
        if missing is None or missing.group(1) not in getattr(self, "given", ()):
            return ""
        words = [c for a in self._actions if isinstance(a, argparse._SubParsersAction) for c in a.choices]
        sub = next((arg for arg in self.given if arg in words), "SUBCOMMAND")
        return f" ({missing.group(1)} goes before the subcommand: {self.prog} {missing.group(1)} ... {sub} ...)"


def _option_strings(parser: argparse.ArgumentParser) -> list[str]:
    """Every flag of `parser` and of the subcommand parsers below it (those loaded)."""
    out: list[str] = []
    for action in parser._actions:
        out += [o for o in action.option_strings if o.startswith("--")]
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                out += _option_strings(sub)
    return list(dict.fromkeys(out))


def did_you_mean(message: str, parser: argparse.ArgumentParser,
                 command: argparse.ArgumentParser | None = None) -> str:
    """" (did you mean 'cluster'?)" for an argparse error about an unknown command or flag
    that is close to a known one; "" otherwise. `command`: the subcommand the flags were
    given to, whose own flags are the only ones suggested."""
    import difflib

    choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)$", message)
    if choice:
        known = re.findall(r"'([^']*)'", choice.group(2))
        close = difflib.get_close_matches(choice.group(1), known, n=1, cutoff=0.6)
        return f" (did you mean '{close[0]}'?)" if close else ""
    if message.startswith("unrecognized arguments: "):
        flags = _option_strings(parser)
        own = {o for action in parser._actions for o in action.option_strings}
        for arg in message[len("unrecognized arguments: "):].split():
            if arg.startswith("--"):
                name = arg.split("=", 1)[0]
                if name in own:  # (a flag of kraftsim itself, given after the command word)
                    return f" ({name} goes before the command: kraftsim {name} COMMAND ...)"
                if name in flags:  # (another command's flag)
                    return f" ({name} is not a flag of this command: see its --help)"
                close = difflib.get_close_matches(name, _option_strings(command) if command else flags, n=1,
                                                  cutoff=0.6)
                if close:
                    return f" (did you mean {close[0]}?)"
    return ""


def _parser_of_step(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser | None:
    """The subcommand parser right below `parser` that `args` went through, or None."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            name = getattr(args, action.dest, None)
            if isinstance(name, str) and name in action.choices:
                inner: argparse.ArgumentParser = action.choices[name]
                return inner
    return None


def _parser_of(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The innermost (sub)command parser that `args` went through."""
    while (inner := _parser_of_step(parser, args)) is not None:
        parser = inner
    return parser


def _refuse_unrecognized(parser: argparse.ArgumentParser, args: argparse.Namespace,
                         extras: Sequence[str]) -> NoReturn:
    """argparse's "unrecognized arguments" error, said by the subcommand they were given to
    (its usage and name, not the top level's), with hints from every command's flags."""
    message = f"unrecognized arguments: {' '.join(extras)}"
    command = _parser_of(parser, args)
    argparse.ArgumentParser.error(command, message + (_before_subcommand(parser, args, extras)
                                                      or did_you_mean(message, parser, command)))


def _before_subcommand(parser: argparse.ArgumentParser, args: argparse.Namespace, extras: Sequence[str]) -> str:
    """" (--cluster goes before the subcommand: kraftsim features --cluster ... upgrade ...)"
    when an unrecognized flag is one of a command group's own, given after its subcommand
    word (as in Kafka's tools, a group's flags come before the subcommand); "" otherwise."""
    names = {arg.split("=", 1)[0] for arg in extras if arg.startswith("--")}
    group = parser
    while True:
        inner = _parser_of_step(group, args)
        if inner is None:
            return ""
        if group is not parser:
            own = next((o for a in group._actions for o in a.option_strings if o in names), None)
            if own is not None:
                return f" ({own} goes before the subcommand: {group.prog} {own} ... {inner.prog.rsplit(' ', 1)[-1]} ...)"
        group = inner


def _command_named(argv: Sequence[str]) -> str | None:
    """The command word of a command line: its first argument that is not an option."""
    for arg in argv:
        if not arg.startswith("-"):
            return arg
    return None


def _debug_requested(argv: Sequence[str]) -> bool:
    """Whether `--debug` comes before the command word (known before any parsing can fail)."""
    for arg in argv:
        if arg == "--debug":
            return True
        if not arg.startswith("-"):
            return False
    return False


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The whole parser; with `argv`, only the command it names is loaded (the others are
    stand-ins that list it in --help). Without `argv` every command is loaded."""
    parser = Parser(
        prog="kraftsim",
        description="Simulate, read and check Apache Kafka's KRaft metadata: logs, snapshots, versions and features.",
        epilog=EXIT_STATUS_HELP,
    )
    parser.add_argument("--version", action="version", version=f"kraftsim {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="on an internal error, print the Python traceback instead of one line")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    wanted = None if argv is None else _command_named(argv)
    for command in COMMANDS:
        if argv is None or command.name == wanted:
            importlib.import_module(command.module).register(sub)
        else:
            sub.add_parser(command.name, help=command.help)
    return parser


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the command is, so that what it cleans up on an interrupt (a
    run's temporary cluster, a `.part` file) is cleaned up too: `timeout` and service managers
    stop a command this way."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated()


def main(argv: Sequence[str] | None = None, *, forward: bool = True) -> int:
    """Run one command line; `forward=False` when `kraftsim serve` itself carries it out.
    Its text goes through the terminal guard (names from files shown, not obeyed); the
    streams are put back on return, so that the next command decides afresh."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = guard(sys.stdout), guard(sys.stderr, always=True)
    try:
        return _command(list(sys.argv[1:] if argv is None else argv), forward)
    finally:
        sys.stdout, sys.stderr = saved


def _for_people(args: argparse.Namespace) -> bool:
    """Whether the command's stdout is text for people, escaped wherever it goes (a pipe into
    `cat` reaches a terminal too), rather than `--json` for a program (escaped on a terminal
    only: an escape in a pipe would change the strings a JSON reader gets)."""
    return not getattr(args, "json", False)


def _command(argv: list[str], forward: bool) -> int:
    debug = _debug_requested(argv)
    try:
        parser = build_parser(argv)
        args, extras = parser.parse_known_args(argv)
        sys.stdout = guard(sys.stdout, always=_for_people(args))
        if extras:
            _refuse_unrecognized(parser, args, extras)
        served = forwarded(parser, args, argv) if forward else None
        if served is not None:
            return served
        code = int(args.run(args) or 0)
        sys.stdout.flush()
        return code
    except UsageError as e:
        print(f"kraftsim: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except ClusterBusyError as e:
        print(f"kraftsim: error: {e}", file=sys.stderr)
        return EXIT_BUSY
    except KraftsimError as e:
        print(f"kraftsim: error: {e}", file=sys.stderr)
        return EXIT_FAILED
    except BrokenPipeError:  # e.g. `kraftsim log dump ... | head`: the reader has all it wanted
        _silence_stdout()
        return 128 + 13  # as a process killed by SIGPIPE
    except Terminated:
        print("kraftsim: terminated", file=sys.stderr)
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        print("kraftsim: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except RecursionError:
        _report_internal("input nested too deeply to process", debug)
        return EXIT_INTERNAL
    except OSError as e:
        if e.errno in _INPUT_PATH_FAILURES and e.filename:
            print(f"kraftsim: error: {e.filename}: {e.strerror}", file=sys.stderr)
            return EXIT_USAGE
        if e.errno not in _WRITE_FAILURES:
            _report_internal(f"{type(e).__name__}: {e}", debug)
            return EXIT_INTERNAL
        print(f"kraftsim: error: {_write_failure(e)}", file=sys.stderr)
        return EXIT_FAILED  # (as the writers that say it themselves: export, cluster create)
    except Exception as e:  # last resort: a bug, said in one line
        _report_internal(f"{type(e).__name__}: {e}", debug)
        return EXIT_INTERNAL


def run() -> int:
    """The `kraftsim` command and `python -m kraftsim`: `main` in a process that exits right
    after, which leaves what the command still holds to the operating system
    (kraftsim.gcpause.leave_to_exit). SIGTERM ends it as an interrupt does (`Terminated`)."""
    signal.signal(signal.SIGTERM, _terminate)
    code = main()
    from kraftsim.gcpause import leave_to_exit  # (here: start-up imports only what the command needs)

    leave_to_exit()
    return code


#: The cluster subcommands a served directory's server carries out (contract 7).
SERVED_CLUSTER_COMMANDS = frozenset({"status", "crash", "stop", "start", "roll", "partition", "heal", "disk-fault",
                                     "run", "add"})


def served_directory(args: argparse.Namespace) -> str | None:
    """The directory a command acts on when it is one `kraftsim serve` carries out."""
    if args.command == "cluster" and getattr(args, "cluster_command", None) in SERVED_CLUSTER_COMMANDS:
        return str(args.dir)
    if args.command in ("features", "topics", "leader-election", "configs", "metadata-quorum") and \
            getattr(args, "cluster", None):
        return str(args.cluster)
    return None


def forwarded(parser: argparse.ArgumentParser, args: argparse.Namespace, argv: Sequence[str]) -> int | None:
    """While `kraftsim serve` serves the command's directory, the server carries the command
    out (checked before the command opens the directory): its output and exit code."""
    directory = served_directory(args)
    if directory is None or not os.path.isfile(os.path.join(directory, ".kraftsim-serve")):
        return None
    from kraftsim.wire.control import absolute_argv, forward

    reply = forward(directory, absolute_argv(parser, argv, args))
    if reply is None:
        return None
    sys.stdout.write(reply.stdout)
    sys.stdout.flush()
    sys.stderr.write(reply.stderr)
    return reply.code


#: Errors that only a path the user named can cause (a name longer than the file system takes),
#: wherever a command first looks at it: invalid input, not a bug in kraftsim.
_INPUT_PATH_FAILURES = frozenset({errno.ENAMETOOLONG})

#: Errors that say the machine could not take what was written, not that kraftsim is wrong.
_WRITE_FAILURES = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO})


def _write_failure(e: OSError) -> str:
    """What could not be written, and why. When it was the standard output (its buffer cannot
    be flushed either), stdout is pointed at /dev/null so that the exit cannot fail again."""
    try:
        sys.stdout.flush()
    except OSError:
        _silence_stdout()
        return f"cannot write the standard output: {e.strerror}"
    return f"cannot write {e.filename if e.filename else 'the output'}: {e.strerror}"


def _report_internal(what: str, debug: bool) -> None:
    if debug:
        traceback.print_exc()
    print(f"kraftsim: internal error: {what}" + ("" if debug else " (rerun with --debug for the traceback)"),
          file=sys.stderr)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(run())
