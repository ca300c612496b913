"""`kraftsim acls --add|--remove|--list` on a simulated cluster: kafka-acls' defaults (a
literal resource pattern, a remove with a principal narrowed to host `*` and operation All,
`match` finding every binding that applies to a name), its refusals with its texts (exit 2),
and the bindings still there when the cluster is opened again."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_support import run


@pytest.fixture
def cluster(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    d = tmp_path / "c"
    code, _, err = run(capsys, "cluster", "create", str(d), "--controllers", "1", "--brokers", "1", "--release", "3.9.0",
                       "--seed", "5", "--engine", "events")
    assert code == 0, err
    adds = [("--allow-principal", "User:alice", "--topic", "orders"),  # (operation All, kafka-acls' default)
            ("--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders"),
            ("--deny-principal", "User:bob", "--operation", "Write", "--topic", "orders", "--host", "10.0.0.1"),
            ("--allow-principal", "User:carol", "--operation", "Read", "--group", "billing-",
             "--resource-pattern-type", "prefixed"),
            ("--allow-principal", "User:dan", "--operation", "Write", "--transactional-id", "tx-1")]
    for add in adds:
        code, _, err = run(capsys, "acls", "--cluster", str(d), "--add", *add)
        assert code == 0, err
    return str(d)


def _acls(capsys: pytest.CaptureFixture[str], cluster: str, *argv: str) -> list[str]:
    code, out, err = run(capsys, "acls", "--cluster", cluster, *argv)
    assert code == 0, err
    return out.splitlines()


def test_list_finds_bindings_by_resource_and_principal(cluster: str, capsys: pytest.CaptureFixture[str]) -> None:
    everything = _acls(capsys, cluster, "--list")
    assert everything == ["ALLOW User:alice from host * ALL on TOPIC:LITERAL:orders",
                          "ALLOW User:alice from host * READ on TOPIC:LITERAL:orders",
                          "DENY User:bob from host 10.0.0.1 WRITE on TOPIC:LITERAL:orders",
                          "ALLOW User:carol from host * READ on GROUP:PREFIXED:billing-",
                          "ALLOW User:dan from host * WRITE on TRANSACTIONAL_ID:LITERAL:tx-1"]
    assert _acls(capsys, cluster, "--list", "--topic", "orders") == everything[:3]
    assert _acls(capsys, cluster, "--list", "--principal", "User:alice") == everything[:2]
    # A group name is a literal pattern by default: the prefixed binding is not "billing-eu"'s ...
    assert _acls(capsys, cluster, "--list", "--group", "billing-eu") == []
    # ... but it applies to it, which `match` finds; `any` wants the name itself.
    assert _acls(capsys, cluster, "--list", "--group", "billing-eu", "--resource-pattern-type", "match") == everything[3:4]
    assert _acls(capsys, cluster, "--list", "--group", "billing-", "--resource-pattern-type", "any") == everything[3:4]


def test_remove_narrows_as_kafka_acls_does(cluster: str, capsys: pytest.CaptureFixture[str]) -> None:
    # With a principal, kafka-acls removes that principal's binding at host * and operation All only.
    assert _acls(capsys, cluster, "--remove", "--allow-principal", "User:alice", "--topic", "orders") == [
        "Removed ACL: ALLOW User:alice from host * ALL on TOPIC:LITERAL:orders"]
    assert _acls(capsys, cluster, "--remove", "--topic", "orders", "--operation", "Write") == [
        "Removed ACL: DENY User:bob from host 10.0.0.1 WRITE on TOPIC:LITERAL:orders"]
    # Without one, every binding on the resource goes; nothing left is said so.
    assert _acls(capsys, cluster, "--remove", "--topic", "orders", "--force") == [
        "Removed ACL: ALLOW User:alice from host * READ on TOPIC:LITERAL:orders"]
    assert _acls(capsys, cluster, "--remove", "--topic", "orders") == ["No ACL binding matched."]
    # What is left is what the cluster holds when it is opened again.
    assert _acls(capsys, cluster, "--list") == ["ALLOW User:carol from host * READ on GROUP:PREFIXED:billing-",
                                                "ALLOW User:dan from host * WRITE on TRANSACTIONAL_ID:LITERAL:tx-1"]


@pytest.mark.parametrize(("argv", "text"), [
    (("--remove",), "You must provide at least one resource: --topic <topic> or --cluster or --group <group> or "
                    "--delegation-token <Delegation Token ID>"),
    (("--add", "--allow-principal", "User:a"), "You must provide at least one resource: --topic <topic> or --cluster "
                                                "or --group <group> or --delegation-token <Delegation Token ID>"),
    (("--add", "--topic", "t"), "You must specify one of: --allow-principal, --deny-principal when trying to add ACLs."),
    (("--list", "--host", "h"), 'Option "[list]" can\'t be used with option "[host]"'),
    (("--list", "--allow-principal", "User:a"), 'Option "[list]" can\'t be used with option "[allow-principal]"'),
    (("--list", "--operation", "Read"), "--list lists every operation's bindings: --operation does not narrow it"),
    (("--remove", "--principal", "User:a", "--topic", "t"), "The --principal option is only available if --list is set"),
    (("--add", "--allow-principal", "User:a", "--topic", "t", "--resource-pattern-type", "match"),
     "A 'MATCH' resource pattern type is a filter: --add takes literal or prefixed"),
])
def test_what_kafka_acls_refuses_is_refused_with_nothing_changed(cluster: str, capsys: pytest.CaptureFixture[str],
                                                                   argv: tuple[str, ...], text: str) -> None:
    before = _acls(capsys, cluster, "--list")
    code, out, err = run(capsys, "acls", "--cluster", cluster, *argv)
    assert (code, out, err) == (2, "", text + "\n")
    assert _acls(capsys, cluster, "--list") == before


def test_a_listed_principal_is_parsed_as_kafka_acls_parses_it(cluster: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "acls", "--cluster", cluster, "--list", "--principal", "alice")
    assert (code, err) == (1, "expected a string in format principalType:principalName but got alice\n")
