"""`kraftsim topics describe` prints what Kafka's kafka-topics --describe prints for the same
cluster: the tool of each release (its own jars) against the directory served, kraftsim on a
copy of it. The releases are those whose tools differ: 3.3 (written in Scala, no ELR columns),
3.7 (Java, the admin client's copied map of descriptions), 3.8 (ELR columns, a map not copied,
a missing topic named as `Optional[...]`) and 4.4 (that text mended)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import kraftsim
from kraftsim.controller.reassignments import (
    AlterPartitionReassignmentsRequest, ReassignablePartition, ReassignableTopic,
)
from kraftsim.sim import Simulation
from tests.cli_support import run
from tests.wire.real_tools import kafka_dist, run_tool

pytestmark = pytest.mark.kafka

#: The tool's options of each run, and what they exercise.
VARIANTS = {
    "every topic": [],
    "a pattern with an alternative": ["--topic", "t.*,orders"],
    "partitions in trouble": ["--under-replicated-partitions", "--unavailable-partitions"],
    "min.insync.replicas": ["--under-min-isr-partitions", "--at-min-isr-partitions"],
    "overridden configs": ["--topics-with-overrides"],
    "internal topics left out": ["--exclude-internal"],
    "a topic that is not there": ["--topic", "nope"],
    "one partition an answer": ["--partition-size-limit-per-response", "1"],
    "a limit that is not a number": ["--partition-size-limit-per-response", "x"],
    "a limit, no topic matched": ["--partition-size-limit-per-response", "x", "--topic", "nope", "--if-exists"],
}
ERROR_PREFIX = "Error while executing topic command : "
NAMES = ["orders", "payments", "a", "zeta", "t1", "t2", "t10", "topic-x", "__consumer_offsets", "b.c", "B", "t3",
         "__share_group_state"]  # (the last internal from 3.9 only)


def _build(capsys: pytest.CaptureFixture[str], d: Path, release: str) -> None:
    """Topics of several shapes with a cluster-wide config, a broker down (under-replicated
    partitions, one without a leader) and a reassignment that cannot finish (its new replica
    is that broker)."""
    c = str(d)
    assert run(capsys, "cluster", "create", c, "--controllers", "1", "--brokers", "4", "--release", release)[0] == 0
    for name in NAMES:
        assert run(capsys, "topics", "--cluster", c, "create", "--topic", name, "--partitions", "3",
                   "--replication-factor", "2")[0] == 0
    assert run(capsys, "topics", "--cluster", c, "create", "--topic", "single", "--replica-assignment", "5,4,2,3")[0] == 0
    assert run(capsys, "topics", "--cluster", c, "create", "--topic", "cfg", "--partitions", "2",
               "--replication-factor", "3", "--config", "retention.ms=1000", "--config", "min.insync.replicas=2",
               "--config", "cleanup.policy=compact")[0] == 0
    assert run(capsys, "configs", "--cluster", c, "--alter", "--entity-type", "brokers", "--entity-default",
               "--add-config", "log.retention.ms=5000")[0] == 0
    assert run(capsys, "cluster", "crash", c, "--nodes", "5")[0] == 0
    assert run(capsys, "cluster", "run", c, "--ms", "30000")[0] == 0
    with Simulation.open(c) as sim:
        moved = ReassignableTopic("zeta", (ReassignablePartition(2, (2, 5)),))
        assert sim.send_alter_partition_reassignments(AlterPartitionReassignmentsRequest(topics=(moved,))) is not None
        sim.run(5_000)


def _by_id(capsys: pytest.CaptureFixture[str], cluster: Path, scratch: Path) -> dict[str, list[str]]:
    """Variants that name a topic by id (the admin client describes it through Metadata by
    id): the one being reassigned, an id no topic has, a text that is not an id."""
    shutil.copytree(cluster, scratch)  # (the cluster itself stays as the tool will see it)
    code, out, _ = run(capsys, "topics", "--cluster", str(scratch), "describe", "--topic", "zeta")
    assert code == 0 and out.startswith("Topic: zeta\tTopicId: ")
    zeta = out.split("\t")[1].removeprefix("TopicId: ")
    return {"a topic by id": ["--topic-id", zeta], "an id no topic has": ["--topic-id", "AAAAAAAAAAAAAAAAAAAAAQ"],
            "an id no topic has, --if-exists": ["--topic-id", "AAAAAAAAAAAAAAAAAAAAAQ", "--if-exists"],
            "not an id": ["--topic-id", "bad"]}


@pytest.mark.parametrize("release", ["3.3.2", "3.7.2", "3.8.1", "4.4.0"])
def test_kraftsim_topics_describe_prints_what_kafkas_tool_prints(release, tmp_path, capsys):
    dist = kafka_dist(release)
    main_class = "kafka.admin.TopicCommand" if release < "3.7" else "org.apache.kafka.tools.TopicCommand"
    cluster = tmp_path / "c"
    _build(capsys, cluster, release)
    ours: dict[str, tuple[int, str, str]] = {}
    variants = {**VARIANTS, **_by_id(capsys, cluster, tmp_path / "ids")}
    for name, options in variants.items():
        copy = tmp_path / f"copy-{len(ours)}"  # (each run on the state the tool sees)
        shutil.copytree(cluster, copy)
        ours[name] = run(capsys, "topics", "--cluster", str(copy), "describe", *options)
    with kraftsim.serve(cluster) as k:
        for name, options in variants.items():
            theirs = run_tool(dist, main_class, "--bootstrap-server", k.address(2), "--describe", *options)
            code, out, err = ours[name]
            if theirs.stdout.startswith(ERROR_PREFIX):  # (kraftsim says the tool's text alone, on stderr)
                assert (code, err) == (theirs.returncode, theirs.stdout[len(ERROR_PREFIX):]), name
            elif theirs.returncode == 1 and not theirs.stdout:  # (options refused: the text, then the usage)
                assert (code, err) == (1, theirs.stderr.splitlines(keepends=True)[0]), name
            else:
                assert (code, out) == (theirs.returncode, theirs.stdout), name
    assert "Adding Replicas: 5\tRemoving Replicas: 3" in ours["every topic"][1]
    assert "Leader: none" in ours["every topic"][1]
    assert "Adding Replicas: 5\tRemoving Replicas: 3" in ours["a topic by id"][1]
