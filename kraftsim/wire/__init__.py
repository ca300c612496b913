"""Kafka's protocol for `kraftsim serve` (DESIGN.md, contract 7): messages, framing, and the server.

The codec API the server builds on:

- `parse_request(frame)`: one request frame without its size prefix -> `ParsedRequest`
  (api_key, api_version, correlation_id, client_id, body as a dict keyed by Kafka's field
  names). Raises only `FrameError` (close the connection) or `UnsupportedRequest` (unknown
  key, or a version outside the schema: ApiVersions gets UNSUPPORTED_VERSION at v0, others
  are closed, as Kafka does).
- `encode_response(api_key, api_version, correlation_id, body)`: the whole response frame.
- `API_KEYS` (name -> key) and `schema_versions(api_key)` (the schemas' version range).
- framing: `FrameSplitter`, `read_frame` (asyncio), `DEFAULT_MAX_FRAME`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kraftsim.lazy import exports
from kraftsim.wire.codec import (
    Api,
    Catalog,
    Message,
    ParsedRequest,
    UnsupportedRequest,
    default_catalog,
    encode_request,
    encode_response,
    parse_request,
    parse_response,
)
from kraftsim.wire.framing import DEFAULT_MAX_FRAME, FrameError, FrameSplitter, check_frame_size, frame, read_frame

if TYPE_CHECKING:  # the server's entry, for the type checker only (`as` marks a re-export)
    from kraftsim.wire.api import ServedKafka as ServedKafka, serve as serve

#: Every API with a schema, by Kafka's name for it ("ApiVersions": 18, ...).
API_KEYS: dict[str, int] = {name: api.key for name, api in default_catalog().by_name.items()}


def schema_versions(api_key: int) -> tuple[int, int]:
    """The (lowest, highest) request version the schemas describe for an api key."""
    return default_catalog().api(api_key).request.versions


# The server's entry loads on first use: importing the codec starts no server code.
_MODULE_OF = {name: ("kraftsim.wire.api", name) for name in ("ServedKafka", "serve")}
__getattr__ = exports(__name__, _MODULE_OF)

__all__ = [
    "API_KEYS",
    "DEFAULT_MAX_FRAME",
    "Api",
    "Catalog",
    "FrameError",
    "FrameSplitter",
    "Message",
    "ParsedRequest",
    "ServedKafka",
    "UnsupportedRequest",
    "check_frame_size",
    "default_catalog",
    "encode_request",
    "encode_response",
    "frame",
    "parse_request",
    "parse_response",
    "read_frame",
    "schema_versions",
    "serve",
]
