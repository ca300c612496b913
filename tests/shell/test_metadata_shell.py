"""`kraftsim metadata-shell` prints what Kafka's MetadataShell prints.

Ground truth: data/kafka-<release>-*.txt, printed by Kafka's own shell (3.7.2, 3.9.1,
4.3.1) for the snapshots conftest.py builds; the live comparison is in
tests/conformance/test_metadata_shell_vs_kafka.py.
"""

from __future__ import annotations

import pytest

from tests.cli_support import run
from tests.paths import ORACLE
from tests.shell.conftest import DATA, quota_snapshot

RELEASES = (("3.7", "3.7.2"), ("3.9", "3.9.1"), ("4.3", "4.3.1"))


@pytest.mark.parametrize(("line", "version"), RELEASES)
@pytest.mark.parametrize("command", ["tree", "find"])
def test_whole_tree_matches_kafka(capsys, shell_inputs, line, version, command):
    _, snapshot, _ = shell_inputs(line)
    code, out, err = run(capsys, "metadata-shell", "--release", version, "-s", str(snapshot), command, "/")
    assert (code, err) == (0, "")
    assert out.splitlines() == (DATA / f"kafka-{version}-{command}.txt").read_text().splitlines()


@pytest.mark.parametrize(("line", "version"), RELEASES)
def test_segment_provenance_is_the_last_data_batch(capsys, shell_inputs, line, version):
    """Kafka reads a segment as a log: the image ends at its last data batch, control batches skipped."""
    _, _, segment = shell_inputs(line)
    code, out, _ = run(capsys, "metadata-shell", "--release", version, "-s", str(segment), "cat", "/image/provenance")
    assert code == 0
    assert out == (DATA / f"kafka-{version}-segment-provenance.txt").read_text()


def test_default_release_is_the_one_the_nodes_run(capsys, shell_inputs):
    _, snapshot, _ = shell_inputs("3.9")
    code, out, _ = run(capsys, "metadata-shell", "-s", str(snapshot), "cat", "/local/version", "/local/commitId")
    assert (code, out) == (0, "3.9.2\n5e9866f43ab8e7e4\n")


def test_leaves_print_kafka_tostring(capsys, shell_inputs):
    _, snapshot, _ = shell_inputs("4.3")
    code, out, _ = run(capsys, "metadata-shell", "--release", "4.3.1", "-s", str(snapshot), "cat",
                       "/image/features/metadataVersion", "/image/topics/byName/topic-0/0", "/image/acls/byId/*")
    lines = out.splitlines()
    assert code == 0
    assert lines[0] == "Optional[4.3-IV0]"
    assert lines[1].startswith("PartitionRegistration(replicas=[") and lines[1].endswith(", partitionEpoch=0)")
    assert lines[2].startswith("StandardAcl[resourceType=TOPIC, resourceName=topic-0,")  # a record from 4.2


@pytest.mark.parametrize(("release", "migrating"), [("3.3.2", False), ("3.6.2", True)])
def test_before_3_7_the_brokers_are_right_under_cluster(capsys, shell_inputs, release, migrating):
    # (a cluster of the release's own line: a newer metadata.version is unknown to it)
    """3.3 to 3.6 (live 3.6.2 through conformance's metadata-shell cases; the toString texts
    from the jars of 3.3.2 to 3.6.2): broker ids right under /image/cluster, no controllers,
    no directories or ELR in the registrations, isMigratingZkBroker from 3.4."""
    _, snapshot, _ = shell_inputs(release[:3])
    code, out, _ = run(capsys, "metadata-shell", "--release", release, "-s", str(snapshot), "ls", "/image/cluster")
    assert (code, out.split()) == (0, ["2", "3"])
    code, out, _ = run(capsys, "metadata-shell", "--release", release, "-s", str(snapshot), "cat", "/image/cluster/2",
                       "/image/topics/byName/topic-0/0", "/local/commitId")
    broker, partition, commit = out.splitlines()
    assert broker.startswith("BrokerRegistration(id=2, ") and broker.endswith(
        "inControlledShutdown=false, isMigratingZkBroker=false)" if migrating else "inControlledShutdown=false)")
    assert partition.startswith("PartitionRegistration(replicas=[") and ", isr=[" in partition
    assert "directories=" not in partition and "elr=" not in partition
    assert commit == ("c4deed513057c94e" if release == "3.6.2" else "b66af662e61082cb")
    code, out, _ = run(capsys, "metadata-shell", "--release", "3.7.2", "-s", str(snapshot), "ls", "/image/cluster")
    assert out.split() == ["brokers", "controllers"]


def test_cluster_node_is_browsed_like_its_directory(capsys, shell_inputs):
    cluster, _, _ = shell_inputs("3.9")
    by_node = run(capsys, "metadata-shell", "--cluster", str(cluster), "--node", "2", "ls", "/image/topics/byName")
    by_dir = run(capsys, "metadata-shell", "-s", str(cluster / "node-2"), "ls", "/image/topics/byName")
    assert by_node == by_dir == (0, "topic-0\ntopic-1\n", "")
    code, _, err = run(capsys, "metadata-shell", "--cluster", str(cluster / "node-2"), "--node", "1", "ls")
    assert code == 2 and "not a simulated cluster (no cluster.json)" in err  # (not "no node 1")
    code, _, err = run(capsys, "metadata-shell", "--cluster", str(cluster), "--node", "9", "ls")
    assert code == 2 and "no node 9" in err


@pytest.mark.parametrize(("argv", "expected"), [
    (["cat", "/nope"], "cat: /nope: No such file or directory.\n"),
    (["cat", "/image"], "cat: /image: Is a directory\n"),
    (["ls", "/nope"], "ls: /nope: no such file or directory.\n"),
    (["tree", "/nope"], "tree: /nope: No such file or directory.\n"),
    (["pwd"], "invalid choice: 'pwd' (choose from 'cat', 'find', 'ls', 'tree')\n"),
    (["tr", "/"], "invalid choice: 'tr': did you mean 'tree'?\n"),
    (["cat"], "too few arguments\n"),
    (["ls", "-l"], "unrecognized arguments: '-l'\n"),
])
def test_command_errors_are_kafka_lines_with_exit_0(capsys, shell_inputs, argv, expected):
    """Kafka's shell answers a bad command with a line on stdout and still exits 0."""
    _, snapshot, _ = shell_inputs("3.9")
    assert run(capsys, "metadata-shell", "-s", str(snapshot), *argv) == (0, expected, "")


def test_missing_snapshot_is_kafkas_error_exit_2(capsys, tmp_path):
    missing = tmp_path / "nope.checkpoint"
    code, out, err = run(capsys, "metadata-shell", "-s", str(missing), "ls")
    assert (code, out) == (2, "")
    assert err == f"Unexpected error: java.nio.file.NoSuchFileException: {missing}\n"
    assert not missing.exists()


@pytest.mark.parametrize("argv", [["ls"], ["--cluster", "x", "ls"], ["--node", "1", "ls"]])
def test_missing_target_is_a_usage_error(capsys, argv):
    code, out, err = run(capsys, "metadata-shell", *argv)
    assert (code, out) == (2, "")
    assert "--snapshot" in err or "--cluster" in err


def test_unreadable_file_is_bad_input(capsys, tmp_path):
    bad = tmp_path / "00000000000000000010-0000000001.checkpoint"
    bad.write_bytes(b"\x00" * 30)
    code, out, err = run(capsys, "metadata-shell", "-s", str(bad), "ls")
    assert (code, out) == (2, "")
    assert err.startswith("kraftsim: error: ") and str(bad) in err


def test_kafka_4_0_find_fails_on_the_listed_zk_state(capsys, shell_inputs):
    """4.0 and 4.1 list zkMigrationState but have no such node: find stops there, exit 1."""
    _, snapshot, _ = shell_inputs("3.9")
    code, out, err = run(capsys, "metadata-shell", "--release", "4.0.2", "-s", str(snapshot), "find",
                         "/image/features")
    assert code == 1
    assert out == "/image/features\n/image/features/metadataVersion\n"
    assert err == ("Unexpected error: Expected zkMigrationState to be a valid child of /image/features, "
                   "but it was not.\n")


def test_session_on_stdin_answers_between_prompts(capsys, shell_inputs, monkeypatch):
    """Without a terminal, the interactive shell reads stdin and prompts as Kafka's dumb terminal does."""
    import io

    _, snapshot, _ = shell_inputs("3.9")
    monkeypatch.setattr("sys.stdin", io.StringIO("cd /image/topics\npwd\nls\nhistory\nexit\nls\n"))
    code, out, _ = run(capsys, "metadata-shell", "-s", str(snapshot))
    assert code == 0
    assert out == ("Loading...\nStarting...\n[ Kafka Metadata Shell ]\n>> >> /image/topics\n>> byId\nbyName\n"
                   ">>     0  cd /image/topics\n    1  pwd\n    2  ls\n    3  history\n>> ")


def test_scram_credentials_of_a_bootstrap_file(capsys, tmp_path):
    """`kafka-storage format --add-scram` credentials, shown as Kafka 3.9.1's shell showed them."""
    directory = tmp_path / "meta"
    code, _, _ = run(capsys, "storage", "format", "--dir", str(directory), "--node-id", "1", "--cluster-id",
                     "h1CtT2YxRtilk1X_2jpd8Q", "--release", "3.9",
                     "--add-scram", 'SCRAM-SHA-512=[name=alice,iterations=8192,salt="N3E=",saltedpassword="YCE="]',
                     "--add-scram", 'SCRAM-SHA-256=[name=bob,iterations=4096,salt="N3E=",saltedpassword="YCE="]')
    assert code == 0
    code, out, _ = run(capsys, "metadata-shell", "-s", str(directory / "bootstrap.checkpoint"), "tree", "/image/scram")
    assert code == 0
    assert out == (DATA / "kafka-3.9.1-scram.txt").read_text()


@pytest.mark.parametrize(("name", "snapshot"), [
    ("kafka-4.1_dkoh12", "00000000000000007209-0000000001.checkpoint"),
    ("kafka-4.2_induswargods", "00000000000000046533-0000000004.checkpoint"),
])
def test_real_kafka_snapshots_as_kafka_shows_them(capsys, name, snapshot):
    """Snapshots real Kafka nodes wrote (../shared/oracle), and what Kafka 4.3.1's shell printed of them."""
    path = ORACLE / name / "__cluster_metadata-0" / snapshot
    if not path.is_file():
        pytest.skip(f"no {path} (set KRAFTSIM_SHARED)")
    code, out, err = run(capsys, "metadata-shell", "--release", "4.3.1", "-s", str(path), "tree", "/")
    assert (code, err) == (0, "")
    assert out.splitlines() == (DATA / f"kafka-4.3.1-tree-oracle-{name}.txt").read_text().splitlines()


def test_configs_replayed_as_the_release_replays_them(capsys):
    """Kafka 4.3 drops ConfigRecords of topic configs its code no longer defines (KAFKA-19851);
    3.9 keeps them. Kafka's 3.9.1 shell lists message.timestamp.difference.max.ms for this real
    3.6 log's topics, 4.3.1's does not."""
    log = ORACLE / "cp-kafka-3.6_rjmfernandes" / "__cluster_metadata-0" / "00000000000000000000.log"
    if not log.is_file():
        pytest.skip(f"no {log} (set KRAFTSIM_SHARED)")
    outs = {}
    for release in ("3.9.1", "4.3.1", None):
        argv = ["--release", release] if release else []
        code, outs[release], _ = run(capsys, "metadata-shell", *argv, "-s", str(log), "find", "/image/configs")
        assert code == 0
    assert "message.timestamp.difference.max.ms" in outs["3.9.1"]
    assert "message.timestamp.difference.max.ms" not in outs["4.3.1"]
    assert outs[None] == outs["3.9.1"]  # the nodes run 3.6: every config kept


def test_client_quotas_as_kafka_names_and_prints_them(capsys, tmp_path):
    """Entity names with escapes, Double.toString values (1.5E7, 1.0E-4): Kafka 3.9.1's lines."""
    snapshot = quota_snapshot(tmp_path / "q")
    code, out, _ = run(capsys, "metadata-shell", "--release", "3.9.1", "-s", str(snapshot), "tree",
                       "/image/clientQuotas")
    assert code == 0
    assert out == (DATA / "kafka-3.9.1-quotas.txt").read_text()


@pytest.mark.parametrize(("version", "code"), [("3.9.1", 1), ("4.0.2", 0)])
def test_default_quota_entity_is_listed_but_unreachable(capsys, tmp_path, version, code):
    """Kafka names a default entity by leaving its null part out (`user(<default>)` is ""), and
    no name leads back to it: 3.x's tree fails there with Java's NullPointerException, 4.x's
    prints the name alone."""
    snapshot = quota_snapshot(tmp_path / "q", with_default=True)
    got, out, err = run(capsys, "metadata-shell", "--release", version, "-s", str(snapshot), "tree",
                        "/image/clientQuotas")
    assert got == code
    assert out == (DATA / f"kafka-{version}-quotas-default.txt").read_text()
    assert (err.startswith('Unexpected error: Cannot invoke "org.apache.kafka.image.node.MetadataNode.print(')
            if code else err == "")


def test_metadata_version_unknown_to_the_release_shows_the_empty_image(capsys, tmp_path):
    """Kafka 3.7.2's loader cannot read metadata.version 21 (3.9-IV0): its shell goes on with an
    empty image, and so does kraftsim's, saying why on stderr."""
    snapshot = quota_snapshot(tmp_path / "q")
    code, out, err = run(capsys, "metadata-shell", "--release", "3.7.2", "-s", str(snapshot), "tree", "/")
    assert code == 0
    assert out == (DATA / "kafka-3.7.2-unknown-mv.txt").read_text()
    assert "No MetadataVersion with metadata version 21" in err


@pytest.mark.parametrize(("release", "shown"), [("3.9", "3.9.2"), ("3.9.1", "3.9.1"), ("4.0.2", "4.0.2"), ("9.9", None),
                                                ("3.9.9", None), ("4.0.99", None)])
def test_release_names(capsys, shell_inputs, release, shown):
    """A line means its newest patch; a patch the catalog lists is taken as given; others are bad
    input, as for every other command (a patch of a known line was taken as given)."""
    _, snapshot, _ = shell_inputs("3.9")
    code, out, err = run(capsys, "metadata-shell", "--release", release, "-s", str(snapshot), "cat", "/local/version")
    if shown is None:
        assert (code, out) == (2, "") and f"Unknown release {release}." in err
    else:
        assert (code, out) == (0, shown + "\n")


def test_config_resources_are_found_as_kafka_reads_their_names(capsys, shell_inputs):
    """ConfigurationsImageNode reads `TYPE`, `TYPE:` (both the default resource) and `TYPE:name`;
    Kafka 4.3.1 answered 1, 1 and 1000 here."""
    _, snapshot, _ = shell_inputs("4.3")
    code, out, _ = run(capsys, "metadata-shell", "-s", str(snapshot), "cat", "/image/configs/BROKER:/min.insync.replicas",
                       "/image/configs/BROKER/min.insync.replicas", "/image/configs/BROKER:2/log.retention.ms")
    assert (code, out) == (0, "1\n1\n1000\n")
