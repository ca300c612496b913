"""What the programs that read facts from Kafka's jars share when they write a data file
under kraftsim/controller/data: which release an entry holds from, TOML values, and one
entry per change across the releases read."""

from __future__ import annotations

import sys
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from kraftsim.versions import entry_for_release, release_name_key

#: The releases a data file of every release's facts is read from: each line's newest patch,
#: and each patch of a line whose facts changed within it (4.2).
EVERY_RELEASE = ("3.3.2", "3.4.1", "3.5.2", "3.6.2", "3.7.2", "3.8.1", "3.9.2", "4.0.2", "4.1.2", "4.2.0", "4.2.1",
                 "4.2.2", "4.3.1", "4.4.0")


def since(version: str, read_before: Sequence[str]) -> str:
    """The first release an entry read from `version` holds for: its line's x.y.0, or the patch
    itself when another patch of its line was read before."""
    line = ".".join(version.split(".")[:2])
    return version if any(v.startswith(line + ".") for v in read_before) else f"{line}.0"


def toml_value(value: Any) -> str:
    """`value` (a bool, int, str, list or dict of them) as a TOML inline value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t") + '"'
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    assert isinstance(value, dict)
    return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"


def unescape(text: str) -> str:
    """A field a facts program wrote with `\\t`, `\\n` and `\\\\` escaped (so that one line
    holds one fact, its fields split at tabs)."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            out.append({"t": "\t", "n": "\n", "\\": "\\"}.get(text[i + 1], text[i + 1]))
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


Entry = dict[str, Any]


def entries_by_release(versions: Sequence[str], entry_of: Callable[[str], Entry],
                       summary: Callable[[Entry], str]) -> list[tuple[str, str, Entry]]:
    """(since, read_from, entry) for each of `versions` (in release order) whose entry differs
    from the one before it; `summary` is printed to stderr for each entry kept."""
    entries: list[tuple[str, str, Entry]] = []
    for i, version in enumerate(versions):
        e = entry_of(version)
        if entries and entries[-1][2] == e:
            continue
        entries.append((since(version, versions[:i]), version, e))
        print(f"{version}: {summary(e)}", file=sys.stderr)
    return entries


def written_entry(data: Path, version: str) -> Entry:
    """The entry of the data file `data` that holds for `version`, as an entry program gives it
    (without `since` and `read_from`): what a check of the file against the jars compares."""
    releases = tomllib.loads(data.read_text("utf-8"))["release"]
    held = sorted((_Held(e["since"], e) for e in releases), key=lambda h: release_name_key(h.since))
    chosen = entry_for_release(held, version)
    return {k: v for k, v in chosen.entry.items() if k not in ("since", "read_from")}


class _Held(NamedTuple):
    """A data file's release entry, with its `since` where `entry_for_release` reads it."""

    since: str
    entry: Entry
