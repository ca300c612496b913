"""SCRAM credentials: Kafka's AlterUserScramCredentials on the controller (ScramControlManager).

An upsertion carries the salted password; the controller derives the stored and server
keys (RFC 5802, as Kafka's ScramFormatter) and writes UserScramCredentialRecord; a
deletion writes RemoveUserScramCredentialRecord. A user may appear once per request.
Before metadata.version 3.5-IV2 every change is refused with UNSUPPORTED_VERSION.
"""

from __future__ import annotations

import hashlib
import hmac

import msgspec

from kraftsim.controller.api_errors import NONE, ApiError
from kraftsim.controller.context import ControllerContext, metadata_version_of, registry_of
from kraftsim.controller.result import NO_METADATA_VERSION, ControllerResult, accepted, payload, refused
from kraftsim.image import MECHANISMS
from kraftsim.protocol.entries import Payload

#: mechanism type id -> (hash, minimum iterations), Kafka's ScramMechanism.
_HASHES = {1: ("sha256", 4096), 2: ("sha512", 4096)}
MAX_ITERATIONS = 16384


class ScramCredentialDeletion(msgspec.Struct, frozen=True):
    name: str
    mechanism: int


class ScramCredentialUpsertion(msgspec.Struct, frozen=True):
    name: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes


class AlterUserScramCredentialsRequest(msgspec.Struct, frozen=True):
    deletions: tuple[ScramCredentialDeletion, ...] = ()
    upsertions: tuple[ScramCredentialUpsertion, ...] = ()


class AlterUserScramCredentialsResult(msgspec.Struct, frozen=True):
    user: str
    error_code: int = 0
    error_message: str | None = None


class AlterUserScramCredentialsResponse(msgspec.Struct, frozen=True):
    results: tuple[AlterUserScramCredentialsResult, ...]


#: mechanism name -> type id, as kafka-configs names them (SCRAM-SHA-256=[...]).
MECHANISM_IDS = {name: m for m, (_, name) in MECHANISMS.items() if name != "UNKNOWN"}


def salted_password(mechanism: int, password: str, salt: bytes, iterations: int) -> bytes:
    """SCRAM's Hi(password, salt, iterations) (RFC 5802: PBKDF2 with the mechanism's HMAC, one
    block), what Kafka's Admin client sends as an upsertion's SaltedPassword."""
    return hashlib.pbkdf2_hmac(_HASHES[mechanism][0], password.encode("utf-8"), salt, iterations)


def scram_keys_of_password(mechanism: int, password: str, salt: bytes, iterations: int) -> tuple[bytes, bytes]:
    """(stored key, server key) of a password, as a SCRAM server keeps them."""
    return scram_keys(mechanism, salted_password(mechanism, password, salt, iterations))


def minimum_iterations(mechanism: int) -> int:
    """The fewest iterations the mechanism takes (Kafka's ScramMechanism.minIterations)."""
    return _HASHES[mechanism][1]


def scram_keys(mechanism: int, salted_password: bytes) -> tuple[bytes, bytes]:
    """(stored key, server key) from a salted password, as Kafka's ScramFormatter."""
    algo = _HASHES[mechanism][0]
    client_key = hmac.new(salted_password, b"Client Key", algo).digest()
    stored_key = hashlib.new(algo, client_key).digest()
    server_key = hmac.new(salted_password, b"Server Key", algo).digest()
    return stored_key, server_key


def _name_and_mechanism_error(name: str, mechanism: int) -> ApiError:
    if not name:
        return ApiError("UNACCEPTABLE_CREDENTIAL", "Username must not be empty")
    if mechanism not in MECHANISMS or MECHANISMS[mechanism][0] == "UNKNOWN":
        return ApiError("UNSUPPORTED_SASL_MECHANISM", "Unknown SCRAM mechanism")
    return NONE


def alter_user_scram_credentials(ctx: ControllerContext, req: AlterUserScramCredentialsRequest) -> ControllerResult:
    """Kafka's alterCredentials: deletions, then upsertions, checked per user; records of
    the users that pass commit atomically."""
    mv = metadata_version_of(ctx)
    if mv is None:
        return refused(NO_METADATA_VERSION)
    supported = ctx.catalog.supports("scram", mv)
    unsupported = ApiError("UNSUPPORTED_VERSION", ctx.catalog.policy_text("scram_unsupported_text", "refusal"))
    twice = ApiError("DUPLICATE_RESOURCE", "A user credential cannot be altered twice in the same request")
    deletions: dict[str, ScramCredentialDeletion] = {}
    upsertions: dict[str, ScramCredentialUpsertion] = {}
    errors: dict[str, ApiError] = {}
    for d in req.deletions:
        if d.name in errors:
            continue
        if deletions.pop(d.name, None) is not None:
            errors[d.name] = twice
        elif not supported:
            errors[d.name] = unsupported
        else:
            err = _name_and_mechanism_error(d.name, d.mechanism)
            if err.ok and ctx.image.scram.credential(d.mechanism, d.name) is None:
                err = ApiError("RESOURCE_NOT_FOUND", "Attempt to delete a user credential that does not exist")
            if err.ok:
                deletions[d.name] = d
            else:
                errors[d.name] = err
    for u in req.upsertions:
        if u.name in errors:
            continue
        if deletions.pop(u.name, None) is not None or upsertions.pop(u.name, None) is not None:
            errors[u.name] = twice
        elif not supported:
            errors[u.name] = unsupported
        else:
            err = _name_and_mechanism_error(u.name, u.mechanism)
            if err.ok and u.iterations < _HASHES[u.mechanism][1]:
                err = ApiError("UNACCEPTABLE_CREDENTIAL", "Too few iterations")
            elif err.ok and u.iterations > MAX_ITERATIONS:
                err = ApiError("UNACCEPTABLE_CREDENTIAL", "Too many iterations")
            if err.ok:
                upsertions[u.name] = u
            else:
                errors[u.name] = err
    reg = registry_of(ctx)
    records: list[Payload] = []
    results = []
    for d in deletions.values():
        results.append(AlterUserScramCredentialsResult(d.name))
        records.append(payload(reg, "RemoveUserScramCredentialRecord", 0, name=d.name, mechanism=d.mechanism))
    for u in upsertions.values():
        stored, server = scram_keys(u.mechanism, u.salted_password)
        results.append(AlterUserScramCredentialsResult(u.name))
        records.append(payload(reg, "UserScramCredentialRecord", 0, name=u.name, mechanism=u.mechanism, salt=u.salt,
                               stored_key=stored, server_key=server, iterations=u.iterations))
    results += [AlterUserScramCredentialsResult(name, e.code, e.message) for name, e in errors.items()]
    return accepted(records, AlterUserScramCredentialsResponse(tuple(results)))
