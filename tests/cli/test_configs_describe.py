"""`kraftsim configs --describe`: kafka-configs --describe of topics and brokers on a simulated
cluster, each release's tool as itself. The expected lines were read from the real tools
against `kraftsim serve` (tests/wire/test_real_configs_describe.py compares the two whenever
Kafka can run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_support import run


def _cluster(capsys: pytest.CaptureFixture[str], d: Path, release: str) -> str:
    c = str(d)
    assert run(capsys, "cluster", "create", c, "--controllers", "1", "--brokers", "2", "--release", release)[0] == 0
    assert run(capsys, "topics", "--cluster", c, "create", "--topic", "cfg")[0] == 0
    assert run(capsys, "configs", "--cluster", c, "--alter", "--entity-type", "topics", "--entity-name", "cfg",
               "--add-config", "retention.ms=1000,cleanup.policy=compact,min.insync.replicas=1")[0] == 0
    assert run(capsys, "configs", "--cluster", c, "--alter", "--entity-type", "brokers", "--entity-default",
               "--add-config", "log.retention.ms=5000")[0] == 0
    return c


def test_a_topics_dynamic_configs_on_4_4(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    c = _cluster(capsys, tmp_path / "c", "4.4.0")
    code, out, _ = run(capsys, "configs", "--cluster", c, "--describe", "--entity-type", "topics", "--entity-name",
                       "cfg")
    assert (code, out) == (0, "Dynamic configs for topic cfg are:\n"
                              "  cleanup.policy=compact sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy="
                              "compact, DEFAULT_CONFIG:log.cleanup.policy=delete}\n"
                              "  min.insync.replicas=1 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:min.insync."
                              "replicas=1, DYNAMIC_DEFAULT_BROKER_CONFIG:min.insync.replicas=1, DEFAULT_CONFIG:min."
                              "insync.replicas=1}\n"
                              "  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000, "
                              "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=5000, DEFAULT_CONFIG:log.retention."
                              "hours=168}\n")
    # (4.x formats the cluster with min.insync.replicas=1 as a dynamic default)
    code, out, _ = run(capsys, "configs", "--cluster", c, "--describe", "--entity-type", "brokers")
    assert (code, out) == (0, "Dynamic configs for broker 2 are:\nDynamic configs for broker 3 are:\n"
                              "Default configs for brokers in the cluster are:\n"
                              "  log.retention.ms=5000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log."
                              "retention.ms=5000}\n"
                              "  min.insync.replicas=1 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:min."
                              "insync.replicas=1}\n")
    code, out, _ = run(capsys, "configs", "--cluster", c, "--describe", "--entity-type", "topics", "--entity-name",
                       "nope")
    assert (code, out) == (0, "The topic 'nope' doesn't exist and doesn't have dynamic config.\n")


def test_before_3_5_the_entries_come_in_the_admin_clients_order(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    c = _cluster(capsys, tmp_path / "c", "3.3.2")
    code, out, _ = run(capsys, "configs", "--cluster", c, "--describe", "--entity-type", "topics", "--entity-name",
                       "cfg")
    assert code == 0
    assert [line.split("=")[0].strip() for line in out.splitlines()[1:]] == ["min.insync.replicas", "cleanup.policy",
                                                                             "retention.ms"]


def test_before_4_1_a_missing_topic_fails_after_its_header(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    c = _cluster(capsys, tmp_path / "c", "4.0.2")
    code, out, err = run(capsys, "configs", "--cluster", c, "--describe", "--entity-type", "topics", "--entity-name",
                         "nope")
    assert (code, out, err) == (1, "Dynamic configs for topic nope are:\n", "The topic 'nope' does not exist.\n")
    code, out, _ = run(capsys, "configs", "--cluster", c, "--describe", "--entity-type", "topics", "--entity-name",
                       "cfg", "--all")
    assert code == 0 and out.startswith("All configs for topic cfg are:\n") and "  segment.bytes=1073741824 " in out


@pytest.mark.parametrize(("flags", "says"), [
    (["--entity-type", "topics", "--add-config", "a=b"], "--add-config and --delete-config are for --alter"),
    (["--entity-type", "users", "--all"], "--all is for topics and brokers"),
    (["--entity-type", "ips", "--entity-type", "users"], "give users, clients, or both, or ips alone"),
    (["--entity-type", "topics", "--entity-default"], "topics have no default entity"),
])
def test_what_describe_refuses(tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str],
                               says: str) -> None:
    c = _cluster(capsys, tmp_path / "c", "4.4.0")
    code, _, err = run(capsys, "configs", "--cluster", c, "--describe", *flags)
    assert code == 2 and says in err
    code, _, err = run(capsys, "configs", "--cluster", c, "--describe", "--entity-type", "brokers", "--entity-name",
                       "2", "--all")
    assert code == 1 and "run `kraftsim serve`" in err
    assert run(capsys, "configs", "--cluster", c, "--alter", "--all", "--entity-type", "topics", "--entity-name",
               "cfg", "--add-config", "a=b")[0] == 2


def test_client_quotas_and_scram_credentials(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kraftsim.sim import Simulation

    c = _cluster(capsys, tmp_path / "c", "4.4.0")
    for entity, quotas in ((["users", "--entity-name", "alice"], "consumer_byte_rate=1000,request_percentage=2.5"),
                           (["users", "--entity-default"], "consumer_byte_rate=500"),
                           (["users", "--entity-name", "alice", "--entity-type", "clients", "--entity-name", "app"],
                            "producer_byte_rate=300")):
        assert run(capsys, "configs", "--cluster", c, "--alter", "--entity-type", *entity, "--add-config", quotas)[0] == 0
    with Simulation.open(c) as sim:
        sim.alter_scram_credentials("alice", {"SCRAM-SHA-512": sim.scram_secret("alice", "SCRAM-SHA-512", "pw", 5000)})
    code, out, _ = run(capsys, "configs", "--cluster", c, "--describe", "--entity-type", "users")
    assert (code, out) == (0, "Quota configs for the default user-principal are consumer_byte_rate=500.0\n"
                              "Quota configs for user-principal 'alice' are consumer_byte_rate=1000.0, "
                              "request_percentage=2.5\n"
                              "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-512=iterations=5000\n")
    code, out, _ = run(capsys, "configs", "--cluster", c, "--describe", "--entity-type", "users", "--entity-name",
                       "alice", "--entity-type", "clients")  # (users with clients: no credentials)
    assert (code, out) == (0, "Quota configs for user-principal 'alice', client-id 'app' are producer_byte_rate=300.0\n")


def test_before_3_5_describing_users_fails_after_their_quotas(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    c = _cluster(capsys, tmp_path / "c", "3.4.1")
    assert run(capsys, "configs", "--cluster", c, "--alter", "--entity-type", "users", "--entity-name", "bob",
               "--add-config", "producer_byte_rate=1024")[0] == 0
    code, out, err = run(capsys, "configs", "--cluster", c, "--describe", "--entity-type", "users")
    assert (code, out, err) == (1, "Quota configs for user-principal 'bob' are producer_byte_rate=1024.0\n",
                                "The broker does not support DESCRIBE_USER_SCRAM_CREDENTIALS\n")
