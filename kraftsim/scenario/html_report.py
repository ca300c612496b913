"""`scenario run --html`: one self-contained HTML page per run (no script, no network):
the question and the answer, the verdict, an inline-SVG timeline, the steps with their
outcomes and output, the loss reports, the expectations, the invariants and the final state.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from kraftsim.scenario.markup import escape, script_json
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
details summary{cursor:pointer;color:#1d4f91;font-size:12px} td.time{white-space:nowrap;font-variant-numeric:tabular-nums}
"""


def _value(v: Any) -> str:
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


def _losses(r: ScenarioResult) -> list[str]:
    out = ["<h2>Loss reports</h2>"]
    found = False
    for res in r.steps:
        lr = res.loss_report
        if lr is None:
            continue
        found = True
        head = (f"step {res.index}: metadata.version {lr.current} → {lr.target}: "
                + ("nothing in the image would be lost" if lr.lossless else f"{len(lr.items)} item(s) would be lost"))
        out.append(f'<div class="loss"><b>{escape(head)}</b>{_pre(lr.items)}</div>')
    for ch in r.mv_changes:
        found = True
        kind = "lossless" if ch.lossless else f"lossy, {len(ch.losses)} item(s) dropped"
        head = f"carried out on nodes {', '.join(map(str, ch.nodes))}: {ch.old} → {ch.new}, {kind}"
        out.append(f'<div class="loss"><b>{escape(head)}</b>{_pre(ch.losses)}{_pre(ch.snapshots)}</div>')
    if not found:
        out.append('<p class="muted">no metadata.version downgrade in this scenario</p>')
    return out


def _final(r: ScenarioResult, mv_name: Any) -> list[str]:
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
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(run, extra), encoding="utf-8")
