"""What `kraftsim storage format` writes and prints, beyond the error texts."""

from __future__ import annotations

import base64
import hashlib
import hmac
import random
import re
from pathlib import Path

import pytest

from kraftsim.protocol.primitives import Uuid
from kraftsim.storage import read_bootstrap, read_meta_properties, read_server_config, read_snapshot, storage_format
from kraftsim.storage import DYNAMIC_METADATA_VOTER_DIRECTORY
from kraftsim.storage import scram_record
from kraftsim.versions import default_catalog
from tests.storage_tool.conftest import CLUSTER_ID, SDE, config_for, node_props, run, run_format, write_config

# These tests check the layout Kafka's tool wrote up to 4.3 (a bootstrap.checkpoint in every
# directory), so they format as Kafka 4.2; 4.4's layout (KIP-1170) has tests of its own.
CAT = default_catalog().at_release("4.2")
AS_42 = ("--release", "4.2")
ZERO = Path("__cluster_metadata-0") / "00000000000000000000-0000000000.checkpoint"


def levels(d: Path) -> dict[str, int]:
    return read_bootstrap(d / "bootstrap.checkpoint").feature_levels()


# ------------------------------------------------------------------------------ versions and features


def test_default_release_line_and_release_3_9(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_format(capsys, config_for(tmp_path / "a"), *AS_42)
    assert code == 0
    assert levels(tmp_path / "a" / "data") == {
        "metadata.version": 29, "eligible.leader.replicas.version": 1, "group.version": 1, "share.version": 1,
        "streams.version": 1, "transaction.version": 2}
    assert out.splitlines()[-1].endswith("with metadata.version 4.2-IV1.")
    # Without --release the tool is the newest release, 4.4.0 (its latest production MV is unconfirmed).
    code, out, _ = run_format(capsys, config_for(tmp_path / "n"))
    assert code == 0 and out.splitlines()[-1].endswith("with metadata.version 4.4-IV2.")

    code, out, _ = run_format(capsys, config_for(tmp_path / "b"), "--release", "3.9")
    assert code == 0
    assert levels(tmp_path / "b" / "data") == {"metadata.version": 21}
    # 3.9's tool prints no 'Bootstrap metadata:' line (that came in 4.2).
    assert out.splitlines() == [f"Formatting metadata directory {tmp_path / 'b' / 'data'} with metadata.version 3.9-IV0."]


def test_the_kafka_4_2_output_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The line a real Kafka 4.2 `format --standalone` printed (a public tutorial's transcript)."""
    config = config_for(tmp_path, dynamic=True)
    code, out, _ = run_format(capsys, config, *AS_42, "--standalone")
    assert code == 0
    assert out.splitlines() == [
        "Bootstrap metadata: BootstrapMetadata(records=[ApiMessageAndVersion(FeatureLevelRecord(name='metadata.version', "
        "featureLevel=29) at version 0), ApiMessageAndVersion(FeatureLevelRecord(name='eligible.leader.replicas.version', "
        "featureLevel=1) at version 0), ApiMessageAndVersion(FeatureLevelRecord(name='group.version', featureLevel=1) at "
        "version 0), ApiMessageAndVersion(FeatureLevelRecord(name='share.version', featureLevel=1) at version 0), "
        "ApiMessageAndVersion(FeatureLevelRecord(name='streams.version', featureLevel=1) at version 0), "
        "ApiMessageAndVersion(FeatureLevelRecord(name='transaction.version', featureLevel=2) at version 0)], "
        "metadataVersionLevel=29, source=format command)",
        f"Formatting dynamic metadata voter directory {tmp_path / 'data'} with metadata.version 4.2-IV1.",
    ]


def test_explicit_levels_zero_levels_and_sorting(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = run_format(capsys, config_for(tmp_path), *AS_42, "-r", "4.0-IV1", "-f", "transaction.version=1",
                            "-f", "group.version=0", "-f", "eligible.leader.replicas.version=1")
    assert code == 0
    boot = read_bootstrap(tmp_path / "data" / "bootstrap.checkpoint")
    # MV first, then non-zero features sorted by name; group.version=0 is left out
    assert [(e.message.name, e.message.feature_level) for e in boot.records] == [
        ("metadata.version", 23), ("eligible.leader.replicas.version", 1), ("transaction.version", 1)]


def test_feature_metadata_version_alone_sets_the_release(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_format(capsys, config_for(tmp_path), *AS_42, "-f", "metadata.version=14")
    assert code == 0 and out.splitlines()[-1].endswith("with metadata.version 3.6-IV2.")
    assert levels(tmp_path / "data") == {"metadata.version": 14}


def test_release_version_strings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_format(capsys, config_for(tmp_path), *AS_42, "-r", "3.8.1")
    assert code == 0 and out.splitlines()[-1].endswith("with metadata.version 3.8-IV0.")


@pytest.mark.parametrize("flags,dynamic,kraft", [
    ([], False, 0),
    (["-s"], True, 1),
    (["-N"], True, 1),
    (["-s", "-f", "kraft.version=1"], True, 1),
    (["-f", "kraft.version=0"], False, 0),
])
def test_kraft_version_rule(flags: list[str], dynamic: bool, kraft: int, tmp_path: Path) -> None:
    config = read_server_config(config_for(tmp_path, dynamic=dynamic))
    feature_flags = [flags[i + 1] for i, f in enumerate(flags) if f == "-f"]
    result = storage_format(CAT, config, cluster_id=CLUSTER_ID, features=feature_flags, standalone="-s" in flags,
                            no_initial_controllers="-N" in flags, out=lambda _: None, fsync=False,
                            rng=random.Random(1))
    assert result.feature_levels["kraft.version"] == kraft
    assert "kraft.version" not in levels(tmp_path / "data")  # never a FeatureLevelRecord


def test_dynamic_broker_gets_kraft_version_1_without_a_zero_checkpoint(tmp_path: Path) -> None:
    config = read_server_config(config_for(tmp_path, dynamic=True, process_roles="broker"))
    lines: list[str] = []
    result = storage_format(CAT, config, cluster_id=CLUSTER_ID, out=lines.append, fsync=False)
    assert result.feature_levels["kraft.version"] == 1
    assert lines[-1] == f"Formatting metadata directory {tmp_path / 'data'} with metadata.version 4.2-IV1."
    assert not (tmp_path / "data" / "__cluster_metadata-0").exists()


def test_elr_at_its_minimum_metadata_version(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_format(capsys, config_for(tmp_path), *AS_42, "-r", "4.0-IV1", "-f", "eligible.leader.replicas.version=1")
    assert (code, err) == (0, "")


# ------------------------------------------------------------------------------ SCRAM


RFC7677_AUTH = (b"n=user,r=rOprNGfwEbeRWgbNEkqO,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")


def test_scram_sha_256_matches_rfc_7677(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    arg = 'SCRAM-SHA-256=[name=user,password=pencil,salt="W22ZaJ0SNY7soEsUEjb6gQ==",iterations=4096]'
    code, out, _ = run_format(capsys, config_for(tmp_path), *AS_42, "-S", arg)
    assert code == 0
    boot = read_bootstrap(tmp_path / "data" / "bootstrap.checkpoint")
    rec = boot.records[-1]
    assert (rec.record_type.name, rec.version) == ("UserScramCredentialRecord", 0)
    m = rec.message
    assert (m.name, m.mechanism, m.iterations) == ("user", 1, 4096)
    assert m.salt == base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    # the server signature and the client proof of the RFC's exchange follow from ServerKey and StoredKey
    assert base64.b64encode(hmac.new(m.server_key, RFC7677_AUTH, "sha256").digest()) == \
        b"6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    proof = base64.b64decode("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    client_key = bytes(a ^ b for a, b in zip(proof, hmac.new(m.stored_key, RFC7677_AUTH, "sha256").digest()))
    assert hashlib.sha256(client_key).digest() == m.stored_key
    # printed as Kafka's toString: bytes as Arrays.toString of signed bytes
    signed = ", ".join(str(b - 256 if b > 127 else b) for b in m.stored_key)
    assert "UserScramCredentialRecord(name='user', mechanism=1, salt=[" in out
    assert f"storedKey=[{signed}], " in out and "iterations=4096) at version 0)" in out


def test_scram_salted_password_and_sha_512(tmp_path: Path) -> None:
    p = scram_record('SCRAM-SHA-512=[name=alice,iterations=8192,salt="N3E=",saltedpassword="YCE="]', random.Random(0))
    m = p.message
    salted = base64.b64decode("YCE=")
    assert (m.name, m.mechanism, m.iterations, m.salt) == ("alice", 2, 8192, base64.b64decode("N3E="))
    assert m.stored_key == hashlib.sha512(hmac.new(salted, b"Client Key", "sha512").digest()).digest()
    assert m.server_key == hmac.new(salted, b"Server Key", "sha512").digest()


def test_scram_random_salt_default_iterations_and_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = run_format(capsys, config_for(tmp_path), *AS_42, "-r", "3.5-IV2", "--seed", "3",
                            "-S", "SCRAM-SHA-512=[name=bob,password=x]", "-S", " SCRAM-SHA-256=[name=alice,password=y] ")
    assert code == 0
    boot = read_bootstrap(tmp_path / "data" / "bootstrap.checkpoint")
    names = [(e.record_type.name, getattr(e.message, "name", None)) for e in boot.records]
    assert names == [("FeatureLevelRecord", "metadata.version"), ("UserScramCredentialRecord", "bob"),
                     ("UserScramCredentialRecord", "alice")]
    for e in boot.records[1:]:
        assert e.message.iterations == 4096
        assert re.fullmatch(rb"[0-9a-z]{1,26}", e.message.salt)  # BigInteger(130, random).toString(36)
    bob = boot.records[1].message
    salted = hashlib.pbkdf2_hmac("sha512", b"x", bob.salt, 4096)
    assert bob.server_key == hmac.new(salted, b"Server Key", "sha512").digest()


# ------------------------------------------------------------------------------ directories


def test_meta_properties_of_every_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = config_for(tmp_path, dirs=("d1", "d2"), metadata_log_dir=str(tmp_path / "meta"))
    code, out, _ = run_format(capsys, config, *AS_42)
    assert code == 0
    ids = set()
    for d in ("d1", "d2", "meta"):
        mp = read_meta_properties(tmp_path / d)
        assert (mp.meta.version, mp.meta.cluster_id, mp.meta.node_id) == (1, CLUSTER_ID, 1)
        assert list(mp.properties) == ["cluster.id", "directory.id", "node.id", "version"]
        ids.add(mp.meta.directory_id)
        assert (tmp_path / d / "bootstrap.checkpoint").is_file()
        assert not (tmp_path / d / "meta.properties.tmp").exists()
    assert len(ids) == 3 and all(len(i) == 22 and not i.startswith("-") for i in ids)
    kinds = sorted(line.split(" with ")[0] for line in out.splitlines()[1:])
    assert kinds == sorted([f"Formatting data directory {tmp_path / 'd1'}", f"Formatting data directory {tmp_path / 'd2'}",
                            f"Formatting metadata directory {tmp_path / 'meta'}"])


def test_already_formatted_and_ignore_formatted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = config_for(tmp_path, dirs=("a",))
    assert run_format(capsys, first, *AS_42)[0] == 0
    before = (tmp_path / "a" / "meta.properties").read_bytes(), (tmp_path / "a" / "bootstrap.checkpoint").read_bytes()
    both = config_for(tmp_path, dirs=("a", "b"))
    code, out, err = run_format(capsys, both, *AS_42)
    assert (code, out) == (1, "")
    assert err == (f"Log directory {tmp_path / 'a'} is already formatted. "
                   "Use --ignore-formatted to ignore this directory and format the others.\n")
    assert not (tmp_path / "b").exists()
    code, out, err = run_format(capsys, both, *AS_42, "--ignore-formatted")
    assert (code, err) == (0, "")
    assert out.splitlines()[1:] == [f"Formatting data directory {tmp_path / 'b'} with metadata.version 4.2-IV1."]
    assert ((tmp_path / "a" / "meta.properties").read_bytes(), (tmp_path / "a" / "bootstrap.checkpoint").read_bytes()) == before
    assert read_meta_properties(tmp_path / "b").meta.directory_id != read_meta_properties(tmp_path / "a").meta.directory_id
    code, out, err = run_format(capsys, both, *AS_42, "-g")
    assert (code, out, err) == (0, "All of the log directories are already formatted.\n", "")


def test_formatted_directories_must_match_cluster_and_node(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_format(capsys, config_for(tmp_path), *AS_42)[0] == 0
    code, _, err = run(capsys, "storage", "format", "-c", str(config_for(tmp_path)), "-t", "MvDxzVmcRsaTz33bUuRU6A", "-g")
    path = tmp_path / "data" / "meta.properties"
    assert (code, err) == (1, f"Invalid cluster.id in: {path}. Expected MvDxzVmcRsaTz33bUuRU6A, but read {CLUSTER_ID}\n")
    code, _, err = run_format(capsys, config_for(tmp_path, node_id="2", controller_quorum_voters="2@localhost:9093"), *AS_42, "-g")
    assert code == 1 and err.startswith(f"Stored node id 1 doesn't match previous node id 2 in {path}. If you moved")


def test_unreadable_directories(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "meta.properties").write_text("version=7\n")
    code, out, err = run_format(capsys, config_for(tmp_path, dirs=("bad",)), *AS_42)
    assert (code, err) == (1, "No available log directories to format.\n")
    assert out == f"I/O error trying to read log directory {tmp_path / 'bad'}. Ignoring...\n"
    code, out, err = run_format(capsys, config_for(tmp_path, dirs=("bad", "good")), *AS_42)
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == f"I/O error trying to read log directory {tmp_path / 'bad'}. Ignoring..."
    assert out.splitlines()[-1] == f"Formatting data directory {tmp_path / 'good'} with metadata.version 4.2-IV1."
    assert (tmp_path / "bad" / "meta.properties").read_text() == "version=7\n"


def test_formatting_lines_follow_java_hashmap_order(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # Expected orders were produced by a real JDK (HashMap copy + puts, as MetaPropertiesEnsemble.Copier does).
    monkeypatch.chdir(tmp_path)
    dirs = [f"d{i}" for i in range(20)]
    args = ["storage", "format", "-t", CLUSTER_ID, "--node-id", "1"]
    for d in ["d3", "d17"]:
        assert run(capsys, *args, "--dir", d)[0] == 0
    for d in dirs:
        args += ["--dir", d]
    code, _, err = run(capsys, *args)
    assert err.startswith("Log directory d17 is already formatted.")  # first key of the copied HashMap
    code, out, _ = run(capsys, *args, "-g")
    assert code == 0
    written = [line.split()[3] for line in out.splitlines()[1:]]
    assert written == "d10,d12,d11,d14,d13,d16,d15,d18,d0,d1,d19,d2,d4,d5,d6,d7,d8,d9".split(",")


# ------------------------------------------------------------------------------ dynamic quorum


def test_initial_controllers_zero_checkpoint(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(SDE))
    voters = "2@c2.example:9093:MvDxzVmcRsaTz33bUuRU6A,1@c1.example:9093:JEXY6aqzQY-32P5TStzaFg," \
             "17@[::1]:9094:07R5amHmR32VDA6jHkGbTA"
    config = config_for(tmp_path, dynamic=True, dirs=("meta", "z"), controller_listener_names="controller",
                        listeners="controller://:9093")
    code, out, err = run_format(capsys, config, *AS_42, "-I", voters)
    assert (code, err) == (0, "")
    assert sorted(out.splitlines()[1:]) == [
        f"Formatting data directory {tmp_path / 'z'} with metadata.version 4.2-IV1.",
        f"Formatting dynamic metadata voter directory {tmp_path / 'meta'} with metadata.version 4.2-IV1.",
    ]
    assert read_meta_properties(tmp_path / "meta").meta.directory_id == "JEXY6aqzQY-32P5TStzaFg"  # the voter's own id
    assert not (tmp_path / "z" / "__cluster_metadata-0").exists()
    snap = read_snapshot(tmp_path / "meta" / ZERO)
    entries = list(snap.entries())
    assert [(e.offset, e.control, e.type_name) for e in entries] == [
        (0, True, "SNAPSHOT_HEADER"), (1, True, "KRAFT_VERSION"), (2, True, "KRAFT_VOTERS"), (3, True, "SNAPSHOT_FOOTER")]
    assert [fb.batch.records_count for fb in snap.batches] == [3, 1]
    assert snap.batch_timestamps == [SDE * 1000] * 2 and snap.epoch == 0
    assert entries[0].message.last_contained_log_timestamp == SDE * 1000
    assert (entries[1].message.version, entries[1].message.k_raft_version) == (0, 1)
    voters_rec = entries[2].message
    assert voters_rec.version == 0
    got = [(v.voter_id, str(Uuid(v.voter_directory_id)), [(ep.name, ep.host, ep.port) for ep in v.endpoints],
            (v.k_raft_version_feature.min_supported_version, v.k_raft_version_feature.max_supported_version))
           for v in voters_rec.voters]
    assert got == [  # Java HashMap order of Integer keys: 1 and 17 share a bucket
        (1, "JEXY6aqzQY-32P5TStzaFg", [("CONTROLLER", "c1.example", 9093)], (0, 1)),
        (17, "07R5amHmR32VDA6jHkGbTA", [("CONTROLLER", "0:0:0:0:0:0:0:1", 9094)], (0, 1)),
        (2, "MvDxzVmcRsaTz33bUuRU6A", [("CONTROLLER", "c2.example", 9093)], (0, 1)),
    ]
    assert [(e.message.name, e.message.feature_level) for e in read_bootstrap(tmp_path / "meta" / "bootstrap.checkpoint").records][0] == \
        ("metadata.version", 29)


def test_non_voter_gets_a_dynamic_metadata_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = config_for(tmp_path, dynamic=True)
    code, out, _ = run_format(capsys, config, *AS_42, "-I", "2@c2:9093:MvDxzVmcRsaTz33bUuRU6A")
    assert code == 0
    assert out.splitlines()[-1] == f"Formatting dynamic metadata directory {tmp_path / 'data'} with metadata.version 4.2-IV1."
    assert read_meta_properties(tmp_path / "data").meta.directory_id != "MvDxzVmcRsaTz33bUuRU6A"
    voters = list(read_snapshot(tmp_path / "data" / ZERO).entries())[2].message.voters
    assert [v.voter_id for v in voters] == [2]


def test_standalone_uses_the_advertised_controller_listener(tmp_path: Path) -> None:
    props = node_props(tmp_path, dynamic=True, listeners="PLAINTEXT://:9092,CONTROLLER://0.0.0.0:9093",
                       advertised_listeners="PLAINTEXT://h:9092,CONTROLLER://ctl.example:19093")
    config = read_server_config(write_config(tmp_path, props))
    result = storage_format(CAT, config, cluster_id=CLUSTER_ID, standalone=True, rng=random.Random(5),
                            out=lambda _: None, fsync=False)
    (d,) = result.formatted
    assert d.description == DYNAMIC_METADATA_VOTER_DIRECTORY and d.zero_checkpoint == tmp_path / "data" / ZERO
    (voter,) = list(read_snapshot(d.zero_checkpoint).entries())[2].message.voters
    assert (voter.voter_id, voter.endpoints[0].host, voter.endpoints[0].port) == (1, "ctl.example", 19093)
    assert str(Uuid(voter.voter_directory_id)) == d.directory_id == read_meta_properties(tmp_path / "data").meta.directory_id
    assert (Uuid(voter.voter_directory_id)[6] >> 4) == 4  # Uuid.randomUuid is a version-4 UUID

    props = node_props(tmp_path / "x", dynamic=True, listeners="CONTROLLER://0.0.0.0:9093")  # no host → localhost
    config = read_server_config(write_config(tmp_path, props, "x.properties"))
    result = storage_format(CAT, config, cluster_id=CLUSTER_ID, standalone=True, out=lambda _: None, fsync=False)
    (voter,) = list(read_snapshot(result.formatted[0].zero_checkpoint).entries())[2].message.voters
    assert voter.endpoints[0].host == "localhost"


# ------------------------------------------------------------------------------ reproducibility


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_source_date_epoch_and_seed_give_identical_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(SDE))
    outputs = []
    for run_dir in ("one", "two"):
        monkeypatch.chdir(tmp_path)
        (tmp_path / run_dir).mkdir()
        monkeypatch.chdir(tmp_path / run_dir)  # relative directories: identical printed lines too
        code, out, _ = run(capsys, "storage", "format", "-t", CLUSTER_ID, "--node-id", "1", "--dir", "m", "--dir", "d",
                           "--standalone", "--seed", "42", "-S", "SCRAM-SHA-256=[name=alice,password=alice-secret]",
                           *AS_42)
        assert code == 0
        outputs.append((out, tree(tmp_path / run_dir)))
    assert outputs[0] == outputs[1]
    files = outputs[0][1]
    assert set(files) == {"m/meta.properties", "m/bootstrap.checkpoint", f"m/{ZERO}", "d/meta.properties",
                          "d/bootstrap.checkpoint"}
    assert b"#Tue Nov 14 22:13:20 UTC 2023\n" in files["m/meta.properties"]
    # without a seed the directory ids (and the salt) differ
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "storage", "format", "-t", CLUSTER_ID, "--node-id", "1", "--dir", "three", "--standalone")
    assert code == 0 and tree(tmp_path / "three")["meta.properties"] != files["m/meta.properties"]


def test_dir_mode_is_a_static_combined_node(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "storage", "format", "-t", CLUSTER_ID, "--node-id", "4", "--dir", str(tmp_path / "m"),
                       "--dir", str(tmp_path / "d"), *AS_42)
    assert code == 0
    assert sorted(out.splitlines()[1:]) == [
        f"Formatting data directory {tmp_path / 'd'} with metadata.version 4.2-IV1.",
        f"Formatting metadata directory {tmp_path / 'm'} with metadata.version 4.2-IV1.",
    ]
    assert read_meta_properties(tmp_path / "m").meta.node_id == 4
    code, _, err = run(capsys, "storage", "format", "-t", CLUSTER_ID, "--dir", str(tmp_path / "x"))
    assert (code, err) == (1, "You must specify a valid non-negative node ID.\n")
