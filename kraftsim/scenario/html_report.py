"""`scenario run --html`: one self-contained HTML page per run (no script, no network):
the question and the answer, the verdict, an inline-SVG timeline, the steps with their
outcomes and output, the loss reports, the expectations, the invariants and the final state.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from kraftsim.image import group_losses, largest_topics, named_items, split_loss_text
from kraftsim.scenario.markup import escape, script_json
from kraftsim.storage.fileio import atomic_write
from kraftsim.scenario.results import ScenarioResult, result_json
from kraftsim.scenario.runner import RunOutcome
from kraftsim.scenario.timeline import Timeline
from kraftsim.scenario.text import MAX_OUTPUT_LINES, describe_step, outcome
from kraftsim.scenario.timeline_svg import seconds, timeline_svg

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1b1b1b;max-width:1160px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid #ddd}
.verdict{display:inline-block;padding:2px 10px;border-radius:4px;color:#fff;font-weight:bold}
.pass{background:#2f8a4f}.fail{background:#c0392b}
.qa{background:#f5f7fa;border-left:4px solid #1d4f91;padding:8px 14px;margin:12px 0}
.qa p{margin:4px 0} table{border-collapse:collapse;width:100%} td,th{border-bottom:1px solid #e4e4e4;
padding:4px 8px;text-align:left;vertical-align:top} th{background:#fafafa}
tr.bad td{background:#fdecea} pre{margin:2px 0;white-space:pre-wrap;font-size:12px}
.muted{color:#666;font-size:12px} code{font-size:12px} h3{font-size:15px;margin:16px 0 6px}
details summary{cursor:pointer;color:#1d4f91;font-size:12px}
table.losses{width:auto;margin:4px 0} td.count{text-align:right;font-variant-numeric:tabular-nums} .loss{margin:10px 0} td.time{white-space:nowrap;font-variant-numeric:tabular-nums}
"""


def _value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "none"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return str(v)


def _pre(lines: list[str]) -> str:
    """Lines as preformatted text; past MAX_OUTPUT_LINES (as the CLI shows them) the rest is
    collapsed under a summary that counts them."""
    if len(lines) <= MAX_OUTPUT_LINES:
        return f"<pre>{escape(chr(10).join(lines))}</pre>" if lines else ""
    shown, rest = lines[:MAX_OUTPUT_LINES], lines[MAX_OUTPUT_LINES:]
    return (f"<pre>{escape(chr(10).join(shown))}</pre><details><summary>{len(rest):,} more line(s)</summary>"
            f"<pre>{escape(chr(10).join(rest))}</pre></details>")


def render(run: RunOutcome, extra: Sequence[str] = ()) -> str:
    """The page; `extra` are whole HTML sections put after the final state (the sweep's and
    the snapshot-cost job's plots, made by kraftsim.pipeline.sweep.report)."""
    s, r, tl = run.scenario, run.result, run.timeline
    names = {mv.level: mv.version for mv in s.catalog.all_metadata_versions}

    def mv_name(level: int) -> str:
        return names.get(level, str(level)) if level else "none"

    verdict = "PASS" if r.passed else "FAIL"
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(s.name)}: {verdict}</title><style>{CSS}</style></head><body>",
        f'<h1>{escape(s.name)} <span class="verdict {verdict.lower()}" id="verdict">{verdict}</span></h1>',
        f'<div class="muted">seed {r.seed} · policy {escape(s.policy)} · {len(r.steps)} step(s) · '
        f'{escape(seconds(r.time_ms))} simulated · digest <code>{escape(r.digest)}</code></div>',
    ]
    if s.description:
        parts.append(f"<p>{escape(s.description)}</p>")
    if r.setup_error:
        parts.append(f'<p class="bad"><b>Setup failed:</b> {escape(r.setup_error)}</p>')
    h = s.header
    if h.question or h.answer:
        parts.append('<div class="qa">')
        parts += [f'<p class="{k}"><b>{k.capitalize()}:</b> {escape(v)}</p>'
                  for k, v in (("question", h.question), ("answer", h.answer), ("source", h.source)) if v]
        parts.append("</div>")
    texts = {res.index: describe_step(step) for step, res in zip(s.steps, r.steps)}
    parts += ["<h2>Timeline</h2>", timeline_svg(tl, mv_name, lambda i: texts.get(i, ""), _dropped(r, tl))]
    parts += ["<h2>Steps</h2>", '<table class="steps"><tr><th>#</th><th>time</th><th>step</th><th>outcome</th>'
              "<th>details</th></tr>"]
    for step, res in zip(s.steps, r.steps):
        details = []
        if res.output:
            details.append(_pre(res.output))
        if res.error:
            details.append(_pre([res.error]))
        if res.expected_error is not None:
            details.append(f'<div class="muted">expected an error containing: {escape(res.expected_error)}</div>')
        if step.note:
            details.append(f'<div class="muted">{escape(step.note)}</div>')
        parts.append(f'<tr class="step{"" if res.ok else " bad"}" data-index="{res.index}"><td>{res.index}</td>'
                     f'<td class="time">{"" if res.skipped else seconds(res.time_ms)}</td>'
                     f"<td>{escape(describe_step(step))}</td><td>{escape(outcome(res))}</td>"
                     f"<td>{''.join(details)}</td></tr>")
    parts.append("</table>")
    parts += _losses(r)
    parts += ["<h2>Expectations</h2>", '<table class="expect"><tr><th>key</th><th>expected</th><th>actual</th>'
              "<th></th></tr>"]
    parts += [f'<tr class="{"" if e.ok else "bad"}"><td>{escape(e.key)}{"" if e.step is None else f" (after step {e.step})"}</td><td>{escape(_value(e.expected))}</td>'
              f'<td>{escape(_value(e.actual))}</td><td>{"ok" if e.ok else "FAILED"}</td></tr>' for e in r.expect]
    if not r.expect:
        parts.append('<tr><td colspan="4" class="muted">no [expect] table</td></tr>')
    parts += ["</table>", "<h2>Invariants</h2>", '<table class="invariants">']
    parts += [f'<tr class="{"" if i.ok else "bad"}"><td>{escape(i.name)}</td><td>{"held" if i.ok else "BROKEN"}</td>'
              f'<td>{escape(i.detail or "")}</td></tr>' for i in r.invariants]
    parts.append("</table>")
    parts += _final(r, mv_name)
    parts += extra
    parts.append(f'<script type="application/json" id="result">{script_json(result_json(r))}</script>')
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _dropped(r: ScenarioResult, tl: Timeline) -> list[tuple[int, int, int, str]]:
    """The steps that lowered metadata.version and dropped metadata: (index, start, end, what)."""
    starts = {st.index: (st.start_ms, st.end_ms) for st in tl.steps}
    out = []
    for res in r.steps:
        lr = res.loss_report
        if lr is None or lr.lossless or res.error is not None or res.skipped or res.index not in starts:
            continue
        t0, t1 = starts[res.index]
        out.append((res.index, t0, t1, f"{len(lr.items):,} item(s) dropped, {lr.current} → {lr.target}"))
    return out


def _loss_table(items: list[str]) -> str:
    """Items grouped by kind and topic with counts (the grouping `downgrade-report` prints),
    then every item collapsed under a summary that counts them."""
    groups = group_losses(split_loss_text(x) for x in items)
    rows = ['<table class="losses"><tr><th>kind</th><th>topic (or items)</th><th>items</th></tr>']
    for kind in dict.fromkeys(g.kind for g in groups):
        mine = [g for g in groups if g.kind == kind]
        others = [g for g in mine if g.topic is None]
        topics = [g for g in mine if g.topic is not None]
        shown = largest_topics(topics)
        cells = [(f'<span class="muted">{escape(", ".join(named_items(g.entities)))}</span>', g.count) for g in others]
        cells += [(escape(g.topic or ""), g.count) for g in shown]
        if len(shown) < len(topics):
            rest = [g for g in topics if g not in shown]
            cells.append((f"and {len(rest):,} more topic(s)", sum(g.count for g in rest)))
        total = sum(g.count for g in mine)
        head = (f'<td rowspan="{len(cells)}">{escape(kind)}<div class="muted">{total:,} in all</div></td>'
                if len(cells) > 1 else f"<td>{escape(kind)}</td>")
        for n, (where, count) in enumerate(cells):
            rows.append(f"<tr>{head if n == 0 else ''}<td>{where}</td><td class=\"count\">{count:,}</td></tr>")
    rows.append("</table>")
    return "".join(rows) + (f"<details><summary>all {len(items):,} item(s)</summary>"
                            f"<pre>{escape(chr(10).join(items))}</pre></details>")


def _losses(r: ScenarioResult) -> list[str]:
    """Each downgrade step's prediction, and each change the loaders carried out, as a table;
    a list already shown (same versions, same items) is named, not repeated."""
    out = ["<h2>Loss reports</h2>"]
    shown: dict[tuple[str | None, str, tuple[str, ...]], str] = {}

    def body(key: tuple[str | None, str, tuple[str, ...]], where: str) -> str:
        if not key[2]:
            return ""
        if key in shown:
            return f'<p class="muted">the same {len(key[2]):,} item(s) as {shown[key]}</p>'
        shown[key] = where
        return _loss_table(list(key[2]))

    for res in r.steps:
        lr = res.loss_report
        if lr is None:
            continue
        head = (f"step {res.index}: metadata.version {lr.current} → {lr.target}: "
                + ("nothing in the image would be lost" if lr.lossless else f"{len(lr.items):,} item(s) would be lost"))
        text = body((lr.current, lr.target, tuple(lr.items)), f"step {res.index} predicted")
        out.append(f'<div class="loss" data-step="{res.index}"><b>{escape(head)}</b>{text}</div>')
    for ch in r.mv_changes:
        kind = "lossless" if ch.lossless else f"lossy, {len(ch.losses):,} item(s) dropped"
        head = f"carried out on nodes {', '.join(map(str, ch.nodes))}: {ch.old} → {ch.new}, {kind}"
        text = body((ch.old, ch.new, tuple(ch.losses)), "the change carried out")
        snaps = (f"<details><summary>{len(ch.snapshots):,} snapshot(s) written</summary>"
                 f"<pre>{escape(chr(10).join(ch.snapshots))}</pre></details>" if ch.snapshots else "")
        out.append(f'<div class="loss change"><b>{escape(head)}</b>{text}{snaps}</div>')
    if len(out) == 1:
        out.append('<p class="muted">no metadata.version downgrade in this scenario</p>')
    return out


def _final(r: ScenarioResult, mv_name: Callable[[int], str]) -> list[str]:
    f = r.final
    out = ["<h2>Final state</h2>",
           f"<p>metadata.version <b>{escape(mv_name(f.metadata_version.level))}</b> ({f.metadata_version.level}); "
           f"active controller: {f.leader if f.leader is not None else 'none'}; finalized: "
           f"{escape(', '.join(f'{k}={v}' for k, v in f.finalized.items()) or 'none')}</p>",
           '<table class="nodes"><tr><th>node</th><th>roles</th><th>release</th><th>state</th><th>fenced</th>'
           "<th>detail</th></tr>"]
    for n in f.nodes:
        out.append(f'<tr class="{"" if n.state == "running" else "bad"}"><td>{n.id}</td><td>{escape(", ".join(n.roles))}'
                   f"</td><td>{escape(n.release)}</td><td>{escape(n.state)}</td><td>{_value(n.fenced)}</td>"
                   f'<td>{escape(n.detail or "")}</td></tr>')
    out.append("</table>")
    return out


def write_report(run: RunOutcome, path: Path, extra: Sequence[str] = ()) -> None:
    """The report at `path`, whole or not at all (a full disk leaves no half page behind)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, render(run, extra).encode("utf-8"), fsync=False)
