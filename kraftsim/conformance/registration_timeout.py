"""A broker the controller will not register, until initial.broker.registration.timeout.ms: measured.

A controller (node 1) of one release, formatted at its default metadata.version, and a broker
(node 2) of an older release that does not support that version, as separate processes on
127.0.0.1 with a short `initial.broker.registration.timeout.ms`. The controller refuses every
registration (UNSUPPORTED_VERSION, in its own release's words); the broker retries on its
backoff and, when the timeout runs out, logs "Shutting down because we were unable to register
with the controller quorum." and its process exits (a fatal error during start-up). Times are
milliseconds after the broker's first refused registration, from the broker's own log (the
simulator has no JVM start-up to compare); the refusal text is the one the controller logs.

`simulated` takes the same figures from kraftsim's simulator, and `measured_runs` gives the
measurements kept in data/registration_timeout.toml.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from kraftsim.conformance.dist import KafkaDist, KafkaUnavailable
from kraftsim.conformance.node import CLUSTER_ID, free_port
from kraftsim.conformance.reregistration import KafkaProcess, log_lines, node_config, stamp_ms, wait_for
from kraftsim.conformance.tools import run_tool

#: What the broker's BrokerLifecycleManager logs for each refusal and at the deadline.
REFUSED = "Unable to register broker 2 because the controller returned error UNSUPPORTED_VERSION"
SHUTDOWN = "Shutting down because we were unable to register with the controller quorum."
#: How the controller logs the refusal's message (QuorumController's event failure line).
_CONTROLLER_REFUSAL = re.compile(r"registerBroker: event failed with UnsupportedVersionException .*? "
                                 r"Exception message: (.*) \(org\.apache\.kafka")
#: Bound on the broker's life beyond its timeout, and on the controller's start.
EXIT_WAIT_S = 60
CONTROLLER_READY = "Kafka Server started"


@dataclass
class RegistrationTimeout:
    """One broker's refused start. Milliseconds after its first refused registration."""

    controller: str  # "3.8.1", or "kraftsim 3.8.1"
    broker: str
    timeout_ms: int
    refused_ms: list[int] = field(default_factory=list)  # every refusal (the first is 0)
    shutdown_ms: int = -1  # the broker gave up
    exit_code: int | None = None  # the broker process's (None: the simulator's node ended failed)
    refusal: str = ""  # the controller's text

    def describe(self) -> str:
        return (f"controller {self.controller}, broker {self.broker}, timeout {self.timeout_ms} ms: refused at "
                f"{self.refused_ms} ms, shut down at {self.shutdown_ms} ms, exit {self.exit_code}: {self.refusal}")


def measure(controller: KafkaDist, broker: KafkaDist, work: Path, *, timeout_ms: int = 5000) -> RegistrationTimeout:
    """Run the pair until the broker gives up (bounded); every process is killed at the end."""
    cport, bport = free_port(), free_port()
    ctrl_cfg = node_config(work / "controller", 1, "controller", cport, None)
    broker_cfg = node_config(work / "broker", 2, "broker", cport, bport,
                             (f"initial.broker.registration.timeout.ms={timeout_ms}",))
    for dist, cfg in ((controller, ctrl_cfg), (broker, broker_cfg)):
        run = run_tool(dist, "storage", ["format", "-c", str(cfg), "-t", CLUSTER_ID])
        if run.code != 0:
            raise KafkaUnavailable(f"Kafka {dist.release.version} refused to format {cfg.parent.name}: "
                                   f"{run.text().strip()[:300]}")
    processes: list[KafkaProcess] = []
    ctrl_log, broker_log = work / "controller" / "server.log", work / "broker" / "server.log"
    try:
        ctrl = KafkaProcess(controller, ctrl_cfg, ctrl_log)
        processes.append(ctrl)
        wait_for(ctrl.proc, ctrl_log, CONTROLLER_READY, f"Kafka {controller.release.version} controller's start")
        brk = KafkaProcess(broker, broker_cfg, broker_log)
        processes.append(brk)
        try:
            code: int | None = brk.proc.wait(timeout=timeout_ms / 1000 + EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            code = None
        result = RegistrationTimeout(controller.release.version, broker.release.version, timeout_ms, exit_code=code)
        stamped = [(t, ln) for ln in log_lines(broker_log) if (t := stamp_ms(ln)) is not None]
        refusals = [t for t, ln in stamped if REFUSED in ln]
        if not refusals:
            raise KafkaUnavailable(f"the Kafka {broker.release.version} broker was never refused; see {broker_log}")
        result.refused_ms = [t - refusals[0] for t in refusals]
        result.shutdown_ms = next((t - refusals[0] for t, ln in stamped if SHUTDOWN in ln), -1)
        texts = [m.group(1) for m in map(_CONTROLLER_REFUSAL.search, log_lines(ctrl_log)) if m]
        result.refusal = texts[0] if texts else ""
        return result
    finally:
        for p in reversed(processes):
            p.kill()


def measured_runs() -> list[RegistrationTimeout]:
    """The real-Kafka measurements kept in data/registration_timeout.toml."""
    text = resources.files("kraftsim.conformance").joinpath("data/registration_timeout.toml").read_text(
        encoding="utf-8")
    return [RegistrationTimeout(r["controller"], r["broker"], r["timeout"], list(r["refused"]), r["shutdown"],
                                r["exit_code"], r["refusal"]) for r in tomllib.loads(text)["runs"]]


def simulated(controller: str, broker: str, *, timeout_ms: int = 5000, seed: int = 0) -> RegistrationTimeout:
    """The same pair in kraftsim's simulator: a controller of `controller`, then a broker of
    `broker` added; refusals are timed when the controller answers them."""
    from kraftsim.sim import SimConfig, SimError, SimEvent, Simulation

    events: list[SimEvent] = []
    config = SimConfig(initial_broker_registration_timeout_ms=timeout_ms)
    with tempfile.TemporaryDirectory(prefix="kraftsim-registration-timeout-") as tmp:
        with Simulation.create(Path(tmp) / "cluster", controllers=1, release=controller, seed=seed, config=config,
                               durable=False) as sim:
            sim.subscribe(events.append)
            try:
                sim.add_node("broker", broker, 2)
            except SimError:
                pass  # refused: what is measured
            sim.run(timeout_ms + EXIT_WAIT_S * 1000)
            node = next(n for n in sim.nodes() if n.id == 2)
    replies = [e.time_ms for e in events if e.kind == "send" and e.details.get("to") == 2
               and e.details.get("message") == "register-reply"]
    failed = next((e for e in events if e.node == 2 and e.kind == "failed"), None)
    refusal = next((e.details["text"] for e in events if e.node == 2 and e.kind == "refused"), "")
    t0 = replies[0] if replies else 0
    return RegistrationTimeout(f"kraftsim {controller}", f"kraftsim {broker}", timeout_ms,
                               [t - t0 for t in replies],
                               -1 if failed is None or node.state != "failed" else failed.time_ms - t0,
                               None, refusal.split("UNSUPPORTED_VERSION: ", 1)[-1])
