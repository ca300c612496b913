"""The shell's parts against Kafka's rules: globs, ls columns, Double.toString, completion."""

from __future__ import annotations

import re

from hypothesis import given, strategies as st

from kraftsim.javacompat import double_to_string
from kraftsim.shell import ShellState, complete_line, parse_command
from kraftsim.shell.commands import column_schema, glob_regex
from kraftsim.shell.tree import Dir, Leaf, fixed, iso_zoned_utc


def test_glob_components_as_kafka_reads_them():
    assert glob_regex("version") is None  # a literal
    assert glob_regex("v*") == "^v.*$"
    assert glob_regex("?.x") == "^.\\.x$"
    assert glob_regex("{a,b}") == "^(?:(?:a)|(?:b))$"
    assert glob_regex("a\\*") is None  # Kafka: escapes alone leave a literal, matched backslash and all
    assert glob_regex("a\\**") == "^a\\*.*$"
    for bad in ("{a,{b}}", "{a"):
        try:
            glob_regex(bad)
        except ValueError:
            continue
        raise AssertionError(bad)


def _state() -> ShellState:
    leaf = lambda: Leaf("x")  # noqa: E731
    root = fixed({"a": lambda: fixed({"one": leaf, "two": leaf, "three": leaf}), "b": leaf})
    return ShellState(root)


def _run(state: ShellState, line: str, interactive: bool = True) -> list[str]:
    state.out = []
    parse_command(line.split(), interactive)(state)
    return state.out


def test_ls_of_files_and_directories_as_kafka_groups_them():
    state = _state()
    assert _run(state, "ls /a /b") == ["b", "", "a:", "one", "three", "two"]
    assert _run(state, "ls /a/t* /nope") == ["ls: /nope: no such file or directory.", "three", "two"]
    assert _run(state, "ls /a/{one,two}") == ["one", "two"]
    assert _run(state, "find /a/../a/./one") == ["/a/../a/./one"]


@given(st.lists(st.text(alphabet="abcdefgh", min_size=1, max_size=12), min_size=1, max_size=40),
       st.integers(min_value=0, max_value=200))
def test_ls_columns_fit_the_screen_and_keep_the_order(entries, width):
    widths, per_column = column_schema(width, entries)
    assert len(widths) == 1 or (sum(widths) <= width and widths[-1] > 0)
    columns = [entries[i:i + per_column] for i in range(0, len(entries), per_column)]
    assert len(columns) == len(widths)  # column by column, top to bottom, every entry once


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_double_to_string_reads_back_in_java_form(x):
    text = double_to_string(x)
    assert float(text) == x
    assert re.fullmatch(r"-?\d+\.\d+(E-?\d+)?", text)
    if "E" in text:
        assert not (1e-3 <= abs(x) < 1e7) and re.fullmatch(r"-?[1-9]\.\d+E-?\d+", text)


def test_double_to_string_examples():
    assert [double_to_string(x) for x in (1000.0, 1e7, 0.001, 1e-4, 1048576.0, -2.5)] == \
        ["1000.0", "1.0E7", "0.001", "1.0E-4", "1048576.0", "-2.5"]


def test_iso_zoned_time_shows_the_fraction_it_needs():
    assert iso_zoned_utc(1735689605419) == "2025-01-01T00:00:05.419Z[UTC]"
    assert iso_zoned_utc(1735689605000) == "2025-01-01T00:00:05Z[UTC]"
    assert iso_zoned_utc(1735689605500) == "2025-01-01T00:00:05.5Z[UTC]"
    assert iso_zoned_utc(-1) == "1969-12-31T23:59:59.999Z[UTC]"


def test_completion_of_commands_and_paths():
    state = _state()
    assert complete_line(state, "", "h") == ["help", "history"]
    assert complete_line(state, "cat ", "/a/t") == ["/a/three", "/a/two"]
    assert complete_line(state, "ls ", "") == ["a/", "b"]
    assert complete_line(state, "man ", "tr") == ["tree"]
    assert complete_line(state, "pwd ", "") == []


def test_dir_children_are_built_on_visit():
    built = []

    def child(name: str):
        built.append(name)
        return Leaf(name)

    node = Dir(lambda: ["x", "y"], child)
    state = ShellState(fixed({"d": lambda: node}))
    assert _run(state, "ls /d") == ["x", "y"] and built == []
    assert _run(state, "cat /d/y") == ["y"] and built == ["y"]


_WORDS = st.sampled_from(["ls", "cat", "tree", "find", "cd", "pwd", "history", "man", "help", "exit", "c", "-h",
                          "-x", "/", "/a", "a", "..", ".", "*", "/a/{one,t*}", "{", "\\", "", "5", "-1", "/b/x"])


@given(st.lists(st.lists(_WORDS | st.text(max_size=6), max_size=5), min_size=1, max_size=6), st.booleans())
def test_any_command_line_gets_lines_never_an_exception(lines, interactive):
    """Whatever is typed, the shell answers in lines (Kafka's texts for what it refuses)."""
    state = _state()
    state.history = [] if interactive else None
    for words in lines:
        state.out = []
        parse_command(words, interactive)(state)
        assert all(isinstance(line, str) for line in state.out)
        assert state.working_directory.startswith("/")


_QUOTA_VALUE = st.text(alphabet="ab()\\_ .:", max_size=8)


@given(st.dictionaries(st.sampled_from(["client-id", "ip", "user"]), _QUOTA_VALUE, min_size=1))
def test_quota_entity_names_read_back(parts):
    """ClientQuotasImageNode names an entity and decodes the name back to it, escapes and all."""
    from kraftsim.shell.tree import decode_quota_entity, quota_entity_name

    entity = tuple(sorted(parts.items()))
    assert decode_quota_entity(quota_entity_name(entity)) == entity


def test_interrupt_drops_the_line_and_prints_kafkas_mark():
    """^C while a line is typed: the line is dropped and `^C` printed (Kafka's UserInterruptException
    handler), and the session goes on."""
    import io

    from kraftsim.shell.session import interactive_loop

    class Typing(io.StringIO):
        def __init__(self) -> None:
            super().__init__("pwd\n")
            self.interrupted = False

        def readline(self, *args):  # type: ignore[override]
            if not self.interrupted:
                self.interrupted = True
                raise KeyboardInterrupt
            return super().readline(*args)

    class Loaded:
        style = None

        def state(self, interactive: bool = False) -> ShellState:
            return ShellState(_state().root, history=[])

    out = io.StringIO()
    interactive_loop(Loaded(), Typing(), out, tty=False)  # type: ignore[arg-type]
    assert out.getvalue() == "Loading...\nStarting...\n[ Kafka Metadata Shell ]\n>> ^C\n>> /\n>> "


def test_a_line_without_end_is_refused_not_read_into_memory():
    """Piped input with no line ends (/dev/zero) was read whole until memory ran out (exit 70);
    a line just at the limit is still a command."""
    import io

    import pytest

    from kraftsim.errors import UsageError
    from kraftsim.shell.session import MAX_LINE, interactive_loop

    class Loaded:
        style = None

        def state(self, interactive: bool = False) -> ShellState:
            return ShellState(_state().root, history=[])

    class Endless(io.StringIO):
        def readline(self, size: int = -1) -> str:  # type: ignore[override]
            assert 0 < size <= MAX_LINE + 1  # never asks for everything
            return "\0" * size

    out = io.StringIO()
    with pytest.raises(UsageError, match="a line longer than 65,536 characters"):
        interactive_loop(Loaded(), Endless(), out, tty=False)  # type: ignore[arg-type]
    at_limit = io.StringIO("pwd" + " " * (MAX_LINE - 3) + "\n")
    out = io.StringIO()
    interactive_loop(Loaded(), at_limit, out, tty=False)  # type: ignore[arg-type]
    assert out.getvalue().endswith(">> /\n>> ")


def test_the_history_keeps_jlines_500_entries_with_their_numbers():
    """Every line read was kept: a shell fed an endless stdin of distinct commands grew without
    bound. jline (Kafka's shell) keeps 500 and drops the oldest; `history` numbers them as it does."""
    import io

    from kraftsim.shell.session import MAX_HISTORY, interactive_loop

    state = ShellState(_state().root, history=[])

    class Loaded:
        style = None

        def state(self, interactive: bool = False) -> ShellState:
            return state

    lines = "".join(f"pwd {i}\n" for i in range(1200)) + "history 2\n"
    out = io.StringIO()
    interactive_loop(Loaded(), io.StringIO(lines), out, tty=False)  # type: ignore[arg-type]
    assert MAX_HISTORY == 500 and state.history is not None and len(state.history) == 500
    assert state.history_first == 701 and state.history[0] == "pwd 701"
    assert out.getvalue().endswith(">>  1199  pwd 1199\n 1200  history 2\n>> ")
