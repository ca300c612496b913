"""`--add-scram` arguments into UserScramCredentialRecords: Kafka's ScramParser, with its texts."""

from __future__ import annotations

import base64
import hashlib
import hmac
import random
import re
from dataclasses import dataclass

from kraftsim.protocol.entries import Payload
from kraftsim.protocol.registry import Registry, default_registry
from kraftsim.storage.format_common import (
    FormatterError,
)
from kraftsim.javacompat import parse_int, string_split

# ------------------------------------------------------------------------------ SCRAM (ScramParser)


@dataclass(frozen=True)
class ScramMechanism:
    enum: str  # Kafka's enum name, used in its error texts
    name: str  # the mechanism name users type
    type: int  # UserScramCredentialRecord.Mechanism
    hash_name: str
    min_iterations: int = 4096
    max_iterations: int = 16384


SCRAM_MECHANISMS = {
    m.name: m for m in (ScramMechanism("SCRAM_SHA_256", "SCRAM-SHA-256", 1, "sha256"),
                        ScramMechanism("SCRAM_SHA_512", "SCRAM-SHA-512", 2, "sha512"))
}
DEFAULT_SCRAM_ITERATIONS = 4096

_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")


def _java_base64_decode(text: str) -> bytes | None:
    """java.util.Base64.getDecoder().decode (padding optional but, if present, complete), or None where it would throw."""
    if not _BASE64.fullmatch(text):
        return None
    body = text.rstrip("=")
    if (text != body and len(text) % 4) or len(body) % 4 == 1:
        return None
    return base64.b64decode(body + "=" * (-len(body) % 4))


def parse_scram_argument(argument: str) -> tuple[ScramMechanism, str]:
    """ScramParser.parsePerMechanismArgument: `SCRAM-SHA-256=[...]` → (mechanism, text inside the brackets)."""
    text = argument.strip()
    eq = text.find("=")
    if eq < 0:
        raise FormatterError(f"Failed to find equals sign in SCRAM argument '{text}'")
    mechanism_name, config = text[:eq], text[eq + 1 :]
    mechanism = SCRAM_MECHANISMS.get(mechanism_name)
    if mechanism is None:
        raise FormatterError(f"The add-scram mechanism {mechanism_name} is not supported.")
    if not config.startswith("["):
        raise FormatterError("Expected configuration string to start with [")
    if not config.endswith("]"):
        raise FormatterError("Expected configuration string to end with ]")
    return mechanism, config[1:-1]


def _scram_component(text: str) -> tuple[str, str]:
    i = text.find("=")
    if i < 0:
        raise FormatterError(f"No equals sign found in SCRAM component: {text}")
    value = text[i + 1 :]
    if len(value) >= 2 and value.startswith('"') and value.endswith('"'):
        value = value[1:-1]
    return text[:i], value


def secure_random_salt(rng: random.Random) -> bytes:
    """ScramFormatter.secureRandomBytes: `new BigInteger(130, random).toString(36)` as UTF-8 bytes."""
    n = rng.getrandbits(130)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if n == 0:
            return out.encode("ascii")


def scram_credential(mechanism: ScramMechanism, salted_password: bytes) -> tuple[bytes, bytes]:
    """(StoredKey, ServerKey) per RFC 5802: StoredKey = H(HMAC(SaltedPassword, "Client Key")),
    ServerKey = HMAC(SaltedPassword, "Server Key")."""
    client_key = hmac.new(salted_password, b"Client Key", mechanism.hash_name).digest()
    stored_key = hashlib.new(mechanism.hash_name, client_key).digest()
    server_key = hmac.new(salted_password, b"Server Key", mechanism.hash_name).digest()
    return stored_key, server_key


def salted_password(mechanism: ScramMechanism, password: str, salt: bytes, iterations: int) -> bytes:
    """SaltedPassword = Hi(password, salt, i) = PBKDF2 with HMAC-<hash>, one hash length long."""
    return hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode("utf-8"), salt, iterations)


def scram_record(argument: str, rng: random.Random, registry: Registry | None = None) -> Payload:
    """One `--add-scram` argument as a UserScramCredentialRecord (ScramParser.PerMechanismData.toRecord)."""
    mechanism, config = parse_scram_argument(argument)
    components: dict[str, str] = {}
    for part in string_split(config, ","):
        k, v = _scram_component(part)
        components[k] = v
    name = components.pop("name", None)
    if name is None:
        raise FormatterError("You must supply 'name' to add-scram")
    salt: bytes | None = None
    salt_text = components.pop("salt", None)
    if salt_text is not None:
        salt = _java_base64_decode(salt_text)
        if salt is None:
            raise FormatterError(f"Failed to decode given salt: {salt_text}")
    iterations_text = components.pop("iterations", None)
    iterations: int | None = None
    if iterations_text is not None:
        iterations = parse_int(iterations_text)
        if iterations is None:
            raise FormatterError(f"Failed to parse iterations count: {iterations_text}")
    password = components.pop("password", None)
    salted_text = components.pop("saltedpassword", None)
    given_salted: bytes | None = None
    if password is None:
        if salted_text is None:
            raise FormatterError("You must supply one of 'password' or 'saltedpassword' to add-scram")
        if salt is None:
            raise FormatterError("You must supply 'salt' with 'saltedpassword' to add-scram")
        given_salted = _java_base64_decode(salted_text)
        if given_salted is None:
            raise FormatterError(f"Failed to decode given saltedPassword: {salted_text}")
    if components:
        raise FormatterError("Unknown SCRAM configurations: " + ", ".join(sorted(components)))
    if salt is None:
        salt = secure_random_salt(rng)
    if iterations is None:
        iterations = DEFAULT_SCRAM_ITERATIONS
    if iterations < mechanism.min_iterations:
        raise FormatterError(f"The 'iterations' value must be >= {mechanism.min_iterations} "
                             f"for add-scram using {mechanism.enum}")
    if iterations > mechanism.max_iterations:
        raise FormatterError(f"The 'iterations' value must be <= {mechanism.max_iterations} "
                             f"for add-scram using {mechanism.enum}")
    salted = given_salted if given_salted is not None else salted_password(mechanism, password, salt, iterations)  # type: ignore[arg-type]
    stored_key, server_key = scram_credential(mechanism, salted)
    rt = (registry or default_registry())["UserScramCredentialRecord"]
    return Payload(rt, 0, rt.new(name=name, mechanism=mechanism.type, salt=salt, stored_key=stored_key,
                                 server_key=server_key, iterations=iterations))
