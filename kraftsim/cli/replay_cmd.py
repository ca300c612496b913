"""`kraftsim replay PATH...`: load a log directory, snapshot, segment or bootstrap file, print
what the image holds, and verify it (kraftsim.image.verification.verify).

For a directory every snapshot is checked against the log; for every path the image's
lossless downgrades are checked to round-trip; with several directories (replicas of one
quorum) they are compared at every common offset and each one's extra tail is listed.
`--json` prints one object: {"results": [...], "replicas": ... or null, "ok": bool}.

Exit status: 0 when every check passes, 1 when one fails, 2 for bad input (missing or
unreadable file, wrong kind, offset out of range, unknown version), with one line on stderr.
The load checks and the summary live in kraftsim.image (replay_path, image_summary,
summary_lines); the helpers here (argument parsing, printing) are shared by the other
replay-family commands.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any, Callable

import msgspec

from kraftsim.cli.common import add_at_option, add_catalog_options, add_damage_option, catalog_from_args, path_at
from kraftsim.cli.progress import show_progress
from kraftsim.errors import ClusterBusyError, KraftsimError, UsageError
from kraftsim.image import (
    KRAFT_VERSION, LoadResult, MetadataImage, MvChangeHandling, SnapshotChoice, advertised_metadata_version,
    image_summary, load_summary, mv_names, release_for_level, render_directory, render_replicas, render_roundtrip, replay_path,
    summary_lines, verify_directory, verify_replicas, verify_roundtrip,
)
from kraftsim.storage import PathKind, topic_name_error
from kraftsim.storage.names import SnapshotId
from kraftsim.storage.view import lowered_metadata_version
from kraftsim.textsafe import own, visible
from kraftsim.versions import Catalog, MetadataVersion


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("replay", help="load a metadata log, snapshot or bootstrap file, summarize and verify the image",
                       description="Load each PATH as a node would, print the image it gives, and verify it: every "
                                   "snapshot of a directory against the log, lossless downgrades round-trip, and "
                                   "with several directories, that the replicas agree. Exit 1 if a check fails.")
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="a __cluster_metadata-0 directory or a log directory holding one, a .checkpoint snapshot, "
                        "a .log segment or a bootstrap.checkpoint; several directories are compared as replicas")
    add_at_option(p)
    p.add_argument("--snapshot", default="start", metavar="start|latest|none|OFFSET-EPOCH",
                   help="which snapshot a directory load starts from (default, start: the one a node of the release "
                        "starts from, the newest, except that 3.3 to 3.5 replay a log that still starts at offset 0 "
                        "whole; latest: the newest usable one; none: the whole log)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.add_argument("--no-verify", action="store_true", help="only load and summarize")
    p.add_argument("--roundtrip", choices=("lossless", "all", "none"), default="lossless",
                   help="downgrade round trips to check: to every lower metadata.version Kafka calls a lossless "
                        "downgrade (default), to every lower one (those where this image loses nothing must "
                        "round-trip), or none; each rewrites and replays the image twice")
    p.add_argument("--progress", action="store_true", help="show progress on stderr even when it is not a terminal")
    p.add_argument("--mv-change", choices=("kafka", "kip-778"), default="kafka",
                   help="how metadata.version changes are loaded: as Kafka does (default), or rewriting the image "
                        "at each new metadata.version as KIP-778 designs it (logs of a cluster run under the "
                        "kip-778 policy)")
    add_damage_option(p)
    add_catalog_options(p)
    p.set_defaults(run=input_errors(run_replay))


# ------------------------------------------------------------------------------ shared helpers


class BadInput(UsageError):
    """Input the command cannot work with: exit 2."""


def input_errors(run: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Bad input → one line on stderr naming the path and the cause, exit 2, no traceback."""

    def wrapped(args: argparse.Namespace) -> int:
        try:
            return run(args)
        except ClusterBusyError:  # (a cluster directory held by another command: its own exit status)
            raise
        except KraftsimError as e:
            print(f"kraftsim: error: {e}", file=sys.stderr)
            return 2
        except BrokenPipeError:
            raise
        except OSError as e:
            where = e.filename if e.filename is not None else "input"
            print(f"kraftsim: error: {where}: {e.strerror or e}", file=sys.stderr)
            return 2

    return wrapped


def parse_snapshot_choice(text: str) -> SnapshotChoice:
    """`start`, `latest`, `none`, `OFFSET-EPOCH` or a snapshot file name."""
    if text in ("start", "latest", "none"):
        return text  # type: ignore[return-value]
    m = re.fullmatch(r"(\d+)-(\d+)(\.checkpoint)?", Path(text).name)
    if not m:
        raise BadInput(f"--snapshot {text}: expected start, latest, none or OFFSET-EPOCH (e.g. 7752-1)")
    return SnapshotId(int(m.group(1)), int(m.group(2)))


def metadata_version_token(text: str) -> int | str:
    """A feature level (`14`) as its number, a version (`3.6-IV2`, `3.6`) as its text."""
    text = text.strip()
    return int(text) if re.fullmatch(r"\d+", text) else text


def parse_metadata_version(catalog: Catalog, text: str) -> MetadataVersion:
    """A feature level (`14`) or a version (`3.6-IV2`, `3.6`)."""
    return catalog.metadata_version(metadata_version_token(text))


def split_offset(text: str) -> tuple[Path, int | None]:
    """`PATH` or the older `PATH@OFFSET` (a directory's state at an offset)."""
    return path_at(text, None)


def load(path: Path, catalog: Catalog, *, at: int | None = None, snapshot: SnapshotChoice = "latest",
         progress: bool = False, mv_change: MvChangeHandling = MvChangeHandling.KAFKA,
         up_to_damage: bool = False) -> LoadResult:
    """replay_path (the request checks, then load_path), with progress on stderr when asked.
    What recovery left out and where a partial load stopped are said on stderr, one line each."""
    reporter = _progress_printer(path) if progress else None
    try:
        result = replay_path(path, catalog, at=at, snapshot=snapshot, progress=reporter, mv_change=mv_change,
                             up_to_damage=up_to_damage)
    finally:
        if reporter is not None:
            print(file=sys.stderr)
    for line in (result.recovered, result.partial):
        if line is not None:
            print(f"kraftsim: {line}", file=sys.stderr)
    return result


class KraftVersionRule(msgspec.Struct, frozen=True):
    """What replay did with a kraft.version FeatureLevelRecord the log holds (3.x writes one on
    a static quorum): kept where the release whose rules apply replays it (3.x), ignored from
    4.0 (KAFKA-18979). Said in the output either way, never silently."""

    level: int
    kept: bool
    release: str
    reason: str

    def line(self) -> str:
        if self.kept:
            return (f"kraft.version {self.level}: a FeatureLevelRecord in the log, kept as Kafka {self.release} "
                    f"replays it ({self.reason})")
        return (f"kraft.version {self.level}: a FeatureLevelRecord in the log, ignored as Kafka {self.release} "
                f"replays it (from 4.0 kraft.version lives in control records alone; {self.reason}); "
                "--release 3.9 keeps it, as 3.x replays it")


def writer_release(image: MetadataImage, catalog: Catalog) -> tuple[str, str] | None:
    """(release, why) when the registered nodes tell which release wrote the log (the one whose
    nodes advertise their highest metadata.version), None when nothing does: a finalized
    metadata.version alone fits several releases (3.9 runs at 3.8-IV0)."""
    level = advertised_metadata_version(image)
    if level is None:
        return None
    return release_for_level(catalog, level).name, f"the registered nodes advertise metadata.version up to {level}"


Chooser = Callable[[MetadataImage], tuple[str, str]]


def load_as_release(path: Path, catalog: Catalog, choose: Chooser, **kwargs: Any
                    ) -> tuple[LoadResult, Catalog, KraftVersionRule | None]:
    """`load` with a kraft.version FeatureLevelRecord replayed by the rules of the release
    `choose(image)` names, and the catalog the rest of the command then reads with. Loaded once
    keeping the record; loaded again, without it, only when the log holds one and that release
    ignores it."""
    keeping = catalog.keeping_kraft_version_feature()
    result = load(path, keeping, **kwargs)
    level = result.image.features.level(KRAFT_VERSION)
    if level == 0:
        return result, catalog, None
    release, reason = choose(result.image)
    if catalog.at_release(release).keeps_kraft_version_feature():
        return result, keeping, KraftVersionRule(level, True, release, reason)
    return load(path, catalog, **kwargs), catalog, KraftVersionRule(level, False, release, reason)


def replay_rules_chooser(args: argparse.Namespace, catalog: Catalog) -> Chooser:
    """`--release R` when given, else the release the log's registered nodes run, else the
    catalog's (the newest) with that said."""
    def choose(image: MetadataImage) -> tuple[str, str]:
        if args.release is not None:
            return catalog.release.name, f"--release {args.release}"
        found = writer_release(image, catalog)
        if found is not None:
            return found[0], f"the release that wrote the log: {found[1]}"
        return catalog.release.name, "no registration tells which release wrote the log: the newest release's rules"

    return choose


def _progress_printer(path: Path) -> Callable[[int, int], None]:
    def report(done: int, total: int) -> None:
        print(f"{own(chr(13), sys.stderr)}kraftsim: replaying {path}: {done / 1e6:.1f} of {total / 1e6:.1f} MB", end="",
              file=sys.stderr,
              flush=True)

    return report


def step_printer(enabled: bool) -> Callable[[str], None] | None:
    if not enabled:
        return None
    return lambda text: print(f"kraftsim: {text}", file=sys.stderr, flush=True)


def print_json(obj: object) -> None:
    print(json.dumps(msgspec.to_builtins(obj), indent=2, ensure_ascii=False))


# ------------------------------------------------------------------------------ the command


def illegal_topic_names(image: MetadataImage) -> list[str]:
    """Kafka's Topic.validate text for each topic of `image` whose name no Kafka could have
    created (read from a file: flagged, never taken as a real cluster's)."""
    errors = (topic_name_error(t.name) for t in image.topics.sorted_topics())
    return [e for e in errors if e is not None]


def run_replay(args: argparse.Namespace) -> int:
    catalog = catalog_from_args(args)
    choice = parse_snapshot_choice(args.snapshot)
    asked = [path_at(p, args.at) for p in args.paths]
    paths = [p for p, _ in asked]
    progress = show_progress(args)
    steps = step_printer(progress)
    mv_change = MvChangeHandling.KIP_778 if args.mv_change == "kip-778" else MvChangeHandling.KAFKA
    choose = replay_rules_chooser(args, catalog)
    loaded = [load_as_release(p, catalog, choose, at=at, snapshot=choice, progress=progress, mv_change=mv_change,
                              up_to_damage=args.up_to_damage) for p, at in asked]
    loads = [result for result, _, _ in loaded]
    if any(rule is not None and rule.kept for _, _, rule in loaded):  # replicas compared as their release reads them
        catalog = catalog.keeping_kraft_version_feature()

    results: list[dict[str, object]] = []
    text: list[str] = []
    ok = True
    for path, (result, catalog_of_path, rule) in zip(paths, loaded):
        entry: dict[str, Any] = {"load": load_summary(result), "summary": image_summary(result.image, catalog_of_path)}
        lines = summary_lines(entry["load"], entry["summary"])
        if rule is not None:
            entry["kraft_version_record"] = msgspec.to_builtins(rule)
            lines.insert(1, f"  {rule.line()}")
        entry["illegal_topic_names"] = illegal = illegal_topic_names(result.image)
        lines += [f"WARNING: a topic Kafka could never have created: {text}" for text in illegal]
        if not args.no_verify:
            checks: dict[str, object] = {}
            if result.kind in (PathKind.METADATA_DIR, PathKind.LOG_DIR):
                directory = verify_directory(path, catalog=catalog_of_path, progress=steps, mv_change=mv_change)
                checks["directory"] = directory
                lines += ["verification"] + ["  " + x for x in render_directory(directory)]
                ok &= directory.ok
                hint = None if directory.ok or mv_change is MvChangeHandling.KIP_778 else _kip_778_hint(path, catalog_of_path)
                if hint is not None:
                    entry["hint"] = hint
                    lines.append(f"  hint: {hint}")
            if args.roundtrip != "none":
                trips = verify_roundtrip(result.image, catalog=catalog_of_path, targets=args.roundtrip)
                checks["roundtrip"] = trips
                if "directory" not in checks:
                    lines.append("verification")
                lines += ["  " + x for x in render_roundtrip(trips)]
                ok &= trips.ok
            entry["verification"] = checks
        results.append(entry)
        text += lines + [""]

    replicas = None
    if len(paths) > 1 and not args.no_verify:
        kinds = {r.kind for r in loads}
        if kinds <= {PathKind.METADATA_DIR, PathKind.LOG_DIR}:
            replicas = verify_replicas(paths, catalog=catalog, progress=steps, mv_change=mv_change)
            ok &= replicas.ok
            text += ["replicas"] + ["  " + x for x in render_replicas(replicas)]
        else:
            raise BadInput("several paths are compared as replicas: give only log directories")

    ok &= not any(r.partial for r in loads)  # a partial result is never a passing one
    if args.json:
        print_json({"results": results, "replicas": replicas, "ok": ok})
    else:
        print(visible("\n".join(text).rstrip("\n")))  # names from the file shown, never obeyed
    return 0 if ok else 1


def _kip_778_hint(path: Path, catalog: Catalog) -> str | None:
    """Why a log that lowers metadata.version may fail Kafka's replay: written under kraftsim's
    kip-778 policy, it holds images rewritten at the lower level, which only the same handling
    replays alike. None when the log never lowers it (or cannot be read for it)."""
    try:
        lowered = lowered_metadata_version(path, catalog.record_registry())
    except KraftsimError:
        return None
    if lowered is None:
        return None
    names = mv_names(catalog)
    high, low = (f"{names.get(level, '?')} ({level})" for level in lowered)
    return (f"this log lowers metadata.version from {high} to {low}; a log written under kraftsim's kip-778 "
            f"policy (lossy downgrades, beyond Kafka) replays as written only with --mv-change kip-778")
