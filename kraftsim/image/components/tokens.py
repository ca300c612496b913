"""Delegation tokens by token id (Kafka's DelegationTokenImage)."""

from __future__ import annotations

from typing import Any, Iterator

import msgspec

from kraftsim.image.pmap import DELETE, PMap, hash_str


class DelegationToken(msgspec.Struct, frozen=True, gc=False):
    """The fields of a DelegationTokenRecord."""

    token_id: str
    owner: str
    requester: str
    renewers: tuple[str, ...]
    issue_timestamp: int
    max_timestamp: int
    expiration_timestamp: int

    @classmethod
    def from_record(cls, r: Any) -> "DelegationToken":
        return cls(r.token_id, r.owner, r.requester, tuple(r.renewers), r.issue_timestamp, r.max_timestamp,
                   r.expiration_timestamp)


class DelegationTokensImage(msgspec.Struct, frozen=True, gc=False):
    tokens: PMap[str, DelegationToken] = msgspec.field(default_factory=lambda: PMap(hash_str))

    def is_empty(self) -> bool:
        return not self.tokens

    def sorted_tokens(self) -> Iterator[tuple[str, DelegationToken]]:
        return iter(self.tokens.sorted_items())


EMPTY_DELEGATION_TOKENS = DelegationTokensImage()


class DelegationTokensDelta:
    def __init__(self, image: DelegationTokensImage):
        self.image = image
        self.changes: dict[str, object] = {}

    def replay_token(self, r: Any) -> None:
        self.changes[r.token_id] = DelegationToken.from_record(r)

    def replay_remove_token(self, r: Any) -> None:
        self.changes[r.token_id] = DELETE

    def finish_snapshot(self) -> None:
        for token_id in self.image.tokens:
            self.changes.setdefault(token_id, DELETE)

    def apply(self) -> DelegationTokensImage:
        tokens = self.image.tokens.update(self.changes)
        return self.image if tokens is self.image.tokens else DelegationTokensImage(tokens)
