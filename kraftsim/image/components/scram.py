"""SCRAM credentials: (mechanism, user) -> credential (Kafka's ScramImage)."""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterator

import msgspec

from kraftsim.image.pmap import DELETE, PMap, stable_hash
from kraftsim.javacompat import string_hash_order

# Kafka's ScramMechanism: type id -> (enum name, mechanism name)
MECHANISMS = {0: ("UNKNOWN", "UNKNOWN"), 1: ("SCRAM_SHA_256", "SCRAM-SHA-256"), 2: ("SCRAM_SHA_512", "SCRAM-SHA-512")}


def mechanism_enum_name(m: int) -> str:
    return MECHANISMS.get(m, (f"UNKNOWN({m})",))[0]


def mechanism_name(m: int) -> str:
    return MECHANISMS.get(m, (None, f"UNKNOWN({m})"))[1]


class ScramCredential(msgspec.Struct, frozen=True, gc=False):
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


class ScramImage(msgspec.Struct, frozen=True, gc=False):
    """Credentials keyed by (mechanism type id, user name)."""

    credentials: PMap[tuple[int, str], ScramCredential] = msgspec.field(default_factory=lambda: PMap(stable_hash))

    def credential(self, mechanism: int, user: str) -> ScramCredential | None:
        return self.credentials.get((mechanism, user))

    def is_empty(self) -> bool:
        return not self.credentials

    def sorted_credentials(self) -> Iterator[tuple[tuple[int, str], ScramCredential]]:
        return iter(self.credentials.sorted_items())


EMPTY_SCRAM = ScramImage()


def describe_scram_users(image: ScramImage, users: list[str] | None
                         ) -> list[tuple[str, list[tuple[int, int]] | tuple[str, str]]]:
    """DescribeUserScramCredentials as a node answers it from its image (Kafka's
    ScramImage.describe): per user, its (mechanism, iterations), or (error name, message) for a
    user named twice or holding no credential; every user with a credential when `users` is
    empty or None. Users come in the order of Kafka's HashMap of them; a user's mechanisms by
    type id."""
    names = [u for (_, u), _ in image.sorted_credentials()] if not users else users
    counts = Counter(names)
    repeated = {u: bool(users) and counts[u] > 1 for u in names}
    out: list[tuple[str, list[tuple[int, int]] | tuple[str, str]]] = []
    for user in string_hash_order(list(repeated)):
        if repeated[user]:
            out.append((user, ("DUPLICATE_RESOURCE",
                               f"Cannot describe SCRAM credentials for the same user twice in a single request: {user}")))
            continue
        held = [(m, c.iterations) for m in sorted(MECHANISMS) if (c := image.credential(m, user)) is not None]
        out.append((user, held if held else ("RESOURCE_NOT_FOUND",
                                             f"Attempt to describe a user credential that does not exist: {user}")))
    return out


class ScramDelta:
    def __init__(self, image: ScramImage):
        self.image = image
        self.changes: dict[tuple[int, str], object] = {}

    def replay_credential(self, r: Any) -> None:
        self.changes[(r.mechanism, r.name)] = ScramCredential(bytes(r.salt), bytes(r.stored_key), bytes(r.server_key),
                                                              r.iterations)

    def replay_remove_credential(self, r: Any) -> None:
        self.changes[(r.mechanism, r.name)] = DELETE

    def finish_snapshot(self) -> None:
        for key in self.image.credentials:
            self.changes.setdefault(key, DELETE)

    def apply(self) -> ScramImage:
        creds = self.image.credentials.update(self.changes)
        return self.image if creds is self.image.credentials else ScramImage(creds)
