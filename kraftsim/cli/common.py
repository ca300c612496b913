"""Options and plumbing shared by several commands.

The argparse types here refuse what Kafka would refuse and what no one can mean (an empty
node list, a node id beyond int32, a negative count), so that a bad flag is a usage error
(exit 2) naming the flag and what was expected, never a guess.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence, TypeVar

from kraftsim.errors import ClusterBusyError, KraftsimError, UsageError
from kraftsim.versions import Catalog, load_catalog

if TYPE_CHECKING:
    from kraftsim.sim import Simulation

T = TypeVar("T")


def add_catalog_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--catalog", metavar="FILE",
                        help="a catalog file adding hypothetical metadata versions, features, releases or record types")
    parser.add_argument("--release", metavar="R",
                        help="act as this Kafka release's tool (defaults, known versions and texts differ by release); "
                             "default: the newest release in the catalog")


def add_damage_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--up-to-damage", action="store_true",
                        help="on a damaged log, use what comes before the damage and label the result PARTIAL with "
                             "the offset where it stops (exit 1); without it a damaged log is refused. A torn last "
                             "batch is not damage: it is left out, as Kafka's recovery cuts it, and said in one line")


def catalog_from_args(args: argparse.Namespace) -> Catalog:
    return load_catalog(getattr(args, "catalog", None), line=getattr(args, "release", None))


def print_lines(lines: Iterable[str]) -> int:
    """Print a command's lines; its exit code is 0."""
    for line in lines:
        print(line)
    return 0


def kafka_tool(run: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Run a command that mirrors a Kafka tool: its failures print Kafka's text alone, exit 1
    (a cluster directory held by another command is kraftsim's own error, not the tool's)."""

    def wrapped(args: argparse.Namespace) -> int:
        try:
            return run(args)
        except ClusterBusyError:
            raise
        except UsageError as e:  # invalid input, not a refusal: exit 2 as everywhere
            print(str(e), file=sys.stderr)
            return 2
        except KraftsimError as e:
            print(str(e), file=sys.stderr)
            return 1

    return wrapped


def settle(sim: Simulation) -> None:
    """Let a reopened cluster's nodes replay their logs (and elect a leader) before its active
    controller's image is read; a cluster that does not settle is read as it is."""
    from kraftsim.sim import SimError
    from kraftsim.sim.simulation import SETTLE_MS

    try:
        sim.wait(SETTLE_MS)
    except SimError:
        pass  # (no leader, or a node behind: the leader's image is still what there is to read)


def cluster_dir(text: str) -> str:
    """An argparse type: the directory of a simulated cluster (`cluster create`), refused as
    invalid input (UsageError: one line, exit 2) when it holds none."""
    if not (Path(text) / "cluster.json").is_file():
        from kraftsim.sim.types import not_a_cluster_text  # (not at start-up)

        raise UsageError(not_a_cluster_text(text))
    return text


def new_cluster_dir(text: str) -> str:
    """An argparse type: where `cluster create` makes a new cluster, refused as invalid input
    (UsageError: one line, exit 2) when it is not new or empty, or lies inside another
    cluster's or a Kafka log directory (kraftsim.sim.node.format says why)."""
    from kraftsim.sim.node.format import new_cluster_directory_problem  # (not at start-up)

    if (problem := new_cluster_directory_problem(text)) is not None:
        raise UsageError(problem)
    return text


INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


def _whole_number(text: str, expected: str) -> int:
    stripped = text.strip()
    digits = stripped[1:] if stripped[:1] in "+-" else stripped
    if not digits.isascii() or not digits.isdigit():
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return int(stripped)


def node_id(text: str) -> int:
    """A Kafka node id: an int32 of at least 0."""
    value = _whole_number(text, "a node id (a whole number from 0 to 2147483647)")
    if not 0 <= value <= INT32_MAX:
        raise argparse.ArgumentTypeError(f"expected a node id from 0 to {INT32_MAX}, got {text!r}")
    return value


def node_id_list(text: str) -> list[int]:
    """Comma-separated node ids, each once; empty items are refused (`''`, `','`, `' '` name no node)."""
    items = text.split(",")
    if not text.strip() or any(not item.strip() for item in items):
        raise argparse.ArgumentTypeError(f"expected comma-separated node ids such as 1,2,3, got {text!r}")
    ids = [node_id(item) for item in items]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise argparse.ArgumentTypeError(f"node {', '.join(map(str, repeated))} named twice in {text!r}")
    return ids


def bounded_int(low: int, high: int, what: str = "a whole number") -> Callable[[str], int]:
    """An argparse type for an integer in [low, high]: counts, sizes, offsets."""

    def parse(text: str) -> int:
        value = _whole_number(text, f"{what} from {low} to {high}")
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected {what} from {low} to {high}, got {text!r}")
        return value

    parse.__name__ = what  # argparse names the type in its messages
    return parse


offset = bounded_int(0, INT64_MAX, "an offset")
timestamp_ms = bounded_int(0, INT64_MAX, "a timestamp in milliseconds")


# ------------------------------------------------------------------------------ one flag for one thing
#
# An offset is `--at OFFSET` in every command (the state after every record below OFFSET: a
# snapshot id's end offset); a metadata.version is `--metadata MV` as in kafka-features, or
# `--release-version` where Kafka's tools say so; `--release` is always a Kafka release.
# Older spellings (`--offset`, `--to`, `--metadata-version`, `PATH@OFFSET`) are still read
# but no longer shown.

AT_HELP = "the state after every record below OFFSET (a snapshot id's end offset); default: the end"


class _Once(argparse.Action):
    """An option that may be spelled several ways: given twice with different values is refused."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        current = getattr(namespace, self.dest, None)
        if current is not None and current != values:
            parser.error(f"{option_string} {values} contradicts the {current} given before (the same option, "
                         "spelled another way)")
        setattr(namespace, self.dest, values)


def add_spellings(parser: argparse.ArgumentParser, flag: str, old: Sequence[str], **kwargs: Any) -> None:
    """`flag` with its help, and each older spelling in `old` hidden, all into one value."""
    dest = kwargs.pop("dest", flag.lstrip("-").replace("-", "_"))
    parser.add_argument(flag, dest=dest, action=_Once, **kwargs)
    for name in old:
        hidden = {k: v for k, v in kwargs.items() if k in ("type", "metavar")}
        parser.add_argument(name, dest=dest, action=_Once, help=argparse.SUPPRESS, **hidden)


def add_at_option(parser: argparse.ArgumentParser, help: str = AT_HELP) -> None:
    """`--at OFFSET` (older spelling: `--offset`)."""
    add_spellings(parser, "--at", ["--offset"], type=offset, metavar="OFFSET", help=help)


def add_metadata_option(parser: argparse.ArgumentParser, help: str, old: Sequence[str] = ()) -> None:
    """`--metadata MV`: a metadata.version, as a level (14) or a version (3.6-IV2), as kafka-features takes it."""
    add_spellings(parser, "--metadata", list(old), metavar="MV", help=help)


def required(value: T | None, flag: str) -> T:
    """A flag's value that the command cannot do without (one of its spellings must be given)."""
    if value is None:
        raise UsageError(f"{flag} is required")
    return value


def path_at(text: str, at: int | None, what: str = "PATH") -> tuple[Path, int | None]:
    """A path and the offset asked for: `--at`, or the older `PATH@OFFSET` (still read). A
    path that exists as given is taken whole, even if it holds an `@`; two different
    offsets are refused."""
    path = Path(text)
    if path.exists() or "@" not in text:
        return path, at
    head, _, tail = text.rpartition("@")
    if not re.fullmatch(r"\d+", tail):
        return path, at
    if at is not None and at != int(tail):
        raise UsageError(f"{what} {text}: two different offsets ({tail} and --at {at})")
    return Path(head), int(tail)
