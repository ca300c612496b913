"""Java's `.properties` format as java.util.Properties loads and stores it.

Kafka writes meta.properties with `Properties.store(writer, "")`: a `#` line (the empty
comment), a `#<java.util.Date.toString()>` line, then `key=value` lines. The order of the
lines depends on the JVM: Java 18 and later sort the keys; earlier JVMs write them in the
iteration order of Properties' internal ConcurrentHashMap, which is a function of the
keys' String.hashCode. Both are reproduced here, so a file can be written again exactly.
"""

from __future__ import annotations

from typing import Iterable, Literal, Mapping

from kraftsim.javacompat import CHM_PROPERTIES_MAX_KEYS, concurrent_hash_map_order
# names other modules import from here
from kraftsim.javacompat import date_to_string as java_date  # noqa: F401
from kraftsim.javacompat import string_hash as java_string_hash  # noqa: F401

KeyOrder = Literal["sorted", "hash"]

# ------------------------------------------------------------------------------ loading


def properties_text(raw: bytes) -> str:
    """A properties file's bytes as Properties.load(InputStream) reads them: ISO-8859-1
    (non-Latin-1 characters come as \\uXXXX escapes). ValueError for text in another
    encoding Java would misread (UTF-16: a byte order mark or NUL bytes)."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\x00" in raw:
        raise ValueError("not a properties file Java can read: it looks like UTF-16 text (a byte order mark or NUL "
                         "bytes); Java reads properties files as ISO-8859-1 with \\uXXXX escapes")
    return raw.decode("latin-1")


def _logical_lines(text: str) -> Iterable[str]:
    """Java's Properties.LineReader: skip blanks and comments, join continued lines."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i].lstrip(" \t\f")
        i += 1
        if not line or line[0] in "#!":
            continue
        while True:
            trailing = len(line) - len(line.rstrip("\\"))
            if trailing % 2 == 0 or i >= len(lines):
                if trailing % 2 == 1:
                    line = line[:-1]  # a continuation at the end of the input is dropped
                break
            line = line[:-1] + lines[i].lstrip(" \t\f")
            i += 1
        yield line


def _unescape(s: str) -> str:
    out = []
    i = 0
    while i < len(s):
        c = s[i]
        i += 1
        if c != "\\" or i >= len(s):
            out.append(c)
            continue
        c = s[i]
        i += 1
        if c == "u":
            digits = s[i:i + 4]
            try:
                if len(digits) != 4:
                    raise ValueError
                out.append(chr(int(digits, 16)))
            except ValueError:
                raise ValueError(f"Malformed \\uxxxx encoding: \\u{digits}") from None
            i += 4
        else:
            out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(c, c))
    return "".join(out)


def load_properties(text: str) -> dict[str, str]:
    """Parse properties text; keys keep the order of their first appearance, later values win."""
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        key_end = len(line)
        value_start = len(line)
        has_sep = False
        backslash = False
        for j, c in enumerate(line):
            if c in "=:" and not backslash:
                key_end, value_start, has_sep = j, j + 1, True
                break
            if c in " \t\f" and not backslash:
                key_end, value_start = j, j + 1
                break
            backslash = (c == "\\") and not backslash
        while value_start < len(line):
            c = line[value_start]
            if c in " \t\f":
                value_start += 1
            elif not has_sep and c in "=:":
                has_sep = True
                value_start += 1
            else:
                break
        props[_unescape(line[:key_end])] = _unescape(line[value_start:])
    return props


# ------------------------------------------------------------------------------ storing


def _save_convert(s: str, escape_space: bool) -> str:
    """Properties.saveConvert with escUnicode=false (Kafka stores through a UTF-8 Writer)."""
    out = []
    for x, c in enumerate(s):
        o = ord(c)
        if 61 < o < 127:
            out.append("\\\\" if c == "\\" else c)
        elif c == " ":
            out.append("\\ " if (x == 0 or escape_space) else " ")
        elif c in "\t\n\r\f":
            out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}[c])
        elif c in "=:#!":
            out.append("\\" + c)
        else:
            out.append(c)
    return "".join(out)


def hash_order(keys: Iterable[str]) -> list[str]:
    """The order Java ≤ 17's Properties.store writes keys in (its ConcurrentHashMap's order)."""
    return concurrent_hash_map_order(list(keys))


def store_properties(props: Mapping[str, str], *, date_line: str, key_order: KeyOrder = "sorted") -> str:
    """The text Properties.store(writer, "") writes, with `date_line` as the date comment."""
    keys = sorted(props) if key_order == "sorted" else hash_order(props)
    lines = ["#", "#" + date_line]
    lines += [f"{_save_convert(k, True)}={_save_convert(props[k], False)}" for k in keys]
    return "\n".join(lines) + "\n"


def detect_key_order(keys: list[str]) -> KeyOrder:
    """Which JVM behaviour wrote keys in this order (sorted wins when both fit)."""
    if keys == sorted(keys):
        return "sorted"
    if len(keys) <= CHM_PROPERTIES_MAX_KEYS and keys == hash_order(keys):
        return "hash"
    raise ValueError("the keys are neither sorted nor in Java's hash order")
