"""A live Kafka node against a simulated cluster of the same release, command by command.

Kafka: one combined node formatted at the release's default, started on 127.0.0.1; two
topics are created on both sides first (kafka-topics; `kraftsim topics`), so the log
holds topic and partition records.
kraftsim: `kraftsim cluster create` with one controller and one broker on the same
release. The same kafka-features commands run on both (Kafka's with
`--bootstrap-server`, kraftsim's with `--cluster`) and each case compares exit code and
both streams. The finalized epoch (`Epoch: N` of describe) is the offset of a log that
also holds Kafka's timed records (heartbeats, NoOps), so it is masked. After the last
command the node is stopped and its metadata log is checked with `kraftsim log verify`
and `kraftsim replay`, dumped by both tools record by record, and the snapshot Kafka wrote is rewritten by
`kraftsim snapshot create` at the same offset and compared with it. Last, Kafka is started
again on the directory after kraftsim added a snapshot of the whole log at the lowest
lossless metadata.version, then at a KIP-778 lossy one: the features Kafka serves must be
the ones `kraftsim replay` predicts.

The session is one per release: the first case starts the node, the last stops it; the
release context's cleanups stop it whatever happens in between.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from kraftsim.conformance.cases.base import Case, ReleaseContext
from kraftsim.versions import Catalog
from kraftsim.conformance.compare import (
    clean_lines, compare_metadata_file, compare_payloads, compare_runs, dump_log_payloads, json_dump_payloads, unified,
)
from kraftsim.conformance.dist import KafkaUnavailable
from kraftsim.conformance.node import LiveNode
from kraftsim.conformance.tools import ToolRun, run_tool

# Kafka writes a KRaft snapshot at most this often here (default: every hour), so the
# session's log has one to compare with kraftsim's. 3.3 has no such timer (KIP-876 came with
# 3.4), only the bytes of records between snapshots (default 20 MB): there, every commit.
SNAPSHOT_INTERVAL_MS = 1000
SNAPSHOT_BYTES_3_3 = 1
#: The JVM heap of the live-unstable node.
UNSTABLE_HEAP = "384m"
_EPOCH = re.compile(r"Epoch: \d+")
_SIM_NOTE = re.compile(r"^\[cluster\] ")


@dataclass
class Session:
    ctx: ReleaseContext
    #: Both sides run with the release's own unstable-versions config (policy format_unstable)
    #: and are formatted at its LATEST_PRODUCTION (live-unstable/*).
    unstable: bool = False
    node: LiveNode | None = None
    sim_dir: Path | None = None
    failure: str | None = None
    started: bool = False
    stopped: bool = False
    diffs_seen: bool = False
    kept: Path | None = None
    #: Kafka's answer to the last kafka-features command.
    last_kafka: ToolRun | None = None

    @property
    def live(self) -> LiveNode:
        """The node, once ensure() started it without a failure."""
        if self.node is None:
            raise KafkaUnavailable("the Kafka node was not started")
        return self.node

    def ensure(self) -> list[str]:
        """Start both sides once (whichever case comes first); the failure, if any, for every case."""
        if not self.started:
            self.started = True
            self._start()
        return [self.failure] if self.failure else []

    def _start(self) -> None:
        missing = self.ctx.missing_line()
        if missing:
            self.failure = f"kraftsim cannot act as Kafka {self.ctx.line}: {missing}"
            return
        work = self.ctx.scratch("live-unstable" if self.unstable else "live-node")
        (work / "kafka").mkdir()
        catalog = self.ctx.catalog()
        timed = catalog is None or catalog.release.key >= (3, 4, 0)
        extra = (f"metadata.log.max.snapshot.interval.ms={SNAPSHOT_INTERVAL_MS}\n" if timed
                 else f"metadata.log.max.record.bytes.between.snapshots={SNAPSHOT_BYTES_3_3}\n")
        format_flags: list[str] = []
        create_flags: list[str] = []
        if self.unstable and catalog is not None:
            name = catalog.policy_text("format_unstable", "config")
            extra += f"{name}=true\n"
            format_flags = ["--release-version", catalog.latest_production.version]
            create_flags = [*format_flags, "--config", f"{name}=true"]
        self.node = LiveNode(self.ctx.dist, work / "kafka", extra_config=extra,
                             **({"heap": UNSTABLE_HEAP} if self.unstable else {}))
        self.ctx.cleanups.append(self.node.stop)
        self.sim_dir = work / "sim"
        # The same topology as the Kafka node (one combined node), on the event simulator,
        # which is the one `kraftsim topics` runs on.
        sim = self.ctx.kraftsim(["cluster", "create", str(self.sim_dir), "--engine", "events", "--controllers", "0",
                                 "--brokers", "0", "--combined", "1", "--release", self.ctx.line, "--seed", "0",
                                 *create_flags])
        try:
            self.node.format(*format_flags)
            self.node.start()
        except KafkaUnavailable as e:
            self.keep()
            self.failure = f"the Kafka node did not start: {e} (logs kept in {self.kept})"
            return
        if sim.code != 0:
            self.failure = f"kraftsim cluster create failed (exit {sim.code}): {sim.stderr.strip()[:300]}"

    def keep(self) -> None:
        if self.node is not None and self.kept is None:
            self.kept = self.node.keep_logs("live-unstable" if self.unstable else "live-node")

    def features(self, args: list[str]) -> list[str]:
        if failed := self.ensure():
            return failed
        if self.stopped:
            return ["the Kafka node was already stopped"]
        kafka = run_tool(self.ctx.dist, "features", ["--bootstrap-server", self.live.bootstrap, *args])
        self.last_kafka = kafka
        sim = self.ctx.kraftsim(["features", "--cluster", str(self.sim_dir), "--release", self.ctx.line, *args])
        sim = ToolRun(sim.argv, sim.code, sim.stdout,
                      "\n".join(ln for ln in sim.stderr.splitlines() if not _SIM_NOTE.match(ln)))
        diffs = compare_runs(_mask_epoch(kafka), _mask_epoch(sim))
        if diffs:
            self.diffs_seen = True
        return diffs

    def stop(self) -> list[str]:
        """Stop the node (so its files are final); its logs are kept when a command differed."""
        if failed := self.ensure():
            return failed
        self.stopped = True
        node = self.live
        node.stop()
        if self.diffs_seen:
            self.keep()
        code = node.proc.returncode if node.proc else None
        # 143: the JVM's exit code after SIGTERM, as Kafka's own shutdown hook leaves it.
        return [] if code in (0, 143) else [f"the Kafka node exited with code {code} when stopped"]


def _mask_epoch(run: ToolRun) -> ToolRun:
    return ToolRun(run.argv, run.code, _EPOCH.sub("Epoch: <n>", run.stdout), run.stderr)


TOPIC_PREFIX, TOPIC_PARTITIONS = "conformance-", 3


def _topics(session: Session) -> list[str]:
    """Two topics made on both sides (kafka-topics --create; `kraftsim topics create`), then
    both tools' topic lists compared; Kafka's log then holds topic and partition records for
    the log cases that follow (dump, replay, snapshots)."""
    if failed := session.ensure():
        return failed
    ctx, node = session.ctx, session.live
    diffs = []
    for i in range(2):
        made = run_tool(ctx.dist, "topics", ["--bootstrap-server", node.bootstrap, "--create",
                                             "--topic", f"{TOPIC_PREFIX}{i}", "--partitions", str(TOPIC_PARTITIONS),
                                             "--replication-factor", "1"])
        if made.code != 0 or f"Created topic {TOPIC_PREFIX}{i}." not in made.stdout:
            diffs.append(f"kafka-topics --create {TOPIC_PREFIX}{i}: exit {made.code}: {made.text().strip()[:300]}")
    ours = ctx.kraftsim(["topics", "--cluster", str(session.sim_dir), "create", "--count", "2",
                         "--prefix", TOPIC_PREFIX, "--partitions", str(TOPIC_PARTITIONS), "--replication-factor", "1"])
    if ours.code != 0:
        diffs.append(f"kraftsim topics create: exit {ours.code}: {ours.stderr.strip()[:300]}")
    listed = run_tool(ctx.dist, "topics", ["--bootstrap-server", node.bootstrap, "--list"])
    ours_listed = ctx.kraftsim(["topics", "--cluster", str(session.sim_dir), "list"])
    kafka_names = sorted(ln.strip() for ln in listed.stdout.splitlines() if ln.strip() and not ln.startswith("__"))
    our_names = sorted(ln.strip() for ln in ours_listed.stdout.splitlines() if ln.strip())
    return diffs + unified(kafka_names, our_names, "topics")


def _metadata_dir(session: Session) -> Path:
    return session.live.data / "__cluster_metadata-0"


def _verify(session: Session) -> list[str]:
    if failed := session.ensure():
        return failed
    if not session.stopped:
        session.stop()
    run = session.ctx.kraftsim(["log", "verify", str(_metadata_dir(session))])
    return [] if run.code == 0 else [f"kraftsim log verify on Kafka's log: exit {run.code}"] + \
        [ln for ln in run.stdout.splitlines() if "PROBLEM" in ln][:10]


def _replay(session: Session) -> list[str]:
    """`kraftsim replay` loads Kafka's log and snapshots as a node would and verifies them
    (every snapshot against the log, lossless downgrade round trips); it must pass."""
    if failed := session.ensure():
        return failed
    if not session.stopped:
        session.stop()
    run = session.ctx.kraftsim(["replay", "--release", session.ctx.line, str(_metadata_dir(session))])
    if run.code == 0:
        return []
    return [f"kraftsim replay on Kafka's log: exit {run.code}"] + clean_lines(run.stdout + run.stderr)[-10:]


def _kafka_files(session: Session) -> list[Path]:
    d = _metadata_dir(session)
    return sorted(d.glob("*.log")) + sorted(d.glob("*.checkpoint"))


def _dump(session: Session) -> list[str]:
    if failed := session.ensure():
        return failed
    if not session.stopped:
        session.stop()
    diffs = []
    for path in _kafka_files(session):
        kafka = run_tool(session.ctx.dist, "dump-log", ["--cluster-metadata-decoder", "--files", str(path)])
        ours = session.ctx.kraftsim(["log", "dump", "--json", str(path)])
        if kafka.code != 0 or ours.code != 0:
            diffs.append(f"{path.name}: exit codes kafka-dump-log {kafka.code}, kraftsim log dump {ours.code}")
        diffs += compare_payloads(dump_log_payloads(kafka.stdout), json_dump_payloads(ours.stdout),
                                  f"{path.name} payloads")
    return diffs


def _snapshot(session: Session) -> list[str]:
    """kraftsim's snapshot of Kafka's log at the offset of Kafka's newest snapshot, against it."""
    if failed := session.ensure():
        return failed
    if not session.stopped:
        session.stop()
    snaps = [p for p in sorted(_metadata_dir(session).glob("*.checkpoint")) if not p.name.startswith("0" * 20 + "-")]
    if not snaps:
        return ["Kafka wrote no snapshot during the session"]
    theirs = snaps[-1]
    offset = int(theirs.name.split("-")[0])
    out = theirs.parent.parent.parent / "kraftsim-snapshot"
    out.mkdir(exist_ok=True)
    # The log alone (segments), so kraftsim does not start from Kafka's own snapshot.
    logs = sorted(_metadata_dir(session).glob("*.log"))
    run = session.ctx.kraftsim(["snapshot", "create", "--offset", str(offset), "--release", session.ctx.line,
                                "-o", str(out), *map(str, logs[:1])])
    ours = out / theirs.name
    if run.code != 0 or not ours.is_file():
        return [f"kraftsim snapshot create --offset {offset}: exit {run.code}: "
                + " | ".join(clean_lines(run.stderr)[:3])]
    return compare_metadata_file(theirs, ours)


_FINALIZED_LINE = re.compile(r"Feature: (\S+)\s+SupportedMinVersion: \S+\s+SupportedMaxVersion: \S+\s+"
                             r"FinalizedVersionLevel: (\S+)")


def _restart_on_kraftsim_snapshot(session: Session, label: str,
                                  flags_of: Callable[[Catalog], list[str] | None]) -> list[str]:
    """kraftsim writes the snapshot of Kafka's whole log (at the given metadata.version), Kafka
    starts on the directory, and the finalized features it serves must be the ones `kraftsim
    replay` predicts for that directory (which loads the same, newest, snapshot)."""
    if failed := session.ensure():
        return failed
    if not session.stopped:
        session.stop()
    ctx, node = session.ctx, session.live
    catalog = ctx.catalog()
    flags = flags_of(catalog) if catalog is not None else None
    if flags is None:
        return []
    meta = _metadata_dir(session)
    logs = sorted(meta.glob("*.log"))
    dump = ctx.kraftsim(["log", "dump", "--json", *map(str, logs)])
    offsets = [json.loads(ln)["offset"] for ln in dump.stdout.splitlines() if ln.startswith("{")]
    if not offsets:
        return ["kraftsim log dump read no record of Kafka's log"]
    end = max(offsets) + 1
    out = meta.parent.parent / f"kraftsim-{label}"
    out.mkdir()
    made = ctx.kraftsim(["snapshot", "create", "--offset", str(end), "--release", ctx.line, *flags,
                         "-o", str(out), *map(str, logs)])
    written = sorted(out.glob("*.checkpoint"))
    if made.code != 0 or not written:
        return [f"kraftsim snapshot create --offset {end} {' '.join(flags)}: exit {made.code}: "
                + " | ".join(clean_lines(made.stderr)[:3])]
    # It takes the place of Kafka's own snapshot at that offset, if Kafka wrote one.
    written[0].replace(meta / written[0].name)
    predicted = ctx.kraftsim(["replay", "--json", "--no-verify", "--release", ctx.line, str(meta)])
    try:
        features = json.loads(predicted.stdout)["results"][0]["summary"]["features"]
    except (ValueError, KeyError, IndexError):
        return [f"kraftsim replay --json on the directory: exit {predicted.code}"]
    ours = sorted(f"{name}={value['version'] if isinstance(value, dict) else value}"
                  for name, value in features.items())
    try:
        node.start()
        run = run_tool(ctx.dist, "features", ["--bootstrap-server", node.bootstrap, "describe"])
    except KafkaUnavailable as e:
        kept = node.keep_logs(label)
        return [f"Kafka did not start on kraftsim's snapshot: {e} (logs kept in {kept})"]
    finally:
        node.stop()
    theirs = sorted(f"{m.group(1)}={m.group(2)}" for m in map(_FINALIZED_LINE.match, run.stdout.splitlines())
                    if m and m.group(2) != "0")
    # kraft.version lives in the raft layer, not in the image kraftsim replays, except where
    # the release keeps it as a feature (3.9: policy kraft_version_upgrade).
    if not any(ln.startswith("kraft.version=") for ln in ours):
        theirs = [ln for ln in theirs if not ln.startswith("kraft.version=")]
    return unified(theirs, ours, "finalized features served")


def _floor_flags(catalog: Catalog) -> list[str] | None:
    lp = catalog.latest_production
    return ["--metadata-version", catalog.safe_downgrade_floor(lp).version]


def _lossy_flags(catalog: Catalog) -> list[str] | None:
    floor = catalog.safe_downgrade_floor(catalog.latest_production)
    below = [mv for mv in catalog.metadata_versions if catalog.minimum.level <= mv.level < floor.level]
    return ["--metadata-version", below[-1].version, "--allow-loss"] if below else None


def _commands(ctx: ReleaseContext) -> list[tuple[str, list[str]]]:
    """(label, kafka-features arguments) for the session, from the release's versions."""
    catalog = ctx.catalog()
    if catalog is None:
        return [("describe", ["describe"])]
    lp = catalog.latest_production
    floor = catalog.safe_downgrade_floor(lp)
    below = [mv for mv in catalog.metadata_versions if mv.level < floor.level and mv.level >= catalog.minimum.level]
    prev = catalog.previous(lp)
    features = catalog.supported_features()
    # Labels name the versions by their role (LATEST, PREVIOUS, FLOOR = lowest safe
    # downgrade target, LOSSY = the highest below it), so case names are the same for
    # every release.
    cmds: list[tuple[str, list[str]]] = [
        ("describe", ["describe"]),
        ("upgrade --release-version LATEST", ["upgrade", "--release-version", lp.version]),
        ("downgrade --metadata PREVIOUS --dry-run", ["downgrade", "--metadata", prev.version, "--dry-run"]),
        ("downgrade metadata.version=FLOOR --dry-run",
         ["downgrade", "--feature", f"metadata.version={floor.level}", "--dry-run"]),
    ]
    placeholder = catalog.latest_testing
    if placeholder.level > lp.level:
        # A level the release knows only as unstable (the next line's placeholder): the tool
        # sends it, the controller refuses it (its range stops at LATEST without
        # unstable.feature.versions.enable), alone and beside a valid update.
        cmds += [("upgrade --release-version PLACEHOLDER", ["upgrade", "--release-version", placeholder.version]),
                 ("upgrade --metadata PLACEHOLDER --dry-run", ["upgrade", "--metadata", placeholder.version, "--dry-run"]),
                 ("upgrade metadata.version=PLACEHOLDER and group.version=1",
                  ["upgrade", "--feature", f"metadata.version={placeholder.level}",
                   *(["--feature", "group.version=1"] if "group.version" in features else [])]),
                 ("describe after the placeholder", ["describe"])]
    if below:
        lossy = below[-1]
        cmds += [
            ("downgrade metadata.version=LOSSY", ["downgrade", "--feature", f"metadata.version={lossy.level}"]),
            ("downgrade --unsafe metadata.version=LOSSY",
             ["downgrade", "--unsafe", "--feature", f"metadata.version={lossy.level}"]),
        ]
    # Mixed requests: one valid and one invalid update. A 3.x controller applies the valid
    # one and refuses the other; from 4.0 the whole request is refused (the describe after
    # it shows which).
    unknown = "no.such.feature=1"
    cmds.append(("downgrade metadata.version=FLOOR and an unknown feature --dry-run",
                 ["downgrade", "--feature", f"metadata.version={floor.level}", "--feature", unknown, "--dry-run"]))
    if floor.level < lp.level:
        cmds += [("downgrade metadata.version=FLOOR", ["downgrade", "--feature", f"metadata.version={floor.level}"]),
                 ("describe after downgrade", ["describe"]),
                 ("upgrade metadata.version=LATEST and an unknown feature",
                  ["upgrade", "--feature", f"metadata.version={lp.level}", "--feature", unknown]),
                 ("describe after the mixed upgrade", ["describe"]),
                 ("upgrade metadata.version=LATEST", ["upgrade", "--feature", f"metadata.version={lp.level}"])]
    # Disabling, or downgrading to 0, a feature never finalized: 3.x writes a level-0 record.
    cmds += [("disable no.such.feature --dry-run", ["disable", "--feature", "no.such.feature", "--dry-run"]),
             ("disable no.such.feature", ["disable", "--feature", "no.such.feature"]),
             ("downgrade no.such.feature=0", ["downgrade", "--feature", "no.such.feature=0"])]
    if "group.version" in features:
        cmds += [("disable group.version --dry-run", ["disable", "--feature", "group.version", "--dry-run"]),
                 ("disable group.version", ["disable", "--feature", "group.version"]),
                 ("upgrade group.version=1", ["upgrade", "--feature", "group.version=1"])]
    if "transaction.version" in features:
        top = features["transaction.version"][1]
        cmds.append(("upgrade transaction.version=MAX+1", ["upgrade", "--feature", f"transaction.version={top + 1}"]))
    if "kraft.version" in features and catalog.policy("kraft_version_upgrade") != "applied":
        # kraft.version 1 on this static quorum: 3.9 writes a FeatureLevelRecord that describe,
        # the log cases and the restarts below carry; 4.0 answers it as done and keeps 0. (From
        # 4.1 the quorum would turn dynamic, which the later cases of this session do not expect.)
        cmds += [("upgrade kraft.version=1 --dry-run", ["upgrade", "--feature", "kraft.version=1", "--dry-run"]),
                 ("upgrade kraft.version=1 and metadata.version=LATEST",
                  ["upgrade", "--feature", "kraft.version=1", "--feature", f"metadata.version={lp.level}"]),
                 ("describe after kraft.version", ["describe"])]
    cmds += [
        ("upgrade no.such.feature=1", ["upgrade", "--feature", "no.such.feature=1"]),
        ("downgrade --release-version FLOOR", ["downgrade", "--release-version", floor.version]),
        ("upgrade metadata.version=LATEST again", ["upgrade", "--feature", f"metadata.version={lp.level}"]),
        ("describe at the end", ["describe"]),
    ]
    return cmds


def cases(ctx: ReleaseContext) -> Iterable[Case]:
    session = Session(ctx)
    commands = _commands(ctx)
    group = "live-node"

    def step(args: list[str]) -> Callable[[list[ToolRun]], list[str]]:
        return lambda _: session.features(args)

    yield Case(f"{group}/topics create and list", (), lambda _: _topics(session))
    for label, args in commands:
        yield Case(f"{group}/features {label}", (), step(args))
    yield Case(f"{group}/stopped", (), lambda _: session.stop())
    yield Case(f"{group}/log verify", (), lambda _: _verify(session))
    yield Case(f"{group}/replay", (), lambda _: _replay(session))
    yield Case(f"{group}/dump-log payloads", (), lambda _: _dump(session))
    yield Case(f"{group}/snapshot at Kafka's offset", (), lambda _: _snapshot(session))
    yield Case(f"{group}/starts on kraftsim's lossless downgrade snapshot", (),
               lambda _: _restart_on_kraftsim_snapshot(session, "lossless-snapshot", _floor_flags))
    yield Case(f"{group}/starts on kraftsim's KIP-778 lossy snapshot", (),
               lambda _: _restart_on_kraftsim_snapshot(session, "lossy-snapshot", _lossy_flags))


PLACEHOLDER_DESCRIBE = "describe after the placeholder"


def _unstable_commands(catalog: Catalog) -> list[tuple[str, list[str]]]:
    """(label, kafka-features arguments) on a node formatted at LATEST with unstable versions
    enabled: the placeholder (the release's latest testing level) is in its supported range,
    so the controller takes it; a request mixing it with an unknown feature is refused whole
    from 4.0 (3.x applies the valid part)."""
    lp, placeholder = catalog.latest_production, catalog.latest_testing
    features = catalog.supported_features(unstable=True)
    other = ["--feature", "group.version=1"] if "group.version" in features else []
    return [
        ("describe", ["describe"]),
        ("upgrade --metadata PLACEHOLDER --dry-run", ["upgrade", "--metadata", placeholder.version, "--dry-run"]),
        ("upgrade --release-version PLACEHOLDER --dry-run",
         ["upgrade", "--release-version", placeholder.version, "--dry-run"]),
        ("upgrade metadata.version=PLACEHOLDER and an unknown feature",
         ["upgrade", "--feature", f"metadata.version={placeholder.level}", "--feature", "no.such.feature=1"]),
        ("describe after the mixed upgrade", ["describe"]),
        ("upgrade metadata.version=PLACEHOLDER and another feature",
         ["upgrade", "--feature", f"metadata.version={placeholder.level}", *other]),
        (PLACEHOLDER_DESCRIBE, ["describe"]),
        ("upgrade --release-version PLACEHOLDER", ["upgrade", "--release-version", placeholder.version]),
        ("downgrade --metadata LATEST --dry-run", ["downgrade", "--metadata", lp.version, "--dry-run"]),
        ("describe at the end", ["describe"]),
    ]


def unstable_cases(ctx: ReleaseContext) -> Iterable[Case]:
    """live-unstable/*: a node whose release lists a placeholder level, formatted and started
    with unstable versions enabled, against `kraftsim cluster create --config`; the same
    requests to a node without the config are live-node/*'s PLACEHOLDER cases (refused)."""
    catalog = ctx.catalog()
    if catalog is None or catalog.latest_testing.level <= catalog.latest_production.level:
        return
    session = Session(ctx, unstable=True)
    group = "live-unstable"

    def step(args: list[str]) -> Callable[[list[ToolRun]], list[str]]:
        return lambda _: session.features(args)

    def finalized(args: list[str]) -> Callable[[list[ToolRun]], list[str]]:
        """The step, and Kafka's describe must show the placeholder finalized (so the cases
        compare the enabled path, not two refusals)."""
        def check(_: list[ToolRun]) -> list[str]:
            diffs = session.features(args)
            lines = session.last_kafka.stdout.splitlines() if session.last_kafka else []
            mv = next((ln for ln in lines if ln.startswith("Feature: metadata.version")), "")
            if not re.search(rf"FinalizedVersionLevel: {re.escape(catalog.latest_testing.version)}\b", mv):
                diffs.append(f"Kafka did not finalize the placeholder {catalog.latest_testing.version}: {mv!r}")
            return diffs
        return check

    for label, args in _unstable_commands(catalog):
        yield Case(f"{group}/features {label}", (), (finalized if label == PLACEHOLDER_DESCRIBE else step)(args))
    yield Case(f"{group}/stopped", (), lambda _: session.stop())
    yield Case(f"{group}/replay", (), lambda _: _replay(session))
    yield Case(f"{group}/dump-log payloads", (), lambda _: _dump(session))
