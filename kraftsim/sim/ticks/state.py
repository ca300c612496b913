"""`cluster.json` of the tick simulator (format 1; kraftsim.sim.ticks.cluster.SimCluster): what it
holds and reading it back. The event simulator's is `saved` (format 2)."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec

from kraftsim.errors import KraftsimError, UsageError
from kraftsim.sim.node.simnode import NodeState
from kraftsim.sim.node.format import CLUSTER_STATE_FILE, EPOCH_MS
from kraftsim.sim.types import TICKS_STATE_FORMAT, holds_no_cluster, not_a_cluster_text, unsupported_state_format

STATE_FILE = CLUSTER_STATE_FILE
STATE_FORMAT = TICKS_STATE_FORMAT


class ClusterError(KraftsimError):
    """A cluster command that cannot be carried out (bad directory, unknown node, ...)."""


class NotATicksCluster(ClusterError, UsageError):
    """No cluster state file where a cluster was named: invalid input (exit 2)."""


class ClusterState(msgspec.Struct, kw_only=True):
    """The contents of `cluster.json`."""

    format: int = STATE_FORMAT
    cluster_id: str
    seed: int
    now_ms: int = EPOCH_MS
    policies: tuple[str, ...] = ()
    catalog: str | None = None  # a user catalog file the cluster was created with
    voters: tuple[int, ...] = ()
    leader: int | None = None
    epoch: int = 0
    kraft_version: int = 0
    nodes: list[NodeState] = []

    def node(self, node_id: int) -> NodeState:
        for n in self.nodes:
            if n.id == node_id:
                return n
        raise ClusterError(f"the cluster has no node {node_id}")


def dump_state(state: ClusterState) -> str:
    return json.dumps(msgspec.to_builtins(state), indent=2, sort_keys=True) + "\n"


def read_state(directory: Path) -> ClusterState:
    path = Path(directory) / STATE_FILE
    try:
        # (a FIFO's open would wait forever, a device such as /dev/zero be read without end)
        if path.exists() and not path.is_file() and not path.is_dir():
            raise ClusterError(f"{path}: not a regular file")
        raw = path.read_bytes()
    except OSError as e:
        if holds_no_cluster(e):
            raise NotATicksCluster(not_a_cluster_text(directory)) from None
        raise ClusterError(f"{path}: {e.strerror or e}") from None
    try:
        head = msgspec.json.decode(raw, type=_Head)
        if head.format != STATE_FORMAT:  # (the format first: another one's fields are not this one's)
            raise ClusterError(unsupported_state_format(path, head.format))
        return msgspec.json.decode(raw, type=ClusterState)
    except msgspec.DecodeError as e:
        raise ClusterError(f"{path}: not a valid cluster state file: {e}") from None
    except RecursionError:  # (msgspec recurses once per level, even into a field it skips)
        raise ClusterError(f"{path}: not a valid cluster state file: arrays or objects nested too deeply") from None


class _Head(msgspec.Struct):
    """What a reader looks at first: the format, which says how to read the rest."""

    format: int = STATE_FORMAT


__all__ = ["STATE_FILE", "STATE_FORMAT", "ClusterError", "ClusterState", "dump_state", "read_state"]
