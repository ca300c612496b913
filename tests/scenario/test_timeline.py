"""The timeline's spans as data (partitions with who was cut off from whom, crashes, no-leader
gaps, dropped messages) from real runs of shipped scenarios and from the simulator's events,
and the drawing's layout rules: step labels that never overlap, round ticks."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from kraftsim.scenario import load_scenario
from kraftsim.scenario.html_report import render
from kraftsim.scenario.results import result_json
from kraftsim.scenario.runner import run_scenario
from kraftsim.scenario.text import fenced_line
from kraftsim.scenario.validate import parse_scenario
from kraftsim.scenario.timeline import NodeSample, Sample, Span, StepSpan, Timeline
from kraftsim.scenario.timeline_svg import LEFT, RIGHT, WIDTH, label_rows, text_width, tick_step

from tests.scenario.helpers import SUITE, scenario_text


def _spans(tl: Timeline, kind: str, node: int | None = None) -> list[Span]:
    return [s for s in tl.spans(tl.end_ms) if s.kind == kind and (node is None or s.node == node)]


def test_a_partition_is_a_span_per_node_naming_the_other_side() -> None:
    run = run_scenario(load_scenario(SUITE / "partition-during-features-update.toml"))
    tl = run.timeline
    cut, heal = tl.steps[0], tl.steps[3]
    assert (cut.op, heal.op) == ("partition", "heal")
    (one,) = _spans(tl, "partition", 1)
    assert (one.start_ms, one.end_ms, one.peers) == (cut.start_ms, heal.start_ms, (2, 3, 4, 5, 6))
    assert one.label == "node 1 cut off from nodes 2, 3, 4, 5, 6"
    (five,) = _spans(tl, "partition", 5)
    assert five.peers == (1,) and (five.start_ms, five.end_ms) == (one.start_ms, one.end_ms)
    assert tl.partitions(tl.end_ms) == [(cut.start_ms, heal.start_ms, ((1,), (2, 3, 4, 5, 6)))]
    drops = _spans(tl, "drops", 1)  # node 1's fetches and votes go nowhere while it is cut off
    assert drops and sum(d.count for d in drops) > 10
    assert all(cut.start_ms <= d.start_ms and d.end_ms <= heal.start_ms + 1 for d in drops)
    again = run_scenario(load_scenario(SUITE / "partition-during-features-update.toml"))
    assert render(again) == render(run)  # one seed, one page


def test_a_crashed_leader_is_a_crash_span_and_a_gap_with_no_leader() -> None:
    run = run_scenario(load_scenario(SUITE / "leader-crash-mid-roll.toml"))
    tl = run.timeline
    crash, wait, start = tl.steps[1], tl.steps[2], tl.steps[3]
    (victim,) = crash.nodes or [s.node for s in _spans(tl, "crashed")]
    (down,) = _spans(tl, "crashed", victim)
    assert down.start_ms == crash.start_ms and start.start_ms <= down.end_ms <= start.end_ms
    gaps = [g for g in _spans(tl, "no-leader") if g.start_ms == crash.start_ms]
    assert len(gaps) == 1 and gaps[0].end_ms <= wait.end_ms  # a new leader before the wait ends
    assert gaps[0].end_ms - gaps[0].start_ms >= 1000  # an election timeout, at least
    assert not _spans(tl, "partition")


def _event(t: int, what: str, node: int | None = None, **details: Any) -> SimpleNamespace:
    return SimpleNamespace(time_ms=t, kind=what, node=node, details=details)


class _Sim:
    """What Timeline.sample reads of a simulation: three running nodes, node 1 leading."""

    now_ms = 1000

    def nodes(self) -> list[SimpleNamespace]:
        return [SimpleNamespace(id=i, roles=["controller"], state="running", fenced=None, release="3.9.0")
                for i in (1, 2, 3)]

    def leader(self) -> int:
        return 1

    def metadata_version(self) -> int:
        return 21

    def finalized(self) -> dict[str, int]:
        return {}


def test_an_injected_partition_and_its_drops_come_from_the_events() -> None:
    tl, sim = Timeline(origin_ms=1000), _Sim()
    tl.sample(sim)
    for e in (_event(1500, "inject", kind="partition", nodes=[3]), _event(1600, "drop", 3, to=1, why="partitioned"),
              _event(1700, "drop", 1, to=3, why="partitioned"), _event(9000, "drop", 2, to=3, why="lost"),
              _event(9500, "inject", kind="heal", nodes=[])):
        tl.on_event(sim, e)
    spans = tl.spans(10_000)
    parts = {s.node: (s.start_ms, s.end_ms, s.peers) for s in spans if s.kind == "partition"}
    assert parts == {1: (500, 8500, (3,)), 2: (500, 8500, (3,)), 3: (500, 8500, (1, 2))}
    drops = {(s.node, s.start_ms, s.count) for s in spans if s.kind == "drops"}
    assert drops == {(1, 600, 2), (3, 600, 2), (2, 8000, 1), (3, 8000, 1)}  # two runs for node 3: 7.3 s apart
    assert "1 lost" in next(s.label for s in spans if s.kind == "drops" and s.node == 2)


def test_no_leader_and_state_spans_come_from_the_samples() -> None:
    def sample(t: int, leader: int | None, state: str) -> Sample:
        return Sample(t, ((1, NodeSample("running", None, "4.0.0")), (2, NodeSample(state, None, "4.0.0"))), leader, 21)

    tl = Timeline(origin_ms=0, samples=[sample(0, 2, "running"), sample(100, None, "crashed"), sample(2100, 1, "crashed"),
                                        sample(5000, 1, "running")], roles={1: ("controller",), 2: ("controller",)})
    spans = tl.spans(6000)
    assert [(s.kind, s.node, s.start_ms, s.end_ms) for s in spans] == [("no-leader", None, 100, 2100),
                                                                        ("crashed", 2, 100, 5000)]


@given(st.integers(min_value=1, max_value=10**9))
def test_ticks_are_round_and_at_most_eight(end: int) -> None:
    step = tick_step(end)
    mantissa = step // 10 ** (len(str(step)) - 1)
    assert mantissa in (1, 2, 5) and str(step).rstrip("0") == str(mantissa)
    assert end <= 8 * step  # at most eight intervals
    smaller = {1: step // 2, 2: step // 2, 5: step * 2 // 5}[mantissa]
    assert smaller == 0 or end > 8 * smaller  # and the smallest round step that gives so few


@given(st.lists(st.tuples(st.integers(0, 60_000), st.sampled_from(["run", "roll", "features-downgrade", "crash",
                                                                   "partition", "add-controller"])),
                min_size=1, max_size=40))
def test_step_labels_never_overlap_and_stay_on_the_drawing(starts: list[tuple[int, str]]) -> None:
    tl = Timeline(origin_ms=0, steps=[StepSpan(i, op, t, t, True, ()) for i, (t, op) in enumerate(sorted(starts), 1)])
    end = max(t for t, _ in starts) + 100

    def x(t: int) -> float:
        return round(LEFT + (WIDTH - LEFT - RIGHT) * t / end, 2)

    placed, rows = label_rows(tl, x, str)
    assert sorted(int(text.split()[0]) for _, _, text, _ in placed) == list(range(1, len(starts) + 1))
    boxes = sorted((row, lx, lx + text_width(text, bold=True)) for row, lx, text, _ in placed)
    for (r1, _, a1), (r2, b0, _) in zip(boxes, boxes[1:]):
        assert r1 != r2 or a1 + 4 <= b0 + 1e-6
    assert all(0 <= a0 and a1 <= WIDTH for _, a0, a1 in boxes) and rows == 1 + max(b[0] for b in boxes)


#: Broker 3 stopped for 30 s, then broker 2 crashed (fenced only once its session expires)
#: and started again with 12 s more of simulated time, and a last wait.
STOP_AND_CRASH = """
[[step]]
op = "stop"
nodes = [3]
[[step]]
op = "run"
ms = 30000
[[step]]
op = "start"
nodes = [3]
[[step]]
op = "crash"
nodes = [2]
[[step]]
op = "run"
ms = 12000
[[step]]
op = "start"
nodes = [2]
[[step]]
op = "wait"
[expect]
has_leader = true
"""


def test_fenced_time_per_broker_is_what_the_controller_s_fence_and_unfence_events_span() -> None:
    events: list[tuple[int, int, str]] = []
    run = run_scenario(parse_scenario(scenario_text(STOP_AND_CRASH), "t.toml"),
                       on_event=lambda e: events.append((e.time_ms, e.node, e.kind))
                       if e.kind in ("fence", "unfence") else None)
    assert run.result.passed
    spans: dict[int, int] = {2: 0, 3: 0}
    since: dict[int, int] = {}
    for at, node, kind in events:
        if kind == "fence":
            since.setdefault(node, at)
        elif node in since:
            spans[node] += at - since.pop(node)
    assert not since  # (both unfenced again by the end)
    fenced = run.timeline.fenced_ms()
    assert fenced == spans
    assert 30000 <= fenced[3] < 31000  # stopped for 30 s, unfenced once registered again
    assert 0 < fenced[2] < 12000  # fenced after its session expired, not at the crash
    assert fenced_line(fenced) == (f"  brokers fenced: 2 of 2, longest {fenced[3] / 1000:.3f} s (broker 3), "
                                   f"{(fenced[2] + fenced[3]) / 1000:.3f} s in all")
    # The --json result carries the same figures, broker by broker.
    assert json.loads(result_json(run.result))["fenced"] == [{"broker": 2, "ms": fenced[2]}, {"broker": 3, "ms": fenced[3]}]


def test_fenced_line_names_the_longest_lowest_id_first_and_says_none() -> None:
    assert fenced_line({}) is None  # (no brokers)
    assert fenced_line({4: 0, 5: 0}) == "  brokers fenced: none"
    assert fenced_line({4: 1500, 5: 1500, 6: 0}) == "  brokers fenced: 2 of 3, longest 1.500 s (broker 4), 3.000 s in all"
