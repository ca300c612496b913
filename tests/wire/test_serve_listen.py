"""When a served node listens, as Kafka opens its listeners: a controller listener when its
process starts, a broker listener only once the broker is past start-up (its first image
published and first unfenced since the process started: BrokerServer.startup enables request
processing, and opens the socket, only then). Until then its port refuses connections.

Times are compared on the simulated clock; the clusters run faster than the wall clock
(`speed`) so a restarted 4.x broker's ~10 s fence passes in well under a second."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import kraftsim
from kraftsim.controller import error_codes
from kraftsim.sim import Simulation
from kraftsim.wire import encode_request
from kraftsim.wire.session import Session
from kraftsim.wire.target import open_target
from tests.wire.client import API_VERSIONS_V3, accepts, closed_by_server, connect, read_frames, rpc, wait_accepting

ERR = error_codes()
#: Wall seconds a test waits at most for a handed-over command.
WAIT_S = 60.0
SPEED = 20.0
DESCRIBE_TOPIC = {"Resources": [{"ResourceType": 2, "ResourceName": "t0", "ConfigurationKeys": ["retention.ms"]}],
                  "IncludeSynonyms": False}
METADATA_T0 = {"Topics": [{"Name": "t0"}], "AllowAutoTopicCreation": False}


def _state(k, node_id: int) -> tuple[int, bool | None, bool]:
    """(simulated now, the broker's fencing, whether it is past start-up)."""
    return k.call(lambda s: (s.sim.now_ms, next(n.fenced for n in s.sim.nodes() if n.id == node_id),
                             s.sim.serving_clients(node_id)))


def _probe(k, node_id: int, address: str) -> tuple[int, bool, bool]:
    """(simulated now, whether the broker is past start-up, whether its port accepts a
    connection), read at one simulated instant: on the server's thread, which also moves the
    clock, so however slow the machine the three belong together."""
    return k.call(lambda s: (s.sim.now_ms, s.sim.serving_clients(node_id), accepts(address)))


def test_a_restarted_broker_listens_only_once_past_start_up_and_on_the_same_port():
    with kraftsim.serve(controllers=1, brokers=1, release="4.4.0", speed=SPEED) as k:
        address = k.address(2)
        assert accepts(address)
        k.crash(2)
        started = k.call(lambda s: (s.start(2, None), s.sim.now_ms)[1])
        seen = [_probe(k, 2, address)]
        deadline = time.monotonic() + WAIT_S
        while not seen[-1][2]:
            assert time.monotonic() < deadline, seen[-5:]
            time.sleep(0.005)
            seen.append(_probe(k, 2, address))
        assert all(past for _, past, accepting in seen if accepting)  # never open before start-up ends
        # the old session had to expire first (broker.session.timeout.ms, 9 s): the port stayed closed
        assert seen[-1][0] - started >= 9000, seen[-1][0] - started
        assert _state(k, 2)[1] is False
        assert rpc(address, 18, 3, API_VERSIONS_V3)[1]["ErrorCode"] == 0
        assert k.address(2) == address and k.call(lambda s: s.bootstrap("broker")) == address


def test_the_controller_listener_of_a_restarted_combined_node_opens_before_its_broker_listener():
    """Cut off from the other two, the restarted node cannot be unfenced: its controller
    listener is open all that time, its broker listener not; healed, the broker one opens."""
    with kraftsim.serve(combined=3, release="4.4.0", speed=SPEED) as k:
        broker, controller = k.address(3, "broker"), k.address(3, "controller")
        k.crash(3)
        k.partition([[1, 2], [3]])
        k.start(3)
        k.call(lambda s: s.operate("run", {"ms": 2000}))  # (time enough to have been unfenced, were it not cut off)
        assert _probe(k, 3, broker)[1:] == (False, False)
        assert rpc(controller, 18, 3, API_VERSIONS_V3)[1]["ErrorCode"] == 0
        assert _state(k, 3)[1] is not False
        k.heal()
        wait_accepting(broker)
        assert _state(k, 3)[1:] == (False, True)
        assert rpc(broker, 18, 3, API_VERSIONS_V3)[1]["ErrorCode"] == 0


def _cluster_with_topic(d: Path, release: str = "4.4.0", brokers: int = 1) -> None:
    sim = Simulation.create(d, controllers=1, brokers=brokers, release=release)
    sim.create_topics(1, 1, 1, names=["t0"], configs={"retention.ms": "1000"})
    sim.run(1000)
    sim.close()


def _described(answer: tuple[int, dict] | None) -> tuple[int, list[tuple[str, str]]]:
    assert answer is not None
    (result,) = answer[1]["Results"]
    return result["ErrorCode"], [(c["Name"], c["Value"]) for c in result["Configs"]]


def test_a_reopened_directorys_broker_answers_its_first_request_from_its_published_image(tmp_path):
    """Serving a directory starts its nodes again from disk: the broker listens once it caught
    up, so its very first answer knows the topics (it was UNKNOWN_TOPIC_OR_PARTITION)."""
    _cluster_with_topic(tmp_path / "c")
    with kraftsim.serve(tmp_path / "c") as k:
        assert _described(rpc(k.address(2), 32, 4, DESCRIBE_TOPIC)) == (0, [("retention.ms", "1000")])
    with kraftsim.serve(tmp_path / "c") as k:
        (topic,) = rpc(k.address(2), 3, 12, METADATA_T0)[1]["Topics"]
        assert (topic["ErrorCode"], len(topic["Partitions"])) == (0, 1)


def test_serving_is_ready_once_a_broker_started_before_it_listens(tmp_path):
    """A directory whose broker was just restarted (fenced until its old session expires): the
    ready point waits for its listener."""
    d = tmp_path / "c"
    Simulation.create(d, controllers=1, brokers=2, release="4.4.0").close()
    with Simulation.open(d) as sim:
        sim.crash(3)
        sim.start(3)
        sim.run(100)
        at = sim.now_ms
    with kraftsim.serve(d, speed=SPEED) as k:
        assert accepts(k.address(3))
        now, fenced, past = _state(k, 3)
        assert not fenced and past and now - at >= 8000


def test_ready_comes_after_a_bounded_wait_with_a_line_naming_the_brokers_not_listening(tmp_path, capsys):
    """No quorum (the one controller is down): a broker that runs never catches up, so its
    listener never opens. Serving still says it is ready, after a bounded wait, naming it."""
    d = tmp_path / "c"
    Simulation.create(d, controllers=1, brokers=1, release="4.4.0").close()
    with Simulation.open(d) as sim:
        sim.crash(1)
    with kraftsim.serve(d, speed=200.0) as k:
        assert not accepts(k.address(2))
        assert k.call(lambda s: s.sim.running_node(2)) is not None
    err = capsys.readouterr().err
    assert "kraftsim serve: ready before every listener accepts connections: node 2's broker listener" in err, err


class _NothingToDo:
    """Commands that change nothing: the cluster is closed and opened again around them."""

    def run(self, argv) -> int:
        return 0

    def step(self, argv, code, stdout=""):
        return None


def test_after_a_handed_over_command_the_listener_stays_open_and_answers_from_the_caught_up_image(tmp_path):
    """A handed-over command gives the directory back; its processes resume, the broker's loader
    starts from disk again. The connection made before stays, and its next request waits for the
    image rather than finding no topic."""
    _cluster_with_topic(tmp_path / "c")
    session = Session(open_target(tmp_path / "c"), commands=_NothingToDo())
    session.start_thread()
    try:
        address = session.served.address(next(x for x in session.served.listeners() if x.node_id == 2))
        with connect(address) as s:
            s.sendall(encode_request(18, 3, 1, API_VERSIONS_V3))
            assert read_frames(s, 1) is not None
            assert session.loop is not None
            reply = asyncio.run_coroutine_threadsafe(session.carry_out(["cluster", "status", "x"]), session.loop)
            assert reply.result(WAIT_S).code == 0
            s.sendall(encode_request(32, 4, 2, DESCRIBE_TOPIC))
            frames = read_frames(s, 1)
            assert frames is not None  # the same connection: the process resumed, it was not cut
        from kraftsim.wire import parse_response
        assert _described(parse_response(32, 4, frames[0])) == (0, [("retention.ms", "1000")])
    finally:
        session.close_thread()


def test_a_rolled_broker_cuts_its_connections_and_listens_again_on_the_same_port_once_back():
    """A roll restarts the process (and waits until the cluster settles, the broker unfenced):
    the old process's connections end with it, the new one listens on the same port."""
    with kraftsim.serve(controllers=1, brokers=1, release="4.0.1") as k:
        address = k.address(2)
        with connect(address) as before:
            before.sendall(encode_request(18, 3, 1, API_VERSIONS_V3))
            assert read_frames(before, 1) is not None
            k.roll("4.0.2", [2])
            assert closed_by_server(before)
        assert k.call(lambda s: s.sim.serving_clients(2))
        assert rpc(address, 18, 3, API_VERSIONS_V3)[1]["ErrorCode"] == 0
        assert k.address(2) == address


def test_a_handed_over_roll_cuts_the_rolled_brokers_connections_and_keeps_the_others(tmp_path):
    """`kraftsim cluster roll DIR --nodes 2` while DIR is served restarts broker 2 (a new
    process, a new incarnation): its clients' connections end with it, as Kafka's would; broker
    3's process only resumes when the directory is opened again, and its connection stays."""
    from kraftsim.cli.serve_cmd import CliCommands

    d = tmp_path / "c"
    Simulation.create(d, controllers=1, brokers=2, release="4.0.1").close()
    session = Session(open_target(d), commands=CliCommands())
    session.start_thread()
    try:
        rolled, kept = (session.served.address(next(x for x in session.served.listeners() if x.node_id == n))
                        for n in (2, 3))
        with connect(rolled) as r, connect(kept) as k:
            for s in (r, k):
                s.sendall(encode_request(18, 3, 1, API_VERSIONS_V3))
                assert read_frames(s, 1) is not None
            assert session.loop is not None
            reply = asyncio.run_coroutine_threadsafe(
                session.carry_out(["cluster", "roll", str(d), "--release", "4.0.2", "--nodes", "2"]), session.loop)
            assert reply.result(WAIT_S).code == 0
            assert closed_by_server(r)
            k.sendall(encode_request(18, 3, 2, API_VERSIONS_V3))
            assert read_frames(k, 1) is not None  # the same connection: that process resumed
        wait_accepting(rolled)
        assert rpc(rolled, 18, 3, API_VERSIONS_V3)[1]["ErrorCode"] == 0
    finally:
        session.close_thread()
