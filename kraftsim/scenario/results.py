"""A scenario's result: contract 5 of DESIGN.md, plus a few keys kraftsim adds at the end of
each object (`time_ms`, `output`, `loss_report`, `mv_changes`, `fenced`, `detail`).
The result's `fenced` is how long each broker was fenced; a node's, whether it is at the end.

Field order is the contract's and is the order of the JSON keys; the JSON line is
msgspec's encoding of these structs, so one run gives one byte sequence.
"""

from __future__ import annotations

import hashlib

import msgspec


class LossReportOut(msgspec.Struct):
    """What lowering metadata.version from `current` to `target` drops from the active
    controller's image, computed before the step runs (under either policy)."""

    current: str | None
    target: str
    lossless: bool
    items: list[str]  # "<kind>: <entity>" per dropped item


class StepResult(msgspec.Struct):
    index: int  # 1 for the first [[step]]
    op: str
    ok: bool  # the step did what the file says: succeeded, or failed with the expected text
    error: str | None  # the error the step met (Kafka's text), None when it succeeded
    expected_error: str | None
    time_ms: int = 0  # simulated time at the end of the step, since the cluster was created
    output: list[str] = []  # what the operation printed (kafka-features' lines, created topics)
    skipped: bool = False  # not run: an earlier step failed
    loss_report: LossReportOut | None = None


class ExpectResult(msgspec.Struct):
    key: str
    expected: object
    actual: object
    ok: bool
    step: int | None = None  # checked right after this step ([step.expect]); None: at the end


class InvariantOut(msgspec.Struct):
    name: str
    ok: bool
    detail: str | None


class MvName(msgspec.Struct):
    level: int
    name: str | None


class NodeOut(msgspec.Struct):
    id: int
    roles: list[str]
    release: str
    state: str
    fenced: bool | None = None
    detail: str | None = None


class FinalState(msgspec.Struct):
    metadata_version: MvName
    finalized: dict[str, int]
    leader: int | None
    nodes: list[NodeOut]


class MvChangeOut(msgspec.Struct):
    """A metadata.version change the nodes' loaders carried out (policy kip-778)."""

    old: str | None
    new: str
    lossless: bool
    nodes: list[int]
    losses: list[str]
    snapshots: list[str]


class FencedOut(msgspec.Struct):
    """Simulated ms one broker spent fenced during the steps (scenario.timeline's
    `Timeline.fenced_ms`): what a roll or a fault costs it in leaderships."""

    broker: int
    ms: int


class ScenarioResult(msgspec.Struct):
    name: str
    seed: int
    passed: bool
    steps: list[StepResult]
    expect: list[ExpectResult]
    invariants: list[InvariantOut]
    final: FinalState
    digest: str
    time_ms: int = 0
    mv_changes: list[MvChangeOut] = []
    #: Every broker the run saw, in id order.
    fenced: list[FencedOut] = []
    #: Why the new cluster did not reach a stable state before the first step (the run fails).
    setup_error: str | None = None


def result_json(result: ScenarioResult) -> str:
    """The contract-5 line (without the newline)."""
    return msgspec.json.encode(result).decode("utf-8")


def final_digest(final: FinalState, image_digests: dict[int, str | None]) -> str:
    """sha256 over the final state and every node's image digest, in node id order."""
    payload = msgspec.json.encode({"final": final, "images": [[i, image_digests[i]] for i in sorted(image_digests)]})
    return "sha256:" + hashlib.sha256(payload).hexdigest()
