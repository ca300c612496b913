"""Text from files put into HTML and SVG safely: markup characters escaped, and control and
bidirectional-override characters shown as visible escapes (a topic or scenario name read
from a file must not hide text, reorder it or reach a terminal that copies the page), and
JSON inside `<script>` escaped so that `JSON.parse` of the element's text gives it back.
"""

from __future__ import annotations

import html
import re

from kraftsim.textsafe import INVISIBLE, visible


def escape(text: str) -> str:
    """Text for an HTML or SVG element or attribute: visible, then markup-escaped."""
    return html.escape(visible(text))


def script_json(text: str) -> str:
    """A JSON document to embed in `<script type="application/json">`: `<`, `>`, `&`, U+2028/9
    and the characters `visible` shows as JSON `\\uXXXX` escapes (they only occur inside JSON
    strings), so the element cannot be closed early and its text parses back to the same value."""
    return _SCRIPT.sub(lambda m: f"\\u{ord(m[0]):04x}", text)


_SCRIPT = re.compile("[<>&]|" + INVISIBLE.pattern)
