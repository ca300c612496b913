"""What a sweep's table says: pass rates with Wilson intervals, the commonest failures, the
slowest runs (text), and plots of outcome rates and time distributions (matplotlib, PNG
and SVG). Everything but the slowest-runs list depends only on the table's deterministic
columns.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kraftsim.pipeline.report import text_table

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: z for a two-sided 95% interval.
Z95 = 1.959963984540054
TOP_FAILURES = 5
SLOWEST = 5


def wilson(passes: int, runs: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a pass rate: sound at 0 and 100% and for few runs, unlike p ± z·se."""
    if runs == 0:
        return 0.0, 1.0
    p = passes / runs
    denom = 1 + z * z / runs
    centre = (p + z * z / (2 * runs)) / denom
    half = z * math.sqrt(p * (1 - p) / runs + z * z / (4 * runs * runs)) / denom
    lo = 0.0 if passes == 0 else max(0.0, centre - half)
    hi = 1.0 if passes == runs else min(1.0, centre + half)  # exact at the ends (no rounding below 1)
    return lo, hi


def per_scenario(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[r["scenario"]].append(r)
    out = []
    for name in sorted(groups):
        rs = groups[name]
        passes = sum(r["verdict"] == "pass" for r in rs)
        lo, hi = wilson(passes, len(rs))
        times = sorted(r["time_ms"] for r in rs if r["time_ms"] is not None)
        out.append({"scenario": name, "runs": len(rs), "pass": passes,
                    "fail": sum(r["verdict"] == "fail" for r in rs), "error": sum(r["verdict"] == "error" for r in rs),
                    "rate": f"{100 * passes / len(rs):.1f}%", "ci": f"{100 * lo:.1f}-{100 * hi:.1f}%",
                    "median_s": times[len(times) // 2] / 1000 if times else None,
                    "max_fenced_s": max((r["fenced_ms_max"] or 0 for r in rs), default=0) / 1000})
    return out


def summary_text(table: pa.Table, *, engine: str, elapsed_s: float, driver_runs: int = 0) -> str:
    rows = table.to_pylist()
    where = "in this process" if engine == "local" else "on Spark " + engine
    if driver_runs:
        where += f", {driver_runs} of them in the driver while Spark started and beside its job"
    lines = [f"{len(rows)} runs of {len({r['scenario'] for r in rows})} scenarios ({where}, {elapsed_s:.1f} s)", ""]
    cols = [("scenario", "scenario"), ("runs", "runs"), ("pass", "pass"), ("fail", "fail"), ("error", "error"),
            ("rate", "pass rate"), ("ci", "95% CI (Wilson)"), ("median_s", "median sim s"),
            ("max_fenced_s", "max fenced s")]
    lines.append(text_table(per_scenario(rows), cols))
    failures = Counter((r["scenario"], _generic(r["failure"])) for r in rows if r["verdict"] != "pass")
    if failures:
        lines += ["", "Most common failures:"]
        for (name, text), n in sorted(failures.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_FAILURES]:
            lines.append(f"  {n:>5} x {name}: {text}")
    slow = sorted(rows, key=lambda r: (-r["wall_s"], r["scenario"], r["seed"]))[:SLOWEST]
    if slow:
        lines += ["", "Slowest runs (wall time):"]
        lines += [f"  {r['wall_s']:7.2f} s  {r['run_id']} ({r['verdict']}, {r['time_ms'] or 0} simulated ms)"
                  for r in slow]
    return "\n".join(lines) + "\n"


def _generic(text: str | None) -> str:
    """A failure text with its step number and digits folded, so that the same failure at
    another step or time counts as one."""
    if not text:
        return "(no text)"
    out = []
    for word in text.split():
        out.append("N" if any(c.isdigit() for c in word) and not any(c.isalpha() for c in word.strip("(),:")) else word)
    return " ".join(out)[:160]


def write_plots(table: pa.Table, folder: Path) -> list[Path] | str:
    """outcomes.{png,svg} and times.{png,svg}; a sentence instead when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "no plots: matplotlib is not installed (pip install matplotlib)"
    rows = table.to_pylist()
    stats = per_scenario(rows)
    folder.mkdir(parents=True, exist_ok=True)
    matplotlib.rcParams["svg.hashsalt"] = "kraftsim"  # the same SVG ids on every run
    written: list[Path] = []

    names = [s["scenario"] for s in stats]
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(names) + 1.5))
    left = [0.0] * len(names)
    for verdict, colour in (("pass", "#4c9a2a"), ("fail", "#c0392b"), ("error", "#7f8c8d")):
        share = [s[verdict] / s["runs"] for s in stats]
        ax.barh(names, share, left=left, color=colour, label=verdict)
        left = [a + b for a, b in zip(left, share)]
    for i, s in enumerate(stats):
        lo, hi = wilson(s["pass"], s["runs"])
        ax.plot([lo, hi], [i, i], color="black", linewidth=1)
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of runs (black: 95% Wilson interval of the pass rate)")
    ax.legend(loc="lower right", fontsize="small")
    ax.set_title("Outcome per scenario")
    fig.tight_layout()
    written += _save(fig, folder / "outcomes", plt)

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    a1.hist([r["time_ms"] / 1000 for r in rows if r["time_ms"] is not None], bins=30, color="#2e86c1")
    a1.set_xlabel("simulated time of the run, s")
    a1.set_ylabel("runs")
    a2.hist([r["fenced_ms_max"] / 1000 for r in rows if r["fenced_ms_max"] is not None], bins=30, color="#d68910")
    a2.set_xlabel("longest time one broker was fenced, s")
    fig.suptitle("Time distributions")
    fig.tight_layout()
    written += _save(fig, folder / "times", plt)
    return written


def _save(fig: Figure, stem: Path, plt: ModuleType) -> list[Path]:
    out = []
    for ext in ("png", "svg"):
        p = stem.with_suffix("." + ext)
        fig.savefig(p, format=ext, metadata={"Date": None} if ext == "svg" else {"Software": None})
        out.append(p)
    plt.close(fig)
    return out
