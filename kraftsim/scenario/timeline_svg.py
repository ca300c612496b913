"""The timeline of a run as inline SVG: one lane per node, the steps as bands, the finalized
metadata.version underneath. Plain SVG elements with classes and data attributes, so that
the page needs no script and tests can count lanes."""

from __future__ import annotations

from typing import Any, Callable

from kraftsim.scenario.markup import escape
from kraftsim.scenario.timeline import Sample, Timeline

WIDTH = 1100
LEFT = 150  # room for lane labels
RIGHT = 20
LANE_H = 26
LANE_GAP = 8
TOP = 34  # room for step numbers
COLORS = {"running": "#3a9d5d", "fenced": "#e0a030", "stopped": "#b8b8b8", "crashed": "#d0453a",
          "failed": "#7a1f1a", "absent": "#ffffff"}
LEGEND = ("running", "fenced", "stopped", "crashed", "failed")
MARK_COLORS = {"leader": "#1d4f91", "election": "#1d4f91", "crash": "#d0453a", "stop": "#555555",
               "start": "#2f8a4f", "snapshot": "#7b3fa0", "disk-fault": "#8a5a00"}


def _state(sample: Sample, node: int) -> tuple[str, str | None]:
    for nid, ns in sample.nodes:
        if nid == node:
            state = "fenced" if ns.state == "running" and ns.fenced else ns.state
            return state, ns.release
    return "absent", None


def _runs(tl: Timeline, end: int, key: Callable[[Sample], Any]) -> list[tuple[int, int, Any]]:
    """Consecutive samples with the same key merged into (start, end, key) spans."""
    runs: list[tuple[int, int, Any]] = []
    for i, smp in enumerate(tl.samples):
        t1 = tl.samples[i + 1].time_ms if i + 1 < len(tl.samples) else end
        k = key(smp)
        if runs and runs[-1][2] == k:
            runs[-1] = (runs[-1][0], t1, k)
        elif t1 > smp.time_ms or i + 1 == len(tl.samples):
            runs.append((smp.time_ms, max(t1, smp.time_ms), k))
    return runs


def timeline_svg(tl: Timeline, mv_name: Callable[[int], str]) -> str:
    nodes = sorted(tl.roles)
    marks = tl.all_marks()
    end = tl.end_ms + max(500, tl.end_ms // 25)  # room to see the final state
    span_w = WIDTH - LEFT - RIGHT

    def x(t: int) -> float:
        return round(LEFT + span_w * t / end, 2)

    mv_y = TOP + len(nodes) * (LANE_H + LANE_GAP) + 6
    height = mv_y + LANE_H + 52
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{WIDTH}" height="{height}" '
           f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label="timeline of the run">',
           '<style>text{font:11px sans-serif;fill:#222}.steplabel{font-weight:bold}.rel{font-size:10px;fill:#fff}'
           '.mvl{font-size:10px}</style>']
    # step bands behind the lanes
    for i, st in enumerate(tl.steps):
        x0, x1 = x(st.start_ms), x(st.end_ms)
        w = max(x1 - x0, 2.0)
        fill = "#eef3fb" if i % 2 == 0 else "#f7f7f7"
        if not st.ok:
            fill = "#fbe3e1"
        out.append(f'<g class="stepband" data-index="{st.index}"><rect x="{x0}" y="{TOP - 18}" width="{w:.2f}" '
                   f'height="{mv_y + LANE_H - TOP + 18}" fill="{fill}"><title>step {st.index}: {escape(st.op)}'
                   f'</title></rect><text class="steplabel" x="{x0 + 2}" y="{TOP - 6}">{st.index}</text></g>')
    # lanes
    for li, node in enumerate(nodes):
        y = TOP + li * (LANE_H + LANE_GAP)
        roles = "+".join(tl.roles[node])
        out.append(f'<g class="lane" data-node="{node}"><text x="4" y="{y + LANE_H * 0.65:.1f}">node {node} '
                   f'({escape(roles)})</text>')
        prev_release = None
        for t0, t1, (state, release, leads) in _runs(tl, end, lambda smp: (*_state(smp, node), smp.leader == node)):
            if state == "absent":
                continue
            x0, w = x(t0), max(x(t1) - x(t0), 1.0)
            out.append(f'<rect class="span {state}" data-state="{state}" x="{x0}" y="{y}" width="{w:.2f}" '
                       f'height="{LANE_H}" fill="{COLORS[state]}"><title>node {node}: {state}, Kafka '
                       f'{escape(release or "")}, {t0 / 1000:.1f}-{t1 / 1000:.1f} s</title></rect>')
            if release and release != prev_release and w > 24:
                out.append(f'<text class="rel" x="{x0 + 3}" y="{y + LANE_H * 0.65:.1f}">{escape(release)}</text>')
            prev_release = release
            if leads:
                out.append(f'<rect class="leader" x="{x0}" y="{y - 3}" width="{w:.2f}" height="3" fill="#1d4f91">'
                           f'<title>node {node} is the active controller</title></rect>')
        for m in marks:
            if m.node == node:
                cx, fill = x(m.time_ms), MARK_COLORS.get(m.kind, "#111111")
                out.append(f'<circle class="mark {escape(m.kind)}" cx="{cx}" cy="{y + LANE_H / 2}" r="4" '
                           f'fill="{fill}" stroke="#fff" stroke-width="1"><title>{escape(m.label)} at '
                           f'{m.time_ms / 1000:.1f} s</title></circle>')
        out.append('</g>')
    # finalized metadata.version
    out.append(f'<g class="mvlane"><text x="4" y="{mv_y + LANE_H * 0.65:.1f}">metadata.version</text>')
    for t0, t1, level in _runs(tl, end, lambda smp: smp.metadata_version):
        x0, w = x(t0), max(x(t1) - x(t0), 1.0)
        shade = "#dfe8f5" if level else "#f3f3f3"
        out.append(f'<rect class="mv" data-level="{level}" x="{x0}" y="{mv_y}" width="{w:.2f}" '
                   f'height="{LANE_H}" fill="{shade}" stroke="#9bb0cc" stroke-width="0.5"><title>finalized '
                   f'metadata.version {escape(mv_name(level))} ({level})</title></rect>')
        out.append(f'<text class="mvl" x="{x0 + 3}" y="{mv_y + LANE_H * 0.65:.1f}">{escape(mv_name(level))}</text>')
    out.append('</g>')
    # cluster-wide marks: feature changes on the metadata.version lane, others as dashed lines
    for m in marks:
        if m.node is None and m.kind == "feature":
            cx, cy = x(m.time_ms), mv_y + LANE_H / 2
            out.append(f'<path class="mark feature" d="M{cx} {cy - 6}L{cx + 6} {cy}L{cx} {cy + 6}L{cx - 6} {cy}Z" '
                       f'fill="#c77d00"><title>{escape(m.label)} at {m.time_ms / 1000:.1f} s</title></path>')
        elif m.node is None:
            cx = x(m.time_ms)
            out.append(f'<line class="mark {escape(m.kind)}" x1="{cx}" x2="{cx}" y1="{TOP - 4}" y2="{mv_y + LANE_H}" '
                       f'stroke="#7b3fa0" stroke-dasharray="3,2"><title>{escape(m.label)} at {m.time_ms} ms</title></line>')
    # axis and legend
    ay = mv_y + LANE_H + 16
    out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{ay - 10}" y2="{ay - 10}" stroke="#555"/>')
    for k in range(6):
        t = end * k // 5
        out.append(f'<text x="{x(t) - 10}" y="{ay + 2}">{t / 1000:.1f}s</text>')
    lx = LEFT
    for name in LEGEND:
        out.append(f'<rect x="{lx}" y="{ay + 12}" width="12" height="10" fill="{COLORS[name]}"/>'
                   f'<text x="{lx + 16}" y="{ay + 21}">{name}</text>')
        lx += 90
    out.append(f'<rect x="{lx}" y="{ay + 16}" width="20" height="3" fill="#1d4f91"/>'
               f'<text x="{lx + 24}" y="{ay + 21}">active controller</text>')
    lx += 130
    for kind, label in (("leader", "new leader"), ("snapshot", "snapshot")):
        out.append(f'<circle cx="{lx + 5}" cy="{ay + 17}" r="4" fill="{MARK_COLORS[kind]}"/>'
                   f'<text x="{lx + 14}" y="{ay + 21}">{label}</text>')
        lx += 85
    out.append(f'<path d="M{lx + 5} {ay + 11}L{lx + 11} {ay + 17}L{lx + 5} {ay + 23}L{lx - 1} {ay + 17}Z" '
               f'fill="#c77d00"/><text x="{lx + 16}" y="{ay + 21}">feature change</text>')
    out.append('</svg>')
    return "\n".join(out)
