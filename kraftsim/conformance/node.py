"""A live Kafka node: one combined broker+controller on 127.0.0.1, always stopped.

`LiveNode` formats a directory with the release's storage tool, starts `kafka.Kafka` in
its own process group with free loopback ports, waits (bounded) until the broker answers
kafka-features describe, and on leaving its `with` block stops the process group
(SIGTERM, then SIGKILL after a grace period). Its log goes to `server.log` in the node's
directory; `keep_logs` copies the log and config out of the temporary directory when a
case fails.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from kraftsim.conformance.dist import KafkaDist, KafkaUnavailable
from kraftsim.conformance.tools import ToolRun, java_command, run_tool

START_TIMEOUT_S = 120
STOP_GRACE_S = 30
POLL_S = 1.0
CLUSTER_ID = "ZnVsbHkgcmVwcm9kdWNpYg"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class LiveNode:
    """One combined node (id 1) of a single-node static quorum."""

    def __init__(self, dist: KafkaDist, directory: Path, *, extra_config: str = "", heap: str = "512m"):
        self.dist = dist
        self.dir = directory
        self.heap = heap  # the JVM's -Xmx
        self.broker_port, self.controller_port = free_port(), free_port()
        self.data = directory / "data"
        self.config = directory / "server.properties"
        self.log_file = directory / "server.log"
        self.config.write_text(
            "process.roles=broker,controller\nnode.id=1\n"
            f"controller.quorum.voters=1@127.0.0.1:{self.controller_port}\n"
            f"listeners=PLAINTEXT://127.0.0.1:{self.broker_port},CONTROLLER://127.0.0.1:{self.controller_port}\n"
            f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.broker_port}\n"
            "controller.listener.names=CONTROLLER\ninter.broker.listener.name=PLAINTEXT\n"
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n"
            f"log.dirs={self.data}\noffsets.topic.replication.factor=1\n"
            "transaction.state.log.replication.factor=1\ntransaction.state.log.min.isr=1\n"
            "group.initial.rebalance.delay.ms=0\nnum.partitions=1\nauto.create.topics.enable=false\n"
            + extra_config, encoding="utf-8")
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.broker_port}"

    def format(self, *flags: str) -> ToolRun:
        run = run_tool(self.dist, "storage", ["format", "-c", str(self.config), "-t", CLUSTER_ID, *flags])
        if run.code != 0:
            raise KafkaUnavailable(f"Kafka {self.dist.release.version} refused to format its node: "
                                   f"{run.text().strip()[:300]}")
        return run

    def start(self) -> None:
        cmd = java_command(self.dist, "server", [str(self.config)], heap=self.heap, log_file=self.log_file)
        out = open(self.dir / "server.out", "wb")
        try:
            self.proc = subprocess.Popen(cmd, cwd=self.dir, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        finally:
            out.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise KafkaUnavailable(f"Kafka {self.dist.release.version} exited with code {self.proc.returncode} "
                                       f"while starting; see {self.log_file}")
            probe = run_tool(self.dist, "features", ["--bootstrap-server", self.bootstrap, "describe"], timeout=60)
            if probe.code == 0 and "metadata.version" in probe.stdout:
                return
            time.sleep(POLL_S)
        raise KafkaUnavailable(f"Kafka {self.dist.release.version} did not answer within {START_TIMEOUT_S} s; "
                               f"see {self.log_file}")

    def stop(self) -> None:
        """SIGTERM to the whole process group, then SIGKILL after the grace period."""
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=STOP_GRACE_S)
        except ProcessLookupError:
            pass

    def __enter__(self) -> "LiveNode":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def keep_logs(self, label: str) -> Path:
        """Copy the node's log, output and config where they outlive the temporary directory."""
        default = Path(tempfile.gettempdir()) / "kraftsim-conformance-logs"
        base = Path(os.environ.get("KRAFTSIM_CONFORMANCE_LOGS") or default)
        kept = base / f"{self.dist.release.version}-{label}-{os.getpid()}"
        kept.mkdir(parents=True, exist_ok=True)
        for name in ("server.log", "server.out", "server.properties"):
            if (self.dir / name).is_file():
                shutil.copy2(self.dir / name, kept / name)
        return kept
