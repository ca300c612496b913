"""Text read from files, made safe to show: control characters (an escape sequence can
retitle or clear a terminal), bidirectional overrides (they reorder what is read) and the
line and paragraph separators are written as visible `\\xNN` / `\\uNNNN` escapes. One rule
for the terminal and for HTML and SVG (scenario.markup). `kraftsim`'s main writes its text for
people through `guard` wherever it goes (`| cat` and `| less -R` hand a pipe's bytes to a
terminal too); only machine-readable output (`--json`) on a pipe or in a file is left as it
is, since an escape there would change what a JSON reader gets.

kraftsim's own terminal control (the progress lines' carriage return and erase-to-end-of-line,
cli.style's colours) is written through `own`, which marks it with a key chosen at random per
process: the guard passes a marked sequence and escapes the same bytes anywhere else, so a
name read from a file cannot move the cursor or change a colour by holding them.
"""

from __future__ import annotations

import re
import secrets
from typing import TextIO

# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional marks, embeddings,
# overrides and isolates (U+200E/F, U+202A-E, U+2066-9) and the line and paragraph separators.
INVISIBLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def shown(m: re.Match[str]) -> str:
    """The visible escape of one matched character."""
    code = ord(m[0])
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """`text` with every control or direction character written as `\\xNN` / `\\uNNNN`."""
    return INVISIBLE.sub(shown, text)


#: The terminal control kraftsim writes itself: the progress lines' carriage return and
#: erase-to-end-of-line, and cli.style's colours (green, red, yellow, bold, reset).
_OWN = r"\r|\x1b\[(?:K|0m|1m|3[123]m)"
#: Four characters of the supplementary private use area, new in every process: text read from
#: a file cannot hold them by chance, nor by design (it was written before they were chosen).
_KEY = "".join(chr(0xF0000 + secrets.randbelow(0xFFFE)) for _ in range(4))
_PATTERN = re.compile(re.escape(_KEY) + f"({_OWN})|" + INVISIBLE.pattern)


def _one(m: re.Match[str]) -> str:
    return m[1] if m[1] is not None else shown(m)


def own(control: str, stream: object) -> str:
    """kraftsim's own terminal `control` (one of `_OWN`'s sequences) for writing to `stream`:
    marked so that a guarded terminal passes it; as it is on any other stream."""
    return _KEY + control if isinstance(stream, SafeTerminal) else control


class SafeTerminal:
    """A text stream whose writes show control and direction characters as escapes."""

    def __init__(self, stream: TextIO):
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(_PATTERN.sub(_one, text))
        return len(text)

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def guard(stream: TextIO, *, always: bool = False) -> TextIO:
    """`stream` wrapped when it is a terminal, or `always` (text for people, wherever it goes);
    else as it is."""
    if isinstance(stream, SafeTerminal):
        return stream
    try:
        tty = always or stream.isatty()
    except (AttributeError, ValueError):
        return stream
    return SafeTerminal(stream) if tty else stream  # type: ignore[return-value]
