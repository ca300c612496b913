"""What the benchmarks share: how the machine's load and the date of a run are written down."""

from __future__ import annotations

import datetime as _dt
import json
import os
from pathlib import Path
from typing import Any, Sequence


def load_average(values: Sequence[float] | None = None) -> str:
    """The load average (1 / 5 / 15 min) as the results print it: `values` (as recorded by
    an earlier run) or this moment's."""
    return " / ".join(f"{x:.2f}" for x in (os.getloadavg() if values is None else values))


def utc_now() -> str:
    """This moment in UTC, to the minute, as the results print it."""
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def write_results(results_dir: Path, stem: str, data: dict[str, Any], markdown: str) -> None:
    """Write a run's `<stem>.json` and `<stem>.md` into the results folder and say where."""
    results_dir.mkdir(parents=True, exist_ok=True)
    (results_dir / f"{stem}.json").write_text(json.dumps(data, indent=2) + "\n")
    (results_dir / f"{stem}.md").write_text(markdown)
    print(f"wrote {results_dir / stem}.md and .json")
