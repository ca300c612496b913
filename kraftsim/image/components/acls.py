"""ACLs by id (Kafka's AclsImage of StandardAcl)."""

from __future__ import annotations

from typing import Any, Iterator

import msgspec

from kraftsim.image import intern
from kraftsim.image.errors import MetadataReplayError
from kraftsim.image.pmap import DELETE, PMap, hash_uuid
from kraftsim.protocol.primitives import Uuid


class StandardAcl(msgspec.Struct, frozen=True, gc=False):
    """One ACL, with the codes AccessControlEntryRecord carries."""

    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int

    @classmethod
    def from_record(cls, r: Any) -> "StandardAcl":
        return cls(r.resource_type, r.resource_name, r.pattern_type, r.principal, r.host, r.operation, r.permission_type)


class AclsImage(msgspec.Struct, frozen=True, gc=False):
    acls: PMap[Uuid, StandardAcl] = msgspec.field(default_factory=lambda: PMap(hash_uuid))

    def is_empty(self) -> bool:
        return not self.acls

    def sorted_acls(self) -> Iterator[tuple[Uuid, StandardAcl]]:
        return iter(self.acls.sorted_items())


EMPTY_ACLS = AclsImage()


class AclsDelta:
    def __init__(self, image: AclsImage):
        self.image = image
        self.changes: dict[Uuid, object] = {}

    def replay_acl(self, r: Any) -> None:
        self.changes[intern.uuid(r.id)] = StandardAcl.from_record(r)

    def replay_remove_acl(self, r: Any) -> None:
        if r.id in self.image.acls:
            self.changes[r.id] = DELETE
        elif r.id in self.changes and self.changes[r.id] is not DELETE:
            del self.changes[r.id]  # created within this delta
        else:
            raise MetadataReplayError(f"Failed to find existing acl with id {r.id} to remove.")

    def finish_snapshot(self) -> None:
        for acl_id in self.image.acls:
            self.changes.setdefault(acl_id, DELETE)

    def apply(self) -> AclsImage:
        acls = self.image.acls.update(self.changes)
        return self.image if acls is self.image.acls else AclsImage(acls)
