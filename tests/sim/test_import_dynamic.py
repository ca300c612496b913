"""An imported dynamic quorum (KIP-853, kraft.version 1) runs what-ifs as Kafka runs it: the
voter set comes from the source's latest VotersRecord, kraft.version stays 1 (finalized, and
not to be downgraded), quorum-state is written at data_version 1 without voters, and every
snapshot a node writes carries KRaftVersionRecord and that VotersRecord in its header batch,
after SnapshotHeaderRecord, as Kafka writes them.

Two sources: a real 4.1 cluster's state written as the snapshot a dynamic-quorum node would
hold (its header says kraft.version 1 and names the node as voter), from ../shared/oracle;
and, with real Kafka, a combined node formatted `--standalone` that ran and was stopped."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from kraftsim.image import kraft_header_records, load_path, snapshot_contents
from kraftsim.protocol.primitives import Uuid
from kraftsim.sim import SimError, Simulation
from kraftsim.sim.importing import import_cluster
from kraftsim.sim.node.simnode import node_directory
from kraftsim.storage import METADATA_DIR_NAME, read_snapshot
from kraftsim.storage.dynamic_voters import DynamicVoter, voters_record
from kraftsim.versions import default_catalog
from tests.paths import ORACLE
from tests.sim.test_import import needs_oracle

SOURCE = "kafka-4.1_dkoh12"
MEMBERSHIP = ("KRAFT_VERSION", "KRAFT_VOTERS")


def _dynamic_snapshot(tmp_path: Path) -> tuple[Path, Any]:
    """The oracle 4.1 node's state as the snapshot it would hold under a dynamic quorum, with
    its meta.properties beside; returns the file and its header's VotersRecord."""
    src = ORACLE / SOURCE
    registry = default_catalog().record_registry()
    contents = snapshot_contents(src, load_path(src).end_offset)
    directory_id = (src / "meta.properties").read_text().split("directory.id=")[1].split()[0]
    voter = DynamicVoter(1, "localhost", 9093, Uuid.from_string(directory_id))
    voters = voters_record({1: voter}, "CONTROLLER", registry).message
    contents.header_records = kraft_header_records(1, voters, registry)
    home = tmp_path / "real"
    (home / METADATA_DIR_NAME).mkdir(parents=True)
    shutil.copyfile(src / "meta.properties", home / "meta.properties")
    return contents.write(home / METADATA_DIR_NAME, fsync=False), voters


def _header(path: Path) -> list[dict[str, Any]]:
    """The membership records of a snapshot's header batch: type, version and data."""
    snap = read_snapshot(path, default_catalog().record_registry())
    return [{k: e.to_json()[k] for k in ("offset", "type", "version", "data")}
            for e in snap.header_entries if e.type_name in MEMBERSHIP]


def _quorum_state(sim: Simulation, node: int) -> dict[str, Any]:
    return json.loads((sim.log_dir(node) / "quorum-state").read_text())


def _what_ifs_keep_the_dynamic_quorum(directory: Path, voters: list[int], want_header: list[dict[str, Any]]) -> None:
    with Simulation.open(directory, durable=False) as sim:
        sim.wait(60_000)
        assert sim.leader() in voters and sim.engine.voters == tuple(voters)
        assert sim.finalized()["kraft.version"] == 1
        for i in voters:
            qs = _quorum_state(sim, i)
            assert qs["data_version"] == 1 and "currentVoters" not in qs
        sim.create_topics(2, 2, prefix="whatif-")
        written = sim.snapshot()
        assert written and all(_header(p) == want_header for p in written)
        with pytest.raises(SimError, match="Can't downgrade the version of this feature"):
            sim.features("downgrade", features={"kraft.version": 0})
        # a new controller joins as an observer (--no-initial-controllers): no voter until add-controller
        new = sim.add_node("controller", "4.1")
        assert sim.engine.voters == tuple(voters) and not sim.engine.member(new).voter
        assert [o.node_id for o in sim.quorum_info().observers if o.node_id == new] == [new]
        # a restarted node starts from the snapshot it wrote: the next one still carries the voters
        sim.crash([voters[0]])
        sim.start([voters[0]])
        sim.wait(60_000)
        sim.roll("4.2")
        sim.features("upgrade", metadata="4.2")
        sim.wait(60_000)
        assert sim.metadata_version() == 29 and sim.finalized()["kraft.version"] == 1
        sim.create_topics(1, 1, prefix="after-")
        later = sim.snapshot()
        assert later and all(_header(p) == want_header for p in later)
        assert all(r.ok for r in sim.invariants()), sim.invariants()


@needs_oracle
def test_a_dynamic_quorum_snapshot_imports_and_runs(tmp_path: Path) -> None:
    snap, voters = _dynamic_snapshot(tmp_path)
    result = import_cluster([snap], tmp_path / "c")
    summary = result.summary()
    assert summary["kraft_version"] == 1 and summary["voters"] == [1]
    assert summary["voters_from"].startswith(f"the last VotersRecord, in the header of snapshot {snap.name}")
    assert "a dynamic quorum" in "\n".join(result.lines())
    assert json.loads((tmp_path / "c" / "cluster.json").read_text())["kraft_version"] == 1
    qs = json.loads((node_directory(tmp_path / "c", 1) / METADATA_DIR_NAME / "quorum-state").read_text())
    assert qs == {"leaderId": -1, "leaderEpoch": summary["epoch"], "votedId": -1,
                  "votedDirectoryId": "AAAAAAAAAAAAAAAAAAAAAA", "data_version": 1}
    _what_ifs_keep_the_dynamic_quorum(tmp_path / "c", [1], _header(snap))


@needs_oracle
def test_a_static_quorum_keeps_quorum_state_version_0(tmp_path: Path) -> None:
    """The same cluster without the dynamic header: kraft.version 0, voters listed in quorum-state."""
    import_cluster([ORACLE / SOURCE], tmp_path / "c")
    with Simulation.open(tmp_path / "c", durable=False) as sim:
        sim.wait(60_000)
        assert "kraft.version" not in sim.finalized()
        qs = _quorum_state(sim, 1)
        assert qs["data_version"] == 0 and qs["currentVoters"] == [{"voterId": 1}]
        assert all(_header(p) == [] for p in sim.snapshot())


# ------------------------------------------------------------------ real Kafka

#: A release CI fetches (tests/conformance/conftest.py) whose storage tool knows --standalone.
REAL_RELEASE = "4.0.2"


@pytest.mark.kafka
def test_a_real_standalone_controller_imports_and_runs(tmp_path: Path) -> None:
    from kraftsim.conformance.node import LiveNode
    from kraftsim.conformance.tools import run_tool
    from tests.conformance.conftest import kafka_dist

    dist = kafka_dist(REAL_RELEASE)
    node = LiveNode(dist, tmp_path)
    config = node.config.read_text().replace(f"controller.quorum.voters=1@127.0.0.1:{node.controller_port}",
                                             f"controller.quorum.bootstrap.servers=127.0.0.1:{node.controller_port}")
    # a snapshot soon after every change, so that the node stops with one
    node.config.write_text(config + "metadata.log.max.snapshot.interval.ms=1000\n"
                           "metadata.log.max.record.bytes.between.snapshots=1\n", encoding="utf-8")
    node.format("--standalone")
    with node:
        node.start()
        for i in range(2):
            run = run_tool(dist, "topics", ["--bootstrap-server", node.bootstrap, "--create", "--topic", f"t{i}",
                                            "--partitions", "2"], timeout=120)
            assert run.code == 0, run.text()
        time.sleep(3)  # bounded: a snapshot interval or three
    meta = node.data / METADATA_DIR_NAME
    kafka_snapshots = sorted(p for p in meta.glob("*.checkpoint") if not p.name.startswith("0" * 20 + "-"))
    assert kafka_snapshots, "Kafka wrote no snapshot"
    want_header = _header(kafka_snapshots[-1])
    assert [(h["offset"], h["type"]) for h in want_header] == [(1, "KRAFT_VERSION"), (2, "KRAFT_VOTERS")]
    result = import_cluster([node.data], tmp_path / "c")
    summary = result.summary()
    assert summary["kraft_version"] == 1 and summary["voters"] == [1]
    assert "VotersRecord" in summary["voters_from"]
    assert (node_directory(tmp_path / "c", 1) / METADATA_DIR_NAME / ("0" * 20 + "-" + "0" * 10 + ".checkpoint")).is_file()
    _what_ifs_keep_the_dynamic_quorum(tmp_path / "c", [1], want_header)
