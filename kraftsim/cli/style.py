"""Colour on a terminal only: green for what went well, red for what did not.

Off when the stream is not a terminal (a pipe, a file, a test's capture), when NO_COLOR is
set to anything but the empty string (no-color.org), or when TERM is `dumb`. Only a line's
verdict word is painted, so the text stays the same with or without colour.
"""

from __future__ import annotations

import os
import sys
from typing import TextIO

from kraftsim.textsafe import own

_CODES = {"green": "32", "red": "31", "yellow": "33", "bold": "1"}


def colour_enabled(stream: TextIO | None = None) -> bool:
    stream = sys.stdout if stream is None else stream
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def paint(text: str, colour: str, stream: TextIO | None = None) -> str:
    """`text` in `colour` when `stream` (default stdout) shows colour, else as it is."""
    stream = sys.stdout if stream is None else stream
    if not colour_enabled(stream):
        return text
    return own(f"\033[{_CODES[colour]}m", stream) + text + own("\033[0m", stream)


def paint_prefix(line: str, words: dict[str, str], stream: TextIO | None = None) -> str:
    """The line with its leading verdict word painted (the first of `words`, word → colour,
    that the stripped line starts with)."""
    body = line.lstrip()
    for word, colour in words.items():
        if body.startswith(word):
            indent = line[: len(line) - len(body)]
            return indent + paint(word, colour, stream) + body[len(word):]
    return line
