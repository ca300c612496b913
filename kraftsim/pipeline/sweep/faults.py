"""Seeded fault schedules injected between a scenario's steps, and the reproducer file.

A fault SPEC is `kind=rate` pairs separated by commas, e.g.
`crash=0.2,partition=0.1,loss=0.01`. Kinds:

  crash      per gap between steps: crash one node, let `down` ms pass, start it again
  restart    per gap: stop one node cleanly and start it again
  partition  per gap: cut one node off from the others for `down` ms, then heal
  torn-tail  per gap: crash one node, tear its log's tail (disk-fault torn-tail), start it
  loss       the probability that the network drops a message, for the whole run
             (the simulator's `message_loss`, kraftsim's: Kafka has no such setting)
  down       how long a crash or partition lasts, ms (default 3000)

Gaps are the places before each step. Each fault is a short run of ordinary scenario
ops (kraftsim.scenario.ops: crash / run / start, partition / run / heal, ...) marked with a `note`, so the
faulted scenario is itself a scenario file: `kraftsim scenario run` replays it exactly.
The schedule is drawn from a generator seeded by the scenario's name, the run's seed and
the SPEC, so the same inputs always give the same schedule.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kraftsim.errors import KraftsimError
from kraftsim.scenario import Crash, DiskFault, Heal, Partition, Run, Start, StepBase, Stop, to_table

#: Kinds drawn per gap, in the order they are drawn (the order is part of the schedule).
GAP_KINDS = ("crash", "restart", "partition", "torn-tail")
DEFAULT_DOWN_MS = 3000
MAX_LOSS = 0.5


@dataclass(frozen=True)
class FaultSpec:
    rates: tuple[tuple[str, float], ...] = ()  # (kind, probability per gap), kinds of GAP_KINDS
    loss: float = 0.0
    down_ms: int = DEFAULT_DOWN_MS

    @property
    def empty(self) -> bool:
        return not self.loss and not any(rate for _, rate in self.rates)

    def text(self) -> str:
        """The canonical SPEC (sorted kinds, no zero rates): what the table records."""
        parts = [f"{k}={r:g}" for k, r in sorted(self.rates) if r]
        if self.loss:
            parts.append(f"loss={self.loss:g}")
        if parts and self.down_ms != DEFAULT_DOWN_MS:
            parts.append(f"down={self.down_ms}")
        return ",".join(sorted(parts))


def parse_faults(spec: str | None) -> FaultSpec:
    """A SPEC as given to --faults; a bad one is one error naming the part."""
    if not spec:
        return FaultSpec()
    rates: dict[str, float] = {}
    loss, down = 0.0, DEFAULT_DOWN_MS
    for part in spec.split(","):
        key, sep, value = part.strip().partition("=")
        if not sep:
            raise KraftsimError(f"--faults {part!r}: expected KIND=RATE (kinds: {', '.join(GAP_KINDS)}, loss, down)")
        try:
            number = float(value)
        except ValueError:
            raise KraftsimError(f"--faults {part!r}: {value!r} is not a number") from None
        if key == "down":
            if number < 1 or number != int(number):
                raise KraftsimError(f"--faults {part!r}: down is a whole number of milliseconds, at least 1")
            down = int(number)
        elif key == "loss":
            if not 0 <= number <= MAX_LOSS:
                raise KraftsimError(f"--faults {part!r}: loss is a probability between 0 and {MAX_LOSS}")
            loss = number
        elif key in GAP_KINDS:
            if not 0 <= number <= 1:
                raise KraftsimError(f"--faults {part!r}: a rate is a probability between 0 and 1")
            rates[key] = number
        else:
            raise KraftsimError(f"--faults {part!r}: unknown kind {key!r} (kinds: {', '.join(GAP_KINDS)}, loss, down)")
    return FaultSpec(tuple(sorted(rates.items())), loss, down)


def _rng(name: str, seed: int, spec: FaultSpec) -> random.Random:
    digest = hashlib.sha256(f"{name}\0{seed}\0{spec.text()}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _node_ids(cluster: dict[str, Any]) -> list[int]:
    """Node ids as `cluster create` numbers them; none for a cluster imported `from` a path."""
    if "from" in cluster or isinstance(cluster.get("controllers"), list):
        return []
    total = int(cluster.get("combined", 0)) + int(cluster.get("controllers", 0) or 0) + int(cluster.get("brokers", 0))
    return list(range(1, total + 1))


def _named(step: dict[str, object]) -> list[int]:
    nodes = step.get("nodes")
    return [int(n) for n in nodes] if isinstance(nodes, list) else []


def _fault_steps(kind: str, node: int, ids: list[int], down_ms: int, note: str) -> list[dict[str, object]]:
    """One fault as typed scenario ops, written as the step tables the faulted scenario holds."""
    ops: list[StepBase]
    if kind == "crash":
        ops = [Crash(nodes=[node], note=note), Run(ms=down_ms, note=note), Start(nodes=[node], note=note)]
    elif kind == "restart":
        ops = [Stop(nodes=[node], note=note), Start(nodes=[node], note=note)]
    elif kind == "partition":
        ops = [Partition(groups=[[node], [i for i in ids if i != node]], note=note), Run(ms=down_ms, note=note),
               Heal(note=note)]
    elif kind == "torn-tail":
        ops = [Crash(nodes=[node], note=note), DiskFault(nodes=[node], kind="torn-tail", note=note),
               Start(nodes=[node], note=note)]
    else:
        raise AssertionError(kind)
    return [to_table(op) for op in ops]


def inject(raw: dict[str, Any], seed: int, spec: FaultSpec) -> tuple[dict[str, Any], list[str]]:
    """The scenario (as a TOML table) with a fault schedule drawn for `seed`, and the schedule
    in words. Faults pick among nodes the scenario has not explicitly stopped or crashed at
    that point (a fault on a node that is down for another reason would fail by itself)."""
    out = dict(raw)
    out["seed"] = seed
    if spec.empty:
        return out, []
    rng = _rng(str(raw.get("name", "")), seed, spec)
    ids = _node_ids(raw.get("cluster", {}))
    down: set[int] = set()
    steps: list[dict[str, object]] = []
    schedule: list[str] = []
    for index, step in enumerate(raw.get("step", []), start=1):
        up = [i for i in ids if i not in down]
        for kind, rate in spec.rates:
            if rate and up and rng.random() < rate:
                node = rng.choice(up)
                what = f"before step {index}: {kind} node {node}"
                if kind in ("crash", "partition"):
                    what += f" for {spec.down_ms} ms"
                schedule.append(what)
                steps += _fault_steps(kind, node, ids, spec.down_ms, f"sweep fault: {what}")
        steps.append(step)
        if step.get("op") in ("crash", "stop"):
            down |= set(_named(step)) or set(ids)  # a group selector: assume every node may be down
        elif step.get("op") == "start":
            down -= set(_named(step)) or set(ids)
    out["step"] = steps
    if spec.loss:
        out["config"] = {**raw.get("config", {}), "message_loss": spec.loss}
        schedule.append(f"every message dropped with probability {spec.loss:g}")
    return out, schedule


def absolute_paths(raw: dict[str, Any], base_dir: Path) -> dict[str, Any]:
    """The scenario with its relative `catalog` and `cluster.from` paths made absolute, so a
    reproducer written elsewhere still finds them."""
    out = dict(raw)
    if isinstance(out.get("catalog"), str) and not Path(out["catalog"]).is_absolute():
        out["catalog"] = str((base_dir / out["catalog"]).resolve())
    cluster = out.get("cluster")
    if isinstance(cluster, dict) and isinstance(cluster.get("from"), str) and not Path(cluster["from"]).is_absolute():
        out["cluster"] = {**cluster, "from": str((base_dir / cluster["from"]).resolve())}
    return out


# ------------------------------------------------------------------------------- TOML out

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(k: str) -> str:
    return k if _BARE.match(k) else json.dumps(k)


def _value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + "}"
    raise KraftsimError(f"cannot write {type(v).__name__} as TOML")


def _table(path: str, table: dict[str, Any], lines: list[str]) -> None:
    def is_tables(v: object) -> bool:
        return isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v)

    for k, v in table.items():
        if not isinstance(v, dict) and not is_tables(v):
            lines.append(f"{_key(k)} = {_value(v)}")
    for k, v in table.items():
        sub = f"{path}.{_key(k)}" if path else _key(k)
        if isinstance(v, dict):
            lines += ["", f"[{sub}]"]
            _table(sub, v, lines)
        elif is_tables(v):
            for item in v:
                lines += ["", f"[[{sub}]]"]
                _table(sub, item, lines)


def to_toml(raw: dict[str, object], comments: list[str]) -> str:
    """A scenario table as TOML text, `comments` first (one `# ` line each)."""
    lines = [f"# {c}" for c in comments]
    _table("", raw, lines)
    return "\n".join(lines).strip("\n") + "\n"
