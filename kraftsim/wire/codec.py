"""Kafka's requests and responses: headers and bodies, from the schemas in messages/.

The bodies go through the project's schema-driven codec (protocol.codec: the generated
functions and their C drop-ins), the same one that reads and writes metadata records, so
flexible versions, compact types and tagged fields follow one set of rules. Handlers work
with plain dicts keyed by Kafka's field names (`{"ErrorCode": 0, "ApiKeys": [...]}`). The
message Structs of protocol messages carry Kafka's names, so msgspec turns a handler's dict
into a message in one C call (checking names and types, filling defaults); the other way
goes through small functions generated per struct, as the codec itself is generated.

Kafka's rules for a request it cannot serve (read from its RequestHeader, RequestContext
and SocketServer), which the server mirrors:

- the frame is too short for a header, or the header does not parse: the connection is
  closed ("Error parsing request header. Our best guess of the apiKey is: N");
- an api key Kafka does not know: closed ("Unknown API key N");
- a known key at a version outside its range: closed ("Received request api key K with
  version V which is not enabled"), except ApiVersions, which is answered at version 0
  with UNSUPPORTED_VERSION and its own supported range (KIP-511), without reading the body;
- a body that does not parse: closed ("Error getting request for apiKey: K, apiVersion: V").
  Bytes after a complete body are not read, as in Kafka.

parse_request raises FrameError for the first and last cases and UnsupportedRequest for
the two in the middle (the server decides between answering and closing).
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import msgspec

from kraftsim.errors import KraftsimError, UnsupportedVersionException
from kraftsim.protocol.codec import DecodeError
from kraftsim.protocol.message_types import unknown_tagged_fields
from kraftsim.protocol.primitives import VarintError
from kraftsim.protocol.registry import RecordType
from kraftsim.protocol.schema import RecordSchema, StructSpec, iter_schema_files, load_schema_file, upper_snake
from kraftsim.wire.framing import FrameError

API_VERSIONS_KEY = 18

_HEAD = struct.Struct(">hhi")
_SIZE_AND_CORRELATION = struct.Struct(">ii")

# What a body that does not parse can raise inside the codec (the C path gives up and the
# generated Python code raises one of these).
_DECODE_ERRORS = (DecodeError, VarintError, IndexError, struct.error, UnicodeDecodeError, ValueError,
                  OverflowError, UnsupportedVersionException)


class UnsupportedRequest(KraftsimError):
    """The header was read, but the api key is unknown or its version outside the schema's range.

    The message is Kafka's text for the case; `client_id` is None when the key is unknown
    (Kafka stops reading the header there).
    """

    def __init__(self, api_key: int, api_version: int, correlation_id: int, client_id: str | None, message: str):
        super().__init__(message)
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.client_id = client_id
        self.message = message


@dataclass(frozen=True, slots=True)
class ParsedRequest:
    """One request: its header and its body as a dict keyed by Kafka's field names."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str
    body: dict[str, object]
    header_version: int = 2
    header_tags: tuple[tuple[int, bytes], ...] = ()


# ----------------------------------------------------------------------------- dict <-> Struct


def _to_dict_functions(rt: RecordType) -> dict[str, Callable[[object], dict[str, object]]]:
    """Generated Struct -> dict functions, one per struct of a message (by struct name)."""
    functions: dict[str, Callable[[object], dict[str, object]]] = {}

    def build(spec: StructSpec) -> None:
        if spec.name in functions:
            return
        env: dict[str, Any] = {}
        items = []
        for i, f in enumerate(spec.fields):
            value = f"m.{f.py_name}"
            if f.struct is not None:
                build(f.struct)
                env[f"_to{i}"] = functions[f.struct.name]
                inner = f"[_to{i}(e) for e in {value}]" if f.is_array else f"_to{i}({value})"
                items.append(f"{f.name!r}: None if {value} is None else {inner}")
            else:
                items.append(f"{f.name!r}: {value}")
        source = "def to_dict(m):\n    return {" + ", ".join(items) + "}\n"
        exec(compile(source, f"<kraftsim wire {spec.name}>", "exec"), env)
        functions[spec.name] = env["to_dict"]

    build(rt.schema.body)
    return functions


class Message:
    """One request or response type: its schema, codec and dict converters. The codec and the
    converters are compiled on first use (a server's first answer needs only a few messages)."""

    def __init__(self, schema: RecordSchema):
        self.schema = schema
        self.name = schema.name

    @functools.cached_property
    def rt(self) -> RecordType:
        return RecordType(self.schema, kafka_names=True)

    @functools.cached_property
    def to_dict(self) -> Callable[[object], dict[str, object]]:
        return _to_dict_functions(self.rt)[self.schema.body.name]

    def from_dict(self, body: Mapping[str, object]) -> object:
        """The message of a dict of Kafka's field names; missing fields get their defaults."""
        try:
            return msgspec.convert(body, self.rt.cls)
        except msgspec.ValidationError as e:
            raise ValueError(f"{self.name}: {e}") from None

    @property
    def versions(self) -> tuple[int, int]:
        return self.schema.versions.lo, self.schema.versions.hi

    def flexible(self, version: int) -> bool:
        return version in self.schema.flexible_versions

    def decode(self, buf: bytes, pos: int, version: int) -> tuple[dict[str, object], int]:
        message, end = self.rt.decoder(version)(buf, pos)
        return self.to_dict(message), end

    def encode(self, body: Mapping[str, object], version: int, out: bytearray) -> None:
        """Append the body at `version` to `out`; ValueError names a value that does not fit its type."""
        message = self.from_dict(body)
        try:
            self.rt.encoder(version)(message, out)
        except (struct.error, OverflowError) as e:
            raise ValueError(f"{self.name} v{version}: a value does not fit its field's type ({e})") from None


@dataclass(frozen=True, slots=True)
class Api:
    """One API: its key, its name as Kafka's ApiKeys enum prints it, and its two messages."""

    key: int
    name: str  # "ApiVersions"
    enum_name: str  # "API_VERSIONS"
    request: Message
    response: Message

    @property
    def listeners(self) -> tuple[str, ...]:
        """The listeners that serve the API ("broker", "controller"); Kafka closes others' connections."""
        return self.request.schema.listeners

    def request_header_version(self, version: int) -> int:
        """Kafka's requestHeaderVersion: 2 in flexible versions (also above the range), else 1."""
        return 2 if self.request.flexible(version) else 1

    def response_header_version(self, version: int) -> int:
        """Kafka's responseHeaderVersion: ApiVersions always 0 (a client must read it before it
        knows the broker's versions); otherwise 1 in flexible versions, else 0."""
        if self.key == API_VERSIONS_KEY:
            return 0
        return 1 if self.response.flexible(version) else 0


class Catalog:
    """The protocol messages of a set of schema folders: APIs by key and name, and the headers."""

    def __init__(self, schemas: Iterable[RecordSchema]):
        requests: dict[int, RecordSchema] = {}
        responses: dict[int, RecordSchema] = {}
        headers: dict[str, RecordSchema] = {}
        for s in schemas:
            if s.kind == "request":
                requests[s.api_key] = s  # type: ignore[index]
            elif s.kind == "response":
                responses[s.api_key] = s  # type: ignore[index]
            elif s.kind == "header":
                headers[s.name] = s
            else:
                raise ValueError(f"{s.source}: a {s.kind} record is not a protocol message")
        unpaired = sorted(set(requests) ^ set(responses))
        if unpaired:
            raise ValueError(f"api key(s) {unpaired} have a request or a response schema but not both")
        self.apis: dict[int, Api] = {}
        for key in sorted(requests):
            name = requests[key].name.removesuffix("Request")
            self.apis[key] = Api(key, name, upper_snake(name), Message(requests[key]), Message(responses[key]))
        self.by_name = {api.name: api for api in self.apis.values()}
        self.request_header = Message(headers["RequestHeader"])
        self.response_header = Message(headers["ResponseHeader"])

    def api(self, api_key: int) -> Api:
        try:
            return self.apis[api_key]
        except KeyError:
            raise ValueError(f"no schema for api key {api_key}") from None


def messages_dir() -> Path:
    """The shipped schemas (kraftsim/wire/messages/, inside the wheel too)."""
    return Path(str(resources.files("kraftsim.wire") / "messages"))


@functools.cache
def default_catalog() -> Catalog:
    return Catalog(load_schema_file(p) for p in iter_schema_files([messages_dir()]))


# ----------------------------------------------------------------------------- requests


def parse_request(frame: bytes, catalog: Catalog | None = None) -> ParsedRequest:
    """One request frame (without its size prefix): header and body.

    Raises FrameError or UnsupportedRequest (see the module's doc), nothing else.
    """
    cat = catalog or default_catalog()
    try:
        api_key, api_version, correlation_id = _HEAD.unpack_from(frame)
    except (struct.error, TypeError):
        raise FrameError(f"Error parsing request header: {len(frame)} byte(s) are too few for a header") from None
    api = cat.apis.get(api_key)
    if api is None:
        raise UnsupportedRequest(api_key, api_version, correlation_id, None, f"Unknown API key {api_key}")
    header_version = api.request_header_version(api_version)
    try:
        header, pos = cat.request_header.rt.decoder(header_version)(frame, 0)
    except _DECODE_ERRORS:
        raise FrameError(f"Error parsing request header. Our best guess of the apiKey is: {api_key}",
                         api_key, api_version, correlation_id) from None
    client_id = header.client_id if header.client_id is not None else ""
    lo, hi = api.request.versions
    if not lo <= api_version <= hi:
        raise UnsupportedRequest(api_key, api_version, correlation_id, client_id,
                                 f"Received request api key {api.enum_name} with version {api_version} which is not enabled")
    try:
        body, _end = api.request.decode(frame, pos, api_version)
    except _DECODE_ERRORS as e:
        raise FrameError(f"Error getting request for apiKey: {api.enum_name}, apiVersion: {api_version}: {_cause(e)}",
                         api_key, api_version, correlation_id) from None
    return ParsedRequest(api_key, api_version, correlation_id, client_id, body, header_version,
                         unknown_tagged_fields(header))


def encode_request(api_key: int, api_version: int, correlation_id: int, body: Mapping[str, object],
                   client_id: str | None = "kraftsim", catalog: Catalog | None = None) -> bytes:
    """A whole request frame, size prefix included (for clients and tests)."""
    cat = catalog or default_catalog()
    api = cat.api(api_key)
    api.request.rt.check_version(api_version, "write")
    out = bytearray(4)
    header = {"RequestApiKey": api_key, "RequestApiVersion": api_version, "CorrelationId": correlation_id,
              "ClientId": client_id}
    cat.request_header.encode(header, api.request_header_version(api_version), out)
    api.request.encode(body, api_version, out)
    struct.pack_into(">i", out, 0, len(out) - 4)
    return bytes(out)


# ----------------------------------------------------------------------------- responses


def encode_response(api_key: int, api_version: int, correlation_id: int, body: Mapping[str, object],
                    catalog: Catalog | None = None) -> bytes:
    """A whole response frame, size prefix included; fields missing from `body` get their defaults."""
    cat = catalog or default_catalog()
    api = cat.api(api_key)
    api.response.rt.check_version(api_version, "write")
    header_version = api.response_header_version(api_version)
    out = bytearray(_SIZE_AND_CORRELATION.pack(0, correlation_id))
    if header_version >= 1:
        out.append(0)  # the header's empty tagged-field section
    api.response.encode(body, api_version, out)
    struct.pack_into(">i", out, 0, len(out) - 4)
    return bytes(out)


def parse_response(api_key: int, api_version: int, frame: bytes, catalog: Catalog | None = None) -> tuple[int, dict[str, object]]:
    """A response frame (without its size prefix) to (correlation id, body), for clients and tests.

    Raises FrameError when it does not parse; trailing bytes are an error here (a client
    checks what a server sent).
    """
    cat = catalog or default_catalog()
    api = cat.api(api_key)
    header_version = api.response_header_version(api_version)
    try:
        header, pos = cat.response_header.rt.decoder(header_version)(frame, 0)
        body, end = api.response.decode(frame, pos, api_version)
    except _DECODE_ERRORS as e:
        raise FrameError(f"Error reading {api.response.name} v{api_version}: {_cause(e)}", api_key, api_version) from None
    if end != len(frame):
        raise FrameError(f"{len(frame) - end} byte(s) after {api.response.name} v{api_version}", api_key, api_version,
                         header.correlation_id)
    return header.correlation_id, body


def _cause(e: Exception) -> str:
    if isinstance(e, (IndexError, struct.error)):
        return "the message runs past the end of the frame"
    if isinstance(e, UnicodeDecodeError):
        return f"a string is not valid UTF-8 ({e.reason})"
    return str(e)
