"""What the event simulator tells a person at the command line: the timeline's notable events
as lines (elections, registrations, fencing, starts and stops, refusals with Kafka's
texts, faults), in the words SimCluster uses for the same things. Messages, appends and
commits stay in the timeline (`--timeline FILE`)."""

from __future__ import annotations

from collections.abc import Callable

from kraftsim.sim.types import SimEvent


def _line(e: SimEvent) -> str | None:
    d, n = e.details, e.node
    if e.kind == "format":
        return f"[node {n}] {d['line']}"
    if e.kind == "election" and d.get("phase") == "won":
        return f"Node {n} is the active controller in epoch {d['epoch']}."
    if e.kind == "registered":
        if d.get("controller"):
            return f"Controller {n} registered (Kafka {d['release']})."
        return f"Broker {n} registered with broker epoch {d['broker_epoch']} (Kafka {d['release']})."
    if e.kind == "unfence":
        return f"Broker {n} is unfenced."
    if e.kind == "fence":
        return f"Broker {n} is fenced" + (f": {d['why']}." if d.get("why") else ".")
    if e.kind == "stopping":
        return f"Stopping node {n} ({d['roles']}, Kafka {d['release']})."
    if e.kind == "controlled-shutdown":
        return f"Broker {n} finished its controlled shutdown."
    if e.kind == "start" and not d.get("resumed"):
        return f"Started node {n} ({'+'.join(d['roles'])}) on Kafka {d['release']}."
    if e.kind in ("refused", "failed", "unsupported", "note"):
        return str(d["text"])
    if e.kind == "crash":
        return f"Node {n} crashed; {d['unflushed_offsets_lost']} unflushed offset(s) lost."
    if e.kind == "resign" and d.get("why"):
        return f"Node {n} resigns: {d['why']} ({','.join(map(str, d.get('voters', ())))}), epoch {d['epoch']}."
    if e.kind == "voters":
        return f"Node {n} holds the voter set {','.join(map(str, d['voters']))} (VotersRecord at offset {d['offset']})."
    if e.kind == "resign":
        return f"Node {n} resigns: it heard from no majority of voters (check-quorum), epoch {d['epoch']}."
    if e.kind == "disk-fault":
        return f"Disk fault on node {n}: {d['kind']}."
    if e.kind == "truncate":
        return f"Node {n} truncates its log to offset {d['offset']} ({d['why']})."
    if e.kind == "recovery":
        return f"Node {n} start-up recovery: {d['action']}"
    if e.kind == "snapshot" and d.get("fetched"):
        return f"Node {n} fetched snapshot at offset {d['end_offset']} from node {d['from']}."
    if e.kind == "join":
        return f"Node {n} joins ({d['role']}, Kafka {d['release']}); voters: {','.join(map(str, d['voters']))}."
    if e.kind == "invariant":
        return f"INVARIANT {d['name']} BROKEN: {d['detail']}"
    return None


def narrator(out: Callable[[str], None]) -> Callable[[SimEvent], None]:
    """A timeline subscriber that prints the notable events with `out`."""

    def on_event(e: SimEvent) -> None:
        line = _line(e)
        if line is not None:
            out(line)

    return on_event
