"""How long a restarted broker stays out of a real Kafka cluster: measured, not assumed.

A cluster of one controller (node 1) and one broker (node 2), separate processes on
127.0.0.1, formatted by the release's storage tool. Once the broker runs unfenced it is
stopped with SIGTERM (a controlled shutdown) and started again on the same directory as
soon as its process has exited, as one step of a roll does. The controller still holds
the old broker's session, so it refuses the new incarnation's registrations
(DUPLICATE_BROKER_REGISTRATION) until that session expires; the broker retries on its
backoff. Times are taken from the new broker process's own log (log4j's millisecond
timestamps) and counted from the SIGTERM: the first refused registration, the successful
registration, the transition to RUNNING (unfenced). Every process is bounded and killed
with its process group when the measurement ends.

`simulated` takes the same figures from kraftsim's simulator (a Simulation of one
controller and one broker, the broker stopped or crashed and started again), and
`measured_runs` gives the measurements kept in data/reregistration.toml.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import signal
import subprocess
import tempfile
import time
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from kraftsim.conformance.dist import KafkaDist, KafkaUnavailable
from kraftsim.conformance.node import CLUSTER_ID, free_port
from kraftsim.conformance.tools import java_command, kill_group, run_tool

#: Bound on waiting for a log line (a start, an unfencing).
WAIT_S = 90
STOP_GRACE_S = 30
POLL_S = 0.05
#: How long the broker runs unfenced before it is stopped (a few heartbeats).
SETTLE_S = 5.0

_STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]")
REFUSED = "because the controller returned error DUPLICATE_BROKER_REGISTRATION"
REGISTERED = "Successfully registered broker 2"
UNFENCED = "The broker has been unfenced"


@dataclass
class Reregistration:
    """Milliseconds after the SIGTERM of the old broker process."""

    release: str
    signal: str  # "SIGTERM" (a clean stop) or "SIGKILL" (a crash)
    exited_ms: int  # the old process had exited
    started_ms: int  # the new process's first log line
    refused_ms: list[int] = field(default_factory=list)  # each refused registration
    registered_ms: int = -1
    unfenced_ms: int = -1

    @property
    def first_attempt_after_start_ms(self) -> int:
        """From the new process's first log line to its first registration reply."""
        first = self.refused_ms[0] if self.refused_ms else self.registered_ms
        return first - self.started_ms

    def describe(self) -> str:
        who = self.release if self.release.startswith("kraftsim") else f"Kafka {self.release}"
        return (f"{who}: {self.signal} at 0 ms; old process exited {self.exited_ms} ms; new process logging "
                f"{self.started_ms} ms; registrations refused at {self.refused_ms} ms; registered "
                f"{self.registered_ms} ms; unfenced {self.unfenced_ms} ms")


def node_config(directory: Path, node_id: int, roles: str, controller_port: int, broker_port: int | None,
                extra: tuple[str, ...] = ()) -> Path:
    """A server.properties for one node on 127.0.0.1 whose quorum is node 1 at `controller_port`
    (`roles`: "controller", "broker" or "broker,controller"; `extra`: more lines)."""
    listeners = ",".join(([f"PLAINTEXT://127.0.0.1:{broker_port}"] if broker_port is not None else []) +
                         ([f"CONTROLLER://127.0.0.1:{controller_port}"] if "controller" in roles else []))
    lines = [f"process.roles={roles}", f"node.id={node_id}",
             f"controller.quorum.voters=1@127.0.0.1:{controller_port}",
             f"listeners={listeners}", "controller.listener.names=CONTROLLER",
             "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
             f"log.dirs={directory / 'data'}", "offsets.topic.replication.factor=1",
             "transaction.state.log.replication.factor=1", "transaction.state.log.min.isr=1",
             "num.partitions=1", "auto.create.topics.enable=false"]
    if broker_port is not None:
        lines += [f"advertised.listeners=PLAINTEXT://127.0.0.1:{broker_port}", "inter.broker.listener.name=PLAINTEXT"]
    lines += extra
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "server.properties"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def format_nodes(dist: KafkaDist, configs: Iterable[Path]) -> None:
    """Format each node's directory with the release's storage tool (KafkaUnavailable if refused)."""
    for cfg in configs:
        run = run_tool(dist, "storage", ["format", "-c", str(cfg), "-t", CLUSTER_ID])
        if run.code != 0:
            raise KafkaUnavailable(f"Kafka {dist.release.version} refused to format {cfg.parent.name}: "
                                   f"{run.text().strip()[:300]}")


def stamp_ms(line: str) -> int | None:
    m = _STAMP.match(line)
    if m is None:
        return None
    stamp = _dt.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f")
    return round(stamp.timestamp() * 1000)


def log_lines(log: Path) -> list[str]:
    return log.read_text(encoding="utf-8", errors="replace").splitlines() if log.is_file() else []


def wait_for(proc: subprocess.Popen[bytes], log: Path, text: str, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if any(text in ln for ln in log_lines(log)):
            return
        if proc.poll() is not None:
            raise KafkaUnavailable(f"{what}: the process exited with code {proc.returncode}; see {log}")
        time.sleep(POLL_S)
    raise KafkaUnavailable(f"{what}: no '{text}' within {WAIT_S} s; see {log}")


class KafkaProcess:
    def __init__(self, dist: KafkaDist, config: Path, log: Path):
        cmd = java_command(dist, "server", [str(config)], heap="384m", log_file=log)
        with open(log.with_suffix(".out"), "wb") as out:
            self.proc = subprocess.Popen(cmd, cwd=config.parent, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)

    def terminate(self) -> None:
        """SIGTERM to the group, SIGKILL after the grace period."""
        if self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            kill_group(self.proc)
            self.proc.wait(timeout=STOP_GRACE_S)
        except ProcessLookupError:
            pass

    def kill(self) -> None:
        if self.proc.poll() is None:
            kill_group(self.proc)
            self.proc.wait(timeout=STOP_GRACE_S)


def measure(dist: KafkaDist, work: Path, *, kill: bool = False) -> Reregistration:
    """One controller, one broker; the broker stopped with SIGTERM (or killed with SIGKILL,
    `kill`: no controlled shutdown) and restarted at once."""
    cport, bport = free_port(), free_port()
    ctrl_cfg = node_config(work / "controller", 1, "controller", cport, None)
    broker_cfg = node_config(work / "broker", 2, "broker", cport, bport)
    format_nodes(dist, (ctrl_cfg, broker_cfg))
    processes: list[KafkaProcess] = []
    try:
        controller = KafkaProcess(dist, ctrl_cfg, work / "controller" / "server.log")
        processes.append(controller)
        first_log = work / "broker" / "server-1.log"
        old = KafkaProcess(dist, broker_cfg, first_log)
        processes.append(old)
        wait_for(old.proc, first_log, UNFENCED, f"Kafka {dist.release.version} broker's first start")
        time.sleep(SETTLE_S)
        sigterm_ms = round(time.time() * 1000)
        old.kill() if kill else old.terminate()
        exited_ms = round(time.time() * 1000) - sigterm_ms
        second_log = work / "broker" / "server-2.log"
        new = KafkaProcess(dist, broker_cfg, second_log)
        processes.append(new)
        wait_for(new.proc, second_log, UNFENCED, f"Kafka {dist.release.version} broker's restart")
        stamped = [(t, ln) for ln in log_lines(second_log) if (t := stamp_ms(ln)) is not None]
        result = Reregistration(dist.release.version, "SIGKILL" if kill else "SIGTERM", exited_ms,
                                stamped[0][0] - sigterm_ms)
        for t, ln in stamped:
            if REFUSED in ln:
                result.refused_ms.append(t - sigterm_ms)
            elif REGISTERED in ln and result.registered_ms < 0:
                result.registered_ms = t - sigterm_ms
            elif UNFENCED in ln and result.unfenced_ms < 0:
                result.unfenced_ms = t - sigterm_ms
        return result
    finally:
        for p in reversed(processes):
            p.kill()


def measured_runs() -> list[Reregistration]:
    """The real-Kafka measurements kept in data/reregistration.toml."""
    text = resources.files("kraftsim.conformance").joinpath("data/reregistration.toml").read_text(encoding="utf-8")
    return [Reregistration(r["release"], r["signal"], r["exited"], r["started"], list(r["refused"]),
                           r["registered"], r["unfenced"]) for r in tomllib.loads(text)["runs"]]


#: How long the simulated broker runs unfenced before it is stopped, as `SETTLE_S` above.
SIM_SETTLE_MS = 5000
SIM_WAIT_MS = 60_000


def simulated(release: str, *, seed: int = 0, kill: bool = False) -> Reregistration:
    """The same restart in kraftsim's simulator (the process restarts at once: no JVM start-up).
    Refusals are timed when the controller answers them."""
    from kraftsim.sim import SimEvent, Simulation

    events: list[SimEvent] = []
    with tempfile.TemporaryDirectory(prefix="kraftsim-reregistration-") as tmp:
        with Simulation.create(Path(tmp) / "cluster", controllers=1, brokers=1, release=release, seed=seed,
                               durable=False) as sim:
            sim.run(SIM_SETTLE_MS)
            sim.subscribe(events.append)
            if kill:
                sim.crash([2])
            else:
                sim.stop([2])
            sim.start([2])
            sim.wait(SIM_WAIT_MS)
    t0 = next(e.time_ms for e in events if e.node == 2 and e.kind in ("stopping", "crash"))
    registered = next(e.time_ms for e in events if e.node == 2 and e.kind == "registered")
    replies = [e.time_ms for e in events if e.kind == "send" and e.details.get("to") == 2
               and e.details.get("message") == "register-reply" and e.time_ms <= registered]
    refused = replies[:-1]  # the last one accepted it
    unfenced = next(e.time_ms for e in events if e.node == 2 and e.kind == "unfence")
    exited = next(e.time_ms for e in events if e.node == 2 and e.kind in ("stop", "crash"))
    started = next(e.time_ms for e in events if e.node == 2 and e.kind == "start")
    return Reregistration(f"kraftsim {release}", "SIGKILL" if kill else "SIGTERM", exited - t0, started - t0,
                          [t - t0 for t in refused], registered - t0, unfenced - t0)
