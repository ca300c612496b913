"""What a report draws, gathered while a scenario runs: the node states over time, marks
(elections, starts and stops, feature changes, snapshots, partitions), the network's
partitions and dropped messages, and the steps; and from them the spans an operator looks
for (`Timeline.spans`): who was cut off from whom, crashed, stopped and fenced nodes,
intervals with no active controller, messages dropped.

The simulator's events (`Simulation.subscribe`) give the marks and tell when to look at
the nodes again; the runner also looks before and after every step, so the lanes are
right even when the simulator reports few events. An event is reported before the change
it names is made (a leader resigning), so the nodes are looked at again on the next event.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, TypeVar

if TYPE_CHECKING:
    from kraftsim.sim import SimEvent, Simulation

K = TypeVar("K")

#: Event kinds after which the node states are sampled again.
STATE_KINDS = frozenset({"note", "crash", "stop", "start", "fence", "unfence", "leader", "election", "feature",
                         "snapshot", "partition", "heal", "disk-fault", "resign", "inject", "failed", "stopping"})
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


#: Drops of one node less than this apart are one span of message loss.
DROP_GAP_MS = 2000
#: The node states drawn as spans (a fenced broker is running and fenced).
STATE_SPANS = ("crashed", "stopped", "failed", "fenced")


@dataclass(frozen=True)
class NetChange:
    """The network's partition groups from `time_ms` on, as the simulator was told them
    (`()` when healed); nodes in no group form one more group, "everyone else"."""

    time_ms: int
    groups: tuple[tuple[int, ...], ...]


@dataclass
class DropRun:
    """Messages to or from one node dropped close together (DROP_GAP_MS)."""

    start_ms: int
    last_ms: int
    count: int = 0
    why: dict[str, int] = field(default_factory=dict)  # "partitioned" | "lost" -> count


@dataclass(frozen=True)
class Span:
    """An interval an operator looks for. `kind` is "partition" (the node is cut off from
    `peers`), a state of STATE_SPANS, "no-leader" or "drops" (`count` messages to or from the
    node dropped); `node` is None for the cluster as a whole."""

    kind: str
    node: int | None
    start_ms: int
    end_ms: int
    label: str
    peers: tuple[int, ...] = ()
    count: int = 0


@dataclass
class Timeline:
    """Times are relative to the moment the cluster was created."""

    origin_ms: int
    samples: list[Sample] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    steps: list[StepSpan] = field(default_factory=list)
    roles: dict[int, tuple[str, ...]] = field(default_factory=dict)
    network: list[NetChange] = field(default_factory=list)
    drops: dict[int, list[DropRun]] = field(default_factory=dict)
    _stale: bool = False  # a state event was seen: look at the nodes again on the next event

    def sample(self, sim: Simulation) -> None:
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

    def on_event(self, sim: Simulation, event: SimEvent) -> None:
        kind = event.kind
        if self._stale:
            self._stale = False
            self.sample(sim)
        if kind == "drop":
            self._dropped(event)
            return
        if kind in MARK_KINDS:
            self.marks.append(Mark(event.time_ms - self.origin_ms, event.node, kind, _label(event)))
        if kind in ("partition", "heal", "inject"):
            self._network(event)
        if kind in STATE_KINDS:
            self.sample(sim)
            self._stale = True

    def _network(self, event: SimEvent) -> None:
        details = event.details or {}
        kind = details.get("kind", event.kind) if event.kind == "inject" else event.kind
        if kind == "partition":
            listed = details.get("groups") if event.kind == "partition" else [details.get("nodes") or []]
            groups = tuple(tuple(sorted(int(n) for n in g)) for g in listed or [] if g)
        elif kind == "heal":
            groups = ()
        else:
            return
        self.network.append(NetChange(event.time_ms - self.origin_ms, groups))

    def _dropped(self, event: SimEvent) -> None:
        details = event.details or {}
        t = event.time_ms - self.origin_ms
        why = str(details.get("why", "lost"))
        for node in {event.node, details.get("to")}:
            if not isinstance(node, int):
                continue
            runs = self.drops.setdefault(node, [])
            if not runs or t - runs[-1].last_ms > DROP_GAP_MS:
                runs.append(DropRun(t, t))
            run = runs[-1]
            run.last_ms, run.count = t, run.count + 1
            run.why[why] = run.why.get(why, 0) + 1

    def spans(self, end_ms: int) -> list[Span]:
        """Every span of the run in time order (then cluster-wide first, then by node); one
        still open at the end of the run ends at `end_ms`."""
        nodes = sorted(self.roles)
        out = self._partition_spans(nodes, end_ms) + self._state_spans(nodes, end_ms)
        for node in sorted(self.drops):
            for run in self.drops[node]:
                why = ", ".join(f"{n} {w}" for w, n in sorted(run.why.items()))
                out.append(Span("drops", node, run.start_ms, max(run.last_ms, run.start_ms + 1),
                                f"{run.count} message(s) to or from node {node} dropped ({why})", count=run.count))
        return sorted(out, key=lambda s: (s.start_ms, -1 if s.node is None else s.node, s.kind, s.end_ms))

    def partitions(self, end_ms: int) -> list[tuple[int, int, tuple[tuple[int, ...], ...]]]:
        """(start, end, groups) per partition of the network, "everyone else" as a group of its
        own at the end."""
        nodes = sorted(self.roles)
        out = []
        for i, change in enumerate(self.network):
            if not change.groups:
                continue
            t1 = self.network[i + 1].time_ms if i + 1 < len(self.network) else end_ms
            listed = {n for g in change.groups for n in g}
            rest = tuple(n for n in nodes if n not in listed)
            out.append((change.time_ms, t1, change.groups + ((rest,) if rest else ())))
        return out

    def _partition_spans(self, nodes: list[int], end_ms: int) -> list[Span]:
        out = []
        for t0, t1, groups in self.partitions(end_ms):
            for group in groups:
                peers = tuple(n for n in nodes if n not in group)
                out += [Span("partition", node, t0, t1, f"node {node} cut off from {nodes_text(peers)}", peers=peers)
                        for node in group]
        return out

    def _state_spans(self, nodes: list[int], end_ms: int) -> list[Span]:
        out = []
        for node in nodes:
            def state_of(smp: Sample, n: int = node) -> str:
                return node_state(smp, n)[0]
            for t0, t1, state in runs(self.samples, end_ms, state_of):
                if state in STATE_SPANS:
                    what = "fenced (running, not unfenced by the controller)" if state == "fenced" else state
                    out.append(Span(state, node, t0, t1, f"node {node} {what}"))
        for t0, t1, leader in runs(self.samples, end_ms, lambda smp: smp.leader):
            if leader is None:
                out.append(Span("no-leader", None, t0, t1, "no active controller"))
        return out

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

    def fenced_ms(self) -> dict[int, int]:
        """Simulated ms each broker spent fenced in the active controller's view, so given
        no leaderships (from a controlled shutdown or an expired session until its next
        incarnation is unfenced), from the samples up to the run's end; every broker the run
        saw, in id order."""
        out: dict[int, int] = {n: 0 for n, roles in sorted(self.roles.items()) if "broker" in roles}
        samples, end = self.samples, self.end_ms
        for i, s in enumerate(samples):
            until = samples[i + 1].time_ms if i + 1 < len(samples) else end
            for node, ns in s.nodes:
                if node in out and ns.fenced:
                    out[node] += max(0, until - s.time_ms)
        return out


def node_state(sample: Sample, node: int) -> tuple[str, str | None]:
    """A node's state in a sample as drawn ("fenced" for a running fenced broker, "absent"
    before it joined) and its release."""
    for nid, ns in sample.nodes:
        if nid == node:
            state = "fenced" if ns.state == "running" and ns.fenced else ns.state
            return state, ns.release
    return "absent", None


def runs(samples: list[Sample], end: int, key: Callable[[Sample], K]) -> list[tuple[int, int, K]]:
    """Consecutive samples with the same key merged into (start, end, key) spans."""
    out: list[tuple[int, int, K]] = []
    for i, smp in enumerate(samples):
        t1 = samples[i + 1].time_ms if i + 1 < len(samples) else end
        k = key(smp)
        if out and out[-1][2] == k:
            out[-1] = (out[-1][0], t1, k)
        elif t1 > smp.time_ms or i + 1 == len(samples):
            out.append((smp.time_ms, max(t1, smp.time_ms), k))
    return out


def nodes_text(ids: tuple[int, ...]) -> str:
    return ("node " if len(ids) == 1 else "nodes ") + ", ".join(map(str, ids)) if ids else "no node"


def _differs(a: Sample, b: Sample) -> bool:
    return (a.nodes, a.leader, a.metadata_version, a.finalized) != (b.nodes, b.leader, b.metadata_version, b.finalized)


def _label(event: SimEvent) -> str:
    details = event.details or {}
    text = details.get("text") or details.get("reason") or ""
    parts = [event.kind] + [f"{k}={details[k]}" for k in sorted(details) if k not in ("text", "reason")][:4]
    return " ".join(str(p) for p in parts) + (f": {text}" if text else "")
