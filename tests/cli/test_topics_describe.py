"""`kraftsim topics describe`: kafka-topics --describe on a simulated cluster, each release's
tool as itself. The expected lines and orders were read from the real tools against `kraftsim
serve` (tests/wire/test_real_topics_describe.py compares the two whenever Kafka can run)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.cli_support import run

#: Topic names whose order differs between the admin clients' maps (see below).
NAMES = ["orders", "t1", "t2", "t3", "t10", "topic-x"]


def _cluster(capsys: pytest.CaptureFixture[str], d: Path, release: str, *names: str) -> str:
    assert run(capsys, "cluster", "create", str(d), "--controllers", "1", "--brokers", "3", "--release", release)[0] == 0
    for name in names:
        assert run(capsys, "topics", "--cluster", str(d), "create", "--topic", name, "--partitions", "2",
                   "--replication-factor", "2")[0] == 0
    return str(d)


def _topics(out: str) -> list[str]:
    return re.findall(r"^Topic: (\S+)", out, re.M)


@pytest.mark.parametrize(("release", "order", "missing"), [
    # 3.8's admin client hands the tool its map of descriptions, the others a copy: the same six
    # topics come in another order. 3.8 to 4.0 name a missing topic by the Optional holding it.
    ("3.8.1", ["orders", "t10", "topic-x", "t1", "t2", "t3"], "Optional[nope]"),
    ("3.9.2", ["t10", "topic-x", "orders", "t1", "t2", "t3"], "Optional[nope]"),
    ("4.4.0", ["t10", "topic-x", "orders", "t1", "t2", "t3"], "nope"),
])
def test_topics_come_in_the_order_of_the_admin_clients_map(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           release: str, order: list[str], missing: str) -> None:
    d = _cluster(capsys, tmp_path / "c", release, *NAMES)
    code, out, _ = run(capsys, "topics", "--cluster", d, "describe")
    assert code == 0 and _topics(out) == order
    assert "\tElr: \tLastKnownElr: \n" in out  # (a partition with no ELR: the columns, empty)
    code, out, err = run(capsys, "topics", "--cluster", d, "describe", "--topic", "nope")
    assert (code, out, err) == (1, "", f"Topic '{missing}' does not exist as expected\n")
    assert run(capsys, "topics", "--cluster", d, "describe", "--topic", "nope", "--if-exists")[:2] == (0, "")


def test_one_topic_its_configs_and_partitions_on_3_7(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _cluster(capsys, tmp_path / "c", "3.7.2")
    assert run(capsys, "topics", "--cluster", d, "create", "--topic", "cfg", "--replica-assignment", "2:3,3:4",
               "--config", "min.insync.replicas=2", "--config", "cleanup.policy=compact")[0] == 0
    code, out, _ = run(capsys, "topics", "--cluster", d, "describe", "--topic", "cfg")
    topic_id = re.search(r"TopicId: (\S+)", out).group(1)  # type: ignore[union-attr]
    assert (code, out) == (0, f"Topic: cfg\tTopicId: {topic_id}\tPartitionCount: 2\tReplicationFactor: 2\t"
                              "Configs: min.insync.replicas=2,cleanup.policy=compact\n"
                              "\tTopic: cfg\tPartition: 0\tLeader: 2\tReplicas: 2,3\tIsr: 2,3\n"
                              "\tTopic: cfg\tPartition: 1\tLeader: 3\tReplicas: 3,4\tIsr: 3,4\n")
    # (no ELR columns before 3.8; both partitions sit exactly at their min.insync.replicas)
    assert run(capsys, "topics", "--cluster", d, "describe", "--at-min-isr-partitions")[1].count("\n") == 2
    assert run(capsys, "topics", "--cluster", d, "describe", "--topics-with-overrides")[1].startswith("Topic: cfg\t")


def test_a_broker_down_leaves_partitions_in_trouble(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _cluster(capsys, tmp_path / "c", "4.4.0", "__consumer_offsets")
    assert run(capsys, "topics", "--cluster", d, "create", "--topic", "single", "--replica-assignment", "4,2")[0] == 0
    assert run(capsys, "cluster", "crash", d, "--nodes", "4")[0] == 0
    assert run(capsys, "cluster", "run", d, "--ms", "30000")[0] == 0
    code, out, _ = run(capsys, "topics", "--cluster", d, "describe", "--unavailable-partitions")
    assert (code, out) == (0, "\tTopic: single\tPartition: 0\tLeader: none\tReplicas: 4\tIsr: \tElr: 4\t"
                              "LastKnownElr: 4\n")
    code, out, _ = run(capsys, "topics", "--cluster", d, "describe", "--under-replicated-partitions",
                       "--unavailable-partitions")  # (from 3.7 the reports combine: any one lists a partition)
    assert code == 0 and "Leader: none" in out and "__consumer_offsets" in out
    assert "__consumer_offsets" not in run(capsys, "topics", "--cluster", d, "describe", "--exclude-internal")[1]


def test_options_the_tool_refuses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _cluster(capsys, tmp_path / "c", "3.6.2", "orders")
    code, _, err = run(capsys, "topics", "--cluster", d, "describe", "--under-replicated-partitions",
                       "--unavailable-partitions")  # (3.6's tool, written in Scala, takes one report)
    assert (code, err) == (1, 'Option "[under-replicated-partitions]" can\'t be used with option '
                              '"[unavailable-partitions]"\n')
    code, _, err = run(capsys, "topics", "--cluster", d, "describe", "--topic", "t[")
    assert (code, err) == (1, "t[ is an invalid regex.\n")
    code, _, err = run(capsys, "topics", "--cluster", d, "describe", "--topics-with-overrides",
                       "--at-min-isr-partitions")
    assert code == 2 and "--topics-with-overrides lists topics, not partitions" in err
    code, out, _ = run(capsys, "topics", "--cluster", d, "describe", "--topic", " 'nothing , orders' ")
    assert code == 0 and _topics(out) == ["orders"]  # (quotes and spaces dropped, a comma read as |)


def test_mid_roll_the_newest_tool_asks_an_older_broker(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An operator's tool is the cluster's newest release (3.8 here); the broker it asks (the
    lowest id) is still on 3.7, which has no DescribeTopicPartitions: the admin client falls
    back to Metadata, and the tool prints N/A for each partition's ELR."""
    d = _cluster(capsys, tmp_path / "c", "3.7.2", "orders")
    assert run(capsys, "cluster", "stop", d, "--nodes", "4")[0] == 0
    assert run(capsys, "cluster", "start", d, "--nodes", "4", "--release", "3.8.1")[0] == 0
    code, out, _ = run(capsys, "topics", "--cluster", d, "describe")
    partitions = [line for line in out.splitlines() if line.startswith("\tTopic: orders")]
    assert code == 0 and len(partitions) == 2
    assert all(line.endswith("\tElr: N/A\tLastKnownElr: N/A") for line in partitions)


def test_a_topic_named_by_id(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--topic-id (read from the real tools, 3.3.2 to 4.4.0): the one topic with that id,
    described through Metadata (no ELR from it: "N/A"); the zero id counts as none; ids the
    tool cannot parse fail with Kafka's text before the cluster is read."""
    d = _cluster(capsys, tmp_path / "c", "4.4.0", "orders", "t1")
    by_name = run(capsys, "topics", "--cluster", d, "describe", "--topic", "t1")[1]
    topic_id = re.search(r"TopicId: (\S+)", by_name).group(1)  # type: ignore[union-attr]
    code, out, _ = run(capsys, "topics", "--cluster", d, "describe", "--topic-id", topic_id)
    assert (code, out) == (0, by_name.replace("Elr: \tLastKnownElr: \n", "Elr: N/A\tLastKnownElr: N/A\n"))
    assert out.count("\tElr: N/A\t") == 2
    assert run(capsys, "topics", "--cluster", d, "describe", "--topic-id", topic_id + "==")[1] == out
    code, out, _ = run(capsys, "topics", "--cluster", d, "describe", "--topic-id", "AAAAAAAAAAAAAAAAAAAAAA",
                       "--topic", "t1")
    assert (code, out) == (0, by_name)
    code, out, _ = run(capsys, "topics", "--cluster", d, "describe", "--topic-id", topic_id, "--topic", "nope",
                       "--if-exists")
    assert code == 0 and out.startswith("Only topic id will be used when both --topic and --topic-id are specified")
    assert _topics(out) == ["t1"]
    missing = "AAAAAAAAAAAAAAAAAAAAAQ"
    assert run(capsys, "topics", "--cluster", d, "describe", "--topic-id", missing) == \
        (1, "", f"TopicId '{missing}' does not exist as expected\n")
    assert run(capsys, "topics", "--cluster", d, "describe", "--topic-id", missing, "--if-exists")[:2] == (0, "")
    assert run(capsys, "topics", "--cluster", str(tmp_path / "none"), "describe", "--topic-id", "bad") == \
        (1, "", "Input string `bad` decoded as 2 bytes, which is not equal to the expected 16 bytes of a "
                "base64-encoded UUID\n")


def test_by_id_3_7_has_no_elr_columns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _cluster(capsys, tmp_path / "c", "3.7.2", "orders")
    by_name = run(capsys, "topics", "--cluster", d, "describe")[1]
    topic_id = re.search(r"TopicId: (\S+)", by_name).group(1)  # type: ignore[union-attr]
    assert run(capsys, "topics", "--cluster", d, "describe", "--topic-id", topic_id)[:2] == (0, by_name)


@pytest.mark.parametrize(("release", "kept"), [("3.8.1", True), ("3.9.2", False)])
def test_what_counts_as_internal_is_the_releases(tmp_path: Path, capsys: pytest.CaptureFixture[str], release: str,
                                                 kept: bool) -> None:
    """Before 3.9 a topic named __share_group_state is any topic: --exclude-internal keeps it."""
    d = _cluster(capsys, tmp_path / "c", release, "__consumer_offsets", "__share_group_state", "orders")
    code, out, _ = run(capsys, "topics", "--cluster", d, "describe", "--exclude-internal")
    assert code == 0 and sorted(set(_topics(out))) == sorted(["orders"] + ["__share_group_state"] * kept)


@pytest.mark.parametrize(("release", "refused"), [
    ("3.6.2", 'Exception in thread "main" joptsimple.UnrecognizedOptionException: '
              "partition-size-limit-per-response is not a recognized option\n"),
    ("3.7.2", "partition-size-limit-per-response is not a recognized option\n"),
    ("3.8.1", None),
])
def test_a_partition_limit_per_answer_changes_nothing_printed(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              release: str, refused: str | None) -> None:
    """--partition-size-limit-per-response (read from the real tools, 3.3.2 to 4.4.0): from 3.8
    the tool pages through DescribeTopicPartitions, and prints the same; it reads the number only
    when it describes topics by name. Older tools do not know the option."""
    d = _cluster(capsys, tmp_path / "c", release, "orders", "t1")
    whole = run(capsys, "topics", "--cluster", d, "describe")
    limited = run(capsys, "topics", "--cluster", d, "describe", "--partition-size-limit-per-response", "1")
    if refused is not None:
        assert limited == (1, "", refused)
        return
    assert limited == whole and whole[0] == 0
    assert run(capsys, "topics", "--cluster", d, "describe", "--partition-size-limit-per-response", "-4") == whole
    assert run(capsys, "topics", "--cluster", d, "describe", "--partition-size-limit-per-response", "1_0") == \
        (1, "", "Cannot parse argument '1_0' of option partition-size-limit-per-response\n")
    assert run(capsys, "topics", "--cluster", d, "describe", "--partition-size-limit-per-response", "x",
               "--topic", "nope", "--if-exists") == (0, "", "")  # (no topic to describe: the number is not read)
