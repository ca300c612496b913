"""Refusing, as an older Kafka tool does, a subcommand or flag its release does not have.

kraftsim's `storage` and `features` commands offer every subcommand and flag of the newest
Kafka; acting as an older release (`--release`) they must refuse what that release's tool
refuses, with its words: argparse4j's usage text (data/kafka_usage.toml) and its error
line, wrapped and justified to 75 columns, or a Scala tool's one line, exit 1.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Collection

if TYPE_CHECKING:
    from kraftsim.versions import Catalog

USAGE_FILE = Path(__file__).parent / "data" / "kafka_usage.toml"
WIDTH = 75  # argparse4j's format width when the output is not a terminal
GIVEN_FLAGS = "given_flags"  # the Namespace attribute recording the option strings used


@dataclass(frozen=True)
class ToolUsage:
    tool: str
    command: str
    lines: tuple[str, ...]
    usage: str
    choices: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    style: str = "argparse4j"  # or "scala": one line (see data/kafka_usage.toml)


@cache
def _entries() -> tuple[ToolUsage, ...]:
    with USAGE_FILE.open("rb") as f:
        raw = tomllib.load(f)
    return tuple(ToolUsage(e["tool"], e["command"], tuple(e["lines"]), e["usage"], tuple(e.get("choices", ())),
                           tuple(e.get("flags", ())), e.get("style", "argparse4j")) for e in raw["usage"])


def _entry(tool: str, command: str, line: str) -> ToolUsage | None:
    return next((e for e in _entries() if e.tool == tool and e.command == command and line in e.lines), None)


def _segments(text: str) -> list[str]:
    """Line-break opportunities as java.text.BreakIterator finds them in such texts: after
    a run of spaces, and after a hyphen between letters."""
    return [s for s in re.split(r"(?<= )(?=[^ ])|(?<=[A-Za-z]-)(?=[A-Za-z])", text) if s]


def _justify(line: str, width: int) -> str:
    """argparse4j's adjustSpace: trim, then widen the blocks of spaces to `width`, the
    remainder going to the middle blocks."""
    line = line.strip(" ")
    blocks = re.split(r"( +)", line)
    gaps = len(blocks) // 2
    if gaps == 0:
        return line
    need = width - len(line)
    each, rem = divmod(need, gaps)
    first = (gaps - rem + 1) // 2
    out = []
    for i, part in enumerate(blocks):
        if i % 2:
            b = i // 2
            part += " " * (each + (1 if first <= b < first + rem else 0))
        out.append(part)
    return "".join(out)


def wrap(text: str, width: int = WIDTH) -> list[str]:
    """argparse4j's TextHelper.wrap without indents: full lines justified, the last as is."""
    lines: list[str] = []
    current = ""
    for seg in _segments(text):
        if current and len(current) + len(seg) > width:
            lines.append(_justify(current, width))
            current = ""
        current += seg
    lines.append(current)
    return lines


def usage_error(tool: str, usage: str, message: str) -> str:
    """What argparse4j prints to stderr on a usage error: the usage, then the error line."""
    return usage + "\n" + "\n".join(wrap(f"{tool}: error: {message}"))


def _refusal(e: ToolUsage, message: str) -> str:
    """`e`'s tool's refusal: argparse4j's usage and error, or a Scala tool's one line."""
    if e.style == "scala":
        return f"Command line error: {message}. Type --help for help."
    return usage_error(e.tool, e.usage, message)


def missing_subcommand(tool: str, subcommand: str, line: str) -> str | None:
    """The release's refusal of `subcommand` when its tool lacks it, else None."""
    e = _entry(tool, "", line)
    if e is None or subcommand in e.choices:
        return None
    choices = ", ".join(f"'{c}'" for c in e.choices)
    return _refusal(e, f"invalid choice: '{subcommand}' (choose from {choices})")


def unknown_flag(tool: str, command: str, line: str, args: argparse.Namespace) -> str | None:
    """The release's refusal of the first flag given that its `command` lacks, else None."""
    e = _entry(tool, command, line)
    if e is None:
        return None
    for flag in getattr(args, GIVEN_FLAGS, ()):
        if flag not in e.flags:
            return _refusal(e, f"unrecognized arguments: '{flag}'")
    return None


def refuse(text: str | None) -> int | None:
    """Print a refusal (when there is one) as Kafka's tool does; its exit code, else None."""
    if text is None:
        return None
    print(text, file=sys.stderr)
    return 1


def release_line(catalog: Catalog) -> str:
    """The "major.minor" line of the release a catalog acts as."""
    major, minor, _ = catalog.release.key
    return f"{major}.{minor}"


_RECORDING: dict[type, type] = {}


def _recording(cls: type) -> type:
    if cls not in _RECORDING:
        def __call__(self: argparse.Action, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                     values: object, option_string: str | None = None) -> None:
            if option_string is not None:
                setattr(namespace, GIVEN_FLAGS, [*getattr(namespace, GIVEN_FLAGS, []), option_string])
            cls.__call__(self, parser, namespace, values, option_string)
        _RECORDING[cls] = type(f"Recording{cls.__name__}", (cls,), {"__call__": __call__})
    return _RECORDING[cls]


def record_flags(parser: argparse.ArgumentParser, dests: Collection[str]) -> argparse.ArgumentParser:
    """Make the parser note the option strings used for Kafka's flags (`dests`; kraftsim's own
    are left out), in order (Namespace.given_flags), so a command can refuse the ones its
    release's tool lacks by the name the user typed."""
    parser.set_defaults(**{GIVEN_FLAGS: []})
    for action in parser._actions:  # noqa: SLF001 - argparse offers no public hook per option
        if action.option_strings and action.dest in dests:
            action.__class__ = _recording(type(action))
    return parser
