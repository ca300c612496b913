"""`kraftsim metadata-shell` against Kafka's MetadataShell, line for line.

A simulated cluster (a controller, two brokers, topics, a broker config, an ACL) is
snapshotted by kraftsim; both shells then answer the same commands on that snapshot and on
the log segment it came from: one interactive session each (commands on stdin: ls, cat of
features, a broker, a controller, a topic and a partition, find, tree, cd, pwd, errors),
and a few commands given as arguments. Their stdout must be the same, line for line.
Kafka's shell is asked as the release under test and kraftsim's with `--release` of it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterable

from kraftsim.conformance.cases.base import Case, ReleaseContext
from kraftsim.conformance.compare import POLICY_MARK, unified
from kraftsim.conformance.dist import KafkaUnavailable
from kraftsim.conformance.tools import ToolRun, run_tool

GROUP = "metadata-shell"
TIMEOUT_S = 60

#: The interactive session: every command of the shell, the answers Kafka's tests rely on.
SESSION = (
    "ls", "ls /image", "ls /image/features /image/cluster", "ls /image/features/metadataVersion /image/cluster",
    "cat /image/features/metadataVersion /image/features/finalized_*", "cat /image/provenance",
    "cat /image/cluster/brokers/2", "cat /image/cluster/brokers/*", "cat /image/cluster/controllers/1",
    "ls /image/topics/byName/topic-0", "cat /image/topics/byName/topic-0/name /image/topics/byName/topic-0/0",
    "cat /image/topics/byName/*/1", "find /image/cluster /image/topics /image/configs /image/acls /local",
    "tree /image/topics /image/configs /image/acls /image/scram", "tree /local /image/producerIds",
    "cd /image/topics/byName", "pwd", "ls", "cat topic-1/id", "cd ../..", "pwd", "cd", "pwd",
    "cat /image", "cat /nope", "ls /nope", "find /nope", "tree /nope", "cd /nope", "cd /local/version",
    "bogus", "tr /local", "c", "cat", "ls -l", "man ls", "man nope", "man cd extra", "help", "ls -h", "cd -h",
    "tree --help", "pwd -h", "cat /local/version -x", "history 3", "history x", "history -1", "history 0",
)
#: Commands given as arguments (one JVM each for Kafka: keep it short).
ARGUMENTS = (("ls", "/image"), ("tree", "/image/features"), ("pwd",), ("find", "/nope"))
#: SCRAM credentials as `kafka-storage format --add-scram` puts them in the bootstrap records.
SCRAM = ('SCRAM-SHA-512=[name=alice,iterations=8192,salt="N3E=",saltedpassword="YCE="]',
         'SCRAM-SHA-256=[name=bob,iterations=4096,salt="N3E=",saltedpassword="YCE="]')


def _simulated_snapshot(ctx: ReleaseContext) -> tuple[Path, Path] | None:
    """(snapshot, segment) of a small simulated cluster of this release's line."""
    work = ctx.scratch("shell-lines")
    sim = work / "sim"
    steps = [
        ["cluster", "create", str(sim), "--controllers", "1", "--brokers", "2", "--release", ctx.line, "--seed", "0"],
        ["topics", "--cluster", str(sim), "create", "--count", "2", "--partitions", "2", "--replication-factor", "2"],
        ["configs", "--cluster", str(sim), "--alter", "--entity-type", "brokers", "--entity-name", "2",
         "--add-config", "log.retention.ms=1000"],
        ["acls", "--cluster", str(sim), "--add", "--allow-principal", "User:alice", "--operation", "Read",
         "--topic", "topic-0"],
    ]
    for argv in steps:
        if ctx.kraftsim(argv).code != 0:
            return None
    metadata = sim / "node-1" / "__cluster_metadata-0"
    segments = sorted(metadata.glob("*.log"))
    dump = ctx.kraftsim(["log", "dump", "--json", str(metadata)])
    offsets = [line for line in dump.stdout.splitlines() if line.startswith("{")]
    if not segments or not offsets:
        return None
    end = int(json.loads(offsets[-1])["offset"]) + 1
    out = work / "snapshot"
    out.mkdir()
    if ctx.kraftsim(["snapshot", "create", "--at", str(end), "-o", str(out), str(metadata)]).code != 0:
        return None
    made = sorted(out.glob("*.checkpoint"))
    return (made[0], segments[0]) if made else None


def _inputs(ctx: ReleaseContext) -> tuple[Path, Path] | None:
    """The snapshot and segment, made once per release."""
    if "shell-lines" not in ctx.memo:
        ctx.memo["shell-lines"] = _simulated_snapshot(ctx)
    inputs: tuple[Path, Path] | None = ctx.memo["shell-lines"]
    return inputs


def _kraftsim_shell(ctx: ReleaseContext, path: Path, args: Iterable[str], stdin: str | None) -> ToolRun:
    """`kraftsim metadata-shell` as a user runs it (a process: the interactive session reads stdin)."""
    argv = [sys.executable, "-m", "kraftsim", "metadata-shell", "--release", ctx.version, "-s", str(path), *args]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[3])]
                                        + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    try:
        done = subprocess.run(argv, input=stdin or "", capture_output=True, text=True, timeout=TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        return ToolRun(tuple(argv), -1, "", f"no answer within {TIMEOUT_S} s")
    return ToolRun(tuple(argv), done.returncode, done.stdout, done.stderr)


#: Kafka's shell asked again when it answered before its loader caught up (see _asked).
RETRIES = 3
#: Runs of Kafka's shell in all when it gives no answer (see kafka_shell).
HANG_ATTEMPTS = 3


def kafka_shell(ctx: ReleaseContext, args: list[str], stdin: str | None, *, timeout: float = TIMEOUT_S) -> ToolRun:
    """Kafka's metadata shell on `args`, run again (up to HANG_ATTEMPTS in all) when it gives no
    answer within `timeout`; KafkaUnavailable after the last. Why: a 3.7 shell on a small file
    can wait forever. Its loader publishes only once it knows the file's high-water mark, which
    the file reader exposes when it has read the last batch; when the loader applied that batch
    first, no later batch comes to publish, and waitUntilCaughtUp loops for ever (seen in CI on
    a one-batch bootstrap.checkpoint, never when run alone)."""
    for attempt in range(1, HANG_ATTEMPTS + 1):
        try:
            return run_tool(ctx.dist, "metadata-shell", args, stdin=stdin, timeout=timeout)
        except KafkaUnavailable:
            if attempt == HANG_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def _asked(ctx: ReleaseContext, label: str, args: list[str], stdin: str | None, ours: ToolRun) -> list[str]:
    """Kafka's shell against kraftsim's answer `ours`; the differences. Kafka is asked again (up
    to RETRIES times) when its answer differs: it may run a command before its loader has caught up
    (MetadataShell.waitUntilCaughtUp returns after the first batch) and then answers from an
    earlier or an empty image, which on a loaded machine happened twice in a row (policy
    shell-whole-file when a later answer agrees)."""
    diffs = _compare(label, kafka_shell(ctx, args, stdin), ours)
    if not diffs:
        return diffs
    for _ in range(RETRIES):
        diffs = _compare(label, kafka_shell(ctx, args, stdin), ours)
        if not diffs:
            return [POLICY_MARK + "shell-whole-file"]
    return diffs


def _compare(label: str, kafka: ToolRun, ours: ToolRun) -> list[str]:
    diffs = []
    if (kafka.code == 0) != (ours.code == 0):
        diffs.append(f"{label}: exit status: Kafka {kafka.code}, kraftsim {ours.code}: {ours.stderr.strip()[:300]}")
    return diffs + unified(kafka.stdout.splitlines(), ours.stdout.splitlines(), label)


def _session_case(ctx: ReleaseContext, label: str, which: int) -> Case:
    def check(_: list[ToolRun]) -> list[str]:
        paths = _inputs(ctx)
        if paths is None:
            return ["kraftsim could not build the simulated cluster's snapshot"]
        path = paths[which]
        stdin = "\n".join(SESSION) + "\n"
        return _asked(ctx, f"{label} session", ["--snapshot", str(path)], stdin, _kraftsim_shell(ctx, path, [], stdin))

    return Case(f"{GROUP}/lines/{label} session", (), check)


def _arguments_case(ctx: ReleaseContext, args: tuple[str, ...]) -> Case:
    def check(_: list[ToolRun]) -> list[str]:
        paths = _inputs(ctx)
        if paths is None:
            return ["kraftsim could not build the simulated cluster's snapshot"]
        return _asked(ctx, " ".join(args), ["--snapshot", str(paths[0]), *args], None,
                      _kraftsim_shell(ctx, paths[0], args, None))

    return Case(f"{GROUP}/lines/snapshot {' '.join(args)}", (), check)


def _bootstrap_case(ctx: ReleaseContext) -> Case:
    """`tree /image` of a bootstrap.checkpoint formatted by kraftsim, with SCRAM credentials
    where the release's kafka-storage has --add-scram (3.5 on)."""
    catalog = ctx.catalog()
    with_scram = catalog is not None and catalog.supports("scram", catalog.latest_production)
    scram = [arg for cred in SCRAM for arg in ("--add-scram", cred)] if with_scram else []

    def check(_: list[ToolRun]) -> list[str]:
        directory = ctx.scratch("shell-scram") / "meta"
        formatted = ctx.kraftsim(["storage", "format", "--dir", str(directory), "--node-id", "1", "--cluster-id",
                                  "h1CtT2YxRtilk1X_2jpd8Q", "--release", ctx.line, *scram])
        files = sorted(directory.glob("*.checkpoint"))
        if formatted.code != 0 or not files:
            return [f"kraftsim storage format {' '.join(scram[:1])}: exit {formatted.code}: "
                    f"{formatted.stderr.strip()[:300]}"]
        return _asked(ctx, "bootstrap tree /image", ["--snapshot", str(files[0]), "tree", "/image"], None,
                      _kraftsim_shell(ctx, files[0], ["tree", "/image"], None))

    return Case(f"{GROUP}/lines/bootstrap{' with SCRAM' if with_scram else ''} tree /image", (), check)


def _missing_file_case(ctx: ReleaseContext) -> Case:
    """A snapshot path that does not exist: Kafka's message, its exit status and kraftsim's
    (policy shell-bad-input-exit)."""

    def check(_: list[ToolRun]) -> list[str]:
        missing = ctx.scratch("shell-missing") / "00000000000000000010-0000000001.checkpoint"
        kafka = kafka_shell(ctx, ["--snapshot", str(missing), "ls"], None)
        ours = _kraftsim_shell(ctx, missing, ["ls"], None)
        first = kafka.stderr.splitlines()[:1]
        diffs = unified(first, ours.stderr.splitlines(), "missing snapshot stderr")
        diffs += unified(kafka.stdout.splitlines(), ours.stdout.splitlines(), "missing snapshot stdout")
        if (kafka.code, ours.code) != (1, 2):
            diffs.append(f"missing snapshot: exit status: Kafka {kafka.code}, kraftsim {ours.code}")
        return diffs or [POLICY_MARK + "shell-bad-input-exit"]

    return Case(f"{GROUP}/lines/missing snapshot", (), check)


def cases(ctx: ReleaseContext) -> Iterable[Case]:
    if not ctx.dist.release.shell or ctx.missing_line():
        return
    yield _session_case(ctx, "snapshot", 0)
    yield _session_case(ctx, "segment", 1)
    for args in ARGUMENTS:
        yield _arguments_case(ctx, args)
    yield _bootstrap_case(ctx)
    yield _missing_file_case(ctx)
