"""Text from files put into HTML and SVG safely: markup characters escaped, and control and
bidirectional-override characters shown as visible escapes (a topic or scenario name read
from a file must not hide text, reorder it or reach a terminal that copies the page), and
JSON inside `<script>` escaped so that `JSON.parse` of the element's text gives it back.
"""

from __future__ import annotations

import html
import re

# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional marks, embeddings,
# overrides and isolates (U+200E/F, U+202A-E, U+2066-9) and the line and paragraph separators.
_INVISIBLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """`text` with every control or direction character written as `\\xNN` / `\\uNNNN`."""
    return _INVISIBLE.sub(lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}", text)


def escape(text: str) -> str:
    """Text for an HTML or SVG element or attribute: visible, then markup-escaped."""
    return html.escape(visible(text))


def script_json(text: str) -> str:
    """A JSON document to embed in `<script type="application/json">`: `<`, `>`, `&`, U+2028/9
    and the characters `visible` shows as JSON `\\uXXXX` escapes (they only occur inside JSON
    strings), so the element cannot be closed early and its text parses back to the same value."""
    return _SCRIPT.sub(lambda m: f"\\u{ord(m[0]):04x}", text)


_SCRIPT = re.compile("[<>&]|" + _INVISIBLE.pattern)
