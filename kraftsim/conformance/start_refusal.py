"""What real Kafka says when it will not start on a log directory's meta.properties.

A combined node (id 1) is formatted by the release's storage tool; its meta.properties is
then replaced by the text given and `kafka.Kafka` is started (bounded; killed if it runs
instead of failing). The answer is the message of the fatal exception it logs ("Exiting
Kafka due to fatal exception", then the exception's line), or None when it started. The
same variants are answered by kraftsim.storage.meta_properties.kraft_start_refusal.
`kafka_start_answer_after` makes any other change to the formatted directory first (a
bootstrap.checkpoint at a level the release does not list: storage.bootstrap_start).
"""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from kraftsim.conformance.dist import KafkaDist, KafkaUnavailable
from kraftsim.conformance.node import CLUSTER_ID, free_port
from kraftsim.conformance.tools import java_command, kill_group, run_tool

START_WAIT_S = 90
POLL_S = 0.3
STARTED = ("Transition from STARTING to STARTED", "Kafka Server started")
_FATAL = "Exiting Kafka due to fatal exception"
_EXCEPTION = re.compile(r"^(?:[\w$.]+(?:Exception|Error)): (.*)$")

#: meta.properties texts Kafka refuses (and one it accepts) at start, by name: no `version`
#: (v0) without ids or with a broker.id only, v1 without node.id or cluster.id, another node's id.
VARIANTS = {
    "v0 without ids": "#\n#Thu Jan 01 00:00:00 UTC 2026\n",
    "v0 with cluster.id only": f"#\n#Thu Jan 01 00:00:00 UTC 2026\ncluster.id={CLUSTER_ID}\n",
    "v0 with broker.id only": "#\n#Thu Jan 01 00:00:00 UTC 2026\nbroker.id=1\n",
    "v0 of another broker": f"#\n#Thu Jan 01 00:00:00 UTC 2026\ncluster.id={CLUSTER_ID}\nbroker.id=2\n",
    "v1 without node.id": f"#\n#Thu Jan 01 00:00:00 UTC 2026\nversion=1\ncluster.id={CLUSTER_ID}\n",
    "v1 without cluster.id": "#\n#Thu Jan 01 00:00:00 UTC 2026\nversion=1\nnode.id=1\n",
}


@dataclass(frozen=True)
class StartAnswer:
    """Kafka's fatal text (None: it started), and the log directory it was given."""

    fatal: str | None
    log_dir: Path


def kafka_start_answer(dist: KafkaDist, work: Path, meta_text: str) -> StartAnswer:
    """Format a node in `work`, put `meta_text` in its meta.properties, start it."""
    return kafka_start_answer_after(
        dist, work, lambda data: (data / "meta.properties").write_text(meta_text, encoding="latin-1"))


def kafka_start_answer_after(dist: KafkaDist, work: Path, change: Callable[[Path], object]) -> StartAnswer:
    """Format a node in `work`, let `change` alter its data directory, start it."""
    work.mkdir(parents=True, exist_ok=True)
    data = work / "data"
    cport, bport = free_port(), free_port()
    config = work / "server.properties"
    config.write_text(
        f"process.roles=broker,controller\nnode.id=1\ncontroller.quorum.voters=1@127.0.0.1:{cport}\n"
        f"listeners=PLAINTEXT://127.0.0.1:{bport},CONTROLLER://127.0.0.1:{cport}\n"
        "controller.listener.names=CONTROLLER\n"
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n"
        f"log.dirs={data}\n", encoding="utf-8")
    formatted = run_tool(dist, "storage", ["format", "-c", str(config), "-t", CLUSTER_ID])
    if formatted.code != 0:
        raise KafkaUnavailable(f"Kafka {dist.release.version} refused to format: {formatted.text().strip()[:300]}")
    change(data)
    log = work / "server.log"
    cmd = java_command(dist, "server", [str(config)], heap="384m", log_file=log)
    proc = subprocess.Popen(cmd, cwd=work, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + START_WAIT_S
        while time.monotonic() < deadline and proc.poll() is None:
            text = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
            if any(s in text for s in STARTED):
                return StartAnswer(None, data)
            time.sleep(POLL_S)
        if proc.poll() is None:
            raise KafkaUnavailable(f"Kafka {dist.release.version} neither started nor failed within "
                                   f"{START_WAIT_S} s; see {log}")
    finally:
        if proc.poll() is None:
            kill_group(proc)
            proc.wait(timeout=30)
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines() if log.is_file() else []
    for i, line in enumerate(lines):
        if _FATAL in line and i + 1 < len(lines):
            m = _EXCEPTION.match(lines[i + 1])
            if m:
                return StartAnswer(m.group(1), data)
    raise KafkaUnavailable(f"Kafka {dist.release.version} exited with code {proc.returncode} without "
                           f"'{_FATAL}' in {log}")
