"""A live KIP-853 dynamic quorum against a simulated one, step by step (Kafka 3.9 on).

Kafka: three controllers on 127.0.0.1 formatted with `--initial-controllers`, started with
256 MB heaps; a fourth formatted with `--no-initial-controllers` is started later (four
JVMs at most, one cluster at a time). kraftsim: `kraftsim cluster create --dynamic-quorum`
with three controllers of the same release, and `kraftsim cluster add --controller`. The
same kafka-metadata-quorum session runs on both (Kafka's with `--bootstrap-controller`,
kraftsim's with `--cluster`): describe --status and --replication, add-controller (twice:
the second is refused), remove-controller with a wrong directory id, of the added voter,
again, of the active controller, and with a directory id that does not parse. A case per
step compares exit code, stdout and the first line of stderr (Kafka's stack trace is left
out: kraftsim prints no traceback), with directory ids, endpoints, node ids in sets,
offsets, lags and times masked: they differ by construction.

The whole session runs in the first case; the release context's cleanups stop the JVMs
whatever happens. On a slow or loaded machine a controller JVM can die or stop listening
mid-session; that is the machine, not Kafka's answer, so each step checks its controllers
and such a session is run once more from scratch (its cause, from the node's log, is kept
in the failure should the second run meet the same).
"""

from __future__ import annotations

import base64
import os
import re
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable, Iterable

from kraftsim.conformance.cases.base import Case, ReleaseContext
from kraftsim.conformance.dist import KafkaUnavailable
from kraftsim.conformance.node import CLUSTER_ID, free_port
from kraftsim.conformance.tools import ToolRun, java_command

START_TIMEOUT_S = 180
STOP_GRACE_S = 30
KAFKA_ATTEMPTS = 2
LOG_TAIL_LINES = 12
UNREACHABLE = "could not be established"  # Kafka's client when a controller's port refuses or stalls
_UUID = re.compile(r"(?<![\w-])[\w-]{22}(?![\w-])")

#: The session: (step, kafka-metadata-quorum arguments after the connection flag).
STEPS = ("status-3", "replication-observer", "status-observer", "add-4", "add-4-again", "status-4",
         "remove-wrong-dir", "remove-4", "remove-4-again", "status-after-remove", "remove-leader",
         "status-after-leader-removed", "remove-bad-uuid")


def mask(text: str) -> str:
    """What differs by construction between two quorums of the same shape."""
    text = _UUID.sub("<dir>", text)
    text = re.sub(r"CONTROLLER://[^\"\s,]+", "CONTROLLER://<ep>", text)
    text = re.sub(r"(LeaderId|LeaderEpoch|HighWatermark|MaxFollowerLag|MaxFollowerLagTimeMs):( +)-?\d+", r"\1:\2<n>",
                  text)
    text = re.sub(r"ReplicaKey\(id=\d+", "ReplicaKey(id=<n>", text)
    text = re.sub(r'"id": \d+', '"id": <n>', text)
    return re.sub(r"controller \d+ with", "controller <n> with", text)


def comparable(run: ToolRun) -> tuple[int, list[str], str]:
    """Exit code, stdout masked (a tab-separated table cell by cell, its numbers too), the
    first line of stderr masked."""
    lines = []
    for line in run.stdout.splitlines():
        if "\t" in line:
            line = "\t".join(re.sub(r"^-?\d+$", "<n>", mask(c.strip())) for c in line.split("\t"))
        lines.append(mask(line))
    first = next((line for line in run.stderr.splitlines() if line.strip()), "")
    return run.code, lines, mask(first)


@dataclass
class QuorumSession:
    ctx: ReleaseContext
    procs: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)
    kafka: dict[str, ToolRun] = field(default_factory=dict)
    sim: dict[str, ToolRun] = field(default_factory=dict)
    failure: str | None = None
    ran: bool = False
    #: why an earlier run of Kafka's side was abandoned, if one was
    retried: list[str] = field(default_factory=list)

    def diff(self, step: str) -> list[str]:
        if not self.ran:
            self.ran = True
            try:
                self._run()
            except KafkaUnavailable as e:
                self.failure = str(e)
            finally:
                self.stop()
        if self.failure is not None:
            return [f"the session did not run: {self.failure}"]
        if step not in self.kafka or step not in self.sim:
            return [f"{step}: not reached"]
        mine, theirs = comparable(self.sim[step]), comparable(self.kafka[step])
        if mine == theirs:
            return []
        return [f"{step}: Kafka said {theirs!r}", f"{step}: kraftsim said {mine!r}"]

    # ------------------------------------------------------------------ Kafka's side

    def _run(self) -> None:
        for attempt in range(1, KAFKA_ATTEMPTS + 1):
            try:
                self._run_kafka()
                break
            except ControllerLost as e:
                self.stop()
                self.kafka.clear()
                self.retried.append(str(e))
                if attempt == KAFKA_ATTEMPTS:
                    raise KafkaUnavailable("Kafka's side was lost in every run: " + " | ".join(self.retried)) from e
        self._simulate()

    def _run_kafka(self) -> None:
        work = self.ctx.scratch("live-quorum")
        ports = {i: free_port() for i in (1, 2, 3, 4)}
        boot = ",".join(f"127.0.0.1:{ports[i]}" for i in (1, 2, 3))
        configs = {i: self._config(work, i, ports[i], boot) for i in (1, 2, 3, 4)}
        initial = ",".join(f"{i}@127.0.0.1:{ports[i]}:{_directory_id(i)}" for i in (1, 2, 3))
        for i in (1, 2, 3, 4):
            flags = ["--initial-controllers", initial] if i < 4 else ["--no-initial-controllers"]
            run = self.ctx.kafka("storage", ["format", "-c", str(configs[i]), "-t", CLUSTER_ID, *flags])
            if run.code != 0:
                raise KafkaUnavailable(f"format of controller {i} failed: {run.text().strip()[:300]}")
        for i in (1, 2, 3):
            self._start(work, i, configs[i])

        def mq(*args: str) -> ToolRun:
            return self._checked(self.ctx.kafka("metadata-quorum", ["--bootstrap-controller", boot, *args],
                                                timeout=90), ports, work)

        self._await_listening(work, ports, (1, 2, 3))
        deadline = time.monotonic() + START_TIMEOUT_S
        while "LeaderId" not in self.ctx.kafka("metadata-quorum", ["--bootstrap-controller", boot, "describe",
                                                                   "--status"], timeout=90).stdout:
            if time.monotonic() > deadline:
                raise KafkaUnavailable(f"no quorum within {START_TIMEOUT_S} s; see {work}")
            time.sleep(2)
        k = self.kafka
        k["status-3"] = mq("describe", "--status")
        self._start(work, 4, configs[4])
        self._await_listening(work, ports, (4,))
        time.sleep(15)  # (bounded) controller 4 catches up as an observer
        k["replication-observer"] = mq("describe", "--replication")
        k["status-observer"] = mq("describe", "--status")
        k["add-4"] = mq("--command-config", str(configs[4]), "add-controller")
        time.sleep(3)
        k["add-4-again"] = mq("--command-config", str(configs[4]), "add-controller")
        k["status-4"] = mq("describe", "--status")
        dirs = _directory_ids(k["status-4"].stdout)
        k["remove-wrong-dir"] = mq("remove-controller", "-i", "4", "-d", dirs["1"])
        k["remove-4"] = mq("remove-controller", "-i", "4", "-d", dirs["4"])
        time.sleep(3)
        k["remove-4-again"] = mq("remove-controller", "-i", "4", "-d", dirs["4"])
        k["status-after-remove"] = mq("describe", "--status")
        leader = _leader(k["status-after-remove"].stdout)
        k["remove-leader"] = mq("remove-controller", "-i", leader, "-d", dirs[leader])
        time.sleep(10)
        k["status-after-leader-removed"] = mq("describe", "--status")
        k["remove-bad-uuid"] = mq("remove-controller", "-i", "4", "-d", "xyz")
        self.stop()

    def _await_listening(self, work: Path, ports: dict[int, int], ids: tuple[int, ...]) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        for i in ids:
            while not _listening(ports[i]):
                if time.monotonic() > deadline or self.procs[i].poll() is not None:
                    raise ControllerLost(f"controller {i} did not start listening; {_log_tail(work / f'node-{i}')}")
                time.sleep(1)

    def _checked(self, run: ToolRun, ports: dict[int, int], work: Path) -> ToolRun:
        """`run`, unless a started controller has exited or no longer accepts connections, or
        the tool could not reach one (ControllerLost, with the end of the node's log): every
        controller is meant to be up at every step."""
        if UNREACHABLE in run.stderr:
            first = next(ln for ln in run.stderr.splitlines() if UNREACHABLE in ln)
            raise ControllerLost(f"a step could not reach a controller ({first.strip()}); "
                                 + "; ".join(_log_tail(work / f"node-{i}") for i in sorted(self.procs)))
        for i, proc in sorted(self.procs.items()):
            code = proc.poll()
            if code is not None:
                raise ControllerLost(f"controller {i} exited (code {code}); {_log_tail(work / f'node-{i}')}")
            if not _listening(ports[i]):
                raise ControllerLost(f"controller {i} stopped listening on 127.0.0.1:{ports[i]}; "
                                     f"{_log_tail(work / f'node-{i}')}")
        return run

    @staticmethod
    def _config(work: Path, i: int, port: int, boot: str) -> Path:
        d = work / f"node-{i}"
        d.mkdir()
        c = d / "server.properties"
        c.write_text(f"process.roles=controller\nnode.id={i}\ncontroller.quorum.bootstrap.servers={boot}\n"
                     f"listeners=CONTROLLER://127.0.0.1:{port}\ncontroller.listener.names=CONTROLLER\n"
                     f"listener.security.protocol.map=CONTROLLER:PLAINTEXT\nlog.dirs={d / 'data'}\n",
                     encoding="utf-8")
        return c

    def _start(self, work: Path, i: int, config: Path) -> None:
        log = work / f"node-{i}" / "server.log"
        cmd = java_command(self.ctx.dist, "server", [str(config)], heap="256m", log_file=log)
        with open(work / f"node-{i}" / "server.out", "wb") as out:
            self.procs[i] = subprocess.Popen(cmd, cwd=work, stdin=subprocess.DEVNULL, stdout=out,
                                             stderr=subprocess.STDOUT, start_new_session=True)

    def stop(self) -> None:
        """SIGTERM to every node's process group, then SIGKILL after the grace period."""
        for p in self.procs.values():
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for p in self.procs.values():
            try:
                p.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=STOP_GRACE_S)
        self.procs.clear()

    # ------------------------------------------------------------------ kraftsim's side

    def _simulate(self) -> None:
        d = str(self.ctx.scratch("live-quorum-sim") / "cluster")
        version = self.ctx.line  # (kraftsim's catalog may not list every patch release: the line's newest)
        run: Callable[..., ToolRun] = lambda *argv: self.ctx.kraftsim(list(argv))  # noqa: E731
        made = run("cluster", "create", d, "--controllers", "3", "--release", version, "--dynamic-quorum")
        if made.code != 0:
            raise KafkaUnavailable(f"kraftsim could not create the cluster: {made.text().strip()[:300]}")
        s = self.sim
        mq = ("metadata-quorum", "--cluster", d)
        s["status-3"] = run(*mq, "describe", "--status")
        run("cluster", "add", d, "--controller", "--release", version)
        s["replication-observer"] = run(*mq, "describe", "--replication")
        s["status-observer"] = run(*mq, "describe", "--status")
        s["add-4"] = run(*mq, "add-controller", "--controller-id", "4")
        s["add-4-again"] = run(*mq, "add-controller", "--controller-id", "4")
        s["status-4"] = run(*mq, "describe", "--status")
        dirs = _directory_ids(s["status-4"].stdout)
        s["remove-wrong-dir"] = run(*mq, "remove-controller", "-i", "4", "-d", dirs["1"])
        s["remove-4"] = run(*mq, "remove-controller", "-i", "4", "-d", dirs["4"])
        s["remove-4-again"] = run(*mq, "remove-controller", "-i", "4", "-d", dirs["4"])
        s["status-after-remove"] = run(*mq, "describe", "--status")
        leader = _leader(s["status-after-remove"].stdout)
        s["remove-leader"] = run(*mq, "remove-controller", "-i", leader, "-d", dirs[leader])
        s["status-after-leader-removed"] = run(*mq, "describe", "--status")
        s["remove-bad-uuid"] = run(*mq, "remove-controller", "-i", "4", "-d", "xyz")


class ControllerLost(Exception):
    """A live controller died or stopped listening during the session: the machine's doing."""


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            return True
    except OSError:
        return False


def _log_tail(node: Path) -> str:
    """The last errors in a node's log (or the last lines of its console output)."""
    for name, keep in (("server.log", ("ERROR", "FATAL", "Exception")), ("server.out", ("",))):
        try:
            lines = (node / name).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        picked = [ln for ln in lines if any(k in ln for k in keep)][-LOG_TAIL_LINES:]
        if picked:
            return f"{node / name} ends:\n" + "\n".join(picked)
    return f"nothing in {node}'s logs says why"


def _directory_id(i: int) -> str:
    """A fixed directory id for initial controller `i` (not one of the ids Kafka reserves,
    whose high half is 0)."""
    return base64.urlsafe_b64encode((i * 0x1234567 + 99).to_bytes(8, "big") + i.to_bytes(8, "big")).decode().rstrip("=")


def _directory_ids(status: str) -> dict[str, str]:
    return dict(re.findall(r'\{"id": (\d+), "directoryId": "([\w-]{22})"', status))


def _leader(status: str) -> str:
    found = re.search(r"LeaderId: +(\d+)", status)
    return found.group(1) if found else "-1"


def cases(ctx: ReleaseContext) -> Iterable[Case]:
    catalog = ctx.catalog()
    if catalog is None or catalog.supported_features().get("kraft.version", (0, 0))[1] < 1:
        return []  # before 3.9 there is no dynamic quorum to compare
    session = QuorumSession(ctx)
    ctx.cleanups.append(session.stop)
    return [Case(f"live-quorum/{step}", (), partial(_diff_step, session, step)) for step in STEPS]


def _diff_step(session: QuorumSession, step: str, runs: list[ToolRun]) -> list[str]:
    return session.diff(step)


__all__ = ["STEPS", "QuorumSession", "cases", "comparable", "mask"]
