"""An admin request is answered once committed, even when the leader snapshots past it first.

The active controller can commit a request's records, snapshot them and (retention) start its
log after them before the client's wait looks again; the records are then in the snapshot,
not gone, and the request succeeded. At a million partitions this happened about every 17th
create-topics request, each then waiting out the admin timeout and failing.
"""

from __future__ import annotations

import pytest

from kraftsim.image.publisher.snapshot_generator import SnapshotTriggers
from kraftsim.sim import SimConfig, Simulation
from kraftsim.sim.node import simnode
from tests.sim.sim_helpers import failed, scratch


def test_requests_the_leader_snapshotted_past_are_answered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(simnode, "SHARED_SERVER_DEFAULTS", SnapshotTriggers(max_bytes=1, max_time_ms=60_000))
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=3, brokers=2, release="4.0", seed=5, durable=False,
                                config=SimConfig(retention_bytes=1, segment_bytes=4096))
        starts = []
        for k in range(12):
            sim.create_topics(3, 4, prefix=f"t{k}-")  # (raises when the wait times out)
            leader = sim.engine.leader_member()
            assert leader is not None
            starts.append(leader.log.log_start_offset)
        assert starts[-1] > 0  # retention did start the log later
        assert not failed(sim)
        sim.close()
