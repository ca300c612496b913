"""TOML a user gives (scenarios, catalogs, record schemas, sweep files), bounded before it is
parsed: a few kilobytes of `[[[[...` or `a.a.a.a...` would otherwise exhaust the parser's
recursion or memory. Size, bracket depth and dotted-key length are checked on the text, the
nesting of the parsed tables once more, each refusal saying which limit was met.
"""

from __future__ import annotations

import os
import sys
import tomllib
from typing import Any, BinaryIO

from kraftsim.errors import KraftsimError
from kraftsim.regular_file import open_input

#: The largest TOML input read (a scenario of a thousand steps is about 100 KB).
MAX_BYTES = 4 * 1024 * 1024
#: The deepest nesting of tables and arrays (kraftsim's own files need 4).
MAX_DEPTH = 32


class TomlTooComplex(KraftsimError):
    """A TOML input beyond MAX_BYTES or MAX_DEPTH."""


def read_text(path: str | os.PathLike[str]) -> str:
    """A TOML file's text, reading at most MAX_BYTES + 1 bytes: a file that never ends (a
    device such as /dev/zero, an endless pipe) is refused instead of filling memory.
    OSError and UnicodeDecodeError as Path.read_text raises them; TomlTooComplex beyond MAX_BYTES."""
    with open_input(path) as f:  # (a FIFO nobody writes to: an OSError, not an endless wait)
        return read_opened(f)


def read_opened(f: BinaryIO) -> str:
    """`read_text` of a file already open (kraftsim.storage.fileio.opened_file opens only a
    regular file, for inputs that must be one)."""
    data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise TomlTooComplex(f"more than the {MAX_BYTES:,} bytes of TOML kraftsim reads")
    return data.decode("utf-8")


def check_text(text: str) -> None:
    """TomlTooComplex when `text` is larger or nests deeper than kraftsim reads."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_BYTES:
        raise TomlTooComplex(f"{size:,} bytes of TOML: more than the {MAX_BYTES:,} kraftsim reads")
    depth = _deepest(text)
    if depth > MAX_DEPTH:
        raise TomlTooComplex(f"arrays or tables nested too deeply ({depth} levels of brackets or dotted keys; "
                             f"kraftsim reads at most {MAX_DEPTH})")


def _deepest(text: str) -> int:
    """The deepest bracket nesting and the longest dotted key (in dots plus one), outside
    strings and comments, in one pass."""
    deepest = depth = 0
    dots = 0  # dots in the key of the current line, before its `=`
    in_key = True
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            triple = text.startswith(c * 3, i)
            end = text.find(c * 3 if triple else c, i + (3 if triple else 1)) if c == "'" else _basic_end(text, i, triple)
            i = n if end < 0 else end + (3 if triple else 1)
            continue
        if c == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if c == "\n":
            dots, in_key = 0, depth == 0
        elif c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth = max(0, depth - 1)
        elif c == "=":
            in_key = False
        elif c == "." and in_key:
            dots += 1
            deepest = max(deepest, dots + 1)
        i += 1
    return deepest


def _basic_end(text: str, start: int, triple: bool) -> int:
    """Where a basic string ("..." or \"\"\"...\"\"\") that opens at `start` closes (-1: never)."""
    quote = '"""' if triple else '"'
    i = start + len(quote)
    while True:
        j = text.find(quote, i)
        if j < 0:
            return -1
        backslashes = 0
        while j - 1 - backslashes >= start and text[j - 1 - backslashes] == "\\":
            backslashes += 1
        if backslashes % 2 == 0:
            return j
        i = j + 1


def _nesting(value: object) -> int:
    """How deeply tables and arrays nest in a parsed value (without recursion)."""
    deepest = 0
    stack = [(value, 0)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            stack.extend((x, d + 1) for x in v.values())
        elif isinstance(v, list):
            stack.extend((x, d + 1) for x in v)
        else:
            continue
        deepest = max(deepest, d + 1)
        if deepest > MAX_DEPTH:
            break
    return deepest


def loads(text: str) -> dict[str, Any]:
    """tomllib.loads within kraftsim's bounds: TomlTooComplex beyond them, tomllib's
    TOMLDecodeError for text that is not TOML."""
    check_text(text)
    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise TomlTooComplex(f"arrays or tables nested too deeply (kraftsim reads at most {MAX_DEPTH} levels)") from None
    except tomllib.TOMLDecodeError:
        raise
    except ValueError as e:  # tomllib lets int()'s refusal of a too long integer through
        limit = sys.get_int_max_str_digits()
        raise TomlTooComplex(f"an integer of more than {limit:,} digits: more than kraftsim reads" if "digits" in str(e)
                             else str(e)) from None
    if _nesting(data) > MAX_DEPTH:
        raise TomlTooComplex(f"arrays or tables nested too deeply (kraftsim reads at most {MAX_DEPTH} levels)")
    return data
