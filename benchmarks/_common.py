"""What the benchmarks share: how the machine's load and the date of a run are written down."""

from __future__ import annotations

import datetime as _dt
import os
from typing import Sequence


def load_average(values: Sequence[float] | None = None) -> str:
    """The load average (1 / 5 / 15 min) as the results print it: `values` (as recorded by
    an earlier run) or this moment's."""
    return " / ".join(f"{x:.2f}" for x in (os.getloadavg() if values is None else values))


def utc_now() -> str:
    """This moment in UTC, to the minute, as the results print it."""
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
