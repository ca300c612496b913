"""ACLs: Kafka's CreateAcls and DeleteAcls on the controller (AclControlManager).

A new ACL gets an AccessControlEntryRecord with a fresh id (Kafka draws Uuid.randomUuid();
kraftsim draws it from the request's `seed` and the number of ACLs held before it, so ids are
reproducible, and a request of several creations gives the ids that one request per creation,
in the same order, gives: what a recorded session's replay relies on).
Creating an ACL that already exists succeeds and writes nothing. Deleting writes one
RemoveAccessControlEntryRecord per matching ACL. Both commit atomically.
"""

from __future__ import annotations

import random
import tomllib
from functools import cache
from importlib import resources

import msgspec

from kraftsim.controller import acl_hosts
from kraftsim.controller.api_errors import ApiError
from kraftsim.controller.context import ControllerContext, metadata_version_of, registry_of
from kraftsim.controller.result import ControllerResult, accepted, payload
from kraftsim.image import StandardAcl
from kraftsim.protocol.entries import Payload
from kraftsim.protocol.primitives import Uuid
from kraftsim.javacompat import java_trim, random_uuid

WILDCARD_RESOURCE = "*"


@cache
def acl_codes() -> dict[str, dict[int, str]]:
    """Enum code → name for resource_type, pattern_type, operation, permission_type."""
    text = resources.files("kraftsim.controller").joinpath("data/acls.toml").read_text("utf-8")
    return {table: {int(k): v for k, v in codes.items()} for table, codes in tomllib.loads(text).items()}


def code_name(table: str, code: int) -> str:
    """Kafka's fromCode: unknown codes read as UNKNOWN."""
    return acl_codes()[table].get(code, "UNKNOWN")


def tool_principal(text: str) -> str | None:
    """The principal as Kafka's tools parse it (SecurityUtils.parseKafkaPrincipal, after Java's
    trim): TYPE:NAME, or None when it has no colon. The controller takes any string, which an
    Admin client may send unparsed."""
    principal = java_trim(text)
    return principal if ":" in principal else None


class AclCreation(msgspec.Struct, frozen=True):
    resource_type: int
    resource_name: str
    resource_pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


class CreateAclsRequest(msgspec.Struct, frozen=True):
    creations: tuple[AclCreation, ...]
    seed: int = 0  # kraftsim: with the ACLs held, seeds each new ACL's id


class AclCreationResult(msgspec.Struct, frozen=True):
    error_code: int = 0
    error_message: str | None = None


class CreateAclsResponse(msgspec.Struct, frozen=True):
    results: tuple[AclCreationResult, ...]


class DeleteAclsFilter(msgspec.Struct, frozen=True):
    """None matches any name, principal or host; ANY (1) any enum value."""

    resource_type_filter: int = 1
    resource_name_filter: str | None = None
    pattern_type_filter: int = 1
    principal_filter: str | None = None
    host_filter: str | None = None
    operation: int = 1
    permission_type: int = 1


class DeleteAclsRequest(msgspec.Struct, frozen=True):
    filters: tuple[DeleteAclsFilter, ...]


class DeleteAclsFilterResult(msgspec.Struct, frozen=True):
    error_code: int = 0
    error_message: str | None = None
    matching_acls: tuple[StandardAcl, ...] = ()


class DeleteAclsResponse(msgspec.Struct, frozen=True):
    filter_results: tuple[DeleteAclsFilterResult, ...]


def _creation_error(ctx: ControllerContext, c: AclCreation, cidr_ok: bool = True) -> ApiError:
    """Kafka's validateNewAcl; from 4.4 also the host pattern (CIDR hosts need 4.4-IV1: `cidr_ok`)."""
    rtype = code_name("resource_type", c.resource_type)
    if rtype in ("UNKNOWN", "ANY"):
        return ApiError("INVALID_REQUEST", f"Invalid resourceType {rtype}")
    ptype = code_name("pattern_type", c.resource_pattern_type)
    if ptype not in ("LITERAL", "PREFIXED"):
        return ApiError("INVALID_REQUEST", f"Invalid patternType {ptype}")
    op = code_name("operation", c.operation)
    if op in ("UNKNOWN", "ANY"):
        return ApiError("INVALID_REQUEST", f"Invalid operation {op}")
    perm = code_name("permission_type", c.permission_type)
    if perm not in ("DENY", "ALLOW"):
        return ApiError("INVALID_REQUEST", f"Invalid permissionType {perm}")
    if not c.resource_name:
        return ApiError("INVALID_REQUEST", "Resource name should not be empty")
    return acl_hosts.host_error(ctx.catalog, c.host, cidr_ok)


def create_acls(ctx: ControllerContext, req: CreateAclsRequest) -> ControllerResult:
    """Kafka's createAcls: one result per creation, in request order."""
    reg = registry_of(ctx)
    taken = {bytes(i) for i in ctx.image.acls.acls}
    existing = set(ctx.image.acls.acls.values())
    records: list[Payload] = []
    results = []
    mv = metadata_version_of(ctx)
    cidr_ok = mv is not None and ctx.catalog.supports("cidr_acl_hosts", mv)
    for c in req.creations:
        err = _creation_error(ctx, c, cidr_ok)
        if not err.ok:
            results.append(AclCreationResult(err.code, err.message))
            continue
        acl = StandardAcl(c.resource_type, c.resource_name, c.resource_pattern_type, c.principal, c.host,
                          c.operation, c.permission_type)
        if acl not in existing:
            existing.add(acl)
            rng = random.Random(f"kraftsim-acl-id:{req.seed * 1_000_003 + len(taken)}")
            acl_id = random_uuid(rng)
            while bytes(acl_id) in taken:
                acl_id = random_uuid(rng)
            taken.add(bytes(acl_id))
            records.append(payload(reg, "AccessControlEntryRecord", 0, id=acl_id, resource_type=c.resource_type,
                                   resource_name=c.resource_name, pattern_type=c.resource_pattern_type,
                                   principal=c.principal, host=c.host, operation=c.operation,
                                   permission_type=c.permission_type))
        results.append(AclCreationResult())
    return accepted(records, CreateAclsResponse(tuple(results)))


def acl_matches(f: DeleteAclsFilter, acl: StandardAcl) -> bool:
    """Kafka's AclBindingFilter.matches (resource pattern, then entry): what DeleteAcls removes
    and DescribeAcls lists."""
    ftype, fpattern = code_name("resource_type", f.resource_type_filter), code_name("pattern_type", f.pattern_type_filter)
    if ftype != "ANY" and f.resource_type_filter != acl.resource_type:
        return False
    if fpattern not in ("ANY", "MATCH") and f.pattern_type_filter != acl.pattern_type:
        return False
    if f.resource_name_filter is not None:
        name = f.resource_name_filter
        if fpattern == "ANY" or f.pattern_type_filter == acl.pattern_type:
            if name != acl.resource_name:
                return False
        elif code_name("pattern_type", acl.pattern_type) == "LITERAL":
            if name != acl.resource_name and acl.resource_name != WILDCARD_RESOURCE:
                return False
        elif code_name("pattern_type", acl.pattern_type) == "PREFIXED":
            if not name.startswith(acl.resource_name):
                return False
        else:
            return False
    if f.principal_filter is not None and f.principal_filter != acl.principal:
        return False
    if f.host_filter is not None and f.host_filter != acl.host:
        return False
    if code_name("operation", f.operation) != "ANY" and f.operation != acl.operation:
        return False
    return code_name("permission_type", f.permission_type) == "ANY" or f.permission_type == acl.permission_type


def delete_acls(ctx: ControllerContext, req: DeleteAclsRequest) -> ControllerResult:
    """Kafka's deleteAcls: per filter, the ACLs it matches (by id order); an ACL matched by
    several filters is removed once."""
    reg = registry_of(ctx)
    removed: set[bytes] = set()
    records: list[Payload] = []
    results = []
    for f in req.filters:
        if "UNKNOWN" in (code_name("resource_type", f.resource_type_filter), code_name("pattern_type", f.pattern_type_filter)):
            err = ApiError("INVALID_REQUEST", "Unknown patternFilter.")
            results.append(DeleteAclsFilterResult(err.code, err.message))
            continue
        if "UNKNOWN" in (code_name("operation", f.operation), code_name("permission_type", f.permission_type)):
            err = ApiError("INVALID_REQUEST", "Unknown entryFilter.")
            results.append(DeleteAclsFilterResult(err.code, err.message))
            continue
        matched = []
        for acl_id, acl in ctx.image.acls.sorted_acls():
            if acl_matches(f, acl):
                matched.append(acl)
                if bytes(acl_id) not in removed:
                    removed.add(bytes(acl_id))
                    records.append(payload(reg, "RemoveAccessControlEntryRecord", 0, id=Uuid(bytes(acl_id))))
        results.append(DeleteAclsFilterResult(matching_acls=tuple(matched)))
    return accepted(records, DeleteAclsResponse(tuple(results)))
