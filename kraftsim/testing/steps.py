"""Steps: one scenario op (contract 4) as data, carried out on a Simulation, and the
scenario file a sequence of them makes.

The state machine never calls the simulator directly: each rule builds a `Step`, runs it
here and records it with its outcome, so a failing run can be written out as a scenario
file that `kraftsim scenario run` replays op for op. A step the cluster refused is written
with `expect_error` holding the refusal's text, which is what the runner checks it against.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

if TYPE_CHECKING:  # the scenario runner is imported when a step runs: a served cluster records steps first
    from kraftsim.sim import Simulation

#: Keys of each op in the order they are written (contract 4's table).
OP_KEYS: dict[str, tuple[str, ...]] = {
    "create-topics": ("count", "partitions", "replication_factor", "names", "configs", "assignments"),
    "delete-topics": ("names",),
    "roll": ("release", "nodes"),
    "add-node": ("role", "release", "id"),
    "features-upgrade": ("metadata", "release_version", "features", "unsafe", "dry_run"),
    "features-downgrade": ("metadata", "release_version", "features", "unsafe", "dry_run"),
    "features-disable": ("features", "dry_run"),
    "crash": ("nodes",),
    "stop": ("nodes",),
    "start": ("nodes", "release"),
    "partition": ("groups",),
    "heal": (),
    "disk-fault": ("nodes", "kind"),
    "snapshot": ("nodes",),
    "run": ("ms",),
    "wait": ("timeout_ms",),
    "unregister-broker": ("id",),
    "add-controller": ("id", "release"),
    "remove-controller": ("id",),
    "alter-broker-config": ("broker", "configs", "delete"),
    "unregister-controller": ("id",),
    "create-partitions": ("names", "count", "assignments"),
    "alter-topic-config": ("topic", "configs", "delete"),
    "elect-leaders": ("election_type", "partitions"),
    "alter-client-quotas": ("user", "client_id", "ip", "default", "quotas", "delete"),
    "alter-scram-credentials": ("user", "credentials", "delete"),
    "reassign-partitions": ("partitions", "allow_replication_factor_change"),
    "create-acl": ("principal", "operation", "resource_name", "resource_type", "pattern_type", "host", "permission",
                   "admin_client"),
    "alter-client-metrics": ("name", "configs", "delete"),
    "alter-group-config": ("group", "configs", "delete"),
    "delete-acls": ("resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission"),
}


@dataclass
class Step:
    """One op with its keys, and once run, what came of it."""

    op: str
    args: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    output: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.op not in OP_KEYS:
            raise ValueError(f"unknown op {self.op!r}; known ops: {', '.join(OP_KEYS)}")
        unknown = sorted(set(self.args) - set(OP_KEYS[self.op]))
        if unknown:
            raise ValueError(f"op {self.op} takes no key {unknown[0]!r}")

    def describe(self) -> str:
        keys = ", ".join(f"{k}={self.args[k]!r}" for k in OP_KEYS[self.op] if self.args.get(k) is not None)
        return f"{self.op}({keys})"


def run_step(sim: Simulation, step: Step) -> list[str]:
    """Carry out `step` as the scenario runner does (kraftsim.scenario.apply, the same lines);
    a refusal raises SimError (Kafka's text). A key whose value is None is not given, as in the
    scenario file the step is written to."""
    from kraftsim.scenario import apply_op as apply, make

    return apply(sim, make(step.op, {k: v for k, v in step.args.items() if v is not None}))


# ---------------------------------------------------------------------------- TOML out

def toml_value(v: object) -> str:
    """A TOML value for the types a scenario uses (strings, ints, floats, bools, lists, tables)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)  # (Python's shortest round-trip form is a TOML float, inf and nan included)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)  # a JSON string is a valid TOML basic string
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {toml_value(x)}" for k, x in v.items()) + " }" if v else "{}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    raise TypeError(f"no TOML form for {type(v).__name__}")


def _comment(text: str) -> list[str]:
    return ["# " + line if line else "#" for line in text.splitlines()] or ["#"]


@dataclass
class ClusterShape:
    """`[cluster]` of the scenario: what `Simulation.create` was given."""

    controllers: int
    brokers: int
    release: str
    release_version: str | None = None
    features: dict[str, int] = field(default_factory=dict)
    combined: int = 0
    dynamic_quorum: bool = False
    #: The nodes' server configs (`[cluster] configs`, `cluster create --config`).
    configs: dict[str, str] = field(default_factory=dict)


def scenario_text(*, name: str, shape: ClusterShape, steps: Sequence[Step], seed: int, policy: str,
                  catalog: str | None = None, header: Mapping[str, str] | None = None,
                  expect: Mapping[str, object] | None = None, description: str = "") -> str:
    """A contract-4 scenario file for `steps` (refused ones carry their text as `expect_error`)."""
    lines: list[str] = []
    for label, text in (header or {}).items():
        lines += _comment(f"{label}: {text}")
    if lines:
        lines.append("")
    lines.append(f"name = {toml_value(name)}")
    if description:
        lines.append(f"description = {toml_value(description)}")
    lines.append(f"seed = {seed}")
    lines.append(f"policy = {toml_value(policy)}")
    if catalog is not None:
        lines.append(f"catalog = {toml_value(catalog)}")
    lines += ["", "[cluster]", f"controllers = {shape.controllers}", f"brokers = {shape.brokers}"]
    if shape.combined:
        lines.append(f"combined = {shape.combined}")
    lines.append(f"release = {toml_value(shape.release)}")
    if shape.release_version:
        lines.append(f"release_version = {toml_value(shape.release_version)}")
    if shape.features:
        lines.append(f"features = {toml_value(dict(sorted(shape.features.items())))}")
    if shape.dynamic_quorum:
        lines.append("dynamic_quorum = true")
    if shape.configs:
        lines.append(f"configs = {toml_value(dict(sorted(shape.configs.items())))}")
    raised = _limits_needed(steps)
    if raised:
        lines += ["", "[limits]"] + [f"{k} = {v}" for k, v in raised.items()]
    for step in steps:
        lines += ["", "[[step]]", f"op = {toml_value(step.op)}"]
        for key in OP_KEYS[step.op]:
            value = step.args.get(key)
            if value is not None:
                lines.append(f"{key} = {toml_value(value)}")
        if step.error is not None:
            lines.append(f"expect_error = {toml_value(step.error)}")
    if expect:
        lines += ["", "[expect]"]
        lines += [f"{k} = {toml_value(v)}" for k, v in expect.items() if v is not None]
    return "\n".join(lines) + "\n"


def _limits_needed(steps: Sequence[Step]) -> dict[str, int]:
    """The `[limits]` a written file needs beyond the defaults, so that what a session or a
    machine did (an hour-long served session, a long reproducer) replays instead of being refused."""
    from kraftsim.scenario import Limits

    default = Limits()
    need = {"step_ms": max([int(s.args.get("ms") or s.args.get("timeout_ms") or 0) for s in steps], default=0),
            "steps": len(steps)}
    created = [(len(s.args["names"]) if s.args.get("names") is not None else int(s.args.get("count") or 1),
                int(s.args.get("partitions") or 1))
               for s in steps if s.op == "create-topics"]  # counted as the validator counts them (names first)
    need["topics"] = sum(count for count, _ in created)
    need["partitions"] = sum(count * partitions for count, partitions in created)
    return {k: v for k, v in need.items() if v > getattr(default, k)}


def write_scenario(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
