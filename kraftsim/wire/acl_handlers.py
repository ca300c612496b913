"""DescribeAcls, CreateAcls and DeleteAcls (`kafka-acls --list`, `--add`, `--remove`), answered
as Kafka's AclApis answers them.

A node without `authorizer.class.name` (Kafka's default) refuses each with SECURITY_DISABLED,
in the words Kafka uses for each: a DescribeAcls says "No Authorizer is configured on the
broker" once; a CreateAcls answers each creation, and a DeleteAcls each filter, "No Authorizer
is configured.". Nothing is written to the metadata log.

A node with Kafka's StandardAuthorizer (which storage.server_config admits only with
`super.users` naming User:ANONYMOUS, so that every request is authorized as Kafka authorizes a
super user's) lists the bindings of its own image that match the filter. CreateAcls and
DeleteAcls go to the active controller (KIP-590), whose own AclApis refuses what it cannot
hold (a CLUSTER resource not named kafka-cluster, an empty name) before the controller judges
the rest (every node of a cluster runs with the same configs, so it has the authorizer too). Each
binding added, and each filter that removed some, is recorded as a scenario step (`create-acl`,
`delete-acls`).

Kafka groups the bindings it lists in a HashMap keyed by enums that hash by identity, so their
order changes from one broker process to the next; kraftsim lists them in the order of their
ids.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kraftsim.controller import AclCreation, DeleteAclsFilter, acl_codes, acl_matches, code_name, tool_principal
from kraftsim.storage import STANDARD_AUTHORIZER
from kraftsim.wire.admin_handlers import ask_controller
from kraftsim.wire.handlers import Body, Handler, UnparsableRequest, code
from kraftsim.wire.served import Listener, ServedCluster

if TYPE_CHECKING:
    from kraftsim.image import StandardAcl

DESCRIBE_ACLS_KEY, CREATE_ACLS_KEY, DELETE_ACLS_KEY = 29, 30, 31
#: What DescribeAcls answers without an authorizer.
NO_AUTHORIZER_ON_BROKER = "No Authorizer is configured on the broker"
#: What CreateAcls and DeleteAcls answer without one (the SecurityDisabledException they raise).
NO_AUTHORIZER = "No Authorizer is configured."
#: The one name a CLUSTER resource may have (AuthorizerUtils.isClusterResource).
CLUSTER_RESOURCE_NAME = "kafka-cluster"
#: PatternType LITERAL: what a v0 request, which cannot name one, means.
_LITERAL = 3


def _authorizes(served: ServedCluster, node_id: int) -> bool:
    return served.sim.node_configs(node_id).get("authorizer.class.name", "") == STANDARD_AUTHORIZER


def _unknown(table: str, value: int) -> bool:
    """Whether Kafka reads `value` as the enum's UNKNOWN (0, or a code it does not define)."""
    return value == 0 or value not in acl_codes()[table]


def _refuse_unknown(request: str, values: Mapping[str, int]) -> None:
    """The request's own check (its constructor, while the broker parses it): an UNKNOWN element
    fails the whole request, and the broker closes the connection."""
    if any(_unknown(table, value) for table, value in values.items()):
        raise UnparsableRequest(f"{request} with UNKNOWN elements")


def _filter(body: Mapping[str, Any], version: int) -> DeleteAclsFilter:
    return DeleteAclsFilter(
        resource_type_filter=int(body["ResourceTypeFilter"]), resource_name_filter=body.get("ResourceNameFilter"),
        pattern_type_filter=int(body.get("PatternTypeFilter", _LITERAL)) if version >= 1 else _LITERAL,
        principal_filter=body.get("PrincipalFilter"), host_filter=body.get("HostFilter"),
        operation=int(body["Operation"]), permission_type=int(body["PermissionType"]))


def _check_filter(request: str, f: DeleteAclsFilter) -> None:
    _refuse_unknown(request, {"resource_type": f.resource_type_filter, "pattern_type": f.pattern_type_filter,
                              "operation": f.operation, "permission_type": f.permission_type})


def _binding(acl: StandardAcl, *, with_resource: bool) -> Body:
    out: Body = {"Principal": acl.principal, "Host": acl.host, "Operation": acl.operation,
                 "PermissionType": acl.permission_type}
    if with_resource:
        out = {"ErrorCode": 0, "ErrorMessage": None, "ResourceType": acl.resource_type,
               "ResourceName": acl.resource_name, "PatternType": acl.pattern_type, **out}
    return out


def describe_acls(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, Any]) -> Body:
    if not _authorizes(served, listener.node_id):
        return {"ErrorCode": code("SECURITY_DISABLED"), "ErrorMessage": NO_AUTHORIZER_ON_BROKER, "Resources": []}
    wanted = _filter(body, version)
    _check_filter("DescribeAcls", wanted)
    image = served.sim.image(listener.node_id)
    resources: dict[tuple[int, str, int], list[Body]] = {}
    for _, acl in ([] if image is None else image.acls.sorted_acls()):
        if acl_matches(wanted, acl):
            resource = (acl.resource_type, acl.resource_name, acl.pattern_type)
            resources.setdefault(resource, []).append(_binding(acl, with_resource=False))
    return {"ErrorCode": 0, "ErrorMessage": "",  # (the message's default: Kafka does not set it)
            "Resources": [{"ResourceType": t, "ResourceName": n, "PatternType": p, "Acls": acls}
                          for (t, n, p), acls in resources.items()]}


def _creation(c: Mapping[str, Any], version: int) -> AclCreation:
    return AclCreation(resource_type=int(c["ResourceType"]), resource_name=c["ResourceName"],
                       resource_pattern_type=int(c.get("ResourcePatternType", _LITERAL)) if version >= 1 else _LITERAL,
                       principal=c["Principal"], host=c["Host"], operation=int(c["Operation"]),
                       permission_type=int(c["PermissionType"]))


def _filter_value(c: AclCreation) -> bool:
    """Whether the creation carries a value only a filter may have (resource type ANY, pattern
    type ANY or MATCH, operation or permission ANY), which Kafka's ResourcePattern and
    AccessControlEntry refuse to hold."""
    return (code_name("resource_type", c.resource_type) == "ANY"
            or code_name("pattern_type", c.resource_pattern_type) in ("ANY", "MATCH")
            or code_name("operation", c.operation) == "ANY" or code_name("permission_type", c.permission_type) == "ANY")


def _apis_refusal(c: AclCreation) -> str | None:
    """What the controller's AclApis refuses before its controller judges the binding."""
    if code_name("resource_type", c.resource_type) == "CLUSTER" and c.resource_name != CLUSTER_RESOURCE_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_RESOURCE_NAME}"
    if not c.resource_name:
        return "Invalid empty resource name"
    return None


def _refused(error: str, message: str | None) -> Body:
    return {"ErrorCode": code(error), "ErrorMessage": message}


def create_acls(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, Any]) -> Body:
    creations = [_creation(c, version) for c in body.get("Creations") or []]
    if not _authorizes(served, listener.node_id):
        return {"Results": [_refused("SECURITY_DISABLED", NO_AUTHORIZER) for _ in creations]}
    for c in creations:
        _refuse_unknown("CreateAcls", {"resource_type": c.resource_type, "pattern_type": c.resource_pattern_type,
                                       "operation": c.operation, "permission_type": c.permission_type})
    if any(_filter_value(c) for c in creations):  # (its AclBinding cannot be built: the request fails whole)
        return {"Results": [_refused("UNKNOWN_SERVER_ERROR", None) for _ in creations]}
    refusals = {i: text for i, c in enumerate(creations) if (text := _apis_refusal(c)) is not None}
    valid = [c for i, c in enumerate(creations) if i not in refusals]
    answers: list[Body] = []
    if valid:
        at = served.sim.now_ms
        result = ask_controller(served, listener, lambda: served.sim.send_create_acls(valid))
        if isinstance(result, tuple):
            return {"Results": [_refused(*result) for _ in creations]}
        answers = [{"ErrorCode": r.error_code, "ErrorMessage": r.error_message if r.error_code else ""}  # (as above)
                   for r in result.response.results]
        for c, r in zip(valid, result.response.results):
            if r.error_code == 0:
                served.record("create-acl", _created_step(c), at)
    made = iter(answers)
    return {"Results": [_refused("INVALID_REQUEST", refusals[i]) if i in refusals else next(made)
                        for i in range(len(creations))]}


def _created_step(c: AclCreation) -> dict[str, object]:
    """The `create-acl` step of creation `c`; a principal kafka-acls would not send as it is (no
    colon, or blanks around it) is marked as sent by an Admin client, so that the replay sends
    the same."""
    return {"principal": c.principal, "operation": code_name("operation", c.operation).lower(),
            "resource_name": c.resource_name, "resource_type": code_name("resource_type", c.resource_type).lower(),
            "pattern_type": code_name("pattern_type", c.resource_pattern_type).lower(), "host": c.host,
            "permission": code_name("permission_type", c.permission_type).lower(),
            "admin_client": tool_principal(c.principal) != c.principal or None}


def _deleted_step(f: DeleteAclsFilter) -> dict[str, object]:
    """The `delete-acls` step of filter `f`: what matches anything (None, ANY) is left out."""
    enums = {"resource_type": code_name("resource_type", f.resource_type_filter),
             "pattern_type": code_name("pattern_type", f.pattern_type_filter),
             "operation": code_name("operation", f.operation),
             "permission": code_name("permission_type", f.permission_type)}
    texts = {"resource_name": f.resource_name_filter, "principal": f.principal_filter, "host": f.host_filter}
    return {**{k: v.lower() for k, v in enums.items() if v != "ANY"}, **{k: v for k, v in texts.items() if v is not None}}


def delete_acls(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, Any]) -> Body:
    filters = [_filter(f, version) for f in body.get("Filters") or []]
    if not _authorizes(served, listener.node_id):
        return {"FilterResults": [{**_refused("SECURITY_DISABLED", NO_AUTHORIZER), "MatchingAcls": []}
                                  for _ in filters]}
    for f in filters:
        _check_filter("DeleteAcls", f)
    if not filters:
        return {"FilterResults": []}
    at = served.sim.now_ms
    result = ask_controller(served, listener, lambda: served.sim.send_delete_acls(filters))
    if isinstance(result, tuple):
        return {"FilterResults": [{**_refused(*result), "MatchingAcls": []} for _ in filters]}
    out = []
    for f, r in zip(filters, result.response.filter_results):
        out.append({"ErrorCode": r.error_code, "ErrorMessage": r.error_message,
                    "MatchingAcls": [_binding(a, with_resource=True) for a in r.matching_acls]})
        if r.error_code == 0 and r.matching_acls:
            served.record("delete-acls", _deleted_step(f), at)
    return {"FilterResults": out}


HANDLERS: dict[int, Handler] = {DESCRIBE_ACLS_KEY: describe_acls, CREATE_ACLS_KEY: create_acls,
                                DELETE_ACLS_KEY: delete_acls}
