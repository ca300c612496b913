"""The terminal guard passes kraftsim's own terminal control (marked by `textsafe.own`) and
escapes the same bytes when they come from anywhere else, such as a name read from a file."""

from __future__ import annotations

import io

from hypothesis import given
from hypothesis import strategies as st

from kraftsim.cli.style import paint
from kraftsim.textsafe import INVISIBLE, SafeTerminal, guard, own


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _terminal() -> tuple[_Tty, SafeTerminal]:
    screen = _Tty()
    guarded = guard(screen)
    assert isinstance(guarded, SafeTerminal)
    return screen, guarded


def test_own_control_passes_and_the_same_bytes_in_a_name_are_escaped() -> None:
    screen, term = _terminal()
    name = "topic\r\x1b[31mred\x1b[K"
    term.write(own("\r", term) + f"replaying {name}" + own("\x1b[K", term))
    assert screen.getvalue() == "\rreplaying topic\\x0d\\x1b[31mred\\x1b[K\x1b[K"


def test_own_is_plain_on_an_unguarded_stream() -> None:
    plain = io.StringIO()
    assert own("\r", plain) == "\r" and own("\x1b[K", plain) == "\x1b[K"


def test_always_guards_a_pipe_and_never_twice() -> None:
    pipe = io.StringIO()
    assert guard(pipe) is pipe  # (for `--json`: a program reads it)
    guarded = guard(pipe, always=True)
    assert isinstance(guarded, SafeTerminal) and guard(guarded, always=True) is guarded
    guarded.write(own("\r", guarded) + "evil\x1b[2J\u202e")
    assert pipe.getvalue() == "\revil\\x1b[2J\\u202e"


def test_paint_colours_a_guarded_terminal(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    screen, term = _terminal()
    term.write(paint("PASS", "green", term) + " \x1b[32mfake\n")
    assert screen.getvalue() == "\x1b[32mPASS\x1b[0m \\x1b[32mfake\n"


@given(st.text())
def test_no_text_from_elsewhere_reaches_the_terminal_raw(text: str) -> None:
    screen, term = _terminal()
    term.write(text)
    assert not INVISIBLE.search(screen.getvalue())
