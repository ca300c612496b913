"""The wire client against small in-process listeners: answers, closes, silence, wrong ids.

Each listener is a thread serving one connection on 127.0.0.1 with the wire codec; the
client's timeouts are short, so every case ends within a second or so.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from kraftsim.conformance.wire_client import WireClient, WireClientError, api_versions, wait_for_api_versions
from kraftsim.wire import FrameSplitter, encode_response, parse_request

API_VERSIONS_BODY = {"ApiKeys": [{"ApiKey": 18, "MinVersion": 0, "MaxVersion": 4}], "FinalizedFeaturesEpoch": 3}


@contextmanager
def listener(handle: Callable[[socket.socket], None]) -> Iterator[int]:
    """A one-connection server on a free loopback port; yields the port."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(5)

    def serve() -> None:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        with conn:
            handle(conn)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        server.close()
        thread.join(timeout=5)


def read_request(conn: socket.socket) -> bytes:
    splitter = FrameSplitter()
    while True:
        data = conn.recv(4096)
        if not data:
            raise ConnectionError("client went away")
        frames = splitter.feed(data)
        if frames:
            return frames[0]


def answering(correlation_delta: int = 0, body: dict | None = None) -> Callable[[socket.socket], None]:
    def handle(conn: socket.socket) -> None:
        while True:
            try:
                req = parse_request(read_request(conn))
            except ConnectionError:
                return
            conn.sendall(encode_response(req.api_key, req.api_version, req.correlation_id + correlation_delta,
                                         body if body is not None else API_VERSIONS_BODY))
    return handle


def test_request_and_answer():
    with listener(answering()) as port, WireClient("127.0.0.1", port, timeout=2) as client:
        first = client.request("ApiVersions", 3, {"ClientSoftwareName": "t", "ClientSoftwareVersion": "1"})
        second = client.request(18, 3)
    assert first["ApiKeys"] == [{"ApiKey": 18, "MinVersion": 0, "MaxVersion": 4}]
    assert first["FinalizedFeaturesEpoch"] == second["FinalizedFeaturesEpoch"] == 3


def test_a_wrong_correlation_id_is_an_error():
    with listener(answering(correlation_delta=1)) as port, pytest.raises(WireClientError, match="correlation id 1, expected 0"):
        api_versions("127.0.0.1", port, timeout=2)


def test_the_server_closing_is_an_error():
    # as Kafka does after a request it refuses: read it, then close
    with listener(read_request) as port, pytest.raises(WireClientError, match="closed the connection"):
        api_versions("127.0.0.1", port, timeout=2)


def test_silence_is_a_timeout():
    def silent(conn: socket.socket) -> None:
        read_request(conn)
        conn.recv(1)  # until the client gives up and closes

    with listener(silent) as port, pytest.raises(WireClientError, match="no answer within 0.3 s"):
        api_versions("127.0.0.1", port, timeout=0.3)


def test_an_oversized_answer_is_refused_before_reading_it():
    def huge(conn: socket.socket) -> None:
        read_request(conn)
        conn.sendall((2**31 - 1).to_bytes(4, "big"))
        conn.recv(1)

    with listener(huge) as port, pytest.raises(WireClientError, match="larger than"):
        api_versions("127.0.0.1", port, timeout=2)


def test_nothing_listening():
    with socket.create_server(("127.0.0.1", 0)) as s:
        port = s.getsockname()[1]
    with pytest.raises(WireClientError, match="cannot connect"):
        WireClient("127.0.0.1", port, timeout=1)
    with pytest.raises(WireClientError, match="did not answer ApiVersions within 0.2 s"):
        wait_for_api_versions("127.0.0.1", port, timeout=0.2)
