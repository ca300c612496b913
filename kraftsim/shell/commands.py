"""The metadata shell's commands, their argument rules and their texts, as Kafka's shell has them.

Non-interactive use knows `cat`, `find`, `ls` and `tree`; the interactive shell adds `cd`,
`exit`, `help`, `history`, `man` and `pwd`. A command word may be a unique prefix only to
be told which command was meant (argparse4j's matching, then Kafka's refusal). Errors are
lines of output, never exceptions, as in Kafka (`ShellFault` aside: what Kafka throws).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from kraftsim.javacompat import parse_int
from kraftsim.shell.tree import Node, NodePrinter, ShellFault


@dataclass(frozen=True)
class CommandType:
    """A command: its name, description, positional argument and how many it takes."""

    name: str
    description: str
    shell_only: bool
    arg: str | None = None
    nargs: str | None = None  # "*", "+", "?" or "1"
    arg_help: str = ""


TYPES = {t.name: t for t in (
    CommandType("cat", "Show the contents of metadata files.", False, "targets", "+", "The metadata files to display."),
    CommandType("cd", "Set the current working directory.", True, "target", "?", "The directory to change to."),
    CommandType("exit", "Exit the metadata shell.", True),
    CommandType("find", "Search for nodes in the directory hierarchy.", False, "paths", "*", "The paths to start at."),
    CommandType("help", "Display this help message.", True),
    CommandType("history", "Print command history.", True, "numEntriesToShow", "?",
                "The number of entries to show."),
    CommandType("ls", "List metadata nodes.", False, "targets", "*", "The metadata node paths to list."),
    CommandType("man", "Show the help text for a specific command.", True, "cmd", "1",
                "The command to get help text for."),
    CommandType("pwd", "Print the current working directory.", True),
    CommandType("tree", "Show the contents of metadata nodes in a tree structure.", False, "targets", "+",
                "The metadata nodes to display."),
)}

#: `help`'s text: argparse4j's listing of the subcommands, its line breaks included.
HELP_TEXT = """Welcome to the Apache Kafka metadata shell.

usage:  {cat,cd,exit,find,help,history,ls,man,pwd,tree} ...

positional arguments:
  {cat,cd,exit,find,help,history,ls,man,pwd,tree}
    cat                  Show the contents of metadata files.
    cd                   Set the current working directory.
    exit                 Exit the metadata shell.
    find                 Search for nodes in the directory hierarchy.
    help                 Display this help message.
    history              Print command history.
    ls                   List metadata nodes.
    man                  Show the help text for a specific command.
    pwd                  Print the current working directory.
    tree                 Show the contents  of  metadata  nodes  in  a tree
                         structure."""


@dataclass
class ShellState:
    """What commands act on: the tree's root, the working directory and, interactively, the
    history and the screen width (`ls` lays out columns only on a terminal)."""

    root: Node
    working_directory: str = "/"
    history: list[str] | None = None
    #: The number of history[0] (entries before it were dropped, as jline drops them past its size).
    history_first: int = 0
    screen_width: int | None = None
    exit_requested: bool = False
    tree_skips_missing: bool = True
    out: list[str] = field(default_factory=list)


Handler = Callable[[ShellState], None]


def command_names(interactive: bool) -> list[str]:
    return [n for n, t in TYPES.items() if interactive or not t.shell_only]


def parse_command(words: list[str], interactive: bool) -> Handler:
    """The handler for one command line (already split into words)."""
    words = list(words)
    while words and not words[-1]:
        words.pop()
    if not words:
        return lambda state: None
    names = command_names(interactive)
    word = words[0]
    if word not in names:
        matches = [n for n in names if n.startswith(word)]
        if len(matches) == 1:
            return _say(f"invalid choice: '{word}': did you mean '{matches[0]}'?")
        if len(matches) > 1:
            return _say(f"ambiguous command: {word} could match {', '.join(matches)}")
        return _say(f"invalid choice: '{word}' (choose from {', '.join(repr(n) for n in names)})")
    ctype = TYPES[word]
    args = words[1:]
    if "-h" in args or "--help" in args:
        return _say(subcommand_help(ctype))
    unknown = [a for a in args if a.startswith("-") and len(a) > 1 and parse_int(a) is None]
    positional = [a for a in args if a not in unknown]
    low, high = {None: (0, 0), "*": (0, None), "+": (1, None), "?": (0, 1), "1": (1, 1)}[ctype.nargs]
    if len(positional) < low:
        return _say("too few arguments")
    extra = unknown + (positional[high:] if high is not None else [])
    if extra:
        return _say(f"unrecognized arguments: '{' '.join(extra)}'")
    return _handler(ctype, positional)


def _say(text: str) -> Handler:
    return lambda state: state.out.append(text)


def subcommand_help(ctype: CommandType) -> str:
    """argparse4j's help of one subcommand (`ls -h`)."""
    usage = f"usage:  {ctype.name} [-h]" + (f" {_arg_usage(ctype)}" if ctype.arg else "")
    lines = [usage, ""]
    if ctype.arg:
        lines += ["positional arguments:", f"  {ctype.arg:<23}{ctype.arg_help}", ""]
    lines += ["optional arguments:", f"  {'-h, --help':<23}show this help message and exit"]
    return "\n".join(lines)


def _arg_usage(ctype: CommandType) -> str:
    a = ctype.arg or ""
    return {"*": f"[{a} [{a} ...]]", "+": f"{a} [{a} ...]", "?": f"[{a}]", "1": a}.get(ctype.nargs or "", "")


def man_text(name: str) -> str:
    ctype = TYPES.get(name)
    if ctype is None:
        return f"man: unknown command {name}. Type help to get a list of commands."
    lines = [f"{name}: {ctype.description}", "", f"usage: {name}" + (f" {_arg_usage(ctype)}" if ctype.arg else "")]
    if ctype.arg:
        lines += ["", "positional arguments:", f"  {ctype.arg:<23}{ctype.arg_help}"]
    return "\n".join(lines)


def _handler(ctype: CommandType, args: list[str]) -> Handler:
    name = ctype.name
    if name == "ls":
        return lambda state: ls(state, args)
    if name == "cat":
        return lambda state: cat(state, args)
    if name == "tree":
        return lambda state: tree(state, args)
    if name == "find":
        return lambda state: find(state, args)
    if name == "cd":
        return lambda state: cd(state, args[0] if args else "/")
    if name == "pwd":
        return lambda state: state.out.append(state.working_directory)
    if name == "help":
        return _say(HELP_TEXT)
    if name == "man":
        return _say(man_text(args[0]))
    if name == "exit":
        return _exit
    count = parse_int(args[0]) if args else 2**31 - 1
    if count is None:
        return _say(f"argument numEntriesToShow: could not convert '{args[0]}' to Integer "
                    f"(For input string: \"{args[0]}\")")
    return lambda state: history(state, count)


def _exit(state: ShellState) -> None:
    state.exit_requested = True


# ------------------------------------------------------------------------------ paths, globs


def split_path(path: str) -> list[str]:
    return [c for c in path.split("/") if c]


def strip_dots(parts: list[str]) -> list[str]:
    out: list[str] = []
    for p in parts:
        if p == "..":
            if out:
                out.pop()
        elif p != ".":
            out.append(p)
    return out


def effective_paths(paths: list[str]) -> list[str]:
    return [p for p in paths if p] or ["."]


_REGEX_SPECIAL = set("$()+.[]^{|")
_GLOB_SPECIAL = set("*?\\{}")


def glob_regex(glob: str) -> str | None:
    """GlobComponent.toRegularExpression: None for a literal; ValueError when malformed."""
    out, literal, group, i = ["^"], True, False, 0
    while i < len(glob):
        c = glob[i]
        i += 1
        if c == "?":
            literal = False
            out.append(".")
        elif c == "*":
            literal = False
            out.append(".*")
        elif c == "\\":
            if i == len(glob):
                out.append(c)
            else:
                nxt = glob[i]
                i += 1
                if nxt in _GLOB_SPECIAL or nxt in _REGEX_SPECIAL:
                    out.append("\\")
                out.append(nxt)
        elif c == "{":
            if group:
                raise ValueError("Can't nest glob groups.")
            literal, group = False, True
            out.append("(?:(?:")
        elif c == "," and group:
            out.append(")|(?:")
        elif c == "}" and group:
            group = False
            out.append("))")
        else:
            out.append("\\" + c if c in _REGEX_SPECIAL else c)
    if group:
        raise ValueError("Unterminated glob group.")
    return None if literal else "".join(out) + "$"


class _Component:
    def __init__(self, text: str):
        self.text = text
        try:
            regex = glob_regex(text)
        except ValueError:
            regex = None  # Kafka logs the bad glob and matches it literally
        self.pattern = re.compile(regex, re.DOTALL) if regex is not None else None

    def matches(self, name: str) -> bool:
        return self.pattern.match(name) is not None if self.pattern else name == self.text


@dataclass(frozen=True)
class Visited:
    path: tuple[str, ...]
    node: Node

    @property
    def last(self) -> str:
        return self.path[-1] if self.path else "/"

    @property
    def absolute(self) -> str:
        return "/" + "/".join(self.path)


def visit(state: ShellState, glob: str, found: Callable[[Visited | None], None]) -> None:
    """GlobVisitor: `found` for every node the glob names, in name order, or once with None."""
    full = glob if glob.startswith("/") else f"{state.working_directory}/{glob}"
    parts = strip_dots(split_path(full))
    if not _visit(parts, 0, state.root, (), found):
        found(None)


def _visit(parts: list[str], i: int, node: Node, path: tuple[str, ...],
           found: Callable[[Visited | None], None]) -> bool:
    if i >= len(parts):
        found(Visited(path, node))
        return True
    comp = _Component(parts[i])
    if not node.is_dir():
        return False
    if comp.pattern is None:
        child = node.child(comp.text)
        return child is not None and _visit(parts, i + 1, child, path + (comp.text,), found)
    matched = False
    for name in sorted(node.child_names()):
        if comp.matches(name):
            child = node.child(name)
            if child is None:
                raise ShellFault(f"Expected {name} to be a valid child of class "
                                 f"org.apache.kafka.image.node.{node.java_class}, but it was not.")
            if _visit(parts, i + 1, child, path + (name,), found):
                matched = True
    return matched


# ------------------------------------------------------------------------------ the commands


def ls(state: ShellState, targets: list[str]) -> None:
    files: list[str] = []
    dirs: list[tuple[str, list[str]]] = []
    for target in effective_paths(targets):
        def found(v: Visited | None, target: str = target) -> None:
            if v is None:
                state.out.append(f"ls: {target}: no such file or directory.")
            elif v.node.is_dir():
                dirs.append((v.last, sorted(v.node.child_names())))
            else:
                files.append(v.last)
        visit(state, target, found)
    _print_entries(state, [], files)
    need_intro = bool(files) or len(dirs) > 1
    first = not files
    for name, children in dirs:
        intro = []
        if need_intro:
            intro = ([] if first else [""]) + [f"{name}:"]
            first = False
        _print_entries(state, intro, children)


def _print_entries(state: ShellState, intro: list[str], entries: list[str]) -> None:
    """A heading (when several things are listed) and the entries in columns; nothing for none."""
    if not entries:
        return
    state.out.extend(intro)
    widths, per_column = column_schema(state.screen_width, entries)
    lines = (len(entries) + len(widths) - 1) // len(widths)
    for line in range(lines):
        row = []
        for col, width in enumerate(widths):
            index = line + col * per_column
            if index < len(entries):
                entry = entries[index]
                row.append(entry if col == len(widths) - 1 else entry.ljust(width))
        state.out.append("".join(row))


def column_schema(screen_width: int | None, entries: list[str]) -> tuple[list[int], int]:
    """LsCommandHandler.calculateColumnSchema: the most columns (of entry width + 2) that fit
    the screen with the last column used; one column off a terminal."""
    if screen_width is None or screen_width // 4 <= 1:
        return [0], len(entries)
    best: tuple[list[int], int] = ([0], len(entries))
    for columns in range(screen_width // 4, 1, -1):
        per_column = (len(entries) + columns - 1) // columns
        widths = [0] * columns
        for i, entry in enumerate(entries):
            c = i // per_column
            widths[c] = max(widths[c], len(entry) + 2)
        if widths[-1] != 0 and sum(widths) <= screen_width:
            return widths, per_column
    return best


def cat(state: ShellState, targets: list[str]) -> None:
    for target in targets:
        def found(v: Visited | None, target: str = target) -> None:
            if v is None:
                state.out.append(f"cat: {target}: No such file or directory.")
            elif v.node.is_dir():
                state.out.append(f"cat: {target}: Is a directory")
            else:
                _print_node(state, v.node)
        visit(state, target, found)


def tree(state: ShellState, targets: list[str]) -> None:
    for target in targets:
        def found(v: Visited | None, target: str = target) -> None:
            if v is None:
                state.out.append(f"tree: {target}: No such file or directory.")
            else:
                _print_node(state, v.node)
        visit(state, target, found)


def _print_node(state: ShellState, node: Node) -> None:
    printer = NodePrinter(state.tree_skips_missing)
    try:
        node.print_to(printer)
    finally:
        state.out.extend(printer.lines)


def find(state: ShellState, paths: list[str]) -> None:
    for path in effective_paths(paths):
        def found(v: Visited | None, path: str = path) -> None:
            if v is None:
                state.out.append(f"find: {path}: no such file or directory.")
            else:
                _find(state, path, v.node)
        visit(state, path, found)


def _find(state: ShellState, path: str, node: Node) -> None:
    state.out.append(path)
    if node.is_dir():
        for name in sorted(node.child_names()):
            next_path = path + name if path == "/" else f"{path}/{name}"
            child = node.child(name)
            if child is None:
                raise ShellFault(f"Expected {name} to be a valid child of {path}, but it was not.")
            _find(state, next_path, child)


def cd(state: ShellState, target: str) -> None:
    def found(v: Visited | None) -> None:
        if v is None:
            state.out.append(f"cd: {target}: no such directory.")
        elif not v.node.is_dir():
            state.out.append(f"cd: {target}: not a directory.")
        else:
            state.working_directory = v.absolute
    visit(state, target, found)


def history(state: ShellState, count: int) -> None:
    if state.history is None:
        raise ShellFault("The history command requires a shell.")
    entries = state.history
    count = max(0, min(count, len(entries)))
    for index in range(len(entries) - count, len(entries)):
        state.out.append(f"{state.history_first + index:5d}  {entries[index]}")
