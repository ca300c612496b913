"""The sweep's and the snapshot-cost job's sections of a scenario's HTML report, as inline SVG.

`kraftsim scenario run FILE --html R --sweep DIR [--snapshot-cost DIR]` adds them: the
outcome rate per scenario of the sweep (this scenario marked), the distributions of
simulated run time and of the longest fenced time over this scenario's runs, and the
snapshot's bytes against partitions, one line per metadata.version. The SVG is written
here, not by matplotlib, so that the report stays one self-contained, deterministic page
that needs nothing installed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from kraftsim.scenario import escape
from kraftsim.errors import KraftsimError
from kraftsim.pipeline.sweep.summary import per_scenario, wilson

COLOURS = {"pass": "#2f8a4f", "fail": "#c0392b", "error": "#7f8c8d"}
LINE_COLOURS = ("#1d4f91", "#d68910", "#8e44ad", "#16a085", "#c0392b", "#2c3e50")
WIDTH = 720
BINS = 20


def _num(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def _text(x: float, y: float, s: str, anchor: str = "start", extra: str = "") -> str:
    return f'<text x="{_num(x)}" y="{_num(y)}" text-anchor="{anchor}" font-size="11"{extra}>{escape(s)}</text>'


def outcome_svg(rows: list[dict[str, object]], mark: str | None) -> str:
    """A stacked bar of pass / fail / error shares per scenario, the pass rate's 95% Wilson
    interval as a black line; the scenario `mark` in bold."""
    stats = per_scenario(rows)
    label_w, bar_w, row_h = 260, WIDTH - 360, 20
    height = row_h * len(stats) + 40
    out = [f'<svg class="chart" data-chart="outcomes" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
           f'height="{height}" viewBox="0 0 {WIDTH} {height}">']
    for i, s in enumerate(stats):
        y = 10 + i * row_h
        weight = ' font-weight="bold"' if s["scenario"] == mark else ""
        out.append(f'<g class="bar" data-scenario="{escape(s["scenario"])}" data-runs="{s["runs"]}" '
                   f'data-pass="{s["pass"]}">')
        out.append(_text(label_w - 6, y + 13, s["scenario"], "end", weight))
        x = float(label_w)
        for verdict in ("pass", "fail", "error"):
            w = bar_w * s[verdict] / s["runs"]
            if w > 0:
                out.append(f'<rect x="{_num(x)}" y="{y + 2}" width="{_num(w)}" height="{row_h - 4}" '
                           f'fill="{COLOURS[verdict]}"><title>{verdict}: {s[verdict]} of {s["runs"]}</title></rect>')
            x += w
        lo, hi = wilson(s["pass"], s["runs"])
        out.append(f'<line x1="{_num(label_w + bar_w * lo)}" x2="{_num(label_w + bar_w * hi)}" y1="{y + row_h / 2}" '
                   f'y2="{y + row_h / 2}" stroke="#000" stroke-width="1.5"/>')
        out.append(_text(label_w + bar_w + 6, y + 13, f"{s['rate']} of {s['runs']}"))
        out.append("</g>")
    base = 10 + row_h * len(stats) + 14
    legend = "".join(f'<tspan fill="{c}">■</tspan> {v}   ' for v, c in COLOURS.items())
    out.append(f'<text x="{label_w}" y="{base}" font-size="11" xml:space="preserve">{legend}'
               "black line: 95% Wilson interval of the pass rate</text>")
    out.append("</svg>")
    return "\n".join(out)


def seconds_text(v: float) -> str:
    """A duration in seconds as the CLI prints simulated time (`12.345 s`)."""
    return f"{v:.3f} s"


def histogram_svg(values: Sequence[float], label: str, name: str, fmt: Callable[[float], str] = _num) -> str:
    """Runs per bin of `values` (BINS equal bins from the least to the greatest); `fmt` writes
    the axis' two ends."""
    height, left, plot_w, plot_h = 170, 40, WIDTH // 2 - 60, 120
    out = [f'<svg class="chart" data-chart="{escape(name)}" xmlns="http://www.w3.org/2000/svg" width="{WIDTH // 2}" '
           f'height="{height}" viewBox="0 0 {WIDTH // 2} {height}">']
    if not values:
        out += [_text(left, 60, "no runs"), "</svg>"]
        return "\n".join(out)
    lo, hi = min(values), max(values)
    span = hi - lo or 1.0
    counts = [0] * BINS
    for v in values:
        counts[min(BINS - 1, int((v - lo) / span * BINS))] += 1
    top = max(counts)
    w = plot_w / BINS
    for i, c in enumerate(counts):
        h = plot_h * c / top
        out.append(f'<rect class="bin" data-count="{c}" x="{_num(left + i * w)}" y="{_num(10 + plot_h - h)}" '
                   f'width="{_num(w - 1)}" height="{_num(h)}" fill="#2e86c1"/>')
    axis_y = 10 + plot_h
    out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{axis_y}" y2="{axis_y}" stroke="#444"/>')
    out.append(_text(left, axis_y + 14, fmt(lo)))
    out.append(_text(left + plot_w, axis_y + 14, fmt(hi), "end"))
    out.append(_text(left - 4, 18, str(top), "end"))
    out.append(_text(left + plot_w / 2, axis_y + 27, f"{label} ({len(values)} runs)", "middle"))
    out.append("</svg>")
    return "\n".join(out)


def _log_ticks(lo: float, hi: float) -> list[float]:
    p, ticks = 1.0, []
    while p > lo:  # below 1 too (seconds of a small snapshot's load)
        p /= 10
    while p <= hi * 1.0001:
        if p >= lo / 1.0001:
            ticks.append(p)
        p *= 10
    return ticks


def _tick_text(t: float) -> str:
    return f"{t:,.0f}" if t >= 1 else f"{t:g}"


def cost_svg(points: dict[str, list[tuple[int, float]]], chart: str = "snapshot-cost",
             legend: tuple[str, str] = ("bytes of the snapshot (largest", "shape per partition count)"),
             unit: str = "bytes") -> str:
    """A snapshot cost (bytes by default) against partitions (both axes logarithmic), one line per
    metadata.version."""
    import math

    height, left, top, plot_w, plot_h = 300, 70, 10, WIDTH - 230, 240
    xs = [x for pts in points.values() for x, _ in pts]
    ys = [y for pts in points.values() for _, y in pts]
    out = [f'<svg class="chart" data-chart="{chart}" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
           f'height="{height}" viewBox="0 0 {WIDTH} {height}">']
    x0, x1 = math.log10(min(xs)), math.log10(max(xs)) if max(xs) > min(xs) else math.log10(min(xs)) + 1
    y0, y1 = math.log10(min(ys)), math.log10(max(ys)) if max(ys) > min(ys) else math.log10(min(ys)) + 1

    def px(x: float) -> float:
        return left + plot_w * (math.log10(x) - x0) / (x1 - x0)

    def py(y: float) -> float:
        return top + plot_h * (1 - (math.log10(y) - y0) / (y1 - y0))

    out.append(f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#444"/>')
    for t in _log_ticks(10 ** x0, 10 ** x1):
        out.append(_text(px(t), top + plot_h + 14, f"{t:,.0f}", "middle"))
    for t in _log_ticks(10 ** y0, 10 ** y1):
        out.append(_text(left - 4, py(t) + 4, _tick_text(t), "end"))
    out.append(_text(left + plot_w / 2, top + plot_h + 30, "partitions in the cluster", "middle"))
    for i, (mv, pts) in enumerate(sorted(points.items())):
        colour = LINE_COLOURS[i % len(LINE_COLOURS)]
        pts = sorted(pts)
        path = " ".join(f"{'M' if k == 0 else 'L'}{_num(px(x))},{_num(py(y))}" for k, (x, y) in enumerate(pts))
        out.append(f'<g class="series" data-mv="{escape(mv)}"><path d="{path}" fill="none" stroke="{colour}" '
                   'stroke-width="1.5"/>')
        out += [f'<circle cx="{_num(px(x))}" cy="{_num(py(y))}" r="3" fill="{colour}"><title>{escape(mv)}: '
                f'{x:,} partitions, {y:,.6g} {unit}</title></circle>' for x, y in pts]
        out.append(_text(left + plot_w + 12, top + 14 + 16 * i, f"— {mv}", extra=f' fill="{colour}"'))
        out.append("</g>")
    out.append(_text(left + plot_w + 12, top + 14 + 16 * len(points) + 8, legend[0]))
    out.append(_text(left + plot_w + 12, top + 14 + 16 * len(points) + 22, legend[1]))
    out.append("</svg>")
    return "\n".join(out)


def sweep_section(sweep_dir: Path, scenario: str) -> str:
    """The sweep's section: outcomes per scenario, and this scenario's time distributions."""
    from kraftsim.pipeline.sweep.engine import TABLE, read_table

    table_dir = Path(sweep_dir) / TABLE
    if not table_dir.is_dir():
        raise KraftsimError(f"--sweep {sweep_dir}: no {TABLE}/ folder (expected the --out folder of kraftsim spark "
                            "sweep)")
    try:
        rows = read_table(table_dir).to_pylist()
    except (OSError, ValueError) as e:  # (pyarrow's ArrowInvalid is a ValueError: a file that is not Parquet)
        raise KraftsimError(f"--sweep {sweep_dir}: not a sweep output ({e})") from None
    mine = [r for r in rows if r["scenario"] == scenario]
    whose = f"the {len(mine)} runs of {scenario}" if mine else f"all {len(rows)} runs ({scenario} is not in the sweep)"
    pool = mine or rows
    parts = ['<section class="sweep">', "<h2>Sweep</h2>",
             f'<p class="muted">{len(rows)} runs of {len({r["scenario"] for r in rows})} scenarios from '
             f"<code>{escape(str(sweep_dir))}</code>; faults "
             f"<code>{escape(', '.join(sorted({r['faults'] or 'none' for r in rows})))}</code>.</p>"]
    if mine:
        passes = sum(r["verdict"] == "pass" for r in mine)
        lo, hi = wilson(passes, len(mine))
        parts.append(f'<p class="sweep-rate">{escape(scenario)}: {passes} of {len(mine)} runs passed '
                     f"(95% Wilson interval {100 * lo:.1f}-{100 * hi:.1f}%).</p>")
    parts += ["<h3>Outcome per scenario</h3>", outcome_svg(rows, scenario),
              f"<h3>Distributions over {escape(whose)}</h3>",
              histogram_svg([r["time_ms"] / 1000 for r in pool if r["time_ms"] is not None],
                            "simulated time of the run", "time", seconds_text),
              histogram_svg([r["fenced_ms_max"] / 1000 for r in pool if r["fenced_ms_max"] is not None],
                            "longest time one broker was fenced", "fenced", seconds_text),
              "</section>"]
    return "\n".join(parts)


def cost_section(cost_dir: Path) -> str:
    """The snapshot-cost job's section: bytes, then kraftsim's write and load seconds, against
    partitions per metadata.version (for each partition count and version, the largest of the
    grid's shapes)."""
    from kraftsim.pipeline.jobs import read_output

    try:
        rows = read_output(cost_dir, "snapshot-cost").to_pylist()
    except (OSError, ValueError) as e:
        raise KraftsimError(f"--snapshot-cost {cost_dir}: not a snapshot-cost output ({e})") from None
    def largest(column: str) -> dict[str, list[tuple[int, float]]]:
        best: dict[str, dict[int, float]] = {}
        for r in rows:
            if r["verdict"] == "ok" and r["partitions"] and r.get(column):
                per = best.setdefault(r["metadata_version_name"], {})
                per[r["partitions"]] = max(per.get(r["partitions"], 0), r[column])
        return {mv: sorted(per.items()) for mv, per in best.items()}

    parts = ['<section class="snapshot-cost">', "<h2>Snapshot cost</h2>",
             f'<p class="muted">{len(rows)} grid points from <code>{escape(str(cost_dir))}</code> '
             "(kraftsim spark snapshot-cost).</p>"]
    sizes = largest("bytes")
    if sizes:
        parts.append(cost_svg(sizes))
        for column, chart, what in (("write_s", "snapshot-write-time", "write"),
                                    ("load_s", "snapshot-load-time", "load")):
            times = largest(column)
            if times:
                parts.append(cost_svg(times, chart, (f"seconds to {what} it in kraftsim", "(slowest shape per count)"),
                                      "s"))
    else:
        parts.append('<p class="muted">no measured point</p>')
    parts.append("</section>")
    return "\n".join(parts)


def report_sections(scenario: str, sweep_dir: Path | None = None, cost_dir: Path | None = None) -> list[str]:
    """The HTML sections `kraftsim scenario run --html` adds for --sweep and --snapshot-cost."""
    out = []
    if sweep_dir is not None:
        out.append(sweep_section(sweep_dir, scenario))
    if cost_dir is not None:
        out.append(cost_section(cost_dir))
    return out
