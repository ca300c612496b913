"""Printing conformance outcomes: the cases × releases table, the differences, JSON lines.

The full table has one row per case; `summary` folds cases into families (the first two
parts of their names, e.g. `storage-format/combined`) with counts per release.
"""

from __future__ import annotations

import json
from typing import Iterable

from kraftsim.conformance.cases import AGREE, DIFFER, POLICY, Outcome

_MARK = {AGREE: "agree", DIFFER: "DIFFER", POLICY: "policy"}


def json_line(outcome: Outcome) -> str:
    return json.dumps(outcome.to_json(), ensure_ascii=False, sort_keys=False)


_SEP = "  "


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    fmt = _SEP.join("{:<%d}" % w for w in widths)
    return [fmt.format(*header).rstrip(), fmt.format(*("-" * w for w in widths)).rstrip()] + \
           [fmt.format(*r).rstrip() for r in rows]


def markdown_row(line: str) -> str:
    """A line of table_lines as a Markdown table row (cells never hold two spaces in a row)."""
    cells = [c.strip() for c in line.split(_SEP) if c.strip()]
    if cells and all(set(c) <= {"-"} for c in cells):
        cells = ["---"] * len(cells)
    return "| " + " | ".join(cells) + " |"


def family(case: str) -> str:
    """The summary row of a case: its first two name parts; the live node's session is one row."""
    return "live-node" if case.startswith("live-node/") else "/".join(case.split("/")[:2])


def table_lines(outcomes: list[Outcome], releases: list[str], *, summary: bool = False) -> list[str]:
    cells: dict[tuple[str, str], list[Outcome]] = {}
    order: list[str] = []
    for o in outcomes:
        key = family(o.case) if summary else o.case
        if all(k[0] != key for k in cells):
            order.append(key)
        cells.setdefault((key, o.release), []).append(o)
    rows = []
    for key in order:
        row = [key]
        for r in releases:
            got = cells.get((key, r), [])
            if not got:
                row.append("-")
            elif summary:
                n = {res: sum(o.result == res for o in got) for res in (AGREE, POLICY, DIFFER)}
                text = f"{n[AGREE] + n[POLICY]}/{len(got)}"
                row.append(text + (f" ({n[DIFFER]} differ)" if n[DIFFER] else ""))
            else:
                row.append(_MARK[got[0].result])
        rows.append(row)
    return _table(["case" if not summary else "cases (agree or policy / run)", *releases], rows)


def totals_line(outcomes: Iterable[Outcome]) -> str:
    outcomes = list(outcomes)
    n = {res: sum(o.result == res for o in outcomes) for res in (AGREE, POLICY, DIFFER)}
    return f"{len(outcomes)} case runs: {n[AGREE]} agree, {n[POLICY]} policy, {n[DIFFER]} differ"


def detail_lines(outcomes: Iterable[Outcome], *, policies: bool = False) -> list[str]:
    """The differences (and with `policies`, the policy notes), case by case."""
    lines = []
    for o in outcomes:
        if o.result == DIFFER or (policies and o.result == POLICY):
            lines.append(f"{o.result.upper()} {o.case} [Kafka {o.release}]")
            lines += ["    " + ln for ln in o.detail.splitlines()]
    return lines
