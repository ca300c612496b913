"""Delegation tokens: Kafka's Create/Renew/ExpireDelegationToken on the controller
(DelegationTokenControlManager), from metadata.version 3.6-IV2 on.

A token's HMAC is HmacSHA512 of its id under `delegation.token.secret.key`; requests that
name a token do so by HMAC. Token ids are Kafka's Uuid.randomUuid() text in Kafka; kraftsim
draws them from a generator seeded by the request's `seed`. The clock is `ctx.now_ms`.
Errors are reported as codes in the response, as Kafka does.
"""

from __future__ import annotations

import hashlib
import hmac
import random

import msgspec

from kraftsim.controller.api_errors import ApiError
from kraftsim.controller.context import ControllerContext, metadata_version_of, registry_of
from kraftsim.controller.result import NO_METADATA_VERSION, ControllerResult, accepted, payload, refused
from kraftsim.image import DelegationToken
from kraftsim.protocol.entries import Payload
from kraftsim.javacompat import random_uuid

USER_TYPE = "User"


class DelegationTokenSettings(msgspec.Struct, frozen=True):
    """The controller's delegation.token.* configuration; no secret key = tokens disabled."""

    secret_key: str | None = None
    max_lifetime_ms: int = 7 * 24 * 3600 * 1000  # delegation.token.max.lifetime.ms
    expiry_time_ms: int = 24 * 3600 * 1000  # delegation.token.expiry.time.ms


class CreatableRenewer(msgspec.Struct, frozen=True):
    principal_type: str
    principal_name: str


class CreateDelegationTokenRequest(msgspec.Struct, frozen=True):
    requester: str  # the authenticated principal, e.g. "User:alice"
    owner_principal_type: str | None = None
    owner_principal_name: str | None = None
    renewers: tuple[CreatableRenewer, ...] = ()
    max_lifetime_ms: int = -1
    seed: int = 0  # kraftsim: seeds the generator of token ids


class CreateDelegationTokenResponse(msgspec.Struct, frozen=True):
    error_code: int
    principal_type: str
    principal_name: str
    token_requester_principal_type: str
    token_requester_principal_name: str
    issue_timestamp_ms: int = 0
    expiry_timestamp_ms: int = 0
    max_timestamp_ms: int = 0
    token_id: str = ""
    hmac: bytes = b""


class RenewDelegationTokenRequest(msgspec.Struct, frozen=True):
    requester: str
    hmac: bytes
    renew_period_ms: int = -1


class ExpireDelegationTokenRequest(msgspec.Struct, frozen=True):
    requester: str
    hmac: bytes
    expiry_time_period_ms: int = -1  # negative: expire now


class TokenExpiryResponse(msgspec.Struct, frozen=True):
    """Renew and Expire answer alike: an error code and the token's new expiry time."""

    error_code: int
    expiry_timestamp_ms: int = 0


def _split_principal(p: str) -> tuple[str, str]:
    kind, _, name = p.partition(":")
    return kind, name


def token_hmac(secret_key: str, token_id: str) -> bytes:
    return hmac.new(secret_key.encode("utf-8"), token_id.encode("utf-8"), hashlib.sha512).digest()


def _gate(ctx: ControllerContext, settings: DelegationTokenSettings) -> str | None:
    """The error name refusing any token operation, None when tokens can be used."""
    mv = metadata_version_of(ctx)
    if settings.secret_key is None:
        return "DELEGATION_TOKEN_AUTH_DISABLED"
    if mv is None or not ctx.catalog.supports("delegation_tokens", mv):
        return "UNSUPPORTED_VERSION"
    return None


def create_delegation_token(ctx: ControllerContext, req: CreateDelegationTokenRequest,
                            settings: DelegationTokenSettings) -> ControllerResult:
    now = ctx.now_ms
    owner = req.requester
    if req.owner_principal_name:
        owner = f"{req.owner_principal_type}:{req.owner_principal_name}"
    otype, oname = _split_principal(owner)
    rtype, rname = _split_principal(req.requester)

    def answer(error: str) -> ControllerResult:
        return accepted([], CreateDelegationTokenResponse(ApiError(error).code, otype, oname, rtype, rname))

    gate = _gate(ctx, settings)
    if gate is not None:
        return answer(gate)
    max_life = settings.max_lifetime_ms
    if req.max_lifetime_ms > 0:
        max_life = min(max_life, req.max_lifetime_ms)
    max_ts = now + max_life
    expiry_ts = min(max_ts, now + settings.expiry_time_ms)
    renewers = []
    for r in req.renewers:
        if r.principal_type != USER_TYPE:
            return answer("INVALID_PRINCIPAL_TYPE")
        renewers.append(f"{r.principal_type}:{r.principal_name}")
    rng = random.Random(f"kraftsim-token-id:{req.seed}")
    token_id = str(random_uuid(rng))
    while token_id in ctx.image.delegation_tokens.tokens:
        token_id = str(random_uuid(rng))
    assert settings.secret_key is not None
    mac = token_hmac(settings.secret_key, token_id)
    token = DelegationToken(token_id, owner, req.requester, tuple(renewers), now, max_ts, expiry_ts)
    response = CreateDelegationTokenResponse(0, otype, oname, rtype, rname, now, expiry_ts, max_ts, token_id, mac)
    return accepted([_token_record(ctx, token, expiry_ts)], response)


def _find_token(ctx: ControllerContext, settings: DelegationTokenSettings, mac: bytes) -> DelegationToken | None:
    assert settings.secret_key is not None
    for token_id, token in ctx.image.delegation_tokens.sorted_tokens():
        if hmac.compare_digest(token_hmac(settings.secret_key, token_id), mac):
            return token
    return None


def _named_token(ctx: ControllerContext, settings: DelegationTokenSettings,
                 mac: bytes) -> tuple[DelegationToken | None, str | None]:
    """The token `mac` names, or why there is none to act on."""
    gate = _gate(ctx, settings)
    if gate is not None:
        return None, gate
    token = _find_token(ctx, settings, mac)
    return (token, None) if token is not None else (None, "DELEGATION_TOKEN_NOT_FOUND")


def _expired(ctx: ControllerContext, token: DelegationToken) -> bool:
    return token.max_timestamp < ctx.now_ms or token.expiration_timestamp < ctx.now_ms


def _owned_by(token: DelegationToken, requester: str) -> bool:
    return requester == token.owner or requester in token.renewers


def _usable_token(ctx: ControllerContext, settings: DelegationTokenSettings, mac: bytes,
                  requester: str) -> tuple[DelegationToken | None, str | None]:
    """The token `mac` names if it has not expired and `requester` owns or renews it."""
    token, error = _named_token(ctx, settings, mac)
    if token is None:
        return None, error
    if _expired(ctx, token):
        return None, "DELEGATION_TOKEN_EXPIRED"
    if not _owned_by(token, requester):
        return None, "DELEGATION_TOKEN_OWNER_MISMATCH"
    return token, None


def _token_record(ctx: ControllerContext, token: DelegationToken, expiry: int) -> Payload:
    """The DelegationTokenRecord of `token` expiring at `expiry`."""
    return payload(registry_of(ctx), "DelegationTokenRecord", 0, owner=token.owner, requester=token.requester,
                   renewers=list(token.renewers), issue_timestamp=token.issue_timestamp,
                   max_timestamp=token.max_timestamp, expiration_timestamp=expiry, token_id=token.token_id)


def renew_delegation_token(ctx: ControllerContext, req: RenewDelegationTokenRequest,
                           settings: DelegationTokenSettings) -> ControllerResult:
    token, error = _usable_token(ctx, settings, req.hmac, req.requester)
    if token is None:
        return accepted([], TokenExpiryResponse(ApiError(error or "UNKNOWN_SERVER_ERROR").code))
    period = settings.expiry_time_ms
    if req.renew_period_ms > 0:
        period = min(period, req.renew_period_ms)
    expiry = min(token.max_timestamp, ctx.now_ms + period)
    return accepted([_token_record(ctx, token, expiry)], TokenExpiryResponse(0, expiry))


def expire_delegation_token(ctx: ControllerContext, req: ExpireDelegationTokenRequest,
                            settings: DelegationTokenSettings) -> ControllerResult:
    """A negative period removes the token now (RemoveDelegationTokenRecord); otherwise its
    expiry moves to now + period, capped at its max timestamp. Whether a token already expired
    can still be removed, and what the answer says its expiry is, follow the release (policy
    delegation_token_expire_now: KAFKA-17315 came with 3.8.1)."""
    if ctx.catalog.policy("delegation_token_expire_now") == "expired-refused":
        token, error = _usable_token(ctx, settings, req.hmac, req.requester)
        answered_expiry = req.expiry_time_period_ms  # (the period asked for, not a time)
    else:
        token, error = _named_token(ctx, settings, req.hmac)
        if token is not None and not _owned_by(token, req.requester):
            token, error = None, "DELEGATION_TOKEN_OWNER_MISMATCH"
        if token is not None and req.expiry_time_period_ms >= 0 and _expired(ctx, token):
            token, error = None, "DELEGATION_TOKEN_EXPIRED"
        answered_expiry = ctx.now_ms
    if token is None:
        return accepted([], TokenExpiryResponse(ApiError(error or "UNKNOWN_SERVER_ERROR").code))
    if req.expiry_time_period_ms < 0:
        record = payload(registry_of(ctx), "RemoveDelegationTokenRecord", 0, token_id=token.token_id)
        return accepted([record], TokenExpiryResponse(0, answered_expiry))
    expiry = min(token.max_timestamp, ctx.now_ms + req.expiry_time_period_ms)
    return accepted([_token_record(ctx, token, expiry)], TokenExpiryResponse(0, expiry))


def sweep_expired_delegation_tokens(ctx: ControllerContext) -> ControllerResult:
    """Kafka's periodic sweep: tokens past their max or expiry time are removed."""
    if metadata_version_of(ctx) is None:
        return refused(NO_METADATA_VERSION)
    reg = registry_of(ctx)
    records = [payload(reg, "RemoveDelegationTokenRecord", 0, token_id=tid)
               for tid, t in ctx.image.delegation_tokens.sorted_tokens()
               if t.max_timestamp < ctx.now_ms or t.expiration_timestamp < ctx.now_ms]
    return accepted(records, None)
