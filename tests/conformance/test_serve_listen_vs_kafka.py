"""When a restarted broker listens, real Kafka against `kraftsim serve`: a combined node (one
JVM) is killed and started again on its directory; its ports are polled with plain TCP
connects. Kafka's controller listener opens as the process starts, its broker listener only
once the broker is unfenced (BrokerServer.startup enables request processing, and opens the
socket, after the first publish and the unfencing), so for seconds (the old incarnation's
session expiring) the controller port accepts while the broker port refuses. The served node
must do the same, on the simulated clock."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

import kraftsim
from kraftsim.conformance.node import free_port
from kraftsim.conformance.reregistration import (
    UNFENCED,
    KafkaProcess,
    format_nodes,
    log_lines,
    node_config,
    stamp_ms,
    wait_for,
)
from tests.conformance.conftest import kafka_dist
from tests.wire.client import accepts, wait_accepting

RELEASE = "4.0.2"
REFUSED = "DUPLICATE_BROKER_REGISTRATION"
#: Wall bound on polling the restarted node's ports.
POLL_BOUND_S = 120.0


def _port_accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except OSError:
        return False
    return True


def _live(tmp_path: Path) -> tuple[list[tuple[int, bool, bool]], list[str]]:
    """(ms since the new process was launched, controller port accepts, broker port accepts) per
    poll until the broker port accepts, and the new process's log lines."""
    dist = kafka_dist(RELEASE)
    cport, bport = free_port(), free_port()
    cfg = node_config(tmp_path / "n1", 1, "broker,controller", cport, bport)
    format_nodes(dist, [cfg])
    proc = KafkaProcess(dist, cfg, tmp_path / "n1" / "server-1.log")
    try:
        wait_for(proc.proc, tmp_path / "n1" / "server-1.log", UNFENCED, f"Kafka {RELEASE}'s first start")
        # (the broker socket opens just after the line is logged: on a loaded machine, later)
        wait_accepting(f"127.0.0.1:{bport}")
        assert _port_accepts(cport)
        proc.kill()
        log = tmp_path / "n1" / "server-2.log"
        proc = KafkaProcess(dist, cfg, log)
        t0 = time.time()
        samples: list[tuple[int, bool, bool]] = []
        deadline = time.monotonic() + POLL_BOUND_S
        while time.monotonic() < deadline and proc.proc.poll() is None:
            at = round((time.time() - t0) * 1000)
            samples.append((at, _port_accepts(cport), _port_accepts(bport)))
            if samples[-1][2]:
                break
            time.sleep(0.02)
        stamped = [f"{s - round(t0 * 1000)} {ln}" for ln in log_lines(log) if (s := stamp_ms(ln)) is not None]
        return samples, stamped
    finally:
        proc.kill()


def _first(lines: list[str], text: str) -> int:
    return next(int(ln.split(" ", 1)[0]) for ln in lines if text in ln)


@pytest.mark.kafka
def test_a_restarted_combined_nodes_broker_port_refuses_until_unfenced_in_kafka_and_serve(tmp_path):
    samples, lines = _live(tmp_path)
    assert samples and samples[-1][2], f"the broker port never accepted: {samples[-5:]}"
    refused = [at for at, controller, broker in samples if controller and not broker]
    assert refused, samples[:5]  # the controller listened while the broker did not
    first_refusal, unfenced = _first(lines, REFUSED), _first(lines, UNFENCED)
    assert max(refused) > first_refusal  # still refused once the controller had refused its registration
    assert samples[-1][0] + 20 >= unfenced  # (log stamps and polls read one clock, to the millisecond)

    with kraftsim.serve(combined=1, release=RELEASE, speed=20.0) as k:
        k.call(lambda s: s.sim.run(3000))
        k.crash(1)
        k.start(1)
        started = k.call(lambda s: s.sim.now_ms)
        assert accepts(k.address(1, "controller")) and not accepts(k.address(1, "broker"))
        wait_accepting(k.address(1, "broker"))
        now, fenced = k.call(lambda s: (s.sim.now_ms, s.sim.nodes()[0].fenced))
        assert not fenced
        # Kafka's broker listened `unfenced` ms after its launch, of which its controller's start took
        # `first_refusal` at most; the simulated node starts at once
        assert now - started >= 9000, (now - started, unfenced, first_refusal)
