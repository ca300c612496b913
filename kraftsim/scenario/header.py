"""The comment block at the top of a scenario file: the question it answers, where the
expected outcome comes from, and the answer.

    # Question: Can a 3.7 controller start again once metadata.version 3.8-IV0 is finalized?
    # Source: Kafka's FeatureControlManager.replay; KIP-778 "Downgrading the software".
    # Answer: No. It stops with "... only supports versions 1-19".

A paragraph continues on the following comment lines until the next `Label:`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LABELS = ("question", "source", "answer")
_LABEL = re.compile(r"^(question|source|answer)\s*:\s*(.*)$", re.IGNORECASE)


@dataclass(frozen=True)
class Header:
    question: str = ""
    source: str = ""
    answer: str = ""


def parse_header(text: str) -> Header:
    """The labelled paragraphs of the file's leading comment lines (empty when absent)."""
    found: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            current = None
            continue
        if not stripped.startswith("#"):
            break
        body = stripped.lstrip("#").strip()
        m = _LABEL.match(body)
        if m:
            current = m.group(1).lower()
            found[current] = [m.group(2)] if m.group(2) else []
        elif current is not None and body:
            found[current].append(body)
        else:
            current = None
    return Header(**{k: " ".join(v).strip() for k, v in found.items()})
