"""Formatting log directories: Kafka's `kafka-storage format` / `info` / `random-uuid` as functions.

This module is the logic of Kafka's StorageTool (`runFormatCommand`, `infoCommand`) and of
its Formatter, ScramParser and DynamicVoter(s) classes (kafka-facts §7.1), with their error
texts, in the order Kafka checks them. It takes a version Catalog (the release line whose
tool it acts as) and a ServerConfig (what Kafka reads from server.properties) and writes
`meta.properties`, `bootstrap.checkpoint` and, for a dynamic quorum, the zero checkpoint
`__cluster_metadata-0/00000000000000000000-0000000000.checkpoint`. No argparse here: the
CLI only turns flags into calls.

Determinism. The only inputs that are not data are time and randomness, and both are
parameters:

- `clock` (milliseconds, asked once per batch as it is started, like Kafka's Time):
  every formatted directory consumes three readings for its bootstrap.checkpoint
  (header, records, footer batch) and, for a dynamic metadata directory, three more for
  the zero checkpoint (its LastContainedLogTimestamp, header batch, footer batch).
  `default_clock()` is SOURCE_DATE_EPOCH × 1000 for every reading when that variable is
  set, else the wall clock; a test can pass `replay_clock(timestamps)` to rewrite a file
  exactly.
- `rng` (a `random.Random`): directory ids (Kafka's Random.nextLong twice), the standalone
  voter's directory id and `random-uuid` (Kafka's Uuid.randomUuid, a version-4 UUID), and
  SCRAM salts (Kafka's ScramFormatter.secureRandomBytes: a 130-bit random number written
  in base 36, as ASCII bytes). Default: `random.SystemRandom()` (os.urandom); pass
  `random.Random(seed)` for reproducible ids.
- the meta.properties date comment: `date`, else SOURCE_DATE_EPOCH, else the clock.

Where Kafka iterates a java.util.HashMap (the order of the per-directory "Formatting" lines,
which formatted directory "already formatted" names, the voter order of VotersRecord), the
order is reproduced from the keys' Java hash codes.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import os
import random
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from kraftsim.errors import KraftsimError
from kraftsim.protocol.entries import Payload
from kraftsim.protocol.primitives import Uuid
from kraftsim.protocol.registry import Registry, default_registry
from kraftsim.protocol.schema import FieldSpec, StructSpec
from kraftsim.storage.batchfile import Clock
from kraftsim.storage.bootstrap import write_bootstrap
from kraftsim.storage.java_properties import java_parse_int, java_string_hash, load_properties
from kraftsim.storage.meta_properties import MetaProperties, source_date_epoch, write_meta_properties
from kraftsim.storage.format_layout import write_bootstrap_for
from kraftsim.storage.names import BOOTSTRAP_SNAPSHOT_ID, METADATA_DIR_NAME, META_PROPERTIES_FILE
from kraftsim.storage.snapshot import control_payload, write_snapshot
from kraftsim.versions import Catalog, IllegalArgument, MetadataVersion, ToolFailure, UnknownMetadataVersion
from kraftsim.versions.metadata_version import FEATURE_NAME as MV_NAME
from kraftsim.versions.tool_text import parse_feature_arg

KRAFT_VERSION = "kraft.version"
FORMAT_SOURCE = "format command"
QUORUM_VOTERS = "controller.quorum.voters"
QUORUM_BOOTSTRAP_SERVERS = "controller.quorum.bootstrap.servers"


class FormatterError(KraftsimError):
    """Kafka's FormatterException: StorageTool prints the message alone and exits 1."""


# ------------------------------------------------------------------------------ clock, randomness


def default_clock() -> Clock:
    """SOURCE_DATE_EPOCH seconds × 1000 for every reading when set (reproducible files), else the wall clock."""
    sde = source_date_epoch()
    if sde is not None:
        fixed = sde * 1000
        return lambda: fixed
    return lambda: time.time_ns() // 1_000_000


def _signed64(x: int) -> int:
    return x - (1 << 64) if x >= 1 << 63 else x


_RESERVED_UUIDS = (Uuid.from_longs(0, 0), Uuid.from_longs(0, 1))  # ZERO_UUID, ONE_UUID (= METADATA_TOPIC_ID)


def random_uuid(rng: random.Random | None = None) -> Uuid:
    """Kafka's Uuid.randomUuid(): a java.util.UUID.randomUUID (version 4), never reserved, never printed with a leading '-'."""
    rng = rng or random.SystemRandom()
    while True:
        raw = bytearray(rng.getrandbits(128).to_bytes(16, "big"))
        raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
        raw[8] = (raw[8] & 0x3F) | 0x80  # IETF variant
        u = Uuid(bytes(raw))
        if u not in _RESERVED_UUIDS and not str(u).startswith("-"):
            return u


def _directory_id_reserved(u: Uuid) -> bool:
    """Kafka's DirectoryId.reserved: most significant bits 0 and (signed) least significant bits < 100."""
    return u.msb == 0 and u.lsb < 100


def _generate_directory_id(rng: random.Random, taken: Iterable[str | None]) -> Uuid:
    """MetaPropertiesEnsemble.Copier.generateValidDirectoryId: Uuid(nextLong, nextLong), safe and unused."""
    used = set(taken)
    while True:
        u = Uuid.from_longs(_signed64(rng.getrandbits(64)), _signed64(rng.getrandbits(64)))
        if not (str(u).startswith("-") or _directory_id_reserved(u)) and str(u) not in used:
            return u


# ------------------------------------------------------------------------------ java.util.HashMap order


def _java_int_hash(i: int) -> int:
    return i & 0xFFFFFFFF


def _bucket(h: int, capacity: int) -> int:
    return (h ^ (h >> 16)) & (capacity - 1)


def _table_size_for(c: int) -> int:
    n = 1
    while n < c:
        n *= 2
    return n


def _hashmap_capacity(size: int, initial: int = 16) -> int:
    """The table size of a HashMap that started with `initial` buckets and then had `size` keys
    put into it (it doubles whenever it gets more than 0.75 full)."""
    cap = initial
    while size > int(cap * 0.75):
        cap *= 2
    return cap


def copy_capacity(copied: int) -> int:
    """The first table size of `new HashMap<>(m)` for an m of `copied` keys (16 when m is empty)."""
    return _table_size_for(int(copied / 0.75 + 1.0)) if copied > 0 else 16


def hash_set_copy_capacity(copied: int) -> int:
    """The first table size of `new HashSet<>(c)` for a c of `copied` elements."""
    return _table_size_for(max(int(copied / 0.75) + 1, 16))


def java_hash_order(keys: Sequence[Any], hash_of: Callable[[Any], int], *, initial: int = 16) -> list[Any]:
    """The iteration order of a java.util.HashMap (or HashSet) whose keys were put in the order of
    `keys` into a table of `initial` buckets: by bucket of the final table, then by insertion
    (a resize keeps the relative order of the keys that share a bucket)."""
    cap = _hashmap_capacity(len(keys), initial)
    return [k for _, _, k in sorted((_bucket(hash_of(k), cap), i, k) for i, k in enumerate(keys))]


def _string_hash_order(keys: Sequence[str], *, initial: int = 16) -> list[str]:
    return java_hash_order(keys, java_string_hash, initial=initial)


# ------------------------------------------------------------------------------ Kafka's toString


def _java_value(f: FieldSpec, value: Any, elem: bool = False) -> str:
    """One field value as Kafka's generated message toString prints it."""
    if f.is_array and not elem:
        if value is None:
            return "null"
        return "[" + ", ".join(_java_value(f, v, elem=True) for v in value) + "]"  # MessageUtil.deepToString
    if value is None:
        return "null"
    if f.struct is not None:
        return java_struct_string(f.struct, value)
    t = f.element_type
    if t == "string":
        return value if elem else f"'{value}'"
    if t == "bool":
        return "true" if value else "false"
    if t == "bytes":
        return "[" + ", ".join(str(b - 256 if b > 127 else b) for b in value) + "]"  # Arrays.toString(byte[])
    if t == "uuid":
        return str(Uuid(value))
    return str(value)


def java_struct_string(spec: StructSpec, message: Any) -> str:
    """Kafka's generated toString: `Name(field=value, ...)`, every field, camelCase names."""
    parts = [f"{f.json_name}={_java_value(f, getattr(message, f.py_name))}" for f in spec.fields]
    return f"{spec.name}(" + ", ".join(parts) + ")"


def api_message_and_version_string(p: Payload) -> str:
    """`ApiMessageAndVersion(<message> at version <n>)`."""
    return f"ApiMessageAndVersion({java_struct_string(p.record_type.schema.body, p.message)} at version {p.version})"


def bootstrap_metadata_string(records: Sequence[Payload], metadata_version_level: int, source: str) -> str:
    """BootstrapMetadata.toString, as `kafka-storage format` prints it after "Bootstrap metadata: "."""
    recs = "[" + ", ".join(api_message_and_version_string(p) for p in records) + "]"
    return f"BootstrapMetadata(records={recs}, metadataVersionLevel={metadata_version_level}, source={source})"


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


def _java_split(text: str, sep: str) -> list[str]:
    """String.split(sep): without a match, [text]; otherwise trailing empty strings are dropped."""
    parts = text.split(sep)
    if len(parts) == 1:
        return parts
    while parts and parts[-1] == "":
        parts.pop()
    return parts


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
    for part in _java_split(config, ","):
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
        iterations = java_parse_int(iterations_text)
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


# ------------------------------------------------------------------------------ dynamic voters


@dataclass(frozen=True)
class DynamicVoter:
    """One KIP-853 initial voter, `id@host:port:directoryId`."""

    node_id: int
    host: str
    port: int
    directory_id: Uuid

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.node_id}@{host}:{self.port}:{self.directory_id}"


def parse_dynamic_voter(text: str) -> DynamicVoter:
    """Kafka's DynamicVoter.parse, with its IllegalArgumentException texts."""
    s = text.strip()
    at = s.find("@")
    if at < 0:
        raise IllegalArgument("No @ found in dynamic voter string.")
    if at == 0:
        raise IllegalArgument("Invalid @ at beginning of dynamic voter string.")
    node_id = java_parse_int(s[:at])
    if node_id is None:
        raise IllegalArgument("Failed to parse node id in dynamic voter string.")
    if node_id < 0:
        raise IllegalArgument(f"Invalid negative node id {node_id} in dynamic voter string.")
    s = s[at + 1 :]
    if not s:
        raise IllegalArgument("No hostname found after node id.")
    if s.startswith("["):
        end = s.find("]")
        if end < 0:
            raise IllegalArgument("Hostname began with left bracket, but no right bracket was found.")
        host, s = s[1:end], s[end + 1 :]
    else:
        end = s.find(":")
        if end < 0:
            raise IllegalArgument("No colon following hostname could be found.")
        host, s = s[:end], s[end:]
    if not s.startswith(":"):
        raise IllegalArgument("Port section must start with a colon.")
    s = s[1:]
    end = s.find(":")
    if end < 0:
        raise IllegalArgument("No colon following port could be found.")
    port = java_parse_int(s[:end])
    if port is None:
        raise IllegalArgument("Failed to parse port in dynamic voter string.")
    if not 0 <= port <= 65535:
        raise IllegalArgument(f"Invalid port {port} in dynamic voter string.")
    try:
        directory_id = Uuid.from_string(s[end + 1 :])
    except ValueError:
        raise IllegalArgument("Failed to parse directory ID in dynamic voter string.") from None
    return DynamicVoter(node_id, host, port, directory_id)


def parse_dynamic_voters(text: str) -> dict[int, DynamicVoter]:
    """Kafka's DynamicVoters.parse: comma-separated voters, by node id (ascending)."""
    voters: dict[int, DynamicVoter] = {}
    parsed = [parse_dynamic_voter(v) for v in _java_split(text.strip(), ",") if v]
    if not parsed:
        raise IllegalArgument("No voters given.")
    for v in parsed:
        if v.node_id in voters:
            raise IllegalArgument(f"Node id {v.node_id} was specified more than once.")
        voters[v.node_id] = v
    return dict(sorted(voters.items()))


def _java_host_string(host: str) -> str:
    """InetSocketAddress(host, port).getHostString(): names as given, IP literals as Java prints them."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host
    if ip.version == 6:
        return ":".join(f"{int(g, 16):x}" for g in ip.exploded.split(":"))
    return host


def voters_record(voters: Mapping[int, DynamicVoter], controller_listener_name: str,
                  registry: Registry | None = None) -> Payload:
    """VoterSet.toVotersRecord(0) for DynamicVoters.toVoterSet(listener): one endpoint per voter,
    the listener name upper-cased, kraft.version support 0-1; voters in Java HashMap order."""
    rt = (registry or default_registry())["VotersRecord"]
    voter_cls, endpoint_cls, feature_cls = rt.nested["Voter"], rt.nested["Endpoint"], rt.nested["KRaftVersionFeature"]
    ids = java_hash_order(list(voters), _java_int_hash)  # toVoterSet's HashMap
    ids = java_hash_order(ids, _java_int_hash, initial=copy_capacity(len(ids)))  # VoterSet.fromMap copies it
    out = []
    for i in ids:
        v = voters[i]
        out.append(voter_cls(
            voter_id=v.node_id, voter_directory_id=v.directory_id,
            endpoints=[endpoint_cls(name=controller_listener_name.upper(), host=_java_host_string(v.host), port=v.port)],
            k_raft_version_feature=feature_cls(min_supported_version=0, max_supported_version=1)))
    return Payload(rt, 0, rt.new(version=0, voters=out))


# ------------------------------------------------------------------------------ server.properties


@dataclass(frozen=True)
class Listener:
    name: str  # normalised (upper case)
    host: str | None
    port: int


_LISTENER = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*?)\]?:(-?[0-9]+)$")


def _parse_listeners(text: str | None, key: str) -> list[Listener]:
    out = []
    for item in _csv(text):
        m = _LISTENER.match(item)
        if not m:
            raise KraftsimError(f"Invalid value {text} for configuration {key}: "
                                f"Unable to parse {item} to a broker endpoint")
        out.append(Listener(m.group(1).upper(), m.group(2) or None, int(m.group(3))))
    return out


def _csv(text: str | None) -> list[str]:
    """Kafka's Csv.parseCsvList: split on commas with surrounding blanks, empty items dropped."""
    if text is None:
        return []
    return [p for p in re.split(r"\s*,\s*", text.strip()) if p]


@dataclass(frozen=True)
class ServerConfig:
    """What the storage tool reads from a Kafka server.properties (KafkaConfig)."""

    process_roles: tuple[str, ...] = ()
    node_id: int = -1
    log_dirs: tuple[str, ...] = ()
    metadata_log_dir: str | None = None  # metadata.log.dir, else the first of log.dirs
    controller_listener_names: tuple[str, ...] = ()
    quorum_voters: tuple[str, ...] = ()
    quorum_bootstrap_servers: tuple[str, ...] = ()
    listeners: tuple[Listener, ...] = ()
    advertised_listeners: tuple[Listener, ...] = ()
    unstable_feature_versions: bool = False
    source: str = "<config>"

    @property
    def is_controller(self) -> bool:
        return "controller" in self.process_roles

    @property
    def directories(self) -> list[str]:
        """StorageTool.configToLogDirectories: log.dirs plus metadata.log.dir, sorted, once each."""
        dirs = set(self.log_dirs)
        if self.metadata_log_dir is not None:
            dirs.add(self.metadata_log_dir)
        return sorted(dirs)

    @property
    def controller_listener_name(self) -> str | None:
        return self.controller_listener_names[0] if self.controller_listener_names else None

    def effective_advertised_controller_listeners(self) -> list[Listener]:
        """KafkaConfig.effectiveAdvertisedControllerListeners: per controller listener name, the
        advertised listener of that name, else the listener of that name (0.0.0.0 as no host)."""
        out = []
        for name in self.controller_listener_names:
            wanted = name.upper()
            found = next((l for l in self.advertised_listeners if l.name == wanted), None)
            if found is None:
                found = next((l for l in self.listeners if l.name == wanted), None)
                if found is not None and found.host == "0.0.0.0":
                    found = Listener(found.name, None, found.port)
            if found is not None:
                out.append(found)
        return out

    @classmethod
    def from_properties(cls, props: Mapping[str, str], source: str = "<config>") -> "ServerConfig":
        """Read the keys the storage tool needs, with KafkaConfig's parsing rules and texts."""
        roles = tuple(_csv(props.get("process.roles")))
        for r in roles:
            if r not in ("broker", "controller"):
                raise KraftsimError(f"Unknown process role '{r}' (only 'broker' and 'controller' are allowed roles)")
        node_id = -1
        if "node.id" in props:
            node_id = java_parse_int(props["node.id"].strip())  # type: ignore[assignment]
            if node_id is None:
                raise KraftsimError(f"Invalid value {props['node.id']} for configuration node.id: Not a number of type INT")
        elif roles:
            raise KraftsimError('Missing required configuration "node.id" which has no default value.')
        log_dirs = tuple(_csv(props["log.dirs"] if "log.dirs" in props else props.get("log.dir", "/tmp/kafka-logs")))
        metadata_log_dir = props.get("metadata.log.dir")
        if metadata_log_dir is None and log_dirs:
            metadata_log_dir = log_dirs[0]
        unstable_text = props.get("unstable.feature.versions.enable", "false").strip().lower()
        if unstable_text not in ("true", "false"):
            raise KraftsimError(f"Invalid value {props['unstable.feature.versions.enable']} for configuration "
                                "unstable.feature.versions.enable: Expected value to be either true or false")
        return cls(
            process_roles=roles,
            node_id=node_id,
            log_dirs=log_dirs,
            metadata_log_dir=metadata_log_dir,
            controller_listener_names=tuple(_csv(props.get("controller.listener.names"))),
            quorum_voters=tuple(_csv(props.get(QUORUM_VOTERS))),
            quorum_bootstrap_servers=tuple(_csv(props.get(QUORUM_BOOTSTRAP_SERVERS))),
            listeners=tuple(_parse_listeners(props.get("listeners"), "listeners")),
            advertised_listeners=tuple(_parse_listeners(props.get("advertised.listeners"), "advertised.listeners")),
            unstable_feature_versions=unstable_text == "true",
            source=source,
        )

    @classmethod
    def for_directories(cls, directories: Sequence[str], node_id: int = -1, *, dynamic_quorum: bool = False,
                        controller_listener: str = "CONTROLLER", host: str = "localhost",
                        port: int = 9093) -> "ServerConfig":
        """The node `--dir D... --node-id N` stands for (kraftsim's shorthand for a config file): a
        combined broker+controller whose controller listener is CONTROLLER://localhost:9093, with
        a static quorum of itself (controller.quorum.voters set) unless `dynamic_quorum` (then
        controller.quorum.bootstrap.servers instead, as for --standalone / --initial-controllers /
        --no-initial-controllers). The metadata log directory is the first directory."""
        listener = Listener(controller_listener.upper(), host, port)
        server = f"{host}:{port}"
        return cls(
            process_roles=("broker", "controller"),
            node_id=node_id,
            log_dirs=tuple(directories),
            metadata_log_dir=directories[0] if directories else None,
            controller_listener_names=(controller_listener,),
            quorum_voters=() if dynamic_quorum else (f"{node_id}@{server}",),
            quorum_bootstrap_servers=(server,) if dynamic_quorum else (),
            listeners=(listener,),
            source="--dir",
        )


def read_server_config(path: Path | str) -> ServerConfig:
    """Read a Kafka server.properties file (Utils.loadProps then KafkaConfig)."""
    p = Path(path)
    try:
        text = p.read_bytes().decode("latin-1")  # Properties.load(InputStream) reads ISO 8859-1
    except OSError as e:
        raise KraftsimError(f"{p}: {e.strerror or e}") from None
    try:
        props = load_properties(text)
    except ValueError as e:
        raise KraftsimError(f"{p}: {e}") from None
    return ServerConfig.from_properties(props, str(p))


# ------------------------------------------------------------------------------ the Formatter


@dataclass
class FormatOptions:
    """The settings of Kafka's Formatter (what StorageTool.runFormatCommand sets on it)."""

    node_id: int = -1
    cluster_id: str | None = None
    directories: Sequence[str] = ()
    release_version: MetadataVersion | None = None
    feature_levels: dict[str, int] = field(default_factory=dict)  # from --feature, metadata.version included
    unstable: bool = False
    ignore_formatted: bool = False
    scram_arguments: Sequence[str] = ()
    controller_listener_name: str | None = None
    metadata_log_directory: str | None = None
    initial_controllers: Mapping[int, DynamicVoter] | None = None
    has_dynamic_quorum: bool = False
    controller: bool = True  # the node has the controller role (Kafka 4.4 writes bootstrap records only there)


@dataclass(frozen=True)
class FormattedDirectory:
    path: str
    description: str  # "data directory", "metadata directory", "dynamic metadata directory", ...
    directory_id: str
    zero_checkpoint: Path | None


@dataclass
class FormatResult:
    lines: list[str]
    release_version: MetadataVersion
    feature_levels: dict[str, int]  # every effective level, kraft.version included, sorted by name
    bootstrap_records: list[Payload]
    formatted: list[FormattedDirectory]  # in the order they were written


LOG_DIRECTORY = "data directory"
STATIC_METADATA_DIRECTORY = "metadata directory"
DYNAMIC_METADATA_NON_VOTER_DIRECTORY = "dynamic metadata directory"
DYNAMIC_METADATA_VOTER_DIRECTORY = "dynamic metadata voter directory"


def directory_type(log_dir: str, metadata_log_directory: str | None, node_id: int,
                   initial_controllers: Mapping[int, DynamicVoter] | None) -> str:
    """Formatter.DirectoryType.calculate, as its description."""
    if log_dir != (metadata_log_directory or ""):
        return LOG_DIRECTORY
    if initial_controllers is None:
        return STATIC_METADATA_DIRECTORY
    if node_id in initial_controllers:
        return DYNAMIC_METADATA_VOTER_DIRECTORY
    return DYNAMIC_METADATA_NON_VOTER_DIRECTORY


def effective_release_version(catalog: Catalog, opts: FormatOptions) -> MetadataVersion:
    """Formatter.calculateEffectiveReleaseVersion."""
    if MV_NAME in opts.feature_levels:
        if opts.release_version is not None:
            raise FormatterError(f"Use --release-version instead of --feature {MV_NAME}=X to avoid ambiguity.")
        mv = catalog.mv_from_level(opts.feature_levels[MV_NAME])
    elif opts.release_version is not None:
        mv = opts.release_version
    else:
        return catalog.latest_testing if opts.unstable else catalog.latest_production
    mv = catalog.metadata_version(mv.level)  # this line's view of it (production flag)
    if not opts.unstable and not mv.production:
        raise FormatterError(f"{MV_NAME} {mv} is not yet stable.")
    return mv


def effective_feature_levels(catalog: Catalog, opts: FormatOptions, release_version: MetadataVersion) -> dict[str, int]:
    """Formatter.calculateEffectiveFeatureLevels: given levels, then defaults at the release
    version (kraft.version by its own rule), then each level checked against all the others."""
    supported = {f.name: f for f in catalog.production_features}
    levels: dict[str, int] = {}
    for name in sorted(opts.feature_levels):
        if name != MV_NAME and name not in supported:
            raise FormatterError(f"Unsupported feature: {name}. Supported features are: {', '.join(sorted(supported))}")
        levels[name] = opts.feature_levels[name]
    levels[MV_NAME] = release_version.level
    for f in catalog.production_features:
        if f.name == KRAFT_VERSION:
            levels[KRAFT_VERSION] = _effective_kraft_level(levels.get(KRAFT_VERSION), opts.has_dynamic_quorum)
        elif f.name not in levels:
            levels[f.name] = f.default_version(release_version).level
    levels = dict(sorted(levels.items()))
    catalog.validate_levels(levels, opts.unstable)  # metadata.version passes: checked above
    return levels


def _effective_kraft_level(configured: int | None, dynamic: bool) -> int:
    if configured is not None:
        if configured == 0 and dynamic:
            raise FormatterError(
                "Cannot set kraft.version to 0 if controller.quorum.voters is empty and one of the flags "
                "--standalone, --initial-controllers, or --no-initial-controllers is used. For dynamic "
                "controllers support, try removing the --feature flag for kraft.version.")
        if configured != 0 and not dynamic:
            raise FormatterError(
                f"Cannot set kraft.version to {configured} unless controller.quorum.voters is empty and one of "
                "the flags --standalone, --initial-controllers, or --no-initial-controllers is used. "
                "For dynamic controllers support, try using one of --standalone, --initial-controllers, "
                "or --no-initial-controllers and removing controller.quorum.voters.")
        return configured
    return 1 if dynamic else 0


def feature_level_payload(name: str, level: int, registry: Registry | None = None) -> Payload:
    rt = (registry or default_registry())["FeatureLevelRecord"]
    return Payload(rt, 0, rt.new(name=name, feature_level=level))


def bootstrap_records(catalog: Catalog, release_version: MetadataVersion, levels: Mapping[str, int],
                      scram_arguments: Sequence[str] = (), *, rng: random.Random | None = None,
                      registry: Registry | None = None) -> list[Payload]:
    """Formatter.calculateBootstrapMetadata: FeatureLevelRecord(metadata.version), the other
    non-zero features but kraft.version sorted by name, then one UserScramCredentialRecord
    per --add-scram (which needs the "scram" capability, 3.5-IV2)."""
    records = [feature_level_payload(MV_NAME, release_version.level, registry)]
    for name in sorted(n for n in levels if n not in (MV_NAME, KRAFT_VERSION)):
        if levels[name] > 0:
            records.append(feature_level_payload(name, levels[name], registry))
    if scram_arguments:
        if not catalog.supports("scram", release_version):
            first = next((mv for mv in catalog.metadata_versions if catalog.supports("scram", mv)), None)
            raise FormatterError(f"SCRAM is only supported in {MV_NAME} {first} or later.")
        rng = rng or random.SystemRandom()
        records.extend(scram_record(a, rng, registry) for a in scram_arguments)
    return records


@dataclass
class _Ensemble:
    """MetaPropertiesEnsemble as the Loader finds the directories."""

    empty: list[str]  # sorted
    error: list[str]  # sorted
    props: dict[str, MetaProperties]  # sorted by directory


def _load_ensemble(directories: Iterable[str]) -> _Ensemble:
    """MetaPropertiesEnsemble.Loader.load: no meta.properties → empty; unreadable or invalid → error."""
    empty, error, props = [], [], {}
    for d in sorted(set(directories)):
        try:
            raw = (Path(d) / META_PROPERTIES_FILE).read_bytes()
        except FileNotFoundError:  # Java's NoSuchFileException
            empty.append(d)
            continue
        except OSError:
            error.append(d)
            continue
        try:
            props[d] = MetaProperties.from_properties(load_properties(raw.decode("latin-1")))
        except (KraftsimError, ValueError):
            error.append(d)
    return _Ensemble(empty, error, props)


def _verify_ensemble(ens: _Ensemble, cluster_id: str, node_id: int) -> None:
    """MetaPropertiesEnsemble.verify(clusterId, nodeId, no flags), with its texts."""
    seen: dict[str, str] = {}
    for d, meta in ens.props.items():
        path = os.path.join(d, META_PROPERTIES_FILE)
        if meta.cluster_id is not None and meta.cluster_id != cluster_id:
            raise KraftsimError(f"Invalid cluster.id in: {path}. Expected {cluster_id}, but read {meta.cluster_id}")
        if meta.node_id is not None and meta.node_id != node_id:
            raise KraftsimError(
                f"Stored node id {meta.node_id} doesn't match previous node id {node_id} in {path}. If you moved "
                "your data, make sure your configured node id matches. If you intend to create a new node, you "
                "should remove all data in your data directories.")
        if meta.directory_id is not None:
            if _directory_id_reserved(Uuid.from_string(meta.directory_id)):
                raise KraftsimError(f"Invalid resrved directory ID {meta.directory_id} found in {d}")
            prev = seen.get(meta.directory_id)
            if prev is not None:
                raise KraftsimError(f"Duplicate directory ID Optional[{meta.directory_id}] found. It was the ID of "
                                    f"{prev}, but also of {d}")
            seen[meta.directory_id] = d


def format_directories(catalog: Catalog, opts: FormatOptions, *, clock: Clock | None = None,
                       rng: random.Random | None = None, date: Any = None, out: Callable[[str], None] = print,
                       registry: Registry | None = None, fsync: bool = True) -> FormatResult:
    """Kafka's Formatter.run(): preconditions, effective versions and bootstrap records, then
    every unformatted directory gets bootstrap.checkpoint (and the zero checkpoint for a
    dynamic metadata directory) and meta.properties. Lines go to `out` as Kafka prints them."""
    clock = clock or default_clock()
    rng = rng or random.SystemRandom()
    registry = registry or default_registry()
    lines: list[str] = []

    def emit(line: str) -> None:
        lines.append(line)
        out(line)

    if opts.node_id < 0:
        raise KraftsimError("You must specify a valid non-negative node ID.")
    if opts.cluster_id is None:
        raise FormatterError("You must specify the cluster id.")
    directories = sorted(set(opts.directories))
    if not directories:
        raise FormatterError("You must specify at least one directory to format")
    if opts.controller_listener_name is None:
        raise FormatterError("You must specify the name of the initial controller listener.")
    if opts.metadata_log_directory is not None and opts.metadata_log_directory not in directories:
        raise FormatterError(f"The specified metadata log directory, {opts.metadata_log_directory} was not one "
                             f"of the given directories: [{', '.join(directories)}]")
    release_version = effective_release_version(catalog, opts)
    levels = effective_feature_levels(catalog, opts, release_version)
    records = bootstrap_records(catalog, release_version, levels, opts.scram_arguments, rng=rng, registry=registry)

    # doFormat
    ens = _load_ensemble(directories)
    _verify_ensemble(ens, opts.cluster_id, opts.node_id)
    formatted_order = _string_hash_order(list(ens.props), initial=copy_capacity(len(ens.props)))  # Copier's HashMap
    if not opts.ignore_formatted and formatted_order:
        raise FormatterError(f"Log directory {formatted_order[0]} is already formatted. "
                             "Use --ignore-formatted to ignore this directory and format the others.")
    if ens.error:
        for d in _string_hash_order(ens.error, initial=hash_set_copy_capacity(len(ens.error))):
            emit(f"I/O error trying to read log directory {d}. Ignoring...")
        if not ens.empty and not ens.props:
            raise FormatterError("No available log directories to format.")
    result = FormatResult(lines, release_version, levels, records, [])
    if ens.empty:
        _write_new_directories(catalog, opts, ens, release_version, levels, records, result, emit,
                               clock=clock, rng=rng, date=date, registry=registry, fsync=fsync)
    else:
        emit("All of the log directories are already formatted.")
    return result


def _write_new_directories(catalog: Catalog, opts: FormatOptions, ens: _Ensemble, release_version: MetadataVersion,
                           levels: Mapping[str, int], records: list[Payload], result: FormatResult,
                           emit: Callable[[str], None], *, clock: Clock, rng: random.Random, date: Any,
                           registry: Registry, fsync: bool) -> None:
    emit("Bootstrap metadata: " + bootstrap_metadata_string(records, release_version.level, FORMAT_SOURCE))
    types: dict[str, str] = {}
    new_props: dict[str, MetaProperties] = {}
    taken = [m.directory_id for m in ens.props.values()]
    for d in ens.empty:
        types[d] = directory_type(d, opts.metadata_log_directory, opts.node_id, opts.initial_controllers)
        if types[d] == DYNAMIC_METADATA_VOTER_DIRECTORY:
            dir_id = opts.initial_controllers[opts.node_id].directory_id  # type: ignore[index]
        else:
            dir_id = _generate_directory_id(rng, taken)
        taken.append(str(dir_id))
        new_props[d] = MetaProperties(1, opts.cluster_id, opts.node_id, str(dir_id))
    # Copier.logDirProps: a HashMap copied from the formatted directories, then the new ones put
    # in sorted order; writeLogDirChanges puts the new ones, in that order, into another HashMap.
    all_dirs = _string_hash_order([*ens.props, *ens.empty], initial=copy_capacity(len(ens.props)))
    new_in_order = _string_hash_order([d for d in all_dirs if d in new_props])
    for d in new_in_order:
        emit(f"Formatting {types[d]} {d} with {MV_NAME} {release_version}.")
        path = Path(d)
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise FormatterError(f"Error while writing meta.properties file {d}: {e}") from None
        zero = write_bootstrap_for(
            catalog, path, metadata_dir=types[d] != LOG_DIRECTORY, controller=opts.controller,
            dynamic=types[d] in (DYNAMIC_METADATA_VOTER_DIRECTORY, DYNAMIC_METADATA_NON_VOTER_DIRECTORY),
            records=records, voters=opts.initial_controllers or {}, kraft_version=levels.get(KRAFT_VERSION, 0),
            listener_name=opts.controller_listener_name or "", clock=clock, registry=registry, fsync=fsync)
        write_meta_properties(path / META_PROPERTIES_FILE, new_props[d], date=date, fsync=fsync)
        result.formatted.append(FormattedDirectory(d, types[d], new_props[d].directory_id or "", zero))


def write_zero_checkpoint(log_dir: Path, voters: Mapping[int, DynamicVoter], kraft_version: int,
                          controller_listener_name: str, *, clock: Clock, registry: Registry | None = None,
                          fsync: bool = True, records: Sequence[Payload] = ()) -> Path:
    """Formatter.writeDynamicQuorumSnapshot: `__cluster_metadata-0/00000000000000000000-0000000000.checkpoint`
    holding SnapshotHeaderRecord (LastContainedLogTimestamp = now), KRaftVersionRecord and VotersRecord
    when kraft.version ≥ 1, then `records` (Kafka 4.4's bootstrap records; none before), and the footer."""
    registry = registry or default_registry()
    header: list[Payload] = []
    if kraft_version >= 1:
        header.append(control_payload(registry, "KRaftVersionRecord", version=0, k_raft_version=kraft_version))
        header.append(voters_record(voters, controller_listener_name, registry))
    snap_dir = log_dir / METADATA_DIR_NAME
    snap_dir.mkdir(parents=True, exist_ok=True)
    last_contained = clock()
    return write_snapshot(snap_dir, BOOTSTRAP_SNAPSHOT_ID, list(records), last_contained_log_timestamp=last_contained,
                          time_ms=clock, header_records=header, registry=registry, fsync=fsync)


# ------------------------------------------------------------------------------ StorageTool


def standalone_voters(config: ServerConfig, rng: random.Random) -> dict[int, DynamicVoter]:
    """StorageTool.createStandaloneDynamicVoters: this controller alone, on its first advertised
    controller listener (no host → localhost), with a fresh directory id."""
    if not config.is_controller:
        raise ToolFailure("You can only use --standalone on a controller.")
    listeners = config.effective_advertised_controller_listeners()
    if not listeners:
        raise KraftsimError("No controller listeners found.")
    host = listeners[0].host or "localhost"
    return parse_dynamic_voters(f"{config.node_id}@{host}:{listeners[0].port}:{random_uuid(rng)}")


def storage_format(catalog: Catalog, config: ServerConfig, *, cluster_id: str | None,
                   release_version: str | None = None, features: Sequence[str] = (), standalone: bool = False,
                   initial_controllers: str | None = None, no_initial_controllers: bool = False,
                   add_scram: Sequence[str] = (), ignore_formatted: bool = False, clock: Clock | None = None,
                   rng: random.Random | None = None, date: Any = None, out: Callable[[str], None] = print,
                   registry: Registry | None = None, fsync: bool = True) -> FormatResult:
    """`kafka-storage format`: StorageTool.runFormatCommand, then the Formatter (same checks, same order)."""
    rng = rng or random.SystemRandom()
    if not config.process_roles:
        raise ToolFailure("The kafka configuration file appears to be for a legacy cluster. "
                          "Formatting is only supported for clusters in KRaft mode.")
    opts = FormatOptions(
        node_id=config.node_id,
        cluster_id=cluster_id,
        controller=config.is_controller,
        unstable=config.unstable_feature_versions,
        ignore_formatted=ignore_formatted,
        controller_listener_name=config.controller_listener_name,
        metadata_log_directory=config.metadata_log_dir,
    )
    if release_version is not None:
        try:
            opts.release_version = catalog.mv_from_string(release_version, opts.unstable)
        except UnknownMetadataVersion as e:
            raise ToolFailure(str(e)) from None
    for arg in features:
        name, level = parse_feature_arg(arg)
        opts.feature_levels[name] = level
    static_voters_empty = not config.quorum_voters
    opts.has_dynamic_quorum = static_voters_empty
    if not static_voters_empty and (initial_controllers is not None or standalone):
        raise ToolFailure(
            f"You cannot specify {QUORUM_VOTERS} and format the node with --initial-controllers or --standalone. "
            f"If you want to use dynamic quorum, please remove {QUORUM_VOTERS} and specify "
            f"{QUORUM_BOOTSTRAP_SERVERS} instead.")
    if initial_controllers is not None:
        opts.initial_controllers = parse_dynamic_voters(initial_controllers)
    if standalone:
        opts.initial_controllers = standalone_voters(config, rng)
    if (not no_initial_controllers and config.is_controller and static_voters_empty
            and opts.initial_controllers is None):
        raise ToolFailure(f"Because {QUORUM_VOTERS} is not set on this controller, you must specify one of the "
                          "following: --standalone, --initial-controllers, or --no-initial-controllers.")
    if opts.initial_controllers is not None and KRAFT_VERSION not in {f.name for f in catalog.production_features}:
        raise ToolFailure(f"Release {catalog.release} has no {KRAFT_VERSION} feature: it cannot format a dynamic quorum.")
    opts.scram_arguments = list(add_scram)
    opts.directories = config.directories
    return format_directories(catalog, opts, clock=clock, rng=rng, date=date, out=out, registry=registry, fsync=fsync)


def _java_path_string(d: str) -> str:
    """Paths.get(d).toString(): repeated and trailing slashes dropped, nothing else changed."""
    s = re.sub("/+", "/", d)
    return s[:-1] if len(s) > 1 and s.endswith("/") else s


def storage_info(directories: Iterable[str], kraft_mode: bool = True) -> tuple[list[str], int]:
    """`kafka-storage info`: StorageTool.infoCommand's lines and exit code (1 when it found problems)."""
    dirs = sorted(directories)
    problems: list[str] = []
    found: list[str] = []
    prev: MetaProperties | None = None
    for d in dirs:
        p = Path(d)
        shown = _java_path_string(d)
        if not p.is_dir():
            problems.append(f"{shown} does not exist" if not p.exists() else f"{shown} is not a directory")
            continue
        found.append(shown)
        meta_path = p / META_PROPERTIES_FILE
        if not meta_path.exists():
            problems.append(f"{shown} is not formatted.")
            continue
        try:
            props = load_properties(meta_path.read_bytes().decode("latin-1"))
        except (OSError, ValueError) as e:
            raise KraftsimError(f"{meta_path}: {e}") from None
        try:
            cur = MetaProperties.from_properties(props)
        except KraftsimError as e:
            problems.append(f"Error loading {os.path.join(shown, META_PROPERTIES_FILE)}: {e}")
            continue
        if prev is None:
            prev = cur
        elif prev.cluster_id != cur.cluster_id:
            problems.append("Mismatched cluster IDs between storage directories.")
        elif prev.node_id != cur.node_id:
            problems.append("Mismatched node IDs between storage directories.")
    if prev is not None:
        if kraft_mode and prev.version == 0:
            problems.append("The kafka configuration file appears to be for a cluster in KRaft mode, but "
                            "the directories are formatted for legacy mode.")
        elif not kraft_mode and prev.version == 1:
            problems.append("The kafka configuration file appears to be for a legacy cluster, but "
                            "the directories are formatted for a cluster in KRaft mode.")
    if not dirs:
        return ["No directories specified."], 0
    lines: list[str] = []
    if found:
        lines.append("Found log directory:" if len(found) == 1 else "Found log directories:")
        lines += [f"  {d}" for d in found]
        lines.append("")
    if prev is not None:
        shown_props = ", ".join(f"{k}={v}" for k, v in sorted(prev.to_properties().items()))
        lines.append(f"Found metadata: {{{shown_props}}}")
        lines.append("")
    if problems:
        lines.append("Found problem:" if len(problems) == 1 else "Found problems:")
        lines += [f"  {p}" for p in problems]
        lines.append("")
        return lines, 1
    return lines, 0
