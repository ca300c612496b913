"""`cluster import` on the real files of ../shared/oracle: what it makes of each set is
checked against values the test reads from the records itself (not from kraftsim's image),
the image of every imported node against a replay of the source, and the source against
its own bytes before the import."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from kraftsim.image import image_digest, load_path
from kraftsim.sim.importing import ImportRefused, import_cluster
from kraftsim.sim.tools.directory import simulation_status, simulation_status_lines
from kraftsim.sim.node.simnode import node_directory
from kraftsim.sim.saved import read_saved
from kraftsim.sim.simulation import Simulation
from kraftsim.storage import METADATA_DIR_NAME, MetadataLog
from kraftsim.versions import default_catalog
from tests.paths import ORACLE

#: metadata.version level -> the release line whose software tops out there (oracle README).
# the newest patch release of each line (the catalog names releases as Kafka does)
LINE_OF_MAX_MV = {7: "3.3.2", 8: "3.4.1", 11: "3.5.2", 14: "3.6.2", 19: "3.7.2", 20: "3.8.1", 21: "3.9.2", 25: "4.0.2",
                  27: "4.1.2", 29: "4.2.2"}


def _log_sets() -> list[tuple[str, list[Path]]]:
    """Every oracle set with a log whose records name its nodes: (id, the sources to import)."""
    if not ORACLE.is_dir():
        return []
    out: list[tuple[str, list[Path]]] = []
    multi = ORACLE / "cp-kafka-7.5.1_3voters_greenlemonT"
    for meta in sorted(ORACLE.rglob(METADATA_DIR_NAME)):
        if not any(p.stat().st_size for p in meta.glob("*.log")) or "trimmed-two-batches" in str(meta):
            continue
        if meta.is_relative_to(multi):
            continue
        out.append((str(meta.parent.relative_to(ORACLE)), [meta.parent]))
    if multi.is_dir():
        out.append(("greenlemonT-three-nodes", sorted(multi.glob("kafka*"))))
    return out


SETS = _log_sets()
needs_oracle = pytest.mark.skipif(not ORACLE.is_dir(), reason="../shared/oracle is not present")


class Expected:
    """What a metadata log says, read record by record (contract-2 JSON, as `log dump` prints)."""

    def __init__(self, metadata_dir: Path):
        registry = default_catalog().record_registry()
        self.voters: list[int] = []
        self.brokers: dict[int, int] = {}  # id -> max metadata.version of its latest registration
        self.controllers: set[int] = set()
        self.finalized: dict[str, int] = {}
        qs = metadata_dir / "quorum-state"
        #: The last epoch the node knew: its batches' leader epochs and its quorum-state's.
        self.epoch = json.loads(qs.read_text())["leaderEpoch"] if qs.is_file() else 0
        with MetadataLog.open(metadata_dir, read_only=True) as log:
            assert log.log_start_offset == 0, "the expected values are read from a whole log"
            self.epoch = max([self.epoch] + [fb.batch.partition_leader_epoch for fb in log.batches(0)])
            for e in log.entries(0, registry):
                t = e.type_name
                if t not in ("LEADER_CHANGE", "REGISTER_BROKER_RECORD", "UNREGISTER_BROKER_RECORD",
                             "FEATURE_LEVEL_RECORD", "REGISTER_CONTROLLER_RECORD"):
                    continue
                data = e.to_json()["data"]
                if t == "LEADER_CHANGE":
                    self.voters = sorted(v["voterId"] for v in data["voters"])
                elif t == "REGISTER_BROKER_RECORD":
                    mv = [f for f in data["features"] if f["name"] == "metadata.version"]
                    self.brokers[data["brokerId"]] = mv[0]["maxSupportedVersion"]
                elif t == "UNREGISTER_BROKER_RECORD":
                    self.brokers.pop(data["brokerId"], None)
                elif t == "REGISTER_CONTROLLER_RECORD":
                    self.controllers.add(data["controllerId"])
                elif data["featureLevel"] == 0:
                    self.finalized.pop(data["name"], None)
                else:
                    self.finalized[data["name"]] = data["featureLevel"]


def _tree_digest(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for root in paths:
        for p in sorted(x for x in root.rglob("*") if x.is_file()):
            h.update(str(p).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


@needs_oracle
@pytest.mark.parametrize("name,sources", SETS, ids=[s[0] for s in SETS])
def test_import_matches_the_records(name: str, sources: list[Path], tmp_path: Path) -> None:
    before = _tree_digest(sources)
    result = import_cluster(sources, tmp_path / "c")
    assert _tree_digest(sources) == before, "the source was changed"
    longest = max(sources, key=lambda s: load_path(s).end_offset)
    want = Expected(longest / METADATA_DIR_NAME)
    saved = read_saved(tmp_path / "c")
    got = {n.id: (tuple(n.roles), n.release) for n in saved.nodes}
    expected_ids = sorted(set(want.voters) | set(want.brokers))
    assert sorted(got) == expected_ids
    assert list(saved.voters) == want.voters
    for i in expected_ids:
        roles = tuple(r for r, on in (("broker", i in want.brokers), ("controller", i in want.voters)) if on)
        assert got[i][0] == roles
        if i in want.brokers:
            assert got[i][1] == LINE_OF_MAX_MV[want.brokers[i]]
    summary = result.summary()
    assert summary["finalized"] == dict(sorted(want.finalized.items()))
    epoch = max(Expected(s / METADATA_DIR_NAME).epoch for s in sources)
    status = simulation_status(tmp_path / "c")  # the cluster as imported, before any node ran
    assert (status["leader"], status["epoch"], summary["epoch"]) == (None, epoch, epoch)
    assert f"no leader known to a majority (last epoch {epoch})" in simulation_status_lines(status)[1]
    assert all(n["release_from"].startswith("inferred") for n in summary["nodes"] if n["id"] in want.brokers)
    # every node starts from the state a replay of its source gives, at the offset where it ends
    for i in expected_ids:
        own = next((s for s in sources if (s / "meta.properties").is_file() and len(sources) > 1
                    and f"node.id={i}\n" in (s / "meta.properties").read_text()), longest)
        replay = load_path(own)
        node = load_path(node_directory(tmp_path / "c", i) / METADATA_DIR_NAME)
        assert node.end_offset == replay.end_offset
        assert image_digest(node.image) == image_digest(replay.image)


@needs_oracle
def test_import_of_a_lone_snapshot(tmp_path: Path) -> None:
    snap = ORACLE / "cp-kafka-3.9_weebee" / "snapshot-from-3cd48fbd70" / METADATA_DIR_NAME / \
        "00000000000000007263-0000000001.checkpoint"
    result = import_cluster([snap], tmp_path / "c")
    node = load_path(node_directory(tmp_path / "c", 1) / METADATA_DIR_NAME)
    assert node.end_offset == 7263
    assert image_digest(node.image) == image_digest(load_path(snap).image)
    s = result.summary()
    assert [(n["id"], n["roles"], n["release"]) for n in s["nodes"]] == [(1, ["broker", "controller"], "3.9.2")]
    assert s["voters_from"].startswith("the registered controllers")


@needs_oracle
def test_overrides_are_reported_as_given(tmp_path: Path) -> None:
    src = ORACLE / "cp-kafka-7.5.1_3voters_greenlemonT" / "kafka2"
    result = import_cluster([src], tmp_path / "c", voters=[1], release="3.7.2", release_overrides={3: "3.9"})
    nodes = {n["id"]: n for n in result.summary()["nodes"]}
    assert nodes[1]["roles"] == ["broker", "controller"] and nodes[2]["roles"] == ["broker"]
    assert (nodes[2]["release"], nodes[3]["release"]) == ("3.7.2", "3.9.2")  # a line: its newest patch
    assert nodes[3]["release_from"] == "given (--release 3.9.2)"  # the line 3.9 as it runs: its newest patch
    assert result.summary()["voters_from"] == "given (--voters)"


@needs_oracle
def test_no_voters_and_no_registration_is_refused_until_given(tmp_path: Path) -> None:
    # batches cut by hand out of a Kafka log (offsets 0 and 5..33 missing): damaged, so refused
    # as such, and taken up to the damage only when asked (nothing before it: no registrations)
    src = ORACLE / "kafka-3.8.0_codecrafters" / "trimmed-two-batches-018f9bc"
    with pytest.raises(ImportRefused, match="are missing"):
        import_cluster([src], tmp_path / "a")
    with pytest.raises(ImportRefused, match="--voters"):
        import_cluster([src], tmp_path / "a", up_to_damage=True)
    with pytest.raises(ImportRefused, match="--release"):
        import_cluster([src], tmp_path / "b", voters=[1], up_to_damage=True)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    result = import_cluster([src], tmp_path / "c", voters=[1], release="3.8", up_to_damage=True)
    assert result.summary()["finalized"] == {}  # nothing lies before the damage at offset 0


@needs_oracle
def test_registration_profile_keeps_real_listeners(tmp_path: Path) -> None:
    result = import_cluster([ORACLE / "cp-kafka-3.9_weebee"], tmp_path / "c")
    assert result.summary()["nodes"][0]["listeners"] == [
        "PLAINTEXT://localhost:9092", "INTERNAL://host.docker.internal:29092", "CONTROLLER://localhost:9093"]
    profile = json.loads((node_directory(tmp_path / "c", 1) / "registration.json").read_text())
    assert [(x["name"], x["host"], x["port"]) for x in profile["broker_listeners"]] == \
        [("PLAINTEXT", "localhost", 9092), ("INTERNAL", "host.docker.internal", 29092)]
    assert profile["log_dirs"] == ["lGeBS8O4_dDn0a9z4uM_bQ"]


@needs_oracle
def test_a_copy_of_a_node_the_metadata_does_not_name_is_refused(tmp_path: Path) -> None:
    real = ORACLE / "cp-kafka-7.5.1_3voters_greenlemonT"
    stray = tmp_path / "kafka9"
    stray.mkdir()
    shutil.copytree(real / "kafka2" / METADATA_DIR_NAME, stray / METADATA_DIR_NAME)
    text = (real / "kafka2" / "meta.properties").read_text()
    (stray / "meta.properties").write_text(text.replace("node.id=2", "node.id=9"))
    with pytest.raises(ImportRefused, match="names no node 9"):
        import_cluster([real / "kafka1", stray], tmp_path / "c")
    assert not (tmp_path / "c").exists()


def test_voters_that_leave_out_the_registered_controllers_are_named_as_the_cause(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A copy of controller 1 (a 3.9 cluster registers its controllers) imported with --voters 99:
    the refusal says --voters left the registered controllers out, not only that node 1 is unknown."""
    from tests.cli_support import run

    assert run(capsys, "cluster", "create", str(tmp_path / "src"), "--controllers", "3", "--brokers", "2",
               "--release", "3.9")[0] == 0
    with pytest.raises(ImportRefused, match=r"names no node 1 \(.*\); --voters leaves out the registered "
                                            r"controller\(s\) 1, 2, 3$"):
        import_cluster([tmp_path / "src" / "node-1"], tmp_path / "c", voters=[99])
    assert not (tmp_path / "c").exists()


@needs_oracle
def test_a_node_before_3_7_is_imported_without_a_directory_id_until_a_newer_release_starts(tmp_path: Path) -> None:
    """meta.properties has a directory.id from 3.7 on (KIP-858); a 3.6 node's copy gets none
    (it had none: the source's meta.properties is read for it), and the first 3.7+ start draws one."""
    src = ORACLE / "kafka-3.6.0_jeongrae"
    assert "directory.id" not in (src / "meta.properties").read_text()
    result = import_cluster([src], tmp_path / "c", seed=3)
    [node] = result.summary()["nodes"]
    assert node["release"] == "3.6.2" and node["directory_id"] is None
    assert node["directory_id_from"].startswith("none: 3.6.2 writes no directory.id")
    meta = node_directory(tmp_path / "c", node["id"]) / "meta.properties"
    assert "directory.id" not in meta.read_text()
    with Simulation.open(tmp_path / "c", durable=False) as sim:
        sim.run(2000)
        assert sim.directory_id(node["id"]) is None and "directory.id" not in meta.read_text()
        sim.roll("3.7")
        drawn = sim.directory_id(node["id"])
        assert drawn is not None and f"directory.id={drawn}\n" in meta.read_text()
    # a 3.7 source keeps its own
    src37 = ORACLE / "kafka-3.7.0_ldipoc"
    if (src37 / "meta.properties").is_file():
        own = (src37 / "meta.properties").read_text().split("directory.id=")[1].split()[0]
        [node37] = import_cluster([src37], tmp_path / "d").summary()["nodes"]
        assert (node37["directory_id"], node37["directory_id_from"]) == (own, "meta.properties")
