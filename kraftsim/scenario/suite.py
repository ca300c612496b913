"""The shipped suite (the repository's `scenarios/` folder, in a wheel the package
`kraftsim._scenarios`) and the `scenario new` template."""

from __future__ import annotations

import json
import shlex
import tomllib
from importlib import resources
from collections.abc import Callable
from pathlib import Path

from kraftsim import shipped_folder, tomlinput
from kraftsim.errors import KraftsimError
from kraftsim.scenario.errors import ScenarioInvalid

#: Where the shipped scenarios are.
SUITE_DIR = shipped_folder("kraftsim._scenarios", "scenarios")


def shipped(name: str) -> Path | None:
    """The shipped scenario file called NAME (with or without `.toml`), or None."""
    stem = name[:-5] if name.endswith(".toml") else name
    if not stem or "/" in stem or "\\" in stem or stem.startswith("."):
        return None
    path = SUITE_DIR / f"{stem}.toml"
    return path if path.is_file() else None


def resolve(arg: str) -> Path:
    """A command-line FILE|DIR|NAME: an existing path as it is, else a shipped scenario's
    name, else the path as given (so the error names what the user typed)."""
    path = Path(arg)
    if path.exists():
        return path
    return shipped(arg) or path


def scenario_files(paths: list[Path], *, include_slow: bool = True,
                   on_skip: Callable[[Path], None] | None = None) -> list[Path]:
    """Files named on the command line, with each directory replaced by its *.toml files (sorted)
    and each shipped scenario's name by its file. Without `include_slow`, a directory's files
    marked `slow = true` (minutes and gigabytes: the production-scale what-if) are left out,
    each told to `on_skip`; a file named on its own always runs. ScenarioInvalid for a *.toml
    in a directory that is not a regular file."""
    out: list[Path] = []
    for p in (resolve(str(p)) for p in paths):
        if p.is_dir():
            found = sorted(p.glob("*.toml"))
            for f in found:  # (a file named on its own may be a pipe: `<(...)`; one found in a folder may not)
                if not f.is_file():
                    raise ScenarioInvalid(str(f), None, "not a regular file (a FIFO would be waited on forever, a "
                                                        "device read without end): in a folder only regular *.toml "
                                                        "files are scenarios")
                if not include_slow and is_slow(f):
                    if on_skip is not None:
                        on_skip(f)
                    continue
                out.append(f)
        else:
            out.append(p)
    return out


def slow_skipped_note(path: Path) -> str:
    """What a command says of a directory's slow scenario it left out."""
    return (f"kraftsim: note: left out {path} (slow = true: name the file on its own, or pass --include-slow, "
            "to run it)")


def is_slow(path: Path) -> bool:
    """Whether the scenario file says `slow = true` (it takes minutes: left out of the runs of
    the whole suite that tests and benchmarks make)."""
    try:  # (bounded: a file too large or nested too deeply is left to load_scenario to refuse)
        return tomlinput.loads(tomlinput.read_text(path)).get("slow") is True
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, KraftsimError):
        return False


def template(name: str, file: str | None = None) -> str:
    """A commented scenario that runs as it is: the starting point of a new what-if, written
    to `file` (default NAME.toml; named in its comments as a shell takes it)."""
    text = resources.files("kraftsim.scenario").joinpath("template.toml").read_text(encoding="utf-8")
    # (a TOML basic string: JSON's escapes of '"' and '\\' are TOML's; non-ASCII stays as it is)
    return text.replace('"{name}"', json.dumps(name, ensure_ascii=False)).replace(
        "{file}", shlex.quote(file if file is not None else f"{name}.toml"))
