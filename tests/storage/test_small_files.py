"""meta.properties, quorum-state and leader-epoch-checkpoint: exact round trips and Kafka's checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.errors import KraftsimError
from kraftsim.storage import (
    EpochEntry, MetaProperties, QuorumState, leader_epoch_text, meta_properties_text, parse_leader_epoch_checkpoint,
    parse_quorum_state, read_leader_epoch_checkpoint, read_meta_properties, read_quorum_state,
    write_leader_epoch_checkpoint, write_meta_properties, write_quorum_state,
)
from kraftsim.storage.java_properties import hash_order, java_date, load_properties, store_properties

from tests.storage.conftest import ORACLE, needs_oracle, oracle_paths, rel

META = oracle_paths("meta.properties")
QUORUM = oracle_paths("quorum-state")
EPOCHS = oracle_paths("leader-epoch-checkpoint")


# ---------------------------------------------------------------------------- meta.properties


@pytest.mark.parametrize("path", META, ids=rel)
def test_oracle_meta_properties_round_trip(path: Path, tmp_path: Path) -> None:
    f = read_meta_properties(path)
    assert f.meta.version == 1 and f.meta.node_id is not None and f.meta.cluster_id
    assert f.text().encode() == path.read_bytes()
    out = write_meta_properties(tmp_path, f.meta, date=f.date, key_order=f.key_order)
    assert out.name == "meta.properties" and out.read_bytes() == path.read_bytes()


@needs_oracle
def test_key_order_depends_on_the_jvm() -> None:
    # Java 17 images write ConcurrentHashMap order; Java 21 ones sort the keys.
    old = read_meta_properties(ORACLE / "cp-kafka-3.8_otus")
    new = read_meta_properties(ORACLE / "kafka-4.2_induswargods")
    assert (old.key_order, list(old.properties)) == ("hash", ["node.id", "directory.id", "version", "cluster.id"])
    assert (new.key_order, list(new.properties)) == ("sorted", ["cluster.id", "directory.id", "node.id", "version"])
    assert old.date == "Sat Feb 08 08:40:22 UTC 2025"


def test_writer_is_deterministic_and_follows_kafkas_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    meta = MetaProperties(1, "5L6g3nShT-eMCtK--X86sw", 1, "Teb3PFb009qvAZgMDEFH4g")
    text = meta_properties_text(meta, date=1775471276)
    assert text == ("#\n#Mon Apr 06 10:27:56 UTC 2026\ncluster.id=5L6g3nShT-eMCtK--X86sw\n"
                    "directory.id=Teb3PFb009qvAZgMDEFH4g\nnode.id=1\nversion=1\n")
    assert meta_properties_text(meta, date=1775471276, key_order="hash").splitlines()[2:] == [
        "node.id=1", "directory.id=Teb3PFb009qvAZgMDEFH4g", "version=1", "cluster.id=5L6g3nShT-eMCtK--X86sw"]
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    path = write_meta_properties(tmp_path, meta)
    assert path.read_text().splitlines()[1] == "#Thu Jan 01 00:00:00 UTC 1970"
    assert read_meta_properties(tmp_path).meta == meta
    assert sorted(p.name for p in tmp_path.iterdir()) == ["meta.properties"]  # the .tmp is gone


def test_version_0_uses_broker_id() -> None:
    meta = MetaProperties(0, "abc", 3)
    assert meta.to_properties() == {"version": "0", "cluster.id": "abc", "broker.id": "3"}
    assert MetaProperties.from_properties({"version": "0"}) == MetaProperties(0)
    assert MetaProperties.from_properties({}) == MetaProperties(0)


@pytest.mark.parametrize("props, message", [
    ({"version": "1", "cluster.id": "x"}, "^Failed to find node.id$"),
    ({"version": "1", "node.id": "1"}, "^cluster.id was not found.$"),
    ({"version": "1", "node.id": "one", "cluster.id": "x"}, r"^Unable to read node.id as a base-10 number.$"),
    ({"version": "0", "broker.id": "9999999999"}, r"^Unable to read broker.id as a base-10 number.$"),
    ({"version": "2"}, "^Unknown meta.properties version number 2$"),
    ({"version": "x"}, "^Invalid meta.properties version string 'x'$"),
    ({"version": "1", "node.id": "1", "cluster.id": "x", "directory.id": "nope"}, "^Unable to read directory.id as a Uuid"),
])
def test_kafkas_errors(props: dict[str, str], message: str) -> None:
    with pytest.raises(KraftsimError, match=message):
        MetaProperties.from_properties(props)


def test_a_bad_file_names_itself(tmp_path: Path) -> None:
    (tmp_path / "meta.properties").write_text("#\n#x\nversion=1\n")
    with pytest.raises(KraftsimError, match=f"^{tmp_path}/meta.properties: Failed to find node.id$"):
        read_meta_properties(tmp_path)


def test_java_properties_syntax() -> None:
    text = "! comment\n  # another\n\na = 1\nb:2\nc 3\nd=long \\\n    value\ne\\ f=g\\=h\\u0041\\tz\n\\#k=v\nempty=\n"
    assert load_properties(text) == {"a": "1", "b": "2", "c": "3", "d": "long value", "e f": "g=hA\tz",
                                     "#k": "v", "empty": ""}
    stored = store_properties({"e f": "g=hA\tz", "#k": " lead", "ü": "ü"}, date_line="D")
    assert stored == "#\n#D\n\\#k=\\ lead\ne\\ f=g\\=hA\\tz\nü=ü\n"
    assert load_properties(stored) == {"#k": " lead", "e f": "g=hA\tz", "ü": "ü"}


def test_java_date_and_hash_order() -> None:
    assert java_date(1713532844) == "Fri Apr 19 13:20:44 UTC 2024"
    assert hash_order(["version", "cluster.id", "node.id"]) == ["node.id", "version", "cluster.id"]
    assert hash_order(["version", "cluster.id", "broker.id"]) == ["broker.id", "version", "cluster.id"]


# ---------------------------------------------------------------------------- quorum-state


@pytest.mark.parametrize("path", QUORUM, ids=rel)
def test_oracle_quorum_state_round_trip(path: Path, tmp_path: Path) -> None:
    state = read_quorum_state(path)
    assert state.data_version == 0 and state.leader_id >= 1 and state.leader_epoch >= 1
    assert write_quorum_state(tmp_path, state).read_bytes() == path.read_bytes()


def test_quorum_state_version_1() -> None:
    state = QuorumState(data_version=1, leader_id=2, leader_epoch=5, voted_id=2, voted_directory_id="Teb3PFb009qvAZgMDEFH4g")
    assert state.text() == ('{"leaderId":2,"leaderEpoch":5,"votedId":2,"votedDirectoryId":"Teb3PFb009qvAZgMDEFH4g",'
                            '"data_version":1}')
    assert parse_quorum_state(state.text()) == state


@pytest.mark.parametrize("text, message", [
    ('{"leaderId":1}', "does not have data_version field"),
    ('[1]', "is not an object node"),
    ('{"leaderId":1,"leaderEpoch":1,"votedId":-1,"data_version":1}', "unable to locate field 'votedDirectoryId'"),
    ('{"clusterId":"","leaderId":"1","leaderEpoch":1,"votedId":-1,"appliedOffset":0,"currentVoters":null,'
     '"data_version":0}', "expected an int32 for field 'leaderId'"),
    ("{", "not JSON"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),  # past Python's recursion limit (was exit 70)
])
def test_quorum_state_errors(text: str, message: str) -> None:
    with pytest.raises(KraftsimError, match=r"^Error while reading the Quorum status from the file quorum-state: .*"
                                            + message):
        parse_quorum_state(text)


# ---------------------------------------------------------------------------- leader-epoch-checkpoint


@pytest.mark.parametrize("path", EPOCHS, ids=rel)
def test_oracle_leader_epoch_checkpoint_round_trip(path: Path, tmp_path: Path) -> None:
    entries = read_leader_epoch_checkpoint(path)
    assert entries and entries == sorted(entries)
    assert write_leader_epoch_checkpoint(tmp_path, entries).read_bytes() == path.read_bytes()


def test_leader_epoch_text_and_errors() -> None:
    assert leader_epoch_text([EpochEntry(1, 0), EpochEntry(2, 81)]) == "0\n2\n1 0\n2 81\n"
    assert leader_epoch_text([]) == "0\n0\n"
    with pytest.raises(KraftsimError, match=r"Expected 2 entries in checkpoint file \(x\), but found only 1"):
        parse_leader_epoch_checkpoint("0\n2\n1 0\n", "x")
    with pytest.raises(KraftsimError, match=r"Malformed line in checkpoint file \(x\): 1 0 3"):
        parse_leader_epoch_checkpoint("0\n1\n1 0 3\n", "x")
    with pytest.raises(KraftsimError, match=r"Unrecognized version of the checkpoint file \(x\): 1"):
        parse_leader_epoch_checkpoint("1\n0\n", "x")
