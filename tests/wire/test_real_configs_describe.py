"""`kraftsim configs --describe` prints what Kafka's kafka-configs --describe prints for the
same cluster's topics, brokers and client quotas: the tool of each release (its own jars)
against the directory served, kraftsim on a copy of it. The releases are those whose tools
differ: 3.3 (entries in the order of the admin client's HashMap; no SCRAM credentials to list,
so describing users fails after their quotas), 4.0 (sorted by name; a missing topic fails
after its header) and 4.4 (written in Java; a missing topic is said not to exist)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import kraftsim
from kraftsim.sim import Simulation
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
    "users' quotas and credentials": ["--entity-type", "users"],
    "a user's": ["--entity-type", "users", "--entity-name", "alice"],
    "a user's clients": ["--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients"],
    "users' clients": ["--entity-type", "users", "--entity-type", "clients"],
    "the default user's": ["--entity-type", "users", "--entity-default"],
    "clients'": ["--entity-type", "clients"],
    "ips'": ["--entity-type", "ips"],
}
#: Users with quotas (enough for the admin client's HashMap of entities to order them by hash).
USERS = ["alice", "bob", "carol", "dave", "u1", "u2", "u3", "u10", "User:x", "zed", "mallory", "oscar", "peggy"]


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
    quotas = [(["users", "--entity-name", u], f"consumer_byte_rate={1000 + i},producer_byte_rate={2048 + i},"
                                              f"request_percentage={i + 0.25}") for i, u in enumerate(USERS)]
    quotas += [(["users", "--entity-name", "alice", "--entity-type", "clients", "--entity-name", client],
                "request_percentage=50") for client in ("app", "svc-1")]
    quotas += [(["clients", "--entity-name", "app"], "producer_byte_rate=300,consumer_byte_rate=1e9"),
               (["users", "--entity-default"], "consumer_byte_rate=500"),
               (["clients", "--entity-default"], "consumer_byte_rate=600"),
               (["ips", "--entity-name", "10.0.0.1"], "connection_creation_rate=10"),
               (["ips", "--entity-name", "::1"], "connection_creation_rate=20")]
    for entity, configs in quotas:
        assert run(capsys, "configs", "--cluster", c, "--alter", "--entity-type", *entity, "--add-config", configs)[0] == 0
    if release >= "3.5":  # (KRaft's SCRAM credentials)
        with Simulation.open(c) as sim:
            for user, mechanism, iterations in (("alice", "SCRAM-SHA-256", 8192), ("bob", "SCRAM-SHA-512", 5000),
                                                ("nobody", "SCRAM-SHA-256", 4096)):
                sim.alter_scram_credentials(user, {mechanism: sim.scram_secret(user, mechanism, "pw", iterations)})


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
    assert ours["users' quotas and credentials"][1].count("Quota configs for user-principal") == len(USERS)
    if release >= "3.5":
        assert "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192\n" in \
            ours["users' quotas and credentials"][1]
