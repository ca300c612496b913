"""`kraftsim log dump` and `kraftsim log verify`: read Kafka's metadata files as they are.

`dump` prints records as kafka-dump-log does with its cluster-metadata decoder, or one
JSON object per record with `--json` (DESIGN.md, contract 2). Like Kafka's tool it prints a
file whose offsets skip or go back, or a segment that starts after its name, and notes the
jumps on stderr (cli/dump_gaps.py); it exits 1 only for damage it cannot read past. `verify` checks every batch
(length, magic, CRC-32C), decodes every record, writes each batch again and compares the
bytes, checks offsets and epochs across batches, files and segments and a snapshot's
header, footer and name (`storage.checks`), and reports every problem it finds, each with
its file, byte position and offset. Both open user files read-only.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Mapping, Sequence, TextIO

from kraftsim.cli.progress import StatusLine, add_progress_flag, show_progress
from kraftsim.cli.dump_gaps import OffsetGaps
from kraftsim.errors import KraftsimError, UsageError
from kraftsim.protocol.compression import NAMES as COMPRESSION_NAMES
from kraftsim.protocol.registry import Registry, load_registry
from kraftsim.protocol.scan import Problem, ScanReport, ScannedBatch, scan_file, verify_file
from kraftsim.storage.checks import directory_problems, file_problems
from kraftsim.regular_file import opened_file, why_absent
from kraftsim.storage.batchfile import decode_file_batch, stream_file_batches
from kraftsim.storage.names import PathKind, parse_segment_name, parse_snapshot_name, topic_name_error
from kraftsim.storage.view import find_metadata_files
from kraftsim.textsafe import visible

if TYPE_CHECKING:
    from kraftsim.versions import Catalog

# kafka-dump-log's labels for control records, as it prints them before the JSON (only
# LeaderChange has a colon; Kafka 4.1 on, before which it printed 'controlType: LEADER_CHANGE(2)').
_CONTROL_LABELS = {
    "LEADER_CHANGE": "LeaderChange:",
    "SNAPSHOT_HEADER": "SnapshotHeader",
    "SNAPSHOT_FOOTER": "SnapshotFooter",
    "KRAFT_VERSION": "KRaftVersion",
    "KRAFT_VOTERS": "KRaftVoters",
}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = sub.add_parser("log", help="read and check metadata log segments, snapshots and bootstrap files")
    cmds = group.add_subparsers(dest="log_command", metavar="SUBCOMMAND")
    cmds.required = True

    dump = cmds.add_parser("dump", help="print every record, as kafka-dump-log does (or JSON lines with --json)")
    dump.add_argument("paths", nargs="+", metavar="PATH",
                      help="a .log segment, a .checkpoint snapshot, a bootstrap.checkpoint, or a __cluster_metadata-0 directory")
    dump.add_argument("--json", action="store_true",
                      help="one JSON object per record: offset, epoch, control, type, version, data; and file, the "
                           "file it came from, when PATH is a directory or there are several files")
    dump.add_argument("--schemas", action="append", default=[], metavar="DIR",
                      help="an extra folder of record schema files (repeatable)")
    dump.add_argument("--release", metavar="R",
                      help="print as this Kafka release's kafka-dump-log does (default: the newest in the catalog)")
    dump.set_defaults(run=run_dump)

    verify = cmds.add_parser("verify", help="check lengths, CRCs, decoding and re-encoding of every batch, offsets and epochs across batches and segments, and snapshot headers, footers and names; exit 1 when anything is wrong")
    verify.add_argument("paths", nargs="+", metavar="PATH", help="files or __cluster_metadata-0 directories")
    verify.add_argument("--json", action="store_true",
                        help="one JSON object per file, one per line: path, ok, batches, control_batches, records, "
                             "bytes, first_offset, last_offset, by_type, compression, problems [{position, "
                             "base_offset, offset, cause}]")
    verify.add_argument("--schemas", action="append", default=[], metavar="DIR",
                        help="an extra folder of record schema files (repeatable)")
    add_progress_flag(verify)
    verify.set_defaults(run=run_verify)


def _registry(args: argparse.Namespace) -> Registry:
    """The record schemas; first, every PATH must exist (a missing one is invalid input, exit 2).
    A --schemas folder that is missing or holds a broken schema is invalid input too: exit 1
    is kept for damage in the files read."""
    for p in args.paths:
        if not Path(p).exists():
            raise UsageError(f"{p}: {why_absent(p)}")
    try:
        return load_registry(Path(d) for d in args.schemas)
    except UsageError:
        raise
    except KraftsimError as e:
        raise UsageError(str(e)) from None


def _named_files(paths: Sequence[str]) -> list[tuple[PathKind, Path]]:
    """The metadata files the command line names. A path that is none (missing, a text file,
    an unrelated directory) is invalid input, exit 2 as in every command; exit 1 stays for
    damage found in the files."""
    try:
        return find_metadata_files(paths)
    except KraftsimError as e:
        raise UsageError(str(e)) from None


def run_dump(args: argparse.Namespace) -> int:
    """Exit 1 only for damage (a batch that cannot be read, a bad snapshot); offsets that skip
    or a segment that starts after its name are dumped, noted as kafka-dump-log notes them."""
    registry = _registry(args)
    failed = False
    try:  # an unknown --release is invalid input (exit 2), not damage
        leader_change = _leader_change_text(args.release)
        gaps = OffsetGaps(_release_catalog(args.release).policy("dump_log_offset_gaps"))
    except UsageError:
        raise
    except KraftsimError as e:
        raise UsageError(str(e)) from None
    files = _named_files(args.paths)
    # Rows from a directory or from several files say which file each came from.
    name_files = len(files) > 1 or any(Path(p).is_dir() for p in args.paths)
    for kind, path in files:
        with opened_file(path) as f:
            failed |= _dump_file(args, kind, path, f, registry, gaps, name_files, leader_change)
    for line in gaps.lines():
        print(line, file=sys.stderr)
    return 1 if failed else 0


def _dump_file(args: argparse.Namespace, kind: PathKind, path: Path, f: BinaryIO, registry: Registry,
               gaps: OffsetGaps, name_files: bool, leader_change: str | None) -> bool:
    """Dump one file; True when it is damaged."""
    out = sys.stdout
    failed = False
    report = ScanReport()
    if not args.json:
        print(f"Dumping {path}", file=out)
        if path.suffix == ".log":
            print(f"Log starting offset: {_offset_from_name(path)}", file=out)
        elif kind is PathKind.BOOTSTRAP:
            print("KRaft bootstrap snapshot", file=out)
        elif kind is PathKind.SNAPSHOT and (name := parse_snapshot_name(path.name)) is not None:
            end, epoch = name.snapshot_id
            print(f"Snapshot end offset: {end}, epoch: {epoch}", file=out)
    note_offsets = gaps.file(path)
    for scanned in scan_file(f, registry, report):
        note_offsets(entry.offset for entry in scanned.entries)
        if args.json:
            for entry in scanned.entries:
                row = entry.to_json()
                if name_files:
                    row["file"] = str(path)
                out.write(json.dumps(row, ensure_ascii=False, separators=(", ", ": ")) + "\n")
        else:
            _print_batch_text(scanned, out, leader_change)
    # a segment's name that is not its first offset is no damage to Kafka's tool either
    named = kind is PathKind.SEGMENT and parse_segment_name(path.name) is not None
    for problem in report.problems + ([] if named else file_problems(kind, path, report)):
        if problem.irregular:
            continue
        failed = True
        print(f"kraftsim: error: {path}: {problem.describe()}", file=sys.stderr)
    return failed


def _release_catalog(release: str | None) -> Catalog:
    """The catalog of the release whose kafka-dump-log is mirrored (default: the newest)."""
    from kraftsim.versions import default_catalog

    return default_catalog() if release is None else default_catalog().at_release(release)


def _leader_change_text(release: str | None) -> str | None:
    """The release's fixed text for a LeaderChange record (policy dump_log_leader_change), or None: JSON."""
    if release is None:
        return None
    catalog = _release_catalog(release)
    if catalog.policy("dump_log_leader_change") != "control-type":
        return None
    return catalog.policy_text("dump_log_leader_change", "line")


def _print_batch_text(scanned: ScannedBatch, out: TextIO, leader_change: str | None = None) -> None:
    b = scanned.batch
    last_seq = -1 if b.base_sequence < 0 else b.base_sequence + b.last_offset_delta
    print(
        f"baseOffset: {b.base_offset} lastOffset: {b.last_offset} count: {b.records_count} "
        f"baseSequence: {b.base_sequence} lastSequence: {last_seq} producerId: {b.producer_id} "
        f"producerEpoch: {b.producer_epoch} partitionLeaderEpoch: {b.partition_leader_epoch} "
        f"isTransactional: {str(b.is_transactional).lower()} isControl: {str(b.is_control).lower()} "
        f"deleteHorizonMs: OptionalLong.empty position: {scanned.position} CreateTime: {b.max_timestamp} "
        f"size: {b.size} magic: {b.magic} compresscodec: {COMPRESSION_NAMES.get(b.compression, b.compression)} "
        f"crc: {b.crc} isvalid: true",
        file=out,
    )
    records = {b.base_offset + r.offset_delta: r for r in b.records()}
    for entry in scanned.entries:
        rec = records[entry.offset]
        key_size = -1 if rec.key is None else len(rec.key)
        value_size = -1 if rec.value is None else len(rec.value)
        head = (f"| offset: {entry.offset} CreateTime: {entry.timestamp} keySize: {key_size} "
                f"valueSize: {value_size} sequence: -1 headerKeys: []")
        body = entry.to_json()
        if entry.control and entry.type_name == "LEADER_CHANGE" and leader_change is not None:
            print(f"{head} {leader_change}", file=out)
        elif entry.control:
            label = _CONTROL_LABELS.get(entry.type_name, entry.type_name + ":")
            print(f"{head} {label} {json.dumps(body['data'], separators=(',', ':'))}", file=out)
        else:
            payload = {"type": body["type"], "version": body["version"], "data": body["data"]}
            print(f"{head} payload: {json.dumps(payload, separators=(',', ':'))}", file=out)


def run_verify(args: argparse.Namespace) -> int:
    registry = _registry(args)
    files = _named_files(args.paths)
    reports: dict[Path, ScanReport] = {}
    problems: dict[Path, list[Problem]] = {}
    shown = StatusLine(show_progress(args))
    for number, (kind, path) in enumerate(files, start=1):
        if path in reports:
            continue
        shown(lambda: f"log verify: file {number} of {len(files)}: {path}")
        with opened_file(path) as f:
            report = verify_file(f, registry)
            reports[path] = report
            problems[path] = report.problems + file_problems(kind, path, report)
            if not report.problems and report.by_type.get("TOPIC_RECORD"):
                problems[path] += _topic_name_problems(path, f, registry)
    shown.clear()
    named_alone = {Path(p).absolute() for p in args.paths if not Path(p).is_dir()}
    whole = {path.parent for _, path in files if path.absolute() not in named_alone}
    for path, found in directory_problems(files, reports, whole).items():
        problems[path].extend(found)
    for path, found in _snapshots_against_log(files, problems).items():
        if path in problems:  # a snapshot not named on the command line is not reported on
            problems[path].extend(found)
    failed = 0
    for _, path in files:
        report, found = reports[path], problems[path]
        failed += bool(found)
        if args.json:
            print(json.dumps(_verify_json(path, report, found)))
            continue
        status = "OK" if not found else f"{len(found)} PROBLEM(S)"
        span = "" if report.first_offset is None or report.next_offset is None else \
            f", offsets {report.first_offset}..{report.next_offset - 1}"
        print(f"{path}: {status}: {report.batches} batches ({report.control_batches} control), "
              f"{report.records} records, {report.size} bytes{span}")
        for name, count in sorted(report.by_type.items()):
            print(f"    {name}: {count}")
        codecs = {k: v for k, v in report.compression.items() if k != "none"}
        if codecs:
            print("    compressed batches: " + ", ".join(f"{k} {v}" for k, v in sorted(codecs.items())))
        for problem in sorted(found, key=lambda p: p.position):
            print(f"    PROBLEM: {path}: {problem.describe()}")
    if not args.json:
        print(f"verified {len(files)} file(s): {len(files) - failed} ok, {failed} with problems")
    return 1 if failed else 0


def _verify_json(path: Path, report: ScanReport, found: list[Problem]) -> dict[str, object]:
    """`log verify --json`'s object for one file."""
    return {"path": str(path), "ok": not found, "batches": report.batches, "control_batches": report.control_batches,
            "records": report.records, "bytes": report.size, "first_offset": report.first_offset,
            "last_offset": None if report.next_offset is None else report.next_offset - 1,
            "by_type": dict(sorted(report.by_type.items())), "compression": dict(sorted(report.compression.items())),
            "problems": [{"position": p.position, "base_offset": p.base_offset, "offset": p.offset, "cause": p.cause}
                         for p in sorted(found, key=lambda p: p.position)]}


def _topic_name_problems(path: Path, f: BinaryIO, registry: Registry) -> list[Problem]:
    """TopicRecords whose name Kafka's Topic.validate refuses: no Kafka wrote them."""
    found = []
    f.seek(0)
    for fb in stream_file_batches(str(path), f):
        for entry in decode_file_batch(fb, registry):
            name = getattr(entry.message, "name", None) if entry.record_type.name == "TopicRecord" else None
            error = None if name is None else topic_name_error(name)
            if error is not None:
                found.append(Problem(fb.position, fb.batch.base_offset, visible(
                    f"TopicRecord names a topic Kafka could never have created: {error}"), offset=entry.offset))
    return found


def _snapshots_against_log(files: Sequence[tuple[PathKind, Path]],
                           problems: Mapping[Path, list[Problem]]) -> dict[Path, list[Problem]]:
    """Each snapshot against the log beside it, replayed to the snapshot's end offset (only
    this tells a snapshot renamed to another end offset of the same epoch), in directories
    whose files are otherwise sound: a damaged log is reported as such, not replayed."""
    by_dir: dict[Path, list[Path]] = {}
    for kind, path in files:
        if kind in (PathKind.SEGMENT, PathKind.SNAPSHOT):
            by_dir.setdefault(path.parent, []).append(path)
    out: dict[Path, list[Problem]] = {}
    for directory, members in sorted(by_dir.items()):
        if any(problems[p] for p in members) or not any(p.suffix == ".checkpoint" for p in members):
            continue
        if not any(p.suffix == ".log" for p in members):
            continue
        from kraftsim.image import snapshots_against_log

        try:
            found = snapshots_against_log(directory)
        except KraftsimError as e:  # the replay itself failed: the log does not hold a loadable state
            first = next(p for p in members if p.suffix == ".log")
            out.setdefault(first, []).append(Problem(0, None, f"replaying the log to check its snapshots: {e}"))
            continue
        for name, texts in found.items():
            out.setdefault(directory / name, []).extend(Problem(0, None, text) for text in texts)
    return out


def _offset_from_name(path: Path) -> int:
    try:
        return int(path.stem)
    except ValueError:
        return 0
