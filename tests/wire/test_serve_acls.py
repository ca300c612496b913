"""`kraftsim serve` with Kafka's StandardAuthorizer: DescribeAcls, CreateAcls and DeleteAcls are
carried out as a live node carries them out (tests/conformance/test_serve_acls_vs_kafka.py
compares the two whenever Kafka can run), and a recorded session replays to the same ACLs.
Without an authorizer (Kafka's default) each is refused: tests/wire/test_serve.py."""

from __future__ import annotations

import tomllib

import pytest

import kraftsim
from kraftsim.controller import error_codes
from kraftsim.errors import KraftsimError
from kraftsim.scenario import load_scenario
from kraftsim.scenario.runner import run_scenario
from kraftsim.sim import Simulation
from kraftsim.storage import STANDARD_AUTHORIZER
from tests.wire.client import rpc

ERR = error_codes()
DESCRIBE, CREATE, DELETE = 29, 30, 31
AUTHORIZED = {"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:admin; User:ANONYMOUS"}
TOPIC, GROUP, CLUSTER = 2, 3, 4
ANY, MATCH, LITERAL, PREFIXED = 1, 2, 3, 4
READ, WRITE, ALTER = 3, 4, 7
DENY, ALLOW = 2, 3


def _creation(resource_type: int, name: str, principal: str, operation: int = READ, pattern: int = LITERAL,
              permission: int = ALLOW) -> dict[str, object]:
    return {"ResourceType": resource_type, "ResourceName": name, "ResourcePatternType": pattern,
            "Principal": principal, "Host": "*", "Operation": operation, "PermissionType": permission}


def _filter(resource_type: int = ANY, name: str | None = None, pattern: int = ANY,
            principal: str | None = None) -> dict[str, object]:
    return {"ResourceTypeFilter": resource_type, "ResourceNameFilter": name, "PatternTypeFilter": pattern,
            "PrincipalFilter": principal, "HostFilter": None, "Operation": ANY, "PermissionType": ANY}


def _create(address: str, *creations: dict[str, object]) -> list[tuple[int, str | None]]:
    answer = rpc(address, CREATE, 3, {"Creations": list(creations)})
    assert answer is not None
    return [(r["ErrorCode"], r["ErrorMessage"]) for r in answer[1]["Results"]]


def _listed(address: str, **wanted: object) -> set[tuple[int, str, int, str, int]]:
    """(resource type, name, pattern type, principal, operation) of every binding DescribeAcls lists."""
    answer = rpc(address, DESCRIBE, 3, _filter(**wanted))  # type: ignore[arg-type]
    assert answer is not None and answer[1]["ErrorCode"] == 0
    return {(r["ResourceType"], r["ResourceName"], r["PatternType"], a["Principal"], a["Operation"])
            for r in answer[1]["Resources"] for a in r["Acls"]}


def test_bindings_are_added_listed_by_filter_and_removed() -> None:
    with kraftsim.serve(combined=1, release="4.4.0", configs=AUTHORIZED) as k:
        bs = k.bootstrap_servers
        assert _create(bs, _creation(TOPIC, "orders", "User:dave"),
                       _creation(TOPIC, "ord", "User:erin", WRITE, PREFIXED, DENY),
                       _creation(TOPIC, "*", "User:frank"),
                       _creation(CLUSTER, "cluster", "User:dave", ALTER),
                       _creation(TOPIC, "", "User:dave"),
                       _creation(GROUP, "app", "User:gina")) == [
            (0, ""), (0, ""), (0, ""),
            (ERR["INVALID_REQUEST"], "The only valid name for the CLUSTER resource is kafka-cluster"),
            (ERR["INVALID_REQUEST"], "Invalid empty resource name"), (0, "")]
        assert len(_listed(bs)) == 4
        # MATCH: every binding that covers the name (literal, the wildcard and prefixes)
        assert {b[1] for b in _listed(bs, resource_type=TOPIC, name="orders", pattern=MATCH)} == {"orders", "ord", "*"}
        assert _listed(bs, resource_type=TOPIC, name="ord", pattern=LITERAL) == set()
        assert _listed(bs, principal="User:gina") == {(GROUP, "app", LITERAL, "User:gina", READ)}
        answer = rpc(bs, DELETE, 3, {"Filters": [_filter(TOPIC, "orders", MATCH), _filter(principal="User:dave")]})
        assert answer is not None
        matched = [sorted(a["ResourceName"] for a in r["MatchingAcls"]) for r in answer[1]["FilterResults"]]
        assert matched == [["*", "ord", "orders"], ["orders"]]  # (one binding matched twice, removed once)
        assert _listed(bs) == {(GROUP, "app", LITERAL, "User:gina", READ)}


@pytest.mark.parametrize("creation", [
    _creation(TOPIC, "x", "User:dave", operation=ANY), _creation(TOPIC, "x", "User:dave", pattern=MATCH),
    _creation(ANY, "x", "User:dave"), _creation(TOPIC, "x", "User:dave", permission=ANY)])
def test_a_filters_value_in_a_binding_fails_the_whole_request(creation: dict[str, object]) -> None:
    with kraftsim.serve(combined=1, release="3.7.2", configs=AUTHORIZED) as k:
        assert _create(k.bootstrap_servers, _creation(TOPIC, "fine", "User:dave"), creation) == \
            [(ERR["UNKNOWN_SERVER_ERROR"], None)] * 2
        assert _listed(k.bootstrap_servers) == set()


def test_added_and_removed_bindings_are_recorded_and_replay(tmp_path) -> None:
    record = tmp_path / "session.toml"
    with kraftsim.serve(controllers=1, brokers=2, release="4.4.0", configs=AUTHORIZED, record=record) as k:
        broker = k.address(2)
        # one request of several bindings, one of them with a principal kafka-acls would not send
        # (an Admin client may; the controller takes it)
        assert _create(broker, _creation(TOPIC, "orders", "User:dave"), _creation(GROUP, "app-", "User:erin",
                                                                                   pattern=PREFIXED),
                       _creation(TOPIC, "any", "User:erin"), _creation(TOPIC, "t", "alice"),
                       _creation(TOPIC, "t", " User:bob ")) == [(0, "")] * 5
        answer = rpc(broker, DELETE, 3, {"Filters": [_filter(principal="User:dave"), _filter(principal="User:nobody"),
                                                     _filter(TOPIC, "any", LITERAL)]})
        assert answer is not None
        served = _listed(broker)
        served_ids = k.call(lambda c: _acl_ids(c.sim.image(2)))
    assert served == {(GROUP, "app-", PREFIXED, "User:erin", READ), (TOPIC, "t", LITERAL, "alice", READ),
                      (TOPIC, "t", LITERAL, " User:bob ", READ)}
    steps = [s for s in tomllib.loads(record.read_text())["step"] if s["op"] != "run"]
    assert steps == [
        {"op": "create-acl", "principal": "User:dave", "operation": "read", "resource_name": "orders",
         "resource_type": "topic", "pattern_type": "literal", "host": "*", "permission": "allow"},
        {"op": "create-acl", "principal": "User:erin", "operation": "read", "resource_name": "app-",
         "resource_type": "group", "pattern_type": "prefixed", "host": "*", "permission": "allow"},
        {"op": "create-acl", "principal": "User:erin", "operation": "read", "resource_name": "any",
         "resource_type": "topic", "pattern_type": "literal", "host": "*", "permission": "allow"},
        {"op": "create-acl", "admin_client": True, "principal": "alice", "operation": "read", "resource_name": "t",
         "resource_type": "topic", "pattern_type": "literal", "host": "*", "permission": "allow"},
        {"op": "create-acl", "admin_client": True, "principal": " User:bob ", "operation": "read",
         "resource_name": "t", "resource_type": "topic", "pattern_type": "literal", "host": "*", "permission": "allow"},
        {"op": "delete-acls", "principal": "User:dave"},  # (the filter that matched nothing changed nothing)
        {"op": "delete-acls", "resource_type": "topic", "resource_name": "any", "pattern_type": "literal"}]
    outcome = run_scenario(load_scenario(record), keep=tmp_path / "replayed")
    assert outcome.result.passed, [s.error for s in outcome.result.steps if not s.ok]
    with Simulation.open(tmp_path / "replayed", passive=True) as sim:
        image = sim.image(1)
        assert image is not None
        assert {(a.resource_type, a.resource_name, a.pattern_type, a.principal, a.operation)
                for _, a in image.acls.sorted_acls()} == served
        assert _acl_ids(image) == served_ids  # one step per binding draws the ids the one request drew


def _acl_ids(image) -> list[tuple[str, str, str]]:
    """(id, principal, resource name) of every ACL of `image`, in id order."""
    return [(str(i), a.principal, a.resource_name) for i, a in image.acls.sorted_acls()]


@pytest.mark.parametrize(("configs", "text"), [
    ({"authorizer.class.name": STANDARD_AUTHORIZER}, "super.users must name User:ANONYMOUS (it names nobody)"),
    ({"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:admin"},
     "super.users must name User:ANONYMOUS (it names User:admin)"),
    ({"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer", "super.users": "User:ANONYMOUS"},
     "kraftsim simulates Kafka's StandardAuthorizer"),
])
def test_an_authorizer_kraftsim_cannot_serve_as_kafka_would_is_refused(configs: dict[str, str], text: str) -> None:
    with pytest.raises(KraftsimError, match=text.replace("(", r"\(").replace(")", r"\)")):
        with kraftsim.serve(combined=1, release="4.4.0", configs=configs):
            pass
