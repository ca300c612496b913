"""Hostile clients: bad sizes, truncated frames, garbage, clients vanishing mid-request, slow
senders and 200 connections at once. The server closes what it cannot read, answers everyone
else, never prints a traceback, and the cluster's invariants hold afterwards."""

from __future__ import annotations

import struct
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kraftsim
from kraftsim.wire import encode_request, parse_response
from tests.wire.client import API_VERSIONS_V3, closed_by_server, connect, read_frames, rpc

CONNECTIONS = 200


def _healthy(k) -> None:
    """Still served, and every invariant of the simulation holds."""
    corr, body = rpc(k.bootstrap_servers, 18, 3, API_VERSIONS_V3, correlation_id=42)
    assert corr == 42 and body["ErrorCode"] == 0
    assert all(r.ok for r in k.call(lambda s: s.sim.invariants()))


def test_bad_frames_are_closed_and_others_still_served(capfd):
    with kraftsim.serve(combined=1, release="4.4.0") as k:
        bad = [struct.pack(">i", -5),  # a negative size
               struct.pack(">i", 200 * 1024 * 1024),  # over socket.request.max.bytes
               struct.pack(">i", 6) + b"\x00\x12\x00\x03\x00\x00",  # a header cut short
               struct.pack(">i", 64) + bytes(range(64)),  # garbage
               struct.pack(">i", 12) + struct.pack(">hhih", 3, 12, 1, -1) + b"\xff\xff"]  # a body that does not parse
        for data in bad:
            with connect(k.bootstrap_servers) as s:
                s.sendall(data)
                assert closed_by_server(s)
        for data in (struct.pack(">i", 100) + b"\x00\x12", encode_request(18, 3, 1, API_VERSIONS_V3)[:-3]):
            s = connect(k.bootstrap_servers)  # gone mid-request
            s.sendall(data)
            s.close()
        _healthy(k)
    assert "Traceback" not in capfd.readouterr().err


def test_a_slow_sender_does_not_hold_up_other_clients():
    with kraftsim.serve(combined=1, release="4.4.0") as k, connect(k.bootstrap_servers) as slow:
        request = encode_request(18, 3, 5, API_VERSIONS_V3)
        slow.sendall(request[:7])
        _healthy(k)  # answered while the slow request is half sent
        for i in range(7, len(request)):
            slow.sendall(request[i:i + 1])
            time.sleep(0.001)
        frames = read_frames(slow, 1)
        assert frames is not None and parse_response(18, 3, frames[0])[0] == 5


def test_200_concurrent_connections_are_all_answered():
    with kraftsim.serve(controllers=1, brokers=1, release="4.4.0") as k:
        results: list[int | None] = [None] * CONNECTIONS
        socks = [connect(k.bootstrap_servers) for _ in range(CONNECTIONS)]

        def client(i: int) -> None:
            socks[i].sendall(encode_request(18, 3, i, API_VERSIONS_V3))
            frames = read_frames(socks[i], 1)
            results[i] = None if frames is None else parse_response(18, 3, frames[0])[0]

        threads = [threading.Thread(target=client, args=(i,)) for i in range(CONNECTIONS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        for s in socks:
            s.close()
        assert results == list(range(CONNECTIONS))
        _healthy(k)


@pytest.fixture(scope="module")
def served():
    with kraftsim.serve(combined=1, release="4.4.0") as k:
        yield k


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payload=st.one_of(st.binary(max_size=200),
                         st.builds(lambda key, ver, tail: struct.pack(">hhi", key, ver, 1) + tail,
                                   st.sampled_from([3, 18, 19, 20, 55, 57, 60, 64, 0, 999]), st.integers(-2, 20),
                                   st.binary(max_size=120))))
def test_any_request_bytes_get_an_answer_or_a_closed_connection(served, payload):
    answer = served.answer(1, "broker", payload)
    assert answer is None or isinstance(answer, bytes)


def test_a_port_taken_while_its_node_was_down_is_reported_not_fatal(capfd):
    import socket

    with kraftsim.serve(controllers=1, brokers=1, release="4.4.0", speed=20.0) as k:
        port = int(k.address(2).rsplit(":", 1)[1])
        k.crash(2)
        with socket.socket() as squatter:
            squatter.bind(("127.0.0.1", port))
            squatter.listen()
            k.start(2)
            deadline = time.monotonic() + 60  # its listener opens once the broker is past start-up (~10 s simulated)
            while not k.call(lambda s: s.sim.serving_clients(2)):
                assert time.monotonic() < deadline
                time.sleep(0.01)
            assert rpc(k.bootstrap_controllers, 18, 3, API_VERSIONS_V3)[1]["ErrorCode"] == 0
    err = capfd.readouterr().err
    assert f"node 2 cannot listen on 127.0.0.1:{port} again" in err and "Traceback" not in err


def test_api_versions_of_a_negative_version_gets_the_range():
    """Found by the fuzz above: the KIP-511 answer for a version below every range too."""
    with kraftsim.serve(combined=1, release="3.7.2") as k, connect(k.bootstrap_servers) as s:
        s.sendall(struct.pack(">i", 10) + struct.pack(">hhih", 18, -32768, 3, -1))
        frames = read_frames(s, 1)
        assert frames is not None
        corr, body = parse_response(18, 0, frames[0])
        assert corr == 3 and body["ErrorCode"] == 35
        assert body["ApiKeys"] == [{"ApiKey": 18, "MinVersion": 0, "MaxVersion": 3}]
