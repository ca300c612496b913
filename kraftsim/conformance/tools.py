"""Running one of a fetched release's tools as a bounded subprocess.

Each tool runs as Kafka's bin scripts run it: its main class on the release's classpath,
with logging at WARN to stderr (Kafka's tools-log4j configuration). Every run has a
timeout and its own process group, which is killed whole when the timeout passes.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import AnyStr, Sequence

from kraftsim.conformance.dist import KafkaDist, KafkaUnavailable

TOOL_TIMEOUT_S = 120

MAIN_CLASSES = {
    "storage": "kafka.tools.StorageTool",
    "metadata-shell": "org.apache.kafka.shell.MetadataShell",
    "server": "kafka.Kafka",
}

_LOG4J1 = """log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.appender.stderr.Target=System.err
"""
_LOG4J2 = """status = error
appender.stderr.type = Console
appender.stderr.name = STDERR
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = {level}
rootLogger.appenderRef.stderr.ref = STDERR
"""
_LOG4J2_FILE = """status = error
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = {path}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
"""
_LOG4J1_FILE = """log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File={path}
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
"""


@dataclass(frozen=True)
class ToolRun:
    """What a tool did: its exit code and its two output streams."""

    argv: tuple[str, ...]
    code: int
    stdout: str
    stderr: str

    def text(self) -> str:
        return self.stdout + self.stderr


def main_classes(release: str) -> dict[str, str]:
    """The admin tools' main classes: metadata-quorum moved from core (Scala) to tools in 3.4,
    cluster in 3.5, features in 3.6, topics, get-offsets, leader-election and reassign-partitions
    in 3.7, consumer-groups in 3.8, acls and broker-api-versions in 4.0, configs in 4.4 (as the
    released jars hold them, the tools' class where a release holds both); client-metrics came
    in 3.7 (no entry before)."""
    major, minor = (int(x) for x in release.split(".")[:2])
    scala = major < 4
    before_3_7 = scala and minor < 7
    quorum = "kafka.admin.MetadataQuorumCommand" if (major, minor) < (3, 4) else "org.apache.kafka.tools.MetadataQuorumCommand"
    return {"topics": "kafka.admin.TopicCommand" if before_3_7 else "org.apache.kafka.tools.TopicCommand",
            "metadata-quorum": quorum,
            "configs": "kafka.admin.ConfigCommand" if (major, minor) < (4, 4) else "org.apache.kafka.tools.ConfigCommand",
            "acls": "kafka.admin.AclCommand" if scala else "org.apache.kafka.tools.AclCommand",
            "api-versions": ("kafka.admin.BrokerApiVersionsCommand" if scala
                             else "org.apache.kafka.tools.BrokerApiVersionsCommand"),
            "features": "kafka.admin.FeatureCommand" if (major, minor) < (3, 6) else "org.apache.kafka.tools.FeatureCommand",
            "quorum": quorum,
            "cluster": "kafka.tools.ClusterTool" if (major, minor) < (3, 5) else "org.apache.kafka.tools.ClusterTool",
            "leader-election": ("kafka.admin.LeaderElectionCommand" if before_3_7
                                else "org.apache.kafka.tools.LeaderElectionCommand"),
            "reassign-partitions": ("kafka.admin.ReassignPartitionsCommand" if before_3_7
                                    else "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"),
            "consumer-groups": ("kafka.admin.ConsumerGroupCommand" if (major, minor) < (3, 8)
                                else "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"),
            "transactions": "org.apache.kafka.tools.TransactionsCommand",
            "get-offsets": "kafka.tools.GetOffsetShell" if before_3_7 else "org.apache.kafka.tools.GetOffsetShell",
            **({} if before_3_7 else {"client-metrics": "org.apache.kafka.tools.ClientMetricsCommand"})}


def main_class(dist: KafkaDist, tool: str) -> str:
    if tool == "dump-log":
        return dist.release.dump_log_class
    if tool == "metadata-shell" and not dist.release.shell:
        raise KafkaUnavailable(f"Maven Central serves no kafka-shell {dist.release.version}: no metadata shell")
    return MAIN_CLASSES.get(tool) or main_classes(dist.release.version)[tool]


def log_config_options(dist: KafkaDist, *, log_file: Path | None = None, level: str = "WARN") -> list[str]:
    """JVM options pointing both log4j generations at a configuration (stderr, or a file for a server)."""
    conf_dir = dist.home / "conf"
    conf_dir.mkdir(exist_ok=True)
    if log_file is None:
        v1, v2 = conf_dir / "tools-log4j.properties", conf_dir / f"tools-log4j2-{level}.properties"
        if not v1.is_file():
            v1.write_text(_LOG4J1, encoding="utf-8")
        if not v2.is_file():
            v2.write_text(_LOG4J2.format(level=level), encoding="utf-8")
    else:
        v1, v2 = log_file.with_suffix(".log4j.properties"), log_file.with_suffix(".log4j2.properties")
        v1.write_text(_LOG4J1_FILE.format(path=log_file), encoding="utf-8")
        v2.write_text(_LOG4J2_FILE.format(path=log_file), encoding="utf-8")
    return [f"-Dlog4j.configuration=file:{v1}", f"-Dlog4j2.configurationFile={v2}"]


def java_command(dist: KafkaDist, tool: str, args: Sequence[str], *, heap: str = "256m",
                 log_file: Path | None = None) -> list[str]:
    return [str(dist.java.path), f"-Xmx{heap}", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
            *log_config_options(dist, log_file=log_file), "-cp", dist.classpath, main_class(dist, tool), *args]


def kill_group(proc: subprocess.Popen[str] | subprocess.Popen[bytes]) -> None:
    """Kill a process started with start_new_session and everything it started."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run_tool(dist: KafkaDist, tool: str, args: Sequence[str], *, timeout: float = TOOL_TIMEOUT_S,
             cwd: Path | None = None, stdin: str | None = None) -> ToolRun:
    """Run one tool to the end (or kill it at the timeout) and return its output."""
    cmd = java_command(dist, tool, args)
    proc = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    out, err = communicate_bounded(proc, stdin, timeout,
                                   f"Kafka {dist.release.version} {tool} {' '.join(args)}: no answer within "
                                   f"{timeout:.0f} s; killed")
    return ToolRun(tuple(args), proc.returncode, out, err)


def communicate_bounded(proc: subprocess.Popen[AnyStr], data: AnyStr | None, timeout: float,
                        timed_out: str) -> tuple[AnyStr, AnyStr]:
    """`proc.communicate(data)` within `timeout`; past it the process group is killed and
    KafkaUnavailable(timed_out) raised. The group is never left running."""
    try:
        return proc.communicate(data, timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        proc.communicate(timeout=30)
        raise KafkaUnavailable(timed_out) from None
    finally:
        if proc.poll() is None:
            kill_group(proc)
            proc.wait(timeout=30)


# ----------------------------------------------------------------------------------- batches

BATCH_MAIN = "ToolBatch"
BATCH_SECONDS_PER_COMMAND = 10
_BATCH_SOURCE = Path(__file__).parent / "java" / "ToolBatch.java"


def find_javac(dist: KafkaDist) -> str | None:
    """The javac beside the release's java, else PATH's; None without one (a JRE only)."""
    beside = dist.java.path.resolve().parent / "javac"
    return str(beside) if beside.is_file() else shutil.which("javac")


def compiled(dist: KafkaDist, source: Path, text: str, stem: str, javac: str | None, *, classpath: bool) -> Path:
    """`text` (the source of the class in `source`) compiled into `dist.home/STEM-<hash of text>`,
    reused while the text is unchanged; `classpath`: against the release's jars."""
    out = dist.home / f"{stem}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"
    if (out / f"{source.stem}.class").is_file():
        return out
    if javac is None:
        raise KafkaUnavailable(f"compiling {source.name} for Kafka {dist.release.version} needs javac (a JDK "
                               f"{dist.java.version}+, not only a JRE): none beside {dist.java.path} or on PATH")
    staging = Path(tempfile.mkdtemp(prefix=f".{stem}.", dir=dist.home))
    try:
        src = staging / "src" / source.name
        src.parent.mkdir()
        src.write_text(text, encoding="utf-8")
        classes = staging / "classes"
        cmd = [javac, "-nowarn", "-d", str(classes), *(["-cp", dist.classpath] if classpath else []), str(src)]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)
        if done.returncode != 0:
            first = (done.stderr.strip().splitlines() or ["no message"])[0]
            raise KafkaUnavailable(f"cannot compile {source.name} for Kafka {dist.release.version}: {first}")
        if out.exists():
            shutil.rmtree(out)
        classes.rename(out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out


def batch_classes(dist: KafkaDist) -> Path | None:
    """ToolBatch compiled for this release (cached beside its jars, by source hash), or None without a javac."""
    text = _BATCH_SOURCE.read_text(encoding="utf-8")
    out = dist.home / f"toolbatch-{hashlib.sha256(text.encode()).hexdigest()[:12]}"
    if (out / f"{BATCH_MAIN}.class").is_file():
        return out
    javac = find_javac(dist)
    return None if javac is None else compiled(dist, _BATCH_SOURCE, text, "toolbatch", javac, classpath=False)


def run_batch(dist: KafkaDist, commands: Sequence[tuple[str, Sequence[str]]]) -> list[ToolRun]:
    """Run (tool, args) commands in order, in as few JVMs as possible (one each without a javac).

    Only for tools that finish by themselves and start no servers: storage, features'
    offline subcommands (version-mapping, feature-dependencies). A command that ends the
    JVM itself (argparse4j calls System.exit on a usage error) ends its batch: it is run
    again alone, and the batch goes on with the commands after it.
    """
    classes = batch_classes(dist) if commands else None
    if classes is None:
        return [run_tool(dist, tool, args) for tool, args in commands]
    runs: list[ToolRun] = []
    while len(runs) < len(commands):
        rest = commands[len(runs):]
        done = _one_batch(dist, classes, rest)
        runs += done
        if len(done) < len(rest):
            tool, args = rest[len(done)]
            runs.append(run_tool(dist, tool, args))
    return runs


def _one_batch(dist: KafkaDist, classes: Path, commands: Sequence[tuple[str, Sequence[str]]]) -> list[ToolRun]:
    lines = []
    for tool, args in commands:
        if any("\t" in a or "\n" in a for a in args):
            raise ValueError(f"an argument of {tool} holds a tab or a newline: {args!r}")
        lines.append("\t".join([main_class(dist, tool), *args]))
    cmd = [str(dist.java.path), "-Xmx512m", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
           *log_config_options(dist), "-cp", f"{classes}{os.pathsep}{dist.classpath}", BATCH_MAIN]
    timeout = 60 + BATCH_SECONDS_PER_COMMAND * len(commands)
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    out, _ = communicate_bounded(proc, ("\n".join(lines) + "\n\n").encode(), timeout,
                                 f"Kafka {dist.release.version}: a batch of {len(commands)} tool runs did not "
                                 f"finish within {timeout} s; killed")
    return _parse_batch(out, commands)


def _parse_batch(out: bytes, commands: Sequence[tuple[str, Sequence[str]]]) -> list[ToolRun]:
    runs: list[ToolRun] = []
    at = 0
    while at < len(out) and len(runs) < len(commands):
        end = out.find(b"\n", at)
        head = out[at:end].decode().split() if end >= 0 else []
        if len(head) != 4 or head[0] != "@@toolbatch":
            break
        code, n_out, n_err = int(head[1]), int(head[2]), int(head[3])
        body = end + 1
        stdout = out[body:body + n_out].decode("utf-8", "replace")
        stderr = out[body + n_out:body + n_out + n_err].decode("utf-8", "replace")
        at = body + n_out + n_err
        runs.append(ToolRun(tuple(commands[len(runs)][1]), code, stdout, stderr))
    return runs
