"""DelegationTokensImage.write: one DelegationTokenRecord per token, or their loss below
the metadata.version that brought delegation tokens."""

from __future__ import annotations

from typing import Iterator

from kraftsim.image.components.tokens import DelegationTokensImage
from kraftsim.image.writer.loss import DELEGATION_TOKENS, delegation_tokens_summary
from kraftsim.image.writer.target import WriteTarget
from kraftsim.protocol.entries import Payload


def write(tokens: DelegationTokensImage, target: WriteTarget) -> Iterator[Payload]:
    if not tokens.tokens:
        return
    items = list(tokens.sorted_tokens())
    if target.holds(DELEGATION_TOKENS):
        dt, dtv = target.record("DelegationTokenRecord")
        for token_id, t in items:
            yield Payload(dt, dtv, dt.cls(owner=t.owner, requester=t.requester, renewers=list(t.renewers),
                                          issue_timestamp=t.issue_timestamp, max_timestamp=t.max_timestamp,
                                          expiration_timestamp=t.expiration_timestamp, token_id=token_id))
        return
    summary = delegation_tokens_summary(token_id for token_id, _ in items)
    for token_id, _ in items:
        target.lose(DELEGATION_TOKENS, f"delegation token {token_id}", ("delegation_tokens", token_id), summary)
