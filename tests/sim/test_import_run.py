"""Imported clusters run: each oracle set becomes stable with a leader, and a roll to 4.1
followed by `features upgrade --metadata 4.1` ends at 4.1-IV1 (27), as Kafka allows from
metadata.version 3.3-IV3 on (every oracle set is at 3.4-IV0 or later) and up to what 4.1
supports (a 4.2 cluster with streams.version=1 cannot go back to 4.1 software: its
controller refuses to replay the level, with Kafka's text). The nodes keep the
source's history: their logs up to the source's end replay to the source's image."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.image import image_digest, load_path
from kraftsim.sim import SimError, Simulation
from kraftsim.sim.importing import import_cluster
from tests.paths import ORACLE
from tests.sim.test_import import SETS, needs_oracle

#: Kafka 4.x starts only on metadata.version 3.3-IV3 (7) or later.
MIN_MV_FOR_4X = 7


@needs_oracle
@pytest.mark.parametrize("name,sources", SETS, ids=[s[0] for s in SETS])
def test_imported_cluster_settles_rolls_and_finalizes(name: str, sources: list[Path], tmp_path: Path) -> None:
    result = import_cluster(sources, tmp_path / "c", seed=7)
    end = result.plan.reference.end_offset
    source_digest = image_digest(result.plan.image)
    ids = [n.id for n in result.plan.nodes]
    with Simulation.open(tmp_path / "c", durable=False) as sim:
        sim.wait(60_000)
        assert sim.leader() in ids
        assert [n.state for n in sim.nodes()] == ["running"] * len(ids)
        assert sim.finalized() == result.summary()["finalized"]
        assert sim.metadata_version() >= MIN_MV_FOR_4X
        supported = sim.catalog.at_release("4.1").supported_features()
        beyond = {k: v for k, v in sim.finalized().items() if v > supported.get(k, (0, 0))[1]}
        if beyond:
            with pytest.raises(SimError, match="but this controller only supports versions"):
                sim.roll("4.1")
            failed = [n for n in sim.nodes() if n.state == "failed"]
            assert failed and "only supports versions" in (failed[0].detail or "")
            assert load_path(sim.log_dir(failed[0].id)).image.features.all_levels() == result.summary()["finalized"]
            return
        sim.roll("4.1")
        sim.features("upgrade", metadata="4.1")
        sim.wait(60_000)
        assert sim.metadata_version() == 27
        assert all(r.ok for r in sim.invariants()), sim.invariants()
        # new records follow the source's: each node's log, replayed up to the source's end, is the source
        for i in ids[:1]:
            replay = load_path(sim.log_dir(i), upto_offset=end)
            assert image_digest(replay.image) == source_digest


@needs_oracle
def test_imported_nodes_register_with_their_real_endpoints(tmp_path: Path) -> None:
    src = ORACLE / "cp-kafka-3.9_weebee"
    real = import_cluster([src], tmp_path / "c").plan.image.cluster
    with Simulation.open(tmp_path / "c", durable=False) as sim:
        sim.wait(60_000)
        now = sim.engine.controller.image.cluster  # type: ignore[union-attr]
        broker, real_broker = now.brokers.get(1), real.brokers.get(1)
        assert str(broker.incarnation_id) == sim.engine.member(1).state.incarnation  # it registered again
        assert broker.incarnation_id != real_broker.incarnation_id
        assert broker.listeners == real_broker.listeners and broker.rack == real_broker.rack
        assert broker.directories == real_broker.directories
        assert now.controllers.get(1).listeners == real.controllers.get(1).listeners
