"""What a report draws, gathered while a scenario runs: the node states over time, marks
(elections, starts and stops, feature changes, snapshots, partitions) and the steps.

The simulator's events (`Simulation.subscribe`) give the marks and tell when to look at
the nodes again; the runner also looks before and after every step, so the lanes are
right even when the simulator reports few events.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Event kinds after which the node states are sampled again.
STATE_KINDS = frozenset({"note", "crash", "stop", "start", "fence", "unfence", "leader", "election", "feature",
                         "snapshot", "partition", "heal", "disk-fault"})
#: Event kinds drawn as marks on the timeline.
MARK_KINDS = frozenset({"crash", "stop", "start", "leader", "election", "feature", "snapshot", "partition",
                        "heal", "disk-fault"})


@dataclass(frozen=True)
class NodeSample:
    state: str  # running | stopped | crashed | failed
    fenced: bool | None
    release: str


@dataclass(frozen=True)
class Sample:
    time_ms: int
    nodes: tuple[tuple[int, NodeSample], ...]
    leader: int | None
    metadata_version: int
    finalized: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class Mark:
    time_ms: int
    node: int | None
    kind: str
    label: str


@dataclass(frozen=True)
class StepSpan:
    index: int
    op: str
    start_ms: int
    end_ms: int
    ok: bool
    nodes: tuple[int, ...]  # the nodes the step acts on (a roll's lane band)


@dataclass
class Timeline:
    """Times are relative to the moment the cluster was created."""

    origin_ms: int
    samples: list[Sample] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    steps: list[StepSpan] = field(default_factory=list)
    roles: dict[int, tuple[str, ...]] = field(default_factory=dict)

    def sample(self, sim: Any) -> None:
        infos = sim.nodes()
        for n in infos:
            self.roles[n.id] = tuple(n.roles)
        s = Sample(sim.now_ms - self.origin_ms,
                   tuple((n.id, NodeSample(n.state, n.fenced, n.release)) for n in infos),
                   sim.leader(), sim.metadata_version(), tuple(sorted(sim.finalized().items())))
        if self.samples and self.samples[-1].time_ms == s.time_ms:
            self.samples[-1] = s
        elif not self.samples or _differs(self.samples[-1], s):
            self.samples.append(s)

    def on_event(self, sim: Any, event: Any) -> None:
        if event.kind in MARK_KINDS:
            self.marks.append(Mark(event.time_ms - self.origin_ms, event.node, event.kind, _label(event)))
        if event.kind in STATE_KINDS:
            self.sample(sim)

    def all_marks(self) -> list[Mark]:
        """The simulator's marks, plus, for kinds it did not report, marks read off the samples
        (new active controllers, feature changes) and the steps (partitions, heals, snapshots)."""
        reported = {m.kind for m in self.marks}
        out = list(self.marks)
        pairs = list(zip(self.samples, self.samples[1:]))
        if not reported & {"leader", "election"}:
            out += [Mark(b.time_ms, b.leader, "leader", f"node {b.leader} becomes the active controller")
                    for a, b in pairs if b.leader != a.leader and b.leader is not None]
        if "feature" not in reported:
            for a, b in pairs:
                old, new = dict(a.finalized), dict(b.finalized)
                changes = [f"{k} {old.get(k, 0)} -> {new.get(k, 0)}" for k in sorted(set(old) | set(new))
                           if old.get(k, 0) != new.get(k, 0)]
                if changes:
                    out.append(Mark(b.time_ms, None, "feature", "; ".join(changes)))
        for st in self.steps:
            if st.op in ("partition", "heal") and st.op not in reported and st.ok:
                out.append(Mark(st.start_ms, None, st.op, f"step {st.index}: {st.op}"))
            if st.op == "snapshot" and "snapshot" not in reported and st.ok:
                out += [Mark(st.end_ms, n, "snapshot", f"step {st.index}: snapshot of node {n}") for n in st.nodes]
        return sorted(out, key=lambda m: (m.time_ms, -1 if m.node is None else m.node, m.kind, m.label))

    @property
    def end_ms(self) -> int:
        ends = [s.time_ms for s in self.samples] + [m.time_ms for m in self.marks] + [s.end_ms for s in self.steps]
        return max(ends, default=0)


def _differs(a: Sample, b: Sample) -> bool:
    return (a.nodes, a.leader, a.metadata_version, a.finalized) != (b.nodes, b.leader, b.metadata_version, b.finalized)


def _label(event: Any) -> str:
    details = event.details or {}
    text = details.get("text") or details.get("reason") or ""
    parts = [event.kind] + [f"{k}={details[k]}" for k in sorted(details) if k not in ("text", "reason")][:4]
    return " ".join(str(p) for p in parts) + (f": {text}" if text else "")
