"""Plain-text tables for the jobs' summaries."""

from __future__ import annotations

from typing import Sequence


def decimals(values: Sequence[object]) -> int:
    """One number of decimals for a whole column of floats, from its largest magnitude (three
    below 100, one below 10,000, none above), so that `14.3` never stands beside `1,291`
    printed differently."""
    top = max((abs(v) for v in values if isinstance(v, float)), default=0.0)
    return 3 if top < 100 else 1 if top < 10_000 else 0


def _cell(v: object, places: int = 3) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:,.{places}f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def text_table(rows: Sequence[dict[str, object]], columns: Sequence[tuple[str, str]]) -> str:
    """`rows` under `columns` ((key, heading) pairs); numbers right-aligned, text left-aligned."""
    places = [decimals([r.get(k) for r in rows]) for k, _ in columns]
    cells = [[_cell(r.get(k), p) for (k, _), p in zip(columns, places)] for r in rows]
    numeric = [all(isinstance(r.get(k), (int, float)) or r.get(k) is None for r in rows) for k, _ in columns]
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, (_, h) in enumerate(columns)]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric)).rstrip()

    out = [line([h for _, h in columns]), line(["-" * w for w in widths])]
    out += [line(c) for c in cells]
    return "\n".join(out)
