"""What `cluster.json` of the event simulator holds (format 2), and reading it back.

Written by Simulation through a temporary file, fsynced and renamed; the nodes' own files
(logs, snapshots, quorum-state) are the truth about raft, this file about the cluster
(identity, seed, clock, voters, configuration, node releases and states, the network's
partition, and what the invariants carry from one command to the next).
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from kraftsim import jsoninput
from kraftsim.sim.node.format import CLUSTER_STATE_FILE
from kraftsim.sim.types import (
    EVENTS_STATE_FORMAT, RUNNING, TICKS_STATE_FORMAT, InvariantResult, NotAClusterError, SimConfig, SimError,
    holds_no_cluster, unsupported_state_format,
)

STATE_FILE = CLUSTER_STATE_FILE
STATE_FORMAT = EVENTS_STATE_FORMAT


class SavedNode(msgspec.Struct, kw_only=True):
    """One node as cluster.json keeps it."""

    id: int
    roles: tuple[str, ...]
    release: str
    incarnation: str
    starts: int = 1
    status: str = RUNNING
    detail: str | None = None
    previous_broker_epoch: int = -1
    broker_epoch: int | None = None
    #: The node's simulated server configs (NodeState.configs); absent when none were given.
    configs: dict[str, str] | msgspec.UnsetType = msgspec.UNSET


class SavedState(msgspec.Struct, kw_only=True):
    """The contents of `cluster.json` (format 2: the event-driven simulator)."""

    format: int = STATE_FORMAT
    cluster_id: str
    seed: int
    now_ms: int
    policies: tuple[str, ...] = ()
    catalog: str | None = None
    voters: tuple[int, ...] = ()
    kraft_version: int = 0
    opens: int = 0
    config: SimConfig = SimConfig()
    #: The network's partition groups (empty: whole).
    partition: list[list[int]] = []
    #: What the invariants carry from one command to the next: the leader of each epoch,
    #: the highest committed offset, and the failures found so far.
    leaders: dict[int, int] = {}
    committed_end: int = 0
    violations: list[InvariantResult] = []
    nodes: list[SavedNode] = []


def read_saved(directory: Path) -> SavedState:
    """cluster.json of an event-simulator cluster; a clear SimError for anything else."""
    path = Path(directory) / STATE_FILE
    try:
        # (a FIFO's open would wait forever, a device such as /dev/zero be read without end)
        if path.exists() and not path.is_file() and not path.is_dir():
            raise SimError(f"{path}: not a regular file")
        raw = path.read_bytes()
    except OSError as e:
        if holds_no_cluster(e):
            raise NotAClusterError.at(directory) from None
        raise SimError(f"{path}: {e.strerror or e}") from None
    try:
        head = jsoninput.loads(raw)
    except ValueError as e:
        raise SimError(f"{path}: not a valid cluster state file: {e}") from None
    if not isinstance(head, dict) or head.get("format") != STATE_FORMAT:
        fmt = head.get("format") if isinstance(head, dict) else None
        if fmt == TICKS_STATE_FORMAT:  # a cluster of the other engine, not a damaged or old file
            raise SimError(f"{directory}: a cluster of the tick simulator (`cluster create --engine ticks`); this "
                           "command needs one of the event simulator (`cluster create` without --engine ticks)")
        raise SimError(unsupported_state_format(path, fmt))
    try:
        return msgspec.json.decode(raw, type=SavedState)
    except msgspec.DecodeError as e:
        raise SimError(f"{path}: not a valid cluster state file: {e}") from None
