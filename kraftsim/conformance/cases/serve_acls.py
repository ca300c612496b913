"""kafka-acls and raw ACL requests against a live combined node with Kafka's StandardAuthorizer
(super.users = User:ANONYMOUS, so that the tools' PLAINTEXT clients may do anything) and against
`kraftsim serve` with the same configs: the answers must be equal (`kraftsim conformance run
--case 'serve-acls/*'`).

Kafka lists ACL bindings from hash maps whose keys hash by identity (enums), so their order
changes from one process to the next: a listing is compared as the sorted lines a tool prints,
and a raw answer with its resources and bindings sorted. Everything else is compared as it is.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from kraftsim.conformance.cases.base import Case, ReleaseContext
from kraftsim.conformance.cases.serve_tools import Sides, ToolOutputs, _bs, _without_throttle, live_then_served, run_tools
from kraftsim.conformance.dist import KafkaDist
from kraftsim.conformance.node import LiveNode
from kraftsim.conformance.wire_client import WireClient, WireClientError
from kraftsim.storage import STANDARD_AUTHORIZER

#: The configs both sides run with.
AUTHORIZER_CONFIGS = {"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:ANONYMOUS"}
HEAP = "384m"

#: (name, tool, arguments), run in this order on each side; "(sorted)" in a name: its lines are
#: compared sorted.
ACL_RUNS: list[tuple[str, str, list[str]]] = [
    ("acls --add (a topic)", "acls", _bs("--add", "--allow-principal", "User:alice", "--operation", "Read",
                                         "--topic", "t")),
    ("acls --add (a prefixed group, denied from a host)", "acls",
     _bs("--add", "--deny-principal", "User:bob", "--deny-host", "10.0.0.1", "--operation", "Read", "--group", "app-",
         "--resource-pattern-type", "prefixed")),
    ("acls --add (the cluster)", "acls", _bs("--add", "--allow-principal", "User:carol", "--operation", "Alter",
                                             "--cluster")),
    ("acls --add (again, a binding that exists)", "acls", _bs("--add", "--allow-principal", "User:alice",
                                                              "--operation", "Read", "--topic", "t")),
    ("acls --list --topic t", "acls", _bs("--list", "--topic", "t")),
    ("acls --list --group app-x --resource-pattern-type match", "acls",
     _bs("--list", "--group", "app-x", "--resource-pattern-type", "match")),
    ("acls --list (sorted)", "acls", _bs("--list")),
    ("acls --remove (the topic's)", "acls", _bs("--remove", "--force", "--allow-principal", "User:alice",
                                                "--operation", "Read", "--topic", "t")),
    ("acls --list --topic t (removed)", "acls", _bs("--list", "--topic", "t")),
]


def _creation(resource_type: int, name: str, pattern: int, principal: str, operation: int,
              permission: int = 3, host: str = "*") -> dict[str, object]:
    return {"ResourceType": resource_type, "ResourceName": name, "ResourcePatternType": pattern,
            "Principal": principal, "Host": host, "Operation": operation, "PermissionType": permission}


def _filter(resource_type: int = 1, name: str | None = None, pattern: int = 1, principal: str | None = None,
            operation: int = 1, permission: int = 1) -> dict[str, object]:
    return {"ResourceTypeFilter": resource_type, "ResourceNameFilter": name, "PatternTypeFilter": pattern,
            "PrincipalFilter": principal, "HostFilter": None, "Operation": operation, "PermissionType": permission}


#: CreateAcls v3 (TOPIC 2, GROUP 3, CLUSTER 4; ANY 1, MATCH 2, LITERAL 3, PREFIXED 4; READ 3,
#: WRITE 4; DENY 2, ALLOW 3): bindings Kafka takes and those its AclApis refuses; then requests
#: with a filter's value (ANY, MATCH) in one binding, which fail whole.
CREATIONS = [
    _creation(2, "orders", 3, "User:dave", 3),
    _creation(2, "ord", 4, "User:erin", 4, permission=2),
    _creation(2, "*", 3, "User:frank", 3),
    _creation(4, "not-the-cluster", 3, "User:dave", 7),
    _creation(2, "", 3, "User:dave", 3),
    _creation(2, "orders", 3, "User:dave", 3),  # (the first again)
]
WHOLLY_REFUSED = [
    [_creation(2, "x", 3, "User:dave", 3), _creation(2, "x", 3, "User:dave", 1)],
    [_creation(2, "x", 2, "User:dave", 3)],
    [_creation(1, "x", 3, "User:dave", 3)],
    [_creation(2, "x", 3, "User:dave", 3, permission=1)],
]
#: DescribeAcls v3 filters: all, a name matched by literal, wildcard and prefixed bindings, a
#: principal, one resource type; then DeleteAcls v3 of two filters that overlap.
DESCRIBES = [_filter(), _filter(2, "orders", 2), _filter(principal="User:erin"), _filter(2), _filter(3, "app-x", 2)]
DELETES = [_filter(2, "orders", 2), _filter(principal="User:dave")]
#: Requests whose own checks fail while the node parses them (an UNKNOWN element, code 0).
UNPARSABLE: list[tuple[str, str, dict[str, Any]]] = [("DescribeAcls v3 of an UNKNOWN resource type", "DescribeAcls", _filter(0)),
              ("CreateAcls v3 of an UNKNOWN operation", "CreateAcls",
               {"Creations": [_creation(2, "x", 3, "User:dave", 0)]}),
              ("DeleteAcls v3 of an UNKNOWN pattern type", "DeleteAcls", {"Filters": [_filter(2, "x", 0)]})]


def _sorted_resources(answer: dict[str, Any]) -> dict[str, Any]:
    resources = [{**r, "Acls": sorted(r["Acls"], key=repr)} for r in answer.get("Resources", [])]
    return {**{k: v for k, v in answer.items() if k != "ThrottleTimeMs"}, "Resources": sorted(resources, key=repr)}


def _sorted_matches(answer: dict[str, Any]) -> list[dict[str, Any]]:
    return [{**r, "MatchingAcls": sorted(r["MatchingAcls"], key=repr)} for r in answer["FilterResults"]]


def raw_acl_answers(bs: str, settle: Callable[[], None]) -> dict[str, object]:
    """CREATIONS, each of DESCRIBES, DELETES and the listing after them, from the broker `bs`."""
    host, port = bs.rsplit(":", 1)
    out: dict[str, object] = {}
    with WireClient(host, int(port), timeout=30) as c:
        created = c.request("CreateAcls", 3, {"Creations": CREATIONS})["Results"]
        out["CreateAcls v3"] = [(r["ErrorCode"], r["ErrorMessage"]) for r in created]
        for i, creations in enumerate(WHOLLY_REFUSED, 1):
            refused = c.request("CreateAcls", 3, {"Creations": creations})["Results"]
            out[f"CreateAcls v3 refused whole ({i})"] = [(r["ErrorCode"], r["ErrorMessage"]) for r in refused]
        settle()
        for i, f in enumerate(DESCRIBES, 1):
            out[f"DescribeAcls v3 ({i})"] = _sorted_resources(c.request("DescribeAcls", 3, f))
        out["DescribeAcls v1 of topics"] = _sorted_resources(c.request("DescribeAcls", 1, _filter(2, pattern=3)))
        out["DeleteAcls v3"] = _sorted_matches(c.request("DeleteAcls", 3, {"Filters": DELETES}))
        settle()
        out["DescribeAcls v3 (after the deletes)"] = _sorted_resources(c.request("DescribeAcls", 3, _filter()))
    for name, api, body in UNPARSABLE:  # (each on a connection of its own: the node closes it)
        with WireClient(host, int(port), timeout=30) as c:
            try:
                out[name] = _without_throttle(c.request(api, 3, body))
            except WireClientError as e:
                out[name] = "closed" if "closed the connection" in str(e) else str(e).split(": ", 1)[-1]
    return out


def _sorted_listing(tools: ToolOutputs) -> ToolOutputs:
    return {name: (code, "\n".join(sorted(out.splitlines())) if "(sorted)" in name else out, err)
            for name, (code, out, err) in tools.items()}


def live_acl_side(dist: KafkaDist, workdir: Path) -> Sides:
    config = "".join(f"{k}={v}\n" for k, v in AUTHORIZER_CONFIGS.items())
    with LiveNode(dist, workdir, heap=HEAP, extra_config=config) as node:
        node.format()
        node.start()
        tools = run_tools(dist, node.bootstrap, f"127.0.0.1:{node.controller_port}", ACL_RUNS)
        raw = raw_acl_answers(node.bootstrap, lambda: time.sleep(2))  # (the broker applies the controller's records)
    return _sorted_listing(tools), raw


def served_acl_side(dist: KafkaDist) -> Sides:
    from kraftsim.wire import serve

    with serve(combined=1, release=dist.release.line, configs=AUTHORIZER_CONFIGS) as k:
        tools = run_tools(dist, k.bootstrap_servers, k.bootstrap_controllers, ACL_RUNS)
        raw = raw_acl_answers(k.bootstrap_servers, lambda: None)
    return _sorted_listing(tools), raw


def acl_differences(live: Sides,
                    served: Sides) -> list[str]:
    """Each run or raw answer on which the two sides differ, with both."""
    out = []
    for side_live, side_served, what in ((live[0], served[0], "tool"), (live[1], served[1], "raw")):
        for key in side_live.keys() | side_served.keys():
            if side_live.get(key) != side_served.get(key):
                out.append(f"{what} {key}: Kafka {side_live.get(key)!r}, kraftsim {side_served.get(key)!r}")
    return sorted(out)


def compare(dist: KafkaDist, workdir: Path) -> list[str]:
    """Both sides of one release."""
    return live_then_served(lambda: live_acl_side(dist, workdir), lambda: served_acl_side(dist), acl_differences)


def cases(ctx: ReleaseContext) -> Iterable[Case]:
    if ctx.missing_line():
        return []
    return [Case("serve-acls/combined", (), lambda runs: compare(ctx.dist, ctx.scratch("serve-acls")))]
