"""A tiny raw Kafka client for the wire tests: requests built by the codec, answers read back."""

from __future__ import annotations

import socket
import time
from typing import Any

from kraftsim.wire import FrameSplitter, encode_request, parse_response

TIMEOUT_S = 10.0


def connect(address: str) -> socket.socket:
    host, port = address.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=TIMEOUT_S)


def accepts(address: str) -> bool:
    """Whether the port accepts a connection now (False: refused)."""
    host, port = address.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=TIMEOUT_S).close()
    except ConnectionRefusedError:
        return False
    return True


def wait_accepting(address: str, timeout_s: float = 60.0) -> None:
    """Until the port accepts a connection, as a client retries (a served broker listens once
    it is past start-up); bounded, and never a tight bound: simulated time says when it opened."""
    deadline = time.monotonic() + timeout_s
    while not accepts(address):
        assert time.monotonic() < deadline, f"{address} never accepted a connection"
        time.sleep(0.01)


def read_frames(sock: socket.socket, count: int) -> list[bytes] | None:
    """`count` response frames, or None when the server closed the connection first."""
    splitter = FrameSplitter()
    frames: list[bytes] = []
    while len(frames) < count:
        data = sock.recv(65536)
        if not data:
            return None
        frames += splitter.feed(data)
    return frames


def rpc(address: str, api_key: int, version: int, body: dict[str, Any], correlation_id: int = 1,
        response_version: int | None = None) -> tuple[int, dict[str, Any]] | None:
    """One request on a new connection: (correlation id, body), or None if the server closed it."""
    with connect(address) as s:
        s.sendall(encode_request(api_key, version, correlation_id, body))
        frames = read_frames(s, 1)
    if frames is None:
        return None
    return parse_response(api_key, version if response_version is None else response_version, frames[0])


def closed_by_server(sock: socket.socket) -> bool:
    """True when the server ends the connection (reads EOF or a reset) within the timeout."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


API_VERSIONS_V3 = {"ClientSoftwareName": "kraftsim-tests", "ClientSoftwareVersion": "1"}
