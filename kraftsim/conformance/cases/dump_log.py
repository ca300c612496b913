"""kafka-dump-log --cluster-metadata-decoder against `kraftsim log dump`, on every kind of
file kraftsim writes and on the files Kafka's format writes.

For each file two cases: `payloads` (Kafka reads it without error, and its decoded records
equal `kraftsim log dump --json`'s, record by record) and `text` (kafka-dump-log's whole
text against `kraftsim log dump`'s, which prints the same layout). kraftsim's files:
its format's bootstrap.checkpoint (and a standalone controller's zero checkpoint, 3.9 on),
a simulated cluster's log segment after feature changes, its snapshot at the log's end,
a lossless downgrade snapshot and a KIP-778 lossy one. They are written while the cases
are planned, so Kafka's runs can share one JVM.

Two irregular copies of the simulated log's segment, dumped together: one whose batches skip
offsets (two batches taken out), one that starts after the offset in its name (its first
batches taken out). Kafka dumps both, exits 0 and notes the jumps on stderr; so must kraftsim.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from kraftsim.conformance.cases.base import Case, ReleaseContext
from kraftsim.conformance.cases.nodes import CLUSTER_ID, Node
from kraftsim.conformance.compare import compare_payloads, compare_runs, dump_log_payloads, json_dump_payloads
from kraftsim.conformance.tools import ToolRun
from kraftsim.protocol.batch import BatchSlice, split_batches

GROUP = "dump-log"


def _pair(ctx: ReleaseContext, label: str, path: Path, before: tuple[tuple[str, tuple[str, ...]], ...] = ()) -> Iterable[Case]:
    """The payloads and text cases of one file; `before` are Kafka runs that make the file."""
    dump = ("dump-log", ("--cluster-metadata-decoder", "--files", str(path)))

    def payloads(runs: list[ToolRun]) -> list[str]:
        kafka = runs[-1]
        ours = ctx.kraftsim(["log", "dump", "--json", str(path)])
        diffs = [] if kafka.code == 0 and ours.code == 0 else \
            [f"exit codes: kafka-dump-log {kafka.code}, kraftsim log dump --json {ours.code}"]
        return diffs + compare_payloads(dump_log_payloads(kafka.stdout), json_dump_payloads(ours.stdout), path.name)

    def text(runs: list[ToolRun]) -> list[str]:
        return compare_runs(runs[-1], ctx.kraftsim(["log", "dump", "--release", ctx.line, str(path)]))

    yield Case(f"{GROUP}/{label}/payloads", (*before, dump), payloads)
    yield Case(f"{GROUP}/{label}/text", (*before, dump), text)


def _kraftsim_format(ctx: ReleaseContext, role: str, flags: list[str]) -> Node | None:
    node = Node(ctx, f"dump-{role}", role)
    run = ctx.kraftsim(["storage", "format", "--release", ctx.line, "--seed", "0", "-c", node.config,
                        "-t", CLUSTER_ID, *flags])
    return node if run.code == 0 else None


def _sim_cluster(ctx: ReleaseContext) -> Path | None:
    """A simulated cluster whose log holds registrations and feature changes; its metadata dir."""
    catalog = ctx.catalog()
    if catalog is None:
        return None
    work = ctx.scratch("dump-sim")
    sim = work / "sim"
    if ctx.kraftsim(["cluster", "create", str(sim), "--controllers", "1", "--brokers", "1", "--release", ctx.line,
                     "--seed", "0"]).code != 0:
        return None
    floor = catalog.safe_downgrade_floor(catalog.latest_production)
    for args in (["downgrade", "--feature", f"metadata.version={floor.level}"],
                 ["upgrade", "--feature", f"metadata.version={catalog.latest_production.level}"]):
        ctx.kraftsim(["features", "--cluster", str(sim), "--release", ctx.line, *args])
    return sim / "node-1" / "__cluster_metadata-0"


def _snapshots(ctx: ReleaseContext, metadata_dir: Path) -> list[tuple[str, Path]]:
    """kraftsim's snapshots of the simulated log's end: as is, lossless-downgraded, KIP-778 lossy."""
    catalog = ctx.catalog()
    log = sorted(metadata_dir.glob("*.log"))
    if not log or catalog is None:
        return []
    end = ctx.kraftsim(["log", "dump", "--json", str(log[0])])
    offsets = [e[0] for e in json_dump_payloads(end.stdout)]
    if not offsets:
        return []
    offset = max(offsets) + 1
    lp = catalog.latest_production
    floor = catalog.safe_downgrade_floor(lp)
    lossy = [mv for mv in catalog.metadata_versions if catalog.minimum.level <= mv.level < floor.level]
    plans = [("snapshot", []), ("snapshot, lossless downgrade", ["--metadata-version", floor.version])]
    if lossy:
        plans.append(("snapshot, KIP-778 lossy downgrade", ["--metadata-version", lossy[-1].version, "--allow-loss"]))
    made = []
    for i, (label, flags) in enumerate(plans):
        out = metadata_dir.parent.parent / f"snapshot-{i}"
        out.mkdir()
        run = ctx.kraftsim(["snapshot", "create", "--offset", str(offset), "--release", ctx.line, *flags,
                            "-o", str(out), str(log[0])])
        files = sorted(out.glob("*.checkpoint"))
        if run.code == 0 and files:
            made.append((label, files[0]))
    return made


def _irregular_segments(ctx: ReleaseContext, segment: Path) -> list[Path]:
    """Copies of `segment` that skip offsets (two, so the order of files counts too) and that
    start after their name; [] if it is too short."""
    pieces = [p.data for p in split_batches(segment.read_bytes()) if isinstance(p, BatchSlice)]
    if len(pieces) < 6:
        return []
    work = ctx.scratch("dump-irregular")
    copies = {"gaps": [b for i, b in enumerate(pieces) if i not in (2, 4)],
              "late": pieces[3:],
              "more-gaps": [b for i, b in enumerate(pieces) if i != 1]}
    out = []
    for folder, kept in copies.items():
        path = work / folder / segment.name
        path.parent.mkdir()
        path.write_bytes(b"".join(kept))
        out.append(path)
    return out


def _irregular_case(ctx: ReleaseContext, files: list[Path]) -> Case:
    dump = ("dump-log", ("--cluster-metadata-decoder", "--files", ",".join(map(str, files))))

    def text(runs: list[ToolRun]) -> list[str]:
        return compare_runs(runs[-1], ctx.kraftsim(["log", "dump", "--release", ctx.line, *map(str, files)]))

    return Case(f"{GROUP}/kraftsim cluster log, irregular offsets/text", (dump,), text)


def cases(ctx: ReleaseContext) -> Iterable[Case]:
    # Kafka's own format output, read back by both.
    node = Node(ctx, "dump-kafka-format", "combined")
    fmt = ("storage", ("format", "-c", node.config, "-t", CLUSTER_ID))
    kafka_file = node.root / "data" / "bootstrap.checkpoint"
    if ctx.dist.release.line_tuple >= (4, 4):  # KIP-1170: the bootstrap records go to the zero checkpoint
        kafka_file = node.root / "data" / "__cluster_metadata-0" / "00000000000000000000-0000000000.checkpoint"
    yield from _pair(ctx, "kafka format", kafka_file, before=(fmt,))
    if ctx.catalog() is None:
        return
    formatted = _kraftsim_format(ctx, "combined", [])
    if formatted is not None:
        for path in sorted(formatted.root.rglob("*.checkpoint")):
            yield from _pair(ctx, f"kraftsim format {path.name}", path)
    if ctx.dist.release.line_tuple >= (3, 9):
        standalone = _kraftsim_format(ctx, "standalone", ["--standalone"])
        if standalone is not None:
            for path in sorted(standalone.root.rglob("*.checkpoint")):
                yield from _pair(ctx, f"kraftsim format --standalone {path.name}", path)
    metadata_dir = _sim_cluster(ctx)
    if metadata_dir is None:
        return
    for path in sorted(metadata_dir.glob("*.log")):
        yield from _pair(ctx, "kraftsim cluster log", path)
        irregular = _irregular_segments(ctx, path)
        if irregular:
            yield _irregular_case(ctx, irregular)
    for label, path in _snapshots(ctx, metadata_dir):
        yield from _pair(ctx, f"kraftsim {label}", path)
