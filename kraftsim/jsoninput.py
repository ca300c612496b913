"""JSON kraftsim reads back (cluster state, quorum-state, sidecars, serve's marker and control
channel): one parse whose every refusal is a ValueError. Python's decoder recurses once per
level of nesting, so a few kilobytes of `[[[[...` raise RecursionError, which each reader
used to have to remember beside ValueError."""

from __future__ import annotations

import json
from typing import Any


def loads(raw: str | bytes | bytearray) -> Any:
    """json.loads, with nesting past the interpreter's recursion limit refused as ValueError
    (JSONDecodeError is one too), so a reader catches one exception for all malformed input."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise ValueError("arrays or objects nested too deeply") from None
