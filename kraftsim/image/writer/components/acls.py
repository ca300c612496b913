"""AclsImage.write: one AccessControlEntryRecord per ACL, by id."""

from __future__ import annotations

from typing import Iterator

from kraftsim.image.components.acls import AclsImage
from kraftsim.image.writer.target import WriteTarget
from kraftsim.protocol.entries import Payload


def write(acls: AclsImage, target: WriteTarget) -> Iterator[Payload]:
    if not acls.acls:
        return
    ac, acv = target.record("AccessControlEntryRecord")
    for aid, a in acls.sorted_acls():
        yield Payload(ac, acv, ac.cls(id=aid, resource_type=a.resource_type, resource_name=a.resource_name,
                                      pattern_type=a.pattern_type, principal=a.principal, host=a.host,
                                      operation=a.operation, permission_type=a.permission_type))
