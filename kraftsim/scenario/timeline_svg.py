"""The timeline of a run as inline SVG, to be read in one look: the steps as bands with their
labels in rows that never overlap, one lane per node (its state and release, the active
controller's bar, marks, and a strip for the partitions and dropped messages it saw), lanes
for the active controller (gaps with none in red), the network's partition groups, the
metadata lost by a downgrade and the finalized metadata.version, and a time axis at round
simulated times. Plain SVG elements with classes and data attributes (every span carries its
kind, node and time range in milliseconds), so that the page needs no script and tests can
check what is drawn."""

from __future__ import annotations

from typing import Callable, Sequence

from kraftsim.scenario.markup import escape
from kraftsim.scenario.timeline import STATE_SPANS, Mark, Span, Timeline, node_state, nodes_text, runs

WIDTH = 1100
LEFT = 150  # room for lane labels
RIGHT = 40  # room for the last tick's label
LANE_H = 36  # a node's lane: leader bar, state, network strip
LANE_GAP = 6
ROW_H = 14  # a row of step labels
MAX_FULL_ROWS = 3  # rows for whole step labels; a label that fits in none is its number alone
BAND_H = 18  # the cluster's lanes (active controller, network, metadata lost)
MV_H = 24
MAX_TICKS = 8
COLORS = {"running": "#3a9d5d", "fenced": "#e0a030", "stopped": "#b8b8b8", "crashed": "#d0453a",
          "failed": "#7a1f1a", "absent": "#ffffff"}
LEGEND = ("running", "fenced", "stopped", "crashed", "failed")
MARK_COLORS = {"leader": "#1d4f91", "election": "#1d4f91", "crash": "#d0453a", "stop": "#555555",
               "start": "#2f8a4f", "snapshot": "#7b3fa0", "disk-fault": "#8a5a00", "feature": "#c77d00"}
PARTITION = "#9b72c4"
DROPS = "#5a1e12"
NO_LEADER = "#d0453a"
LOSS = "#c0392b"
#: Width of one character in em, over-estimated for the common sans-serif faces (DejaVu Sans,
#: Liberation Sans, Arial), so that labels placed by it never touch.
EM_NORMAL, EM_BOLD = 0.62, 0.70


def text_width(text: str, size: float = 11, bold: bool = False) -> float:
    """An upper estimate of the width of `text` in pixels (the page has no script to measure)."""
    return len(text) * size * (EM_BOLD if bold else EM_NORMAL)


def tick_step(end_ms: int, most: int = MAX_TICKS) -> int:
    """The smallest round step (1, 2 or 5 times a power of ten milliseconds) giving at most
    `most` intervals over `end_ms`."""
    step = 1
    while True:
        for k in (1, 2, 5):
            if end_ms <= most * step * k:
                return step * k
        step *= 10


def seconds(ms: int) -> str:
    """Simulated time as the CLI prints it (`+12.345 s`)."""
    from kraftsim.sim import elapsed_text  # loaded by then: the run made this timeline

    return elapsed_text(ms)


def _range(t0: int, t1: int) -> str:
    return f"{seconds(t0)} to {seconds(t1)}"


def _span_attrs(s: Span) -> str:
    node = "" if s.node is None else f' data-node="{s.node}"'
    return f'data-kind="{s.kind}"{node} data-start-ms="{s.start_ms}" data-end-ms="{s.end_ms}"'


def label_rows(tl: Timeline, x: Callable[[int], float], describe: Callable[[int], str]
                ) -> tuple[list[tuple[int, float, str, str]], int]:
    """Each step's label (index, x, text, full text) and the number of rows: a whole label
    goes in the first of MAX_FULL_ROWS rows where it fits after the label before it, else its
    number alone in the first row where that fits, else in a new row."""
    ends: list[float] = []
    placed: list[tuple[int, float, str, str]] = []
    for st in tl.steps:
        full = f"{st.index} {st.op}"
        for text, limit in ((full, MAX_FULL_ROWS), (str(st.index), None)):
            w = text_width(text, bold=True)
            lx = round(min(x(st.start_ms) + 2, WIDTH - 2 - w), 2)
            row = next((r for r, e in enumerate(ends[:limit]) if lx >= e + 4), None)
            if row is None and (limit is None or len(ends) < limit):
                row = len(ends)
                ends.append(0.0)
            if row is not None:
                ends[row] = lx + w
                placed.append((row, lx, text, f"step {st.index}: {describe(st.index)}"))
                break
    return placed, len(ends)


def timeline_svg(tl: Timeline, mv_name: Callable[[int], str], describe: Callable[[int], str] | None = None,
                 losses: Sequence[tuple[int, int, int, str]] = ()) -> str:
    """The SVG. `describe(index)` is a step's full text (its label's tooltip); `losses` are the
    steps that dropped metadata as (index, start_ms, end_ms, what was lost)."""
    describe = describe or (lambda i: next((s.op for s in tl.steps if s.index == i), ""))
    nodes = sorted(tl.roles)
    marks = tl.all_marks()
    end = tl.end_ms + max(20, tl.end_ms // 10)  # room to see the final state
    span_w = WIDTH - LEFT - RIGHT
    spans = tl.spans(end)

    def x(t: int) -> float:
        return round(LEFT + span_w * t / end, 2)

    labels, rows = label_rows(tl, x, describe)
    top = 6 + rows * ROW_H + 8
    lanes_end = top + len(nodes) * (LANE_H + LANE_GAP)
    leader_y = lanes_end + 2
    net_y = leader_y + BAND_H + LANE_GAP
    loss_y = net_y + BAND_H + LANE_GAP
    mv_y = loss_y + (BAND_H + LANE_GAP if losses else 0)
    axis_y = mv_y + MV_H + 8
    out = ["<svg>",  # (its height is known once the legend is laid out)
           '<style>text{font:11px sans-serif;fill:#222}.steplabel{font-weight:bold}.rel{font-size:10px;fill:#fff}'
           '.mvl,.band{font-size:10px}.band.light{fill:#fff}.tick{fill:#444}</style>']
    # step bands behind everything, their labels in rows above the lanes
    for i, st in enumerate(tl.steps):
        x0 = x(st.start_ms)
        fill = "#fbe3e1" if not st.ok else "#eef3fb" if i % 2 == 0 else "#f7f7f7"
        out.append(f'<rect class="stepband" data-index="{st.index}" x="{x0}" y="{top - 4}" '
                   f'width="{max(x(st.end_ms) - x0, 2.0):.2f}" height="{mv_y + MV_H - top + 4}" fill="{fill}">'
                   f'<title>step {st.index}: {escape(describe(st.index))}, {_range(st.start_ms, st.end_ms)}'
                   f'</title></rect>')
    for row, lx, text, full in labels:
        label_index = text.split(" ", 1)[0]
        out.append(f'<text class="steplabel" data-index="{label_index}" x="{lx}" y="{6 + (row + 1) * ROW_H - 3}">'
                   f'{escape(text)}<title>{escape(full)}</title></text>')
    # grid at the ticks
    step = tick_step(end)
    ticks = list(range(0, end + 1, step))
    out += [f'<line class="grid" x1="{x(t)}" x2="{x(t)}" y1="{top - 4}" y2="{axis_y}" stroke="#d8d8d8" '
            'stroke-width="0.6"/>' for t in ticks]
    by_node: dict[int | None, list[Span]] = {}
    for s in spans:
        by_node.setdefault(s.node, []).append(s)
    for li, node in enumerate(nodes):
        out += _lane(tl, node, top + li * (LANE_H + LANE_GAP), end, x, by_node.get(node, []),
                     [m for m in marks if m.node == node])
    out += _leader_lane(tl, leader_y, end, x, by_node.get(None, []))
    out += _network_lane(tl, net_y, end, x)
    if losses:
        out.append(f'<text x="4" y="{loss_y + 13}">metadata lost</text>')
        for index, t0, t1, what in losses:
            x0, w = x(t0), max(x(t1) - x(t0), 3.0)
            text = f"step {index}: {what}"
            after = x0 + w + 4 + text_width(text, 10) <= WIDTH  # else before the span, ending at it
            where = f'x="{round(x0 + w + 4, 2)}"' if after else f'x="{round(x0 - 4, 2)}" text-anchor="end"'
            out.append(f'<g class="span metadata-loss" data-kind="metadata-loss" data-step="{index}" '
                       f'data-start-ms="{t0}" data-end-ms="{t1}"><rect x="{x0}" y="{loss_y}" width="{w:.2f}" '
                       f'height="{BAND_H}" fill="{LOSS}"/><text class="band" {where} y="{loss_y + 13}">'
                       f'{escape(text)}</text><title>{escape(text)}, {_range(t0, t1)}</title></g>')
    out += _mv_lane(tl, mv_y, end, x, mv_name, marks)
    out += _axis(axis_y, ticks, x)
    legend, bottom = _legend(axis_y + 22)
    out += legend
    out.append('</svg>')
    height = bottom + 6
    out[0] = (f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{WIDTH}" height="{height}" '
              f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label="timeline of the run">')
    return "\n".join(out)


def _lane(tl: Timeline, node: int, y: int, end: int, x: Callable[[int], float], spans: list[Span],
          marks: list[Mark]) -> list[str]:
    """One node: the leader bar (y..y+3), the state with its release (y+4..y+26), marks on the
    state's top edge, and the network strip (y+28..y+35): partitions, drops at its foot."""
    out = [f'<g class="lane" data-node="{node}"><text x="4" y="{y + 19}">node {node} '
           f'({escape("+".join(tl.roles[node]))})</text>']
    sy, sh = y + 4, 22
    prev_release = None
    for t0, t1, (state, release) in runs(tl.samples, end, lambda smp: node_state(smp, node)):
        if state == "absent":
            continue
        x0, w = x(t0), max(x(t1) - x(t0), 1.0)
        span = f' span" data-kind="{state}' if state in STATE_SPANS else ""  # (Timeline.spans' state spans)
        out.append(f'<rect class="state {state}{span}" data-state="{state}" data-node="{node}" data-start-ms="{t0}" '
                   f'data-end-ms="{t1}" x="{x0}" y="{sy}" width="{w:.2f}" height="{sh}" fill="{COLORS[state]}">'
                   f'<title>node {node}: {state}, Kafka {escape(release or "")}, {_range(t0, t1)}</title></rect>')
        if release and release != prev_release and w > text_width(release, 10) + 6:
            out.append(f'<text class="rel" x="{round(x0 + 3, 2)}" y="{sy + 15}">{escape(release)}</text>')
            prev_release = release
    for t0, t1, leads in runs(tl.samples, end, lambda smp: smp.leader == node):
        if leads:
            out.append(f'<rect class="leader" x="{x(t0)}" y="{y}" width="{max(x(t1) - x(t0), 1.0):.2f}" height="3" '
                       f'fill="#1d4f91"><title>node {node} is the active controller, {_range(t0, t1)}</title></rect>')
    for s in spans:
        x0, w = x(s.start_ms), max(x(s.end_ms) - x(s.start_ms), 2.0)
        if s.kind == "partition":  # the side with most nodes drawn lighter: the others are the ones cut off
            light = ' fill-opacity="0.4"' if len(tl.roles) - len(s.peers) > len(s.peers) else ""
            out.append(f'<rect class="span partition" {_span_attrs(s)} data-peers="{",".join(map(str, s.peers))}" '
                       f'x="{x0}" y="{y + 28}" width="{w:.2f}" height="7" fill="{PARTITION}"{light}><title>'
                       f'{escape(s.label)}, {_range(s.start_ms, s.end_ms)}</title></rect>')
    for s in spans:  # drops over the partitions that caused most of them
        if s.kind == "drops":
            x0, w = x(s.start_ms), max(x(s.end_ms) - x(s.start_ms), 2.0)
            out.append(f'<rect class="span drops" {_span_attrs(s)} data-count="{s.count}" x="{x0}" y="{y + 32}" '
                       f'width="{w:.2f}" height="3" fill="{DROPS}"><title>{escape(s.label)}, '
                       f'{_range(s.start_ms, s.end_ms)}</title></rect>')
    out += _marks(marks, x, sy)
    out.append('</g>')
    return out


def _marks(marks: list[Mark], x: Callable[[int], float], y: int) -> list[str]:
    """Marks as dots on the state's top edge (clear of the release name); marks closer than a
    dot's width are one dot whose tooltip lists them all."""
    groups: list[tuple[float, list[Mark]]] = []
    for m in marks:
        cx = x(m.time_ms)
        if groups and cx - groups[-1][0] < 7:
            groups[-1][1].append(m)
        else:
            groups.append((cx, [m]))
    out = []
    for cx, ms in groups:
        first = ms[0]
        kinds = " ".join(sorted({escape(m.kind) for m in ms}))
        text = "\n".join(f"{escape(m.label)} at {seconds(m.time_ms)}" for m in ms)
        out.append(f'<circle class="mark {kinds}" cx="{cx}" cy="{y}" r="3.5" '
                   f'fill="{MARK_COLORS.get(first.kind, "#111111")}" stroke="#fff" stroke-width="1">'
                   f'<title>{text}</title></circle>')
    return out


def _leader_lane(tl: Timeline, y: int, end: int, x: Callable[[int], float], spans: list[Span]) -> list[str]:
    out = [f'<g class="leaderlane"><text x="4" y="{y + 13}">active controller</text>']
    for t0, t1, leader in runs(tl.samples, end, lambda smp: smp.leader):
        x0, w = x(t0), max(x(t1) - x(t0), 1.0)
        if leader is None:
            continue
        out.append(f'<rect class="band" x="{x0}" y="{y}" width="{w:.2f}" height="{BAND_H}" fill="#dfe8f5">'
                   f'<title>node {leader} is the active controller, {_range(t0, t1)}</title></rect>')
        if w > text_width(f"node {leader}", 10) + 6:
            out.append(f'<text class="band" x="{round(x0 + 3, 2)}" y="{y + 13}">node {leader}</text>')
    for s in spans:
        if s.kind == "no-leader":
            x0, w = x(s.start_ms), max(x(s.end_ms) - x(s.start_ms), 2.0)
            out.append(f'<rect class="span no-leader" {_span_attrs(s)} x="{x0}" y="{y}" width="{w:.2f}" '
                       f'height="{BAND_H}" fill="{NO_LEADER}"><title>{escape(s.label)}, '
                       f'{_range(s.start_ms, s.end_ms)}</title></rect>')
            if w > text_width("no leader", 10) + 6:
                out.append(f'<text class="band light" x="{round(x0 + 3, 2)}" y="{y + 13}">no leader</text>')
    out.append('</g>')
    return out


def _network_lane(tl: Timeline, y: int, end: int, x: Callable[[int], float]) -> list[str]:
    out = [f'<g class="netlane"><text x="4" y="{y + 13}">network</text>']
    for t0, t1, groups in tl.partitions(end):
        x0, w = x(t0), max(x(t1) - x(t0), 2.0)
        text = " | ".join("{" + ",".join(map(str, g)) + "}" for g in groups)
        whole = "; ".join(nodes_text(g) for g in groups)
        out.append(f'<rect class="span network-partition" data-kind="network-partition" data-start-ms="{t0}" '
                   f'data-end-ms="{t1}" x="{x0}" y="{y}" width="{w:.2f}" height="{BAND_H}" fill="{PARTITION}">'
                   f'<title>partitioned: {whole}; {_range(t0, t1)}</title></rect>')
        label = f"partitioned {text}"
        if w > text_width(label, 10) + 6:
            out.append(f'<text class="band light" x="{round(x0 + 3, 2)}" y="{y + 13}">{escape(label)}</text>')
        elif w > text_width(text, 10) + 6:
            out.append(f'<text class="band light" x="{round(x0 + 3, 2)}" y="{y + 13}">{escape(text)}</text>')
    out.append('</g>')
    return out


def _mv_lane(tl: Timeline, y: int, end: int, x: Callable[[int], float], mv_name: Callable[[int], str],
             marks: list[Mark]) -> list[str]:
    out = [f'<g class="mvlane"><text x="4" y="{y + 16}">metadata.version</text>']
    for t0, t1, level in runs(tl.samples, end, lambda smp: smp.metadata_version):
        x0, w = x(t0), max(x(t1) - x(t0), 1.0)
        out.append(f'<rect class="mv" data-level="{level}" data-start-ms="{t0}" data-end-ms="{t1}" x="{x0}" '
                   f'y="{y}" width="{w:.2f}" height="{MV_H}" fill="{"#dfe8f5" if level else "#f3f3f3"}" '
                   f'stroke="#9bb0cc" stroke-width="0.5"><title>finalized metadata.version '
                   f'{escape(mv_name(level))} ({level}), {_range(t0, t1)}</title></rect>')
        if w > text_width(mv_name(level), 10) + 6:
            out.append(f'<text class="mvl" x="{round(x0 + 3, 2)}" y="{y + 16}">{escape(mv_name(level))}</text>')
    out.append('</g>')
    for m in marks:  # feature changes on the metadata.version lane's top edge, others as dashed lines
        cx = x(m.time_ms)
        if m.node is None and m.kind == "feature":
            out.append(f'<path class="mark feature" d="M{cx} {y - 5}L{cx + 5} {y}L{cx} {y + 5}L{cx - 5} {y}Z" '
                       f'fill="#c77d00"><title>{escape(m.label)} at {seconds(m.time_ms)}</title></path>')
        elif m.node is None and m.kind not in ("partition", "heal"):  # those are the network lane's spans
            out.append(f'<line class="mark {escape(m.kind)}" x1="{cx}" x2="{cx}" y1="{y - 4}" y2="{y + MV_H}" '
                       f'stroke="#7b3fa0" stroke-dasharray="3,2"><title>{escape(m.label)} at {seconds(m.time_ms)}'
                       f'</title></line>')
    return out


def _axis(y: int, ticks: list[int], x: Callable[[int], float]) -> list[str]:
    out = [f'<g class="axis"><line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y}" y2="{y}" stroke="#555"/>']
    for t in ticks:
        out.append(f'<line x1="{x(t)}" x2="{x(t)}" y1="{y}" y2="{y + 4}" stroke="#555"/>'
                   f'<text class="tick" x="{x(t)}" y="{y + 15}" text-anchor="middle">{seconds(t)}</text>')
    out.append('</g>')
    return out


#: The legend's second row after the states: (shape, colour, label); shapes "box" (a swatch),
#: "bar" (a thin line), "strip" (a network strip), "dot" (a mark), "diamond" (a feature change).
KEYS = (("bar", "#1d4f91", "active controller"), ("box", NO_LEADER, "no leader"),
        ("strip", PARTITION, "cut off (partition)"), ("bar", DROPS, "messages dropped"),
        ("box", LOSS, "metadata lost"), ("dot", MARK_COLORS["leader"], "new leader"),
        ("dot", MARK_COLORS["crash"], "crash"), ("dot", MARK_COLORS["start"], "start"),
        ("dot", MARK_COLORS["snapshot"], "snapshot"), ("diamond", MARK_COLORS["feature"], "feature change"))


def _key(shape: str, color: str, lx: float, y: int) -> str:
    if shape == "dot":
        return f'<circle cx="{lx + 7}" cy="{y + 5}" r="4" fill="{color}"/>'
    if shape == "diamond":
        return f'<path d="M{lx + 7} {y}L{lx + 12} {y + 5}L{lx + 7} {y + 10}L{lx + 2} {y + 5}Z" fill="{color}"/>'
    top, h = {"box": (0, 10), "bar": (4, 3), "strip": (2, 7)}[shape]
    return f'<rect x="{lx}" y="{y + top}" width="14" height="{h}" fill="{color}"/>'


def _legend(y: int) -> tuple[list[str], int]:
    """The keys in rows as wide as the drawing, and the bottom of the last row."""
    out = ['<g class="legend">']
    lx, row_y = float(LEFT), y
    for shape, color, label in [("box", COLORS[name], name) for name in LEGEND] + list(KEYS):
        w = 18 + text_width(label) + 14
        if lx + w > WIDTH - RIGHT:
            lx, row_y = float(LEFT), row_y + 18
        out.append(f'{_key(shape, color, lx, row_y)}<text x="{round(lx + 18, 2)}" y="{row_y + 9}">{label}</text>')
        lx = round(lx + w, 2)
    out.append('</g>')
    return out, row_y + 12
