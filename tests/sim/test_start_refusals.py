"""What keeps a node from starting, with Kafka's texts: a corrupt batch below the committed
offset, a meta.properties it cannot read; and what the invariants keep of voters that were
down when the cluster was saved."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.sim import SimError, Simulation
from kraftsim.storage import MetadataLog
from tests.sim.sim_helpers import failed, scratch


def _corrupt_first_data_batch(log_dir: Path) -> int:
    """Flip a byte inside the second batch of the first segment; returns that batch's base offset."""
    with MetadataLog.open(log_dir, read_only=True) as log:
        entry = list(log.index_entries())[1][1]
    seg = sorted(log_dir.glob("*.log"))[0]
    data = bytearray(seg.read_bytes())
    data[entry.position + 70] ^= 0xFF  # inside the records, covered by the CRC
    seg.write_bytes(bytes(data))
    return entry.base_offset


@pytest.mark.parametrize("node", [2, 4])  # a controller and a broker
def test_a_corrupt_committed_batch_stops_start_up(node: int) -> None:
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=3, brokers=1, release="4.1", seed=1, durable=False)
        sim.create_topics(2, 1)
        sim.stop([node])
        before = sorted(p.read_bytes() for p in sim.log_dir(node).glob("*.log"))
        offset = _corrupt_first_data_batch(sim.log_dir(node))
        with pytest.raises(SimError, match=rf"the batch at offset {offset} .*below the committed offset .*"
                                           r"Record is corrupt \(stored crc = \d+, computed crc = \d+\)"):
            sim.start([node])
        info = {n.id: n for n in sim.nodes()}[node]
        assert info.state == "failed" and "Record is corrupt" in (info.detail or "")
        # Nothing was cut: the damaged file is left as it was for the operator.
        after = sorted(p.read_bytes() for p in sim.log_dir(node).glob("*.log"))
        assert len(after) == len(before) and after != before
        assert not failed(sim)
        sim.close()


def test_a_torn_tail_is_still_recovered() -> None:
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=3, release="4.1", seed=1, durable=False)
        sim.stop([3])
        sim.disk_fault([3], "torn-tail")
        sim.start([3])
        sim.wait(30_000)
        assert {n.state for n in sim.nodes()} == {"running"} and not failed(sim)
        sim.close()


@pytest.mark.parametrize("content", [b"version=zz\ncluster.id=abc\n", b"version=1\nnode.id=2\n", None])
def test_an_unreadable_meta_properties_refuses_to_start(content: bytes | None) -> None:
    with scratch() as base:
        lines: list[str] = []
        sim = Simulation.create(base / "c", controllers=3, release="4.1", seed=1, durable=False)
        sim.subscribe(lambda e: lines.append(e.details["text"]) if e.kind == "note" else None)
        sim.stop([2])
        path = base / "c" / "node-2" / "meta.properties"
        if content is None:
            path.unlink()
        else:
            path.write_bytes(content)
        with pytest.raises(SimError, match=r"^No readable meta.properties files found\.$"):
            sim.start([2])
        # Kafka logs the reader's error for a file it could not read; a missing file is just empty
        logged = any(line.startswith(f"Error while reading meta.properties file {path}") for line in lines)
        assert logged == (content is not None)
        assert {n.id: n.state for n in sim.nodes()}[2] == "failed"
        sim.close()


def test_voters_down_when_saved_keep_their_disk_record() -> None:
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=3, brokers=1, release="4.1", seed=1)
        sim.stop([3])
        kept = sim.engine.checker.down[3]
        sim.close()
        with Simulation.open(base / "c") as again:
            assert again.engine.checker.down.get(3) == kept
            again.crash([2])
            again.disk_fault([2], "wipe")
            assert again.engine.checker.down[2].end_offset == 0
            assert again.engine.checker.down[3] == kept
