"""Kafka 4.3/4.4's controller operations from the command line on a simulated cluster
(event simulator): cordoning by `cordoned.log.dirs` (kafka-configs), CIDR ACLs (kafka-acls)
and controller unregistration, with Kafka's texts and exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_support import fifo_unblocked_after, run


def _cluster(capsys: pytest.CaptureFixture[str], d: Path, release_version: str | None = None) -> str:
    extra = [] if release_version is None else ["--release-version", release_version]
    code, _, err = run(capsys, "cluster", "create", str(d), "--controllers", "1", "--brokers", "2", "--release", "4.4.0",
                       "--seed", "3", "--engine", "events", *extra)
    assert code == 0, err
    return str(d)


def test_cordon_a_broker_then_uncordon_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _cluster(capsys, tmp_path / "c")
    code, out, _ = run(capsys, "configs", "--cluster", d, "--alter", "--entity-type", "brokers", "--entity-name", "3",
                       "--add-config", "cordoned.log.dirs=*")
    assert (code, out) == (0, "Completed updating config for broker 3.\n")
    code, _, err = run(capsys, "topics", "--cluster", d, "create", "--replication-factor", "2")
    assert (code, err) == (1, "Unable to replicate the partition 2 time(s): The target replication factor of 2 cannot "
                              "be reached because only 1 broker(s) are registered.\n")
    code, _, _ = run(capsys, "configs", "--cluster", d, "--alter", "--entity-type", "brokers", "--entity-name", "3",
                     "--delete-config", "cordoned.log.dirs")
    assert code == 0
    assert run(capsys, "topics", "--cluster", d, "create", "--replication-factor", "2")[:2] == (0, "Created topic topic-0.\n")


def test_a_list_value_in_square_brackets_is_one_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """kafka-configs reads `k=[v1,v2]` as one value "v1,v2" (commas and `=` inside brackets do
    not split); the comma inside the brackets was taken for the next KEY=VALUE (exit 2)."""
    d = _cluster(capsys, tmp_path / "c")
    code, out, err = run(capsys, "configs", "--cluster", d, "--alter", "--entity-type", "brokers", "--entity-name",
                         "3", "--add-config", "cordoned.log.dirs=[/d1,/d2], x = 1")
    assert (code, out) == (0, "Completed updating config for broker 3.\n"), err
    code, out, _ = run(capsys, "metadata-shell", "--cluster", d, "--node", "1", "cat",
                       "/image/configs/BROKER:3/cordoned.log.dirs", "/image/configs/BROKER:3/x")
    assert (code, out) == (0, "/d1,/d2\n1\n")
    code, _, err = run(capsys, "configs", "--cluster", d, "--alter", "--entity-type", "brokers", "--entity-name", "3",
                       "--add-config", "a=b=c")  # two `=` outside brackets: refused as kafka-configs refuses it
    assert code == 2 and "expected KEY=VALUE, got 'a=b=c'" in err


def test_acls_and_unregistration_on_4_4(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _cluster(capsys, tmp_path / "c")
    base = ["acls", "--cluster", d, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "t"]
    code, out, _ = run(capsys, *base, "--host", "10.0.0.0/8")
    assert (code, out) == (0, "Added ACL: ALLOW User:alice from host 10.0.0.0/8 READ on TOPIC:LITERAL:t\n")
    code, _, err = run(capsys, *base, "--host", "10.0.0.0/33")
    assert (code, err) == (1, "Invalid CIDR notation '10.0.0.0/33': Value [33] not in range [0,32]\n")
    code, _, err = run(capsys, "controllers", "--cluster", d, "unregister", "--id", "9")
    assert (code, err) == (1, "Controller ID 9 is not currently registered.\n")


def test_a_principal_without_a_type_is_refused_as_kafka_acls_refuses_it(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """kafka-acls parses TYPE:NAME before it sends anything; the controller would take any string."""
    d = _cluster(capsys, tmp_path / "c")
    base = ["acls", "--cluster", d, "--add", "--operation", "Read", "--topic", "t"]
    code, _, err = run(capsys, *base, "--allow-principal", "alice")
    assert (code, err) == (1, "expected a string in format principalType:principalName but got alice\n")
    code, _, err = run(capsys, *base, "--allow-principal", "")  # was sent as a deny of no principal
    assert (code, err) == (1, "expected a string in format principalType:principalName but got \n")
    code, out, _ = run(capsys, *base, "--deny-principal", " User:bob ")
    assert (code, out) == (0, "Added ACL: DENY User:bob from host * READ on TOPIC:LITERAL:t\n")


def test_gates_below_the_metadata_versions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _cluster(capsys, tmp_path / "c", release_version="4.2-IV1")
    code, _, err = run(capsys, "configs", "--cluster", d, "--alter", "--entity-type", "brokers", "--entity-default",
                       "--add-config", "cordoned.log.dirs=*")
    assert (code, err) == (1, "The cordoned.log.dirs configuration value cannot be set because it requires "
                              "metadata.version >= 4.3-IV0\n")
    code, _, err = run(capsys, "acls", "--cluster", d, "--add", "--allow-principal", "User:a", "--operation", "Read",
                       "--topic", "t", "--host", "10.0.0.0/8")
    assert (code, err) == (1, "CIDR-based ACL host patterns require metadata version 4.4-IV1 or higher.\n")
    code, _, err = run(capsys, "controllers", "--cluster", d, "unregister", "--id", "1")
    assert (code, err) == (1, "The current MetadataVersion is too old to support controller unregistration.\n")
    for name in ("x", "+2", "\u00b2", "99999999999"):  # (not a broker id as a broker registers one)
        code, _, err = run(capsys, "configs", "--cluster", d, "--alter", "--entity-type", "brokers", "--entity-name",
                           name, "--add-config", "a=b")
        assert code == 2 and f"expected a broker id, got {name!r}" in err, (name, err)


def test_topic_configs_and_partitions_from_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """kafka-configs --alter on a topic (values judged as the release judges them) and
    kafka-topics --alter --partitions, with the tools' texts and exit codes."""
    d = _cluster(capsys, tmp_path / "c")
    assert run(capsys, "topics", "--cluster", d, "create", "--partitions", "2")[:2] == (0, "Created topic topic-0.\n")
    code, out, _ = run(capsys, "configs", "--cluster", d, "--alter", "--entity-type", "topics", "--entity-name",
                       "topic-0", "--add-config", "retention.ms=1000,cleanup.policy=[compact,delete]")
    assert (code, out) == (0, "Completed updating config for topic topic-0.\n")
    code, _, err = run(capsys, "configs", "--cluster", d, "--alter", "--entity-type", "topics", "--entity-name",
                       "topic-0", "--add-config", "retention.ms=soon")
    assert (code, err) == (1, "Invalid value soon for configuration retention.ms: Not a number of type LONG\n")
    code, _, err = run(capsys, "configs", "--cluster", d, "--alter", "--entity-type", "topics", "--entity-default",
                       "--add-config", "retention.ms=1")
    assert code == 2 and "topics have no default entity" in err
    assert run(capsys, "topics", "--cluster", d, "alter", "topic-0", "--partitions", "5")[:2] == (0, "")
    code, _, err = run(capsys, "topics", "--cluster", d, "alter", "topic-0", "--partitions", "3")
    assert (code, err) == (1, "The topic topic-0 currently has 5 partition(s); 3 would not be an increase.\n")
    code, out, _ = run(capsys, "metadata-shell", "--cluster", d, "--node", "1", "cat",
                       "/image/configs/TOPIC:topic-0/cleanup.policy", "/image/configs/TOPIC:topic-0/retention.ms")
    assert (code, out) == (0, "compact,delete\n1000\n")
    code, out, _ = run(capsys, "metadata-shell", "--cluster", d, "--node", "1", "ls", "/image/topics/byName/topic-0")
    assert code == 0 and out.split() == ["0", "1", "2", "3", "4", "id", "name"], out


def test_named_topics_with_configs_and_replicas_from_the_command_line(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """kafka-topics --create --topic NAME [--config K=V] [--replica-assignment ...]: only numbered
    topics could be made from the command line. A request refused for one topic still names the
    others it created (they are committed); bad flags are invalid input before anything is sent."""
    d = _cluster(capsys, tmp_path / "c")
    topics = ("topics", "--cluster", d, "create")
    assert run(capsys, *topics, "--topic", "orders", "--partitions", "2", "--config", "retention.ms=1000",
               "--config", "cleanup.policy=compact")[:2] == (0, "Created topic orders.\n")
    code, out, _ = run(capsys, "metadata-shell", "--cluster", d, "--node", "1", "cat",
                       "/image/configs/TOPIC:orders/retention.ms", "/image/configs/TOPIC:orders/cleanup.policy")
    assert (code, out) == (0, "1000\ncompact\n")
    assert run(capsys, *topics, "--topic", "placed", "--replica-assignment", "3,3,3")[:2] == (0, "Created topic placed.\n")
    code, out, _ = run(capsys, "metadata-shell", "--cluster", d, "--node", "1", "ls", "/image/topics/byName/placed")
    assert code == 0 and out.split() == ["0", "1", "2", "id", "name"], out
    # --if-not-exists: an existing topic is passed over silently, as kafka-topics does (tests/wire/test_real_tools.py)
    assert run(capsys, *topics, "--topic", "orders", "--topic", "more", "--if-not-exists")[:2] == (
        0, "Created topic more.\n")
    assert run(capsys, *topics, "--topic", "orders", "--if-not-exists")[:3] == (0, "", "")
    assert run(capsys, *topics, "--topic", "orders")[::2] == (1, "Topic 'orders' already exists.\n")
    code, out, err = run(capsys, *topics, "--topic", "a", "--topic", "b/c", "--topic", "d")
    assert (code, out, err) == (1, "Created topic a.\nCreated topic d.\n",
                                "Topic name is invalid: 'b/c' contains one or more characters other than ASCII "
                                "alphanumerics, '.', '_' and '-'\n")
    code, _, err = run(capsys, *topics, "--topic", "e", "--config", "retention.ms=soon")
    assert (code, err) == (1, "Invalid value soon for configuration retention.ms: Not a number of type LONG\n")
    for flags, said in ((["--topic", "f", "--count", "2"], "--count and --prefix are for topics named by a number"),
                        (["--topic", "f", "--topic", "f"], "'f' is named twice"),
                        (["--topic", "f", "--config", "retention.ms"], "--config: expected NAME=VALUE"),
                        (["--topic", "f", "--replica-assignment", "3,x"], "--replica-assignment: expected broker ids"),
                        (["--replica-assignment", "3", "--partitions", "2"], "--partitions and --replication-factor"),
                        (["--count", "2", "--if-not-exists"], "--if-not-exists is for topics named by --topic")):
        code, _, err = run(capsys, *topics, *flags)
        assert code == 2 and said in err, err
    assert run(capsys, "topics", "--cluster", d, "list")[1].split() == ["a", "d", "more", "orders", "placed"]


def test_leader_election_from_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """kafka-leader-election's lines, its checks of its options and file with its texts (exit 1),
    and a file kraftsim cannot read refused as invalid input (exit 2)."""
    d = _cluster(capsys, tmp_path / "c")
    assert run(capsys, "topics", "--cluster", d, "create", "--partitions", "2", "--replication-factor", "2")[0] == 0
    elect = ("leader-election", "--cluster", d, "--election-type")
    assert run(capsys, *elect, "PREFERRED", "--all-topic-partitions")[:2] == (0, "")  # none needed one
    assert run(capsys, *elect, "preferred", "--topic", "topic-0", "--partition", "1")[:2] == (
        0, "Valid replica already elected for partitions topic-0-1\n")
    code, out, err = run(capsys, *elect, "unclean", "--topic", "topic-0", "--partition", "7")
    assert (code, out, err) == (1, "Error completing leader election (UNCLEAN) for partition: topic-0-7: "
                                   "org.apache.kafka.common.errors.UnknownTopicOrPartitionException: No such partition "
                                   "as topic-0-7\n", "1 replica(s) could not be elected\n")
    assert run(capsys, *elect, "preferred", "--topic", "topic-0")[::2] == (1, "Missing required option(s): partition\n")
    assert run(capsys, *elect, "preferred", "--all-topic-partitions", "--partition", "0")[::2] == (
        1, "Option partition is only allowed if topic is used\n")
    wanted = tmp_path / "p.json"
    for text, code, expected in (
            ('{"partitions": [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 0}]}', 1,
             "Replica election data contains duplicate partitions: [t-0]\n"),
            ('{"topics": []}', 1, 'Replica election data is missing "partitions" field\n'),
            ('{"partitions": [{"topic": "t"}]}', 2, 'each partition needs a string "topic" and an integer "partition"'),
            ("{", 2, "--path-to-json-file")):
        wanted.write_text(text)
        got, _, err = run(capsys, *elect, "preferred", "--path-to-json-file", str(wanted))
        assert got == code and expected in err, err


@pytest.mark.parametrize("release, exit_code", [("3.6.2", 1), ("3.7.0", 0), ("3.7.1", 1), ("3.7.2", 1)])
def test_leader_election_fails_with_the_exit_code_of_the_clusters_release(
        release: str, exit_code: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Kafka 3.7.0's tool prints every failure and exits 0 (KAFKA-16410 made 3.7.1's exit 1; the
    Scala tool before it let the exception out): a partition not elected, an option refused and
    a file refused, each with the same text on both sides of the change."""
    d = str(tmp_path / "c")
    assert run(capsys, "cluster", "create", d, "--controllers", "1", "--brokers", "2", "--release", release,
               "--seed", "3")[0] == 0
    assert run(capsys, "topics", "--cluster", d, "create", "--partitions", "2", "--replication-factor", "2")[0] == 0
    elect = ("leader-election", "--cluster", d, "--election-type")
    assert run(capsys, *elect, "unclean", "--topic", "topic-0", "--partition", "7") == (
        exit_code, "Error completing leader election (UNCLEAN) for partition: topic-0-7: "
                   "org.apache.kafka.common.errors.UnknownTopicOrPartitionException: No such partition as topic-0-7\n",
        "1 replica(s) could not be elected\n")
    assert run(capsys, *elect, "preferred", "--topic", "topic-0")[::2] == (
        exit_code, "Missing required option(s): partition\n")
    wanted = tmp_path / "p.json"
    wanted.write_text('{"topics": []}')
    assert run(capsys, *elect, "preferred", "--path-to-json-file", str(wanted))[::2] == (
        exit_code, 'Replica election data is missing "partitions" field\n')
    assert run(capsys, *elect, "preferred", "--all-topic-partitions")[0] == 0  # (nothing failed: 0 everywhere)


def test_a_leader_election_file_that_never_ends_nests_too_deeply_or_is_never_written_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """--path-to-json-file was read whole with json.load: /dev/zero ran out of memory, `[[[[...`
    was an internal error (exit 70), a FIFO nobody writes to waited forever. Each is invalid
    input now (exit 2), said in one line, before the cluster is opened."""
    import os

    from kraftsim import regular_file
    from kraftsim.cli import leader_election_cmd

    d = _cluster(capsys, tmp_path / "c")
    monkeypatch.setattr(leader_election_cmd, "MAX_JSON_BYTES", 8192)
    monkeypatch.setattr(regular_file, "PIPE_WAIT_S", 0.2)
    deep, big, fifo = tmp_path / "deep.json", tmp_path / "big.json", tmp_path / "fifo.json"
    deep.write_text("[" * 8000)
    big.write_text('{"partitions": [' + ", ".join(['{"topic": "t", "partition": 0}'] * 1000) + "]}")
    os.mkfifo(fifo)
    state = (tmp_path / "c" / "cluster.json").read_bytes()
    for f, says in ((deep, "arrays or objects nested too deeply"), (big, "more than 8,192 bytes"),
                    (fifo, "a pipe nothing was written to in 0.2 s")):
        with fifo_unblocked_after(fifo):
            code, out, err = run(capsys, "leader-election", "--cluster", d, "--election-type", "preferred",
                                 "--path-to-json-file", str(f))
        assert (code, out) == (2, ""), err
        assert err.startswith(f"kraftsim: error: --path-to-json-file {f}: ") and says in err, err
        assert len(err.splitlines()) == 1
    assert (tmp_path / "c" / "cluster.json").read_bytes() == state


def test_ids_beyond_an_int32_are_refused_before_the_cluster_is_opened(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """A controller or partition id is an int32 in Kafka's requests (its tools fail to parse a
    larger one): `type=int` passed 99999999999 into the simulated request, which answered as if
    it were an id. Refused now as invalid input, naming the flag (or the file's entry)."""
    d = _cluster(capsys, tmp_path / "c")
    state = (tmp_path / "c" / "cluster.json").read_bytes()
    wanted = tmp_path / "p.json"
    wanted.write_text('{"partitions": [{"topic": "t", "partition": 2147483648}]}')
    for argv, says in (
            (["controllers", "--cluster", d, "unregister", "--id", "2147483648"], "argument --id: expected a "
                                                                                    "controller id from -2147483648"),
            (["leader-election", "--cluster", d, "--election-type", "preferred", "--topic", "t", "--partition",
              "99999999999"], "argument --partition: expected a partition from -2147483648"),
            (["metadata-quorum", "--cluster", d, "remove-controller", "-i", "-2147483649", "-d", "x"],
             "argument --controller-id/-i: expected a controller id from -2147483648"),
            (["leader-election", "--cluster", d, "--election-type", "preferred", "--path-to-json-file", str(wanted)],
             'an integer "partition", got {"topic": "t", "partition": 2147483648}')):
        code, out, err = run(capsys, *argv)
        assert (code, out) == (2, "") and says in err, (argv, err)
    assert (tmp_path / "c" / "cluster.json").read_bytes() == state


def test_client_quotas_from_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """kafka-configs --alter on client quotas: a user and a client together, the default user, an
    ip; the controller's refusals and the tool's own (a value that is not a number, a quota
    deleted that is not set, entity types that do not go together), with its texts and exit codes."""
    d = _cluster(capsys, tmp_path / "c")
    code, out, _ = run(capsys, "configs", "--cluster", d, "--alter", "--entity-type", "users", "--entity-name", "alice",
                       "--entity-type", "clients", "--entity-name", "app", "--add-config",
                       "producer_byte_rate=1024,request_percentage=12.5")
    assert (code, out) == (0, "Completed updating config for user alice.\n")
    code, out, _ = run(capsys, "configs", "--cluster", d, "--alter", "--entity-type", "users", "--entity-default",
                       "--add-config", "consumer_byte_rate=2048")
    assert (code, out) == (0, "Completed updating default config for users in the cluster.\n")
    code, out, _ = run(capsys, "configs", "--cluster", d, "--alter", "--entity-type", "ips", "--entity-name",
                       "10.0.0.1", "--add-config", "connection_creation_rate=5")
    assert (code, out) == (0, "Completed updating config for ip 10.0.0.1.\n")
    code, _, err = run(capsys, "configs", "--cluster", d, "--alter", "--entity-type", "clients", "--entity-name", "app",
                       "--add-config", "producer_byte_rate=1.5")
    assert (code, err) == (1, "producer_byte_rate cannot be a fractional value.\n")
    code, _, err = run(capsys, "configs", "--cluster", d, "--alter", "--entity-type", "clients", "--entity-name", "app",
                       "--add-config", "producer_byte_rate=fast")
    assert (code, err) == (2, "kraftsim: error: Cannot parse quota configuration value for producer_byte_rate: fast\n")
    code, _, err = run(capsys, "configs", "--cluster", d, "--alter", "--entity-type", "users", "--entity-default",
                       "--delete-config", "producer_byte_rate")
    assert (code, err) == (1, "Invalid config(s): producer_byte_rate\n")
    code, _, err = run(capsys, "configs", "--cluster", d, "--alter", "--entity-type", "ips", "--entity-name", "1.2.3.4",
                       "--entity-type", "users", "--entity-name", "bob", "--add-config", "connection_creation_rate=5")
    assert code == 2 and "give users, clients, or both, or ips alone" in err
    code, _, err = run(capsys, "configs", "--cluster", d, "--alter", "--entity-type", "users", "--add-config",
                       "consumer_byte_rate=1")
    assert code == 2 and "give one --entity-name or --entity-default for each --entity-type" in err
    assert run(capsys, "configs", "--cluster", d, "--alter", "--entity-type", "users", "--entity-default",
               "--delete-config", "consumer_byte_rate")[:2] == (0, "Completed updating default config for users in "
                                                                  "the cluster.\n")
    code, out, _ = run(capsys, "metadata-shell", "--cluster", d, "--node", "2", "find", "/image/clientQuotas")
    assert code == 0 and "request_percentage" in out and "connection_creation_rate" in out, out
    assert "consumer_byte_rate" not in out, out


@pytest.mark.parametrize("release,refused", [("3.9.2", True), ("4.3.1", True), ("4.4.0", False)])
def test_deleting_a_config_not_set_is_refused_by_the_tool_before_4_4(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                      release: str, refused: bool) -> None:
    """kafka-configs before 4.4 describes a topic or a broker first and refuses to delete a
    config it does not hold (naming each, as given; nothing is sent); 4.4's sends the change as
    told, and the controller takes it."""
    d = str(tmp_path / "c")
    assert run(capsys, "cluster", "create", d, "--controllers", "1", "--brokers", "1", "--release", release,
               "--engine", "events")[0] == 0
    assert run(capsys, "topics", "--cluster", d, "create", "--partitions", "1")[0] == 0
    assert run(capsys, "configs", "--cluster", d, "--alter", "--entity-type", "topics", "--entity-name", "topic-0",
               "--add-config", "retention.ms=1000")[0] == 0
    for entity in (["--entity-type", "topics", "--entity-name", "topic-0"],
                   ["--entity-type", "brokers", "--entity-name", "2"], ["--entity-type", "brokers", "--entity-default"]):
        code, out, err = run(capsys, "configs", "--cluster", d, "--alter", *entity,
                             "--delete-config", "segment.ms,retention.ms,log.roll.ms")
        if not refused:
            assert (code, err) == (0, ""), (entity, err)
        elif entity[1] == "topics":
            assert (code, out, err) == (1, "", "Invalid config(s): segment.ms,log.roll.ms\n")
        else:
            assert (code, out, err) == (1, "", "Invalid config(s): segment.ms,retention.ms,log.roll.ms\n")
    code, out, _ = run(capsys, "metadata-shell", "--cluster", d, "--node", "1", "cat",
                       "/image/configs/TOPIC:topic-0/retention.ms")
    gone = "cat: /image/configs/TOPIC:topic-0/retention.ms: No such file or directory."
    assert (code, out.strip()) == (0, "1000" if refused else gone)
