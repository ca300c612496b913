"""A small blocking Kafka protocol client over kraftsim's codec, for wire conformance and benchmarks.

It talks to anything that speaks Kafka's protocol on a TCP port (a real broker or
controller, or `kraftsim serve`): connect, send one request, read its answer. Every wait is
bounded by the client's timeout, and an answer must carry the correlation id of its
request. It is not a Kafka client library: no retries, no metadata cache, no pipelining.
"""

from __future__ import annotations

import socket
import struct
import time
from typing import Any, Mapping

from kraftsim.errors import KraftsimError
from kraftsim.wire import API_KEYS, FrameError, check_frame_size, encode_request, parse_response

DEFAULT_TIMEOUT_S = 10.0
_SIZE = struct.Struct(">i")


class WireClientError(KraftsimError):
    """The server could not be reached, went away, took too long, or answered something unreadable."""


class WireClient:
    """One connection to a Kafka protocol listener."""

    def __init__(self, host: str, port: int, *, timeout: float = DEFAULT_TIMEOUT_S,
                 client_id: str = "kraftsim-wire-client"):
        self.host, self.port, self.timeout, self.client_id = host, port, timeout, client_id
        self._next_correlation_id = 0
        try:
            self.sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as e:
            raise WireClientError(f"cannot connect to {host}:{port}: {e.strerror or e}") from None
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def __enter__(self) -> "WireClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.sock.close()

    def request(self, api: int | str, version: int, body: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Send one request and return the body of its answer (a dict keyed by Kafka's field names)."""
        api_key = API_KEYS[api] if isinstance(api, str) else api
        correlation_id = self._next_correlation_id
        self._next_correlation_id = (correlation_id + 1) & 0x7FFFFFFF
        self.send_frame(encode_request(api_key, version, correlation_id, body or {}, client_id=self.client_id))
        frame = self.read_frame()
        try:
            got, answer = parse_response(api_key, version, frame)
        except FrameError as e:
            raise WireClientError(f"{self.host}:{self.port}: {e}") from None
        if got != correlation_id:
            raise WireClientError(f"{self.host}:{self.port}: answer with correlation id {got}, expected {correlation_id}")
        return answer

    def send_frame(self, frame: bytes) -> None:
        try:
            self.sock.sendall(frame)
        except OSError as e:
            raise WireClientError(f"{self.host}:{self.port}: sending failed: {e.strerror or e}") from None

    def read_frame(self) -> bytes:
        """One response frame without its size prefix."""
        (size,) = _SIZE.unpack(self._read_exactly(4))
        try:
            check_frame_size(size)
        except FrameError as e:
            raise WireClientError(f"{self.host}:{self.port}: {e}") from None
        return self._read_exactly(size)

    def _read_exactly(self, n: int) -> bytes:
        chunks = bytearray()
        deadline = time.monotonic() + self.timeout
        while len(chunks) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise WireClientError(f"{self.host}:{self.port}: no answer within {self.timeout:g} s")
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(n - len(chunks))
            except TimeoutError:
                raise WireClientError(f"{self.host}:{self.port}: no answer within {self.timeout:g} s") from None
            except OSError as e:
                raise WireClientError(f"{self.host}:{self.port}: {e.strerror or e}") from None
            if not chunk:
                raise WireClientError(f"{self.host}:{self.port}: the server closed the connection")
            chunks += chunk
        return bytes(chunks)


def api_versions(host: str, port: int, version: int = 3, *, timeout: float = DEFAULT_TIMEOUT_S) -> dict[str, object]:
    """One ApiVersions exchange on a fresh connection (a v3+ request names the client software)."""
    body = {"ClientSoftwareName": "kraftsim", "ClientSoftwareVersion": "0"} if version >= 3 else {}
    with WireClient(host, port, timeout=timeout) as client:
        return client.request(API_KEYS["ApiVersions"], version, body)


def wait_for_api_versions(host: str, port: int, *, timeout: float, poll_s: float = 0.01) -> dict[str, object]:
    """Poll until the listener answers ApiVersions (refused connections and closes are retried)
    or `timeout` seconds have passed (WireClientError)."""
    deadline = time.monotonic() + timeout
    last = "nothing tried"
    while time.monotonic() < deadline:
        try:
            return api_versions(host, port, timeout=max(0.1, min(2.0, deadline - time.monotonic())))
        except WireClientError as e:
            last = str(e)
        time.sleep(poll_s)
    raise WireClientError(f"{host}:{port} did not answer ApiVersions within {timeout:g} s (last: {last})")
