"""`kraftsim configs --describe` prints what Kafka's kafka-configs --describe prints for the
same cluster's topics and brokers: the tool of each release (its own jars) against the
directory served, kraftsim on a copy of it. The releases are those whose tools differ: 3.3
(entries in the order of the admin client's HashMap), 4.0 (sorted by name; a missing topic
fails after its header) and 4.4 (written in Java; a missing topic is said not to exist)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import kraftsim
from tests.cli_support import run
from tests.wire.real_tools import kafka_dist, run_tool

pytestmark = pytest.mark.kafka

VARIANTS = {
    "a topic": ["--entity-type", "topics", "--entity-name", "cfg"],
    "every topic": ["--entity-type", "topics"],
    "every config of a topic": ["--entity-type", "topics", "--entity-name", "cfg", "--all"],
    "a topic that is not there": ["--entity-type", "topics", "--entity-name", "nope"],
    "a broker": ["--entity-type", "brokers", "--entity-name", "2"],
    "the brokers' default": ["--entity-type", "brokers", "--entity-default"],
    "every broker": ["--entity-type", "brokers"],
}


def _build(capsys: pytest.CaptureFixture[str], d: Path, release: str) -> None:
    """Topic configs, cluster-wide broker defaults, and broker 2's own configs (none that a
    topic's synonyms name: which broker answers for a topic is the admin client's choice)."""
    c = str(d)
    assert run(capsys, "cluster", "create", c, "--controllers", "1", "--brokers", "3", "--release", release)[0] == 0
    for name in ("orders", "cfg", "b.c"):
        assert run(capsys, "topics", "--cluster", c, "create", "--topic", name)[0] == 0
    for entity, configs in ((["topics", "--entity-name", "cfg"], "retention.ms=1000,cleanup.policy=compact,"
                                                                  "min.insync.replicas=1"),
                            (["brokers", "--entity-default"], "log.retention.ms=5000,log.cleaner.threads=2"),
                            (["brokers", "--entity-name", "2"], "log.cleaner.threads=3,num.io.threads=4")):
        assert run(capsys, "configs", "--cluster", c, "--alter", "--entity-type", *entity, "--add-config", configs)[0] == 0


@pytest.mark.parametrize("release", ["3.3.2", "4.0.2", "4.4.0"])
def test_kraftsim_configs_describe_prints_what_kafkas_tool_prints(release, tmp_path, capsys):
    dist = kafka_dist(release)
    main_class = "org.apache.kafka.tools.ConfigCommand" if release >= "4.4" else "kafka.admin.ConfigCommand"
    cluster = tmp_path / "c"
    _build(capsys, cluster, release)
    ours: dict[str, tuple[int, str, str]] = {}
    for name, options in VARIANTS.items():
        copy = tmp_path / f"copy-{len(ours)}"
        shutil.copytree(cluster, copy)
        ours[name] = run(capsys, "configs", "--cluster", str(copy), "--describe", *options)
    with kraftsim.serve(cluster) as k:
        for name, options in VARIANTS.items():
            theirs = run_tool(dist, main_class, "--bootstrap-server", k.address(2), "--describe", *options)
            assert ours[name][:2] == (theirs.returncode, theirs.stdout), name
    assert "log.cleaner.threads=3 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.cleaner.threads=3, " \
           "DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.threads=2, DEFAULT_CONFIG:log.cleaner.threads=1}" in ours["a broker"][1]
    assert ours["every config of a topic"][1].count("\n") > 25
