"""DescribeAcls, CreateAcls and DeleteAcls (`kafka-acls --list`, `--add`, `--remove`), answered
as a node of Kafka's default configuration answers them: a served node has no
`authorizer.class.name`, so each is refused with SECURITY_DISABLED on either listener, in the
words Kafka uses for each (AclApis): a DescribeAcls says "No Authorizer is configured on the
broker" once; a CreateAcls answers each creation, and a DeleteAcls each filter, "No Authorizer
is configured.". Nothing is written to the metadata log.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kraftsim.wire.handlers import Body, Handler, code
from kraftsim.wire.served import Listener, ServedCluster

DESCRIBE_ACLS_KEY, CREATE_ACLS_KEY, DELETE_ACLS_KEY = 29, 30, 31
#: What DescribeAcls answers without an authorizer.
NO_AUTHORIZER_ON_BROKER = "No Authorizer is configured on the broker"
#: What CreateAcls and DeleteAcls answer without one (the SecurityDisabledException they raise).
NO_AUTHORIZER = "No Authorizer is configured."


def describe_acls(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, Any]) -> Body:
    return {"ErrorCode": code("SECURITY_DISABLED"), "ErrorMessage": NO_AUTHORIZER_ON_BROKER, "Resources": []}


def create_acls(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, Any]) -> Body:
    refused = {"ErrorCode": code("SECURITY_DISABLED"), "ErrorMessage": NO_AUTHORIZER}
    return {"Results": [dict(refused) for _ in body.get("Creations") or []]}


def delete_acls(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, Any]) -> Body:
    refused = {"ErrorCode": code("SECURITY_DISABLED"), "ErrorMessage": NO_AUTHORIZER, "MatchingAcls": []}
    return {"FilterResults": [dict(refused) for _ in body.get("Filters") or []]}


HANDLERS: dict[int, Handler] = {DESCRIBE_ACLS_KEY: describe_acls, CREATE_ACLS_KEY: create_acls,
                                DELETE_ACLS_KEY: delete_acls}
