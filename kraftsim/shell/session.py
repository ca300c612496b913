"""A metadata shell over one file or directory: loading it, running commands, the interactive loop.

Kafka's shell reads a snapshot (or a log segment, or a bootstrap.checkpoint) as a log: each
data batch is a commit and control batches are skipped, so `/image/provenance` names the last
data batch of the file
(its last offset, leader epoch and max timestamp), not the snapshot's id. kraftsim shows
the same for a file; for a log directory or a simulated node (kraftsim's additions) it
shows the provenance of the image loaded as the node loads it.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Callable, Iterable

from kraftsim.errors import UsageError
from kraftsim.image import EMPTY_IMAGE, MetadataImage, MetadataProvenance, infer_writer_release, load_path
from kraftsim.shell.commands import ShellState, TYPES, parse_command, split_path, strip_dots
from kraftsim.shell.style import ShellStyle, style_for
from kraftsim.shell.tree import ShellFault, ShellTree
from kraftsim.storage import PathKind, classify_path
from kraftsim.storage.batchfile import stream_file_batches
from kraftsim.regular_file import opened_file
from kraftsim.versions import Catalog

PROMPT = ">> "
#: The longest command line read from a pipe or file: input without line ends (/dev/zero)
#: would otherwise be read into memory until it ran out.
MAX_LINE = 64 * 1024
BANNER = "[ Kafka Metadata Shell ]"


@dataclass
class LoadedShell:
    """An image ready to browse, in a release's style."""

    tree: ShellTree
    style: ShellStyle
    #: What Kafka's loader would have logged as a fault (its shell then shows an empty image).
    faults: tuple[str, ...] = ()

    def state(self, interactive: bool = False) -> ShellState:
        return ShellState(self.tree.root(), history=[] if interactive else None,
                          tree_skips_missing=self.style.tree_skips_missing)


def open_shell(path: Path, catalog: Catalog, release: str | None = None) -> LoadedShell:
    """Load `path` (a snapshot, segment, bootstrap file or log directory) for the shell.
    Without `release`, the shell is the one of the release the registered nodes run."""
    if release is not None:
        release = release_name(catalog, release)
        image = _load(path, replaying_as(catalog, release))
    else:
        # Every release before 4.3 keeps every ConfigRecord it replays: load as the oldest,
        # then again if the release the nodes run drops some (KAFKA-19851).
        image = _load(path, catalog.replaying_configs_as(catalog.releases[0].name))
        release, _ = infer_writer_release(image, catalog)
        if catalog.at_release(release).config_replay_filter() is not None:
            image = _load(path, replaying_as(catalog, release))
    faults = _unloadable(image, catalog, release)
    if faults:
        image = EMPTY_IMAGE
    style = style_for(release)
    return LoadedShell(ShellTree(image, style, catalog), style, faults)


def _unloadable(image: MetadataImage, catalog: Catalog, release: str) -> tuple[str, ...]:
    """Why `release`'s loader cannot load the image, if it cannot: a metadata.version its code
    does not list fails the first record (MetadataVersion.fromFeatureLevel), and Kafka's shell
    goes on with the empty image."""
    level = image.metadata_version
    if level is None or level <= catalog.find_release(release).latest_testing:
        return ()
    return (f"Kafka {release} cannot load this file: No MetadataVersion with metadata version {level} "
            "(its shell, like this one, shows an empty image)",)


def _load(path: Path, catalog: Catalog) -> MetadataImage:
    image = load_path(path, catalog=catalog).image
    if classify_path(path) in (PathKind.SNAPSHOT, PathKind.SEGMENT, PathKind.BOOTSTRAP):
        image = image.with_provenance(file_provenance(path))
    return image


def replaying_as(catalog: Catalog, release: str) -> Catalog:
    """`catalog`, replaying ConfigRecords as `release` does."""
    return catalog.replaying_configs_as(catalog.find_release(release).name)


def release_name(catalog: Catalog, name: str) -> str:
    """A release as Kafka names it: a line ("4.0") is its newest patch in the catalog, a patch
    the catalog lists stays as given (UnknownRelease for any other, as everywhere: 3.7.3 was
    taken as 3.7's)."""
    entry = catalog.find_release(name)
    return name if name.count(".") >= 2 else entry.name


def file_provenance(path: Path) -> MetadataProvenance:
    """What Kafka's SnapshotFileReader leaves as the image's provenance: the last data batch's
    last offset, partition leader epoch and max timestamp (-1s when there is none)."""
    last = None
    with opened_file(path) as f:
        for fb in stream_file_batches(str(path), f):
            if not fb.batch.is_control:
                last = fb.batch
    if last is None:
        return MetadataProvenance(-1, -1, -1)
    return MetadataProvenance(last.last_offset, last.partition_leader_epoch, last.max_timestamp)


def run_words(state: ShellState, words: list[str], interactive: bool) -> list[str]:
    """Run one command; its output lines. A ShellFault is raised after the lines so far are kept."""
    state.out = []
    parse_command(words, interactive)(state)
    return state.out


def run_noninteractive(loaded: LoadedShell, words: list[str], out: IO[str]) -> None:
    """Kafka's non-interactive mode: one command from the arguments."""
    state = loaded.state()
    try:
        lines = run_words(state, words, interactive=False)
    except ShellFault:
        _write(out, state.out)
        raise
    _write(out, lines)


def _write(out: IO[str], lines: Iterable[str]) -> None:
    for line in lines:
        out.write(line + "\n")


def split_line(line: str) -> list[str]:
    """A command line as jline's DefaultParser splits it: whitespace, quotes and escapes."""
    try:
        return shlex.split(line)
    except ValueError:
        return line.split()


#: jline's DefaultHistory size: the entries kept (older ones are dropped, their numbers kept).
MAX_HISTORY = 500


class History:
    """jline's history as the shell keeps it: blank lines, lines starting with a space and a
    repeat of the previous line are not added; beyond MAX_HISTORY entries the oldest goes (a
    shell fed an endless stdin kept every line it had read)."""

    def __init__(self, state: ShellState):
        if state.history is None:
            state.history = []
        self.state = state
        self.entries = state.history

    def add(self, line: str) -> None:
        if not line.strip() or line.startswith(" "):
            return
        if self.entries and self.entries[-1] == line:
            return
        self.entries.append(line)
        if len(self.entries) > MAX_HISTORY:
            del self.entries[0]
            self.state.history_first += 1


def interactive_loop(loaded: LoadedShell, stdin: IO[str], out: IO[str], tty: bool) -> None:
    """Kafka's interactive mode: the banner, then `>> ` and one command per line until `exit`
    or end of input. On a terminal, readline gives line editing, history and completion."""
    state = loaded.state(interactive=True)
    history = History(state)
    read: Callable[[], str]
    if tty:
        read = _readline_reader(state)
    else:
        def read() -> str:
            out.write(PROMPT)
            out.flush()
            line = stdin.readline(MAX_LINE + 1)
            if not line:
                raise EOFError
            if len(line) > MAX_LINE and not line.endswith("\n"):
                out.write("\n")
                raise UsageError(f"standard input: a line longer than {MAX_LINE:,} characters; the metadata shell "
                                 "reads one command per line")
            return line.rstrip("\n")
    out.write("Loading...\nStarting...\n" + BANNER + "\n")
    out.flush()
    while not state.exit_requested:
        try:
            line = read()
        except EOFError:
            return
        except KeyboardInterrupt:
            out.write("^C\n")
            continue
        history.add(line)
        if tty:
            state.screen_width = shutil.get_terminal_size().columns
        try:
            lines = run_words(state, split_line(line), interactive=True)
        except ShellFault:
            _write(out, state.out)
            raise
        _write(out, lines)
        out.flush()


def _readline_reader(state: ShellState) -> Callable[[], str]:
    """input() with readline: history and tab completion of commands and paths (plain input()
    where Python has no readline)."""
    try:
        import readline
    except ImportError:
        return lambda: input(PROMPT)

    readline.clear_history()
    readline.set_completer_delims(" \t")
    readline.parse_and_bind("tab: complete")
    readline.parse_and_bind("set show-all-if-ambiguous on")  # list the candidates at once, as jline does
    completions: list[str] = []

    def complete(text: str, index: int) -> str | None:
        nonlocal completions
        if index == 0:
            before = readline.get_line_buffer()[:readline.get_begidx()]
            completions = complete_line(state, before, text)
        return completions[index] if index < len(completions) else None

    readline.set_completer(complete)
    return lambda: input(PROMPT)


def complete_line(state: ShellState, before: str, text: str) -> list[str]:
    """Completions of `text` after `before`: a command name first, then paths (a directory
    ends with `/`), as the shell's completer offers them."""
    if not before.strip():
        return [n for n in TYPES if n.startswith(text)]
    command = before.split()[0]
    if command not in TYPES or TYPES[command].arg is None or command in ("history",):
        return []
    if command == "man":
        return [n for n in TYPES if n.startswith(text)]
    return complete_path(state, text)


def complete_path(state: ShellState, prefix: str) -> list[str]:
    """CommandUtils.completePath: children of the prefix's directory that start with its last part."""
    absolute = prefix if prefix.startswith("/") else f"{state.working_directory}/{prefix}"
    parts = strip_dots(split_path(absolute))
    depth = len(parts) if prefix.endswith("/") or not prefix else len(parts) - 1
    node = state.root
    for part in parts[:depth]:
        child = node.child(part)
        if child is None or not child.is_dir():
            return []
        node = child
    last = parts[depth] if 0 <= depth < len(parts) else ""
    head = prefix[:prefix.rfind("/") + 1]
    out = []
    for name in sorted(node.child_names()):
        if name.startswith(last):
            child = node.child(name)
            out.append(head + name + ("/" if child is not None and child.is_dir() else ""))
    return out


def stdin_is_terminal() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False
