"""Is a simulated cluster healthy? What `cluster status` says first and its exit status.

Read from the cluster's files only, beside `simulation_status`: the invariants broken so far
(cluster.json keeps them from one command to the next), whether a majority knows a leader,
nodes the operator took down and nodes that stopped themselves, running nodes whose log ends
before the committed end (behind), and running nodes whose log disagrees with the active
controller's at an offset both hold (diverged: the same offset with another batch, as when a
voter that forgot its vote helped elect a second leader in one epoch).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kraftsim.errors import KraftsimError
from kraftsim.sim.node.simnode import node_directory
from kraftsim.sim.saved import read_saved
from kraftsim.sim.types import CRASHED, FAILED, STOPPED
from kraftsim.storage.names import METADATA_DIR_NAME
from kraftsim.storage.view import iter_segment_batches

#: (base offset) -> (last offset, epoch, CRC) of a log's batches.
Batches = dict[int, tuple[int, int, int]]


@dataclass
class Health:
    """What keeps the cluster from being healthy; nothing in any list means healthy."""

    invariants: list[dict[str, str]] = field(default_factory=list)  # {"name", "detail"}
    leader: str | None = None  # why there is no leader, when there is none
    down: list[dict[str, object]] = field(default_factory=list)  # {"id", "state", "detail"}: crashed or stopped
    stopped_themselves: list[dict[str, object]] = field(default_factory=list)  # {"id", "detail"}
    behind: list[dict[str, int]] = field(default_factory=list)  # {"id", "log_end_offset", "committed_end", "by"}
    diverged: list[dict[str, int]] = field(default_factory=list)  # {"id", "offset", "leader"}

    @property
    def healthy(self) -> bool:
        return not (self.invariants or self.leader or self.down or self.stopped_themselves or self.behind
                    or self.diverged)

    def to_json(self) -> dict[str, object]:
        return {"healthy": self.healthy, **asdict(self)}

    def lines(self) -> list[str]:
        """The verdict, then one line per reason."""
        if self.healthy:
            return ["Health: OK: a leader, every node running and caught up, no invariant broken"]
        out = ["Health: NOT HEALTHY"]
        out += [f"  invariant {i['name']} broken: {i['detail']}" for i in self.invariants]
        if self.leader:
            out.append(f"  {self.leader}")
        out += [f"  node {n['id']} stopped itself: {n['detail']}" for n in self.stopped_themselves]
        out += [f"  node {n['id']} is {n['state']}" + (f": {n['detail']}" if n["detail"] else "") for n in self.down]
        out += [f"  node {n['id']} is diverged: its log differs from the leader's (node {n['leader']}) from offset "
                f"{n['offset']}" for n in self.diverged]
        out += [f"  node {n['id']} is behind: log end {n['log_end_offset']}, {n['by']} committed record(s) short "
                f"of {n['committed_end']}" for n in self.behind]
        return out


def _batches(directory: Path) -> Batches:
    out: Batches = {}
    try:
        for fb in iter_segment_batches(directory, check_crc=False):
            b = fb.batch
            out[b.base_offset] = (b.last_offset, b.partition_leader_epoch, b.crc)
    except KraftsimError:
        pass  # a damaged log is compared up to the damage
    return out


def first_difference(leader: Batches, node: Batches) -> int | None:
    """The first offset at which `node`'s log differs from `leader`'s among the offsets the
    leader holds (a node's tail beyond the leader's end is not judged), or None."""
    end = max((last for last, _, _ in leader.values()), default=-1)
    for base in sorted(node):
        if base > end:
            break
        if leader.get(base) != node[base]:
            return base
    return None


def cluster_health(directory: Path | str, status: dict[str, Any]) -> Health:
    """The health of the cluster in `directory`, whose `simulation_status` is `status`."""
    d = Path(directory)
    saved = read_saved(d)
    health = Health(invariants=[{"name": v.name, "detail": v.detail or ""} for v in saved.violations])
    leader = status["leader"]
    if leader is None:
        health.leader = f"no leader known to a majority of the voters (last epoch {status['epoch']})"
    leader_log = _batches(node_directory(d, leader) / METADATA_DIR_NAME) if leader is not None else {}
    for n in status["nodes"]:
        if n["state"] == FAILED:
            health.stopped_themselves.append({"id": n["id"], "detail": n["detail"] or ""})
        elif n["state"] in (CRASHED, STOPPED):
            health.down.append({"id": n["id"], "state": n["state"], "detail": n["detail"] or ""})
        if not n["running"]:
            continue
        if leader is not None and n["id"] != leader:
            offset = first_difference(leader_log, _batches(node_directory(d, n["id"]) / METADATA_DIR_NAME))
            if offset is not None:
                health.diverged.append({"id": n["id"], "offset": offset, "leader": leader})
                continue
        if n["log_end_offset"] < saved.committed_end:
            health.behind.append({"id": n["id"], "log_end_offset": n["log_end_offset"],
                                  "committed_end": saved.committed_end,
                                  "by": saved.committed_end - n["log_end_offset"]})
    return health
