"""Comparing what Kafka wrote and printed with what kraftsim wrote and printed.

Files are compared three ways: which files exist; each metadata file record by record
(kraftsim's decoder on both sides, every batch field but CRC and timestamps); and byte by
byte once the values that are not deterministic in Kafka are masked on both sides: batch
CRCs and timestamps, the snapshot header's LastContainedLogTimestamp, and the random
directory ids (each side's own, read from its meta.properties). meta.properties is
compared line by line with its date comment and directory.id masked.

Every function returns a list of differences, each one line; empty means the two agree.
"""

from __future__ import annotations

import base64
import difflib
import json
import re
import struct
from pathlib import Path
from typing import Any, Iterable

from kraftsim.conformance.tools import ToolRun
from kraftsim.protocol.batch import CRC_AT, TIMESTAMPS_AT
from kraftsim.protocol.registry import default_registry
from kraftsim.protocol.scan import ScanReport, scan
from kraftsim.storage.java_properties import hash_order, load_properties

MAX_DIFF_LINES = 12
# A difference that a named policy (data/policies.toml) accounts for is reported as
# POLICY_MARK + name; cases.judge turns a case with only such notes into "policy".
POLICY_MARK = "policy:"
_UNCAUGHT = re.compile(r'^Exception in thread "main" [\w.$]+: (.*)$')
_IDENTITY_HASH = re.compile(r"(\[L[\w.$]+;)@[0-9a-f]{1,8}\b")
_CRC_AT, _TIMESTAMPS_AT, _TIMESTAMPS_END = CRC_AT, TIMESTAMPS_AT, TIMESTAMPS_AT + 16
_MASK_ID = "<directory.id>"
# JVM and logging noise that is no part of a tool's answer.
# Java stack frames are left out too: a tool's answer is its message, not its call stack.
_NOISE = re.compile(r"^(SLF4J: |log4j:WARN |WARNING: |\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+\] (WARN|INFO|DEBUG) "
                    r"|\s+at \S+\(.*\)$|\s+\.\.\. \d+ more$)")


def unified(kafka: Iterable[str], kraftsim: Iterable[str], what: str) -> list[str]:
    """A short unified diff, Kafka first; empty when equal."""
    lines = list(difflib.unified_diff(list(kafka), list(kraftsim), f"kafka {what}", f"kraftsim {what}",
                                      lineterm="", n=1))
    if len(lines) > MAX_DIFF_LINES:
        lines = lines[:MAX_DIFF_LINES] + [f"... ({len(lines) - MAX_DIFF_LINES} more diff lines)"]
    return lines


def clean_lines(text: str, replacements: dict[str, str] | None = None) -> list[str]:
    """A stream's lines without JVM/logging noise, with paths or ids replaced by placeholders
    and a Java array's identity hash (`[Ljava.lang.String;@6c0d7c83`, picked per JVM run) masked."""
    for old, new in (replacements or {}).items():
        text = text.replace(old, new)
    text = _IDENTITY_HASH.sub(r"\1@<identity hash>", text)
    return [ln.rstrip() for ln in text.splitlines() if not _NOISE.match(ln)]


def compare_runs(kafka: ToolRun, kraftsim: ToolRun, *, replacements: dict[str, str] | None = None,
                 first_stderr_line: bool = False) -> list[str]:
    """Exit code, stdout and stderr. With first_stderr_line, only stderr's first line counts
    (Kafka prints a Java stack trace after the message where kraftsim prints the message)."""
    diffs = []
    if kafka.code != kraftsim.code:
        diffs.append(f"exit code: kafka {kafka.code}, kraftsim {kraftsim.code}")
    diffs += unified(clean_lines(kafka.stdout, replacements), clean_lines(kraftsim.stdout, replacements), "stdout")
    err_k, err_s = clean_lines(kafka.stderr, replacements), clean_lines(kraftsim.stderr, replacements)
    uncaught = _UNCAUGHT.match(err_k[0]) if err_k else None
    if uncaught and err_s and uncaught.group(1) == err_s[0] and kafka.code == kraftsim.code == 1:
        diffs.append(POLICY_MARK + "one-line-errors")
        err_k = [err_s[0]] + [ln for ln in err_k[1:] if not ln.startswith("Caused by: ")]
    if first_stderr_line:
        err_k, err_s = err_k[:1], err_s[:1]
    diffs += unified(err_k, err_s, "stderr")
    return diffs


# ------------------------------------------------------------------------------- meta.properties


def _directory_id(directory: Path) -> str | None:
    path = directory / "meta.properties"
    if not path.is_file():
        return None
    return load_properties(path.read_text(encoding="utf-8")).get("directory.id")


def compare_meta_properties(kafka: Path, kraftsim: Path) -> list[str]:
    """Line by line, with the date comment and directory.id masked. Kafka's key order is
    the JVM's (hash order on Java 11/17, sorted from Java 18); kraftsim writes them sorted,
    so when only the order differs and Kafka's is Java 17's hash order it is a policy."""
    def lines(path: Path) -> list[str]:
        text = path.read_text(encoding="utf-8").splitlines()
        # Line 2 is the date comment java.util.Properties.store writes; the id is random.
        return [("#<date>" if i == 1 and ln.startswith("#")
                 else re.sub(r"^directory\.id=.*", "directory.id=" + _MASK_ID, ln)) for i, ln in enumerate(text)]

    k_lines, s_lines = lines(kafka), lines(kraftsim)
    diffs = []
    if k_lines != s_lines and k_lines[:2] == s_lines[:2] and sorted(k_lines[2:]) == s_lines[2:]:
        keys = [ln.split("=", 1)[0] for ln in k_lines[2:]]
        if keys == hash_order(sorted(keys)) or keys == hash_order(keys):
            diffs.append(POLICY_MARK + "properties-key-order")
            k_lines = s_lines
    diffs += unified(k_lines, s_lines, str(kafka.name))
    for path in (kafka, kraftsim):
        did = load_properties(path.read_text(encoding="utf-8")).get("directory.id")
        if did is not None and not _is_uuid(did):
            diffs.append(f"{path}: directory.id {did!r} is not a base64 UUID")
    return diffs


def _is_uuid(text: str) -> bool:
    try:
        return len(base64.urlsafe_b64decode(text + "==")) == 16
    except (ValueError, TypeError):
        return False


# ---------------------------------------------------------------------------- metadata files


def decoded(data: bytes) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """(batch headers, entries as `kraftsim log dump --json` prints them, problems)."""
    report = ScanReport()
    batches, entries = [], []
    for scanned in scan(data, default_registry(), report):
        b = scanned.batch
        batches.append({"position": scanned.position, "baseOffset": b.base_offset, "size": b.size,
                        "lastOffsetDelta": b.last_offset_delta, "partitionLeaderEpoch": b.partition_leader_epoch,
                        "magic": b.magic, "control": b.is_control, "transactional": b.is_transactional,
                        "compression": b.compression, "producerId": b.producer_id, "producerEpoch": b.producer_epoch,
                        "baseSequence": b.base_sequence, "records": b.records_count,
                        "baseTimestamp": b.base_timestamp, "maxTimestamp": b.max_timestamp})
        entries += [e.to_json() for e in scanned.entries]
    return batches, entries, [p.describe() for p in report.problems]


def _masked_bytes(data: bytes, batches: list[dict[str, Any]], entries: list[dict[str, Any]],
                  directory_id: str | None) -> bytes:
    buf = bytearray(data)
    for b in batches:
        at = b["position"]
        buf[at + _CRC_AT:at + _CRC_AT + 4] = bytes(4)
        buf[at + _TIMESTAMPS_AT:at + _TIMESTAMPS_END] = bytes(_TIMESTAMPS_END - _TIMESTAMPS_AT)
    out = bytes(buf)
    for e in entries:
        ts = e["data"].get("lastContainedLogTimestamp") if e["type"] == "SNAPSHOT_HEADER" else None
        if ts:
            out = out.replace(struct.pack(">q", ts), bytes(8))
    if directory_id:
        out = out.replace(base64.urlsafe_b64decode(directory_id + "=="), bytes(16))
    return out


def _masked_entries(entries: list[dict[str, Any]], directory_id: str | None) -> list[str]:
    lines = []
    for e in entries:
        if e["type"] == "SNAPSHOT_HEADER":
            e = {**e, "data": {**e["data"], "lastContainedLogTimestamp": "<timestamp>"}}
        text = json.dumps(e, sort_keys=True)
        if directory_id:
            text = text.replace(directory_id, _MASK_ID)
        lines.append(text)
    return lines


def compare_metadata_file(kafka: Path, kraftsim: Path, *, kafka_dir_id: str | None = None,
                          kraftsim_dir_id: str | None = None) -> list[str]:
    """Record by record, then byte by byte with the nondeterministic values masked."""
    k_data, s_data = kafka.read_bytes(), kraftsim.read_bytes()
    k_batches, k_entries, k_problems = decoded(k_data)
    s_batches, s_entries, s_problems = decoded(s_data)
    diffs = [f"kafka's {kafka.name}: {p}" for p in k_problems]
    diffs += [f"kraftsim's {kraftsim.name}: {p}" for p in s_problems]
    diffs += unified(_masked_entries(k_entries, kafka_dir_id), _masked_entries(s_entries, kraftsim_dir_id),
                     f"{kafka.name} records")
    strip = ("position", "baseTimestamp", "maxTimestamp")
    k_heads = [json.dumps({k: v for k, v in b.items() if k not in strip}, sort_keys=True) for b in k_batches]
    s_heads = [json.dumps({k: v for k, v in b.items() if k not in strip}, sort_keys=True) for b in s_batches]
    diffs += unified(k_heads, s_heads, f"{kafka.name} batch headers")
    if not diffs and _masked_bytes(k_data, k_batches, k_entries, kafka_dir_id) != \
            _masked_bytes(s_data, s_batches, s_entries, kraftsim_dir_id):
        diffs.append(f"{kafka.name}: same records and batch headers, but the bytes differ "
                     f"({len(k_data)} vs {len(s_data)} bytes)")
    return diffs


# ------------------------------------------------------------------------------------ trees


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def compare_trees(kafka: Path, kraftsim: Path) -> list[str]:
    """Every file two formatted (or written) directory trees hold, each by its kind."""
    k_files, s_files = _files(kafka) if kafka.exists() else [], _files(kraftsim) if kraftsim.exists() else []
    diffs = unified(k_files, s_files, "files")
    for rel in sorted(set(k_files) & set(s_files)):
        k, s = kafka / rel, kraftsim / rel
        name = Path(rel).name
        if name == "meta.properties":
            diffs += compare_meta_properties(k, s)
        elif name.endswith(".checkpoint") or name.endswith(".log"):
            k_id, s_id = _directory_id(_log_dir_of(k)), _directory_id(_log_dir_of(s))
            diffs += compare_metadata_file(k, s, kafka_dir_id=k_id, kraftsim_dir_id=s_id)
        elif k.read_bytes() != s.read_bytes():
            diffs.append(f"{rel}: contents differ")
    return diffs


def _log_dir_of(path: Path) -> Path:
    """The log directory (holding meta.properties) a file lies in or under."""
    parent = path.parent
    return parent.parent if parent.name.startswith("__cluster_metadata") else parent


# ------------------------------------------------------------------------------ dump-log texts

_DUMP_RECORD = re.compile(r"^\| offset: (\d+) .*?(?: payload: | (\w+):? )(\{.*\})\s*$")
_DUMP_CONTROL_TYPE = re.compile(r"^\| offset: (\d+) .* controlType: (\w+)\(\d+\)\s*$")
Payload = tuple[int, dict[str, object]]


def dump_log_payloads(text: str) -> list[Payload]:
    """(offset, payload) of every record kafka-dump-log --cluster-metadata-decoder printed:
    data records as {"type", "version", "data"}, control records as {"control": type, "data"},
    or {"control": type} alone where Kafka prints only the control type (log segments)."""
    out: list[Payload] = []
    for line in text.splitlines():
        m = _DUMP_RECORD.match(line)
        if m is not None:
            obj = json.loads(m.group(3))
            out.append((int(m.group(1)), {"control": _control_type(m.group(2)), "data": obj} if m.group(2) else obj))
            continue
        m = _DUMP_CONTROL_TYPE.match(line)
        if m is not None:
            out.append((int(m.group(1)), {"control": m.group(2)}))
    return out


def json_dump_payloads(text: str) -> list[Payload]:
    """The same from `kraftsim log dump --json` output."""
    out: list[Payload] = []
    for line in text.splitlines():
        if line.startswith("{"):
            e = json.loads(line)
            obj = {"control": e["type"], "data": e["data"]} if e["control"] else \
                {"type": e["type"], "version": e["version"], "data": e["data"]}
            out.append((e["offset"], obj))
    return out


def compare_payloads(kafka: list[Payload], kraftsim: list[Payload], what: str) -> list[str]:
    """Record by record; where Kafka shows a control record's type only, only the type counts."""
    type_only = {off for off, obj in kafka if "control" in obj and "data" not in obj}
    ours = [(off, {"control": obj["control"]} if off in type_only and "control" in obj else obj)
            for off, obj in kraftsim]
    return unified([_payload_line(p) for p in kafka], [_payload_line(p) for p in ours], what)


def _payload_line(p: Payload) -> str:
    return f"{p[0]} {json.dumps(p[1], sort_keys=True)}"


# kafka-dump-log's labels for control records, to kraftsim's type names.
_CONTROL_NAMES = {"LeaderChange": "LEADER_CHANGE", "SnapshotHeader": "SNAPSHOT_HEADER",
                  "SnapshotFooter": "SNAPSHOT_FOOTER", "KRaftVersion": "KRAFT_VERSION", "KRaftVoters": "KRAFT_VOTERS"}


def _control_type(label: str) -> str:
    return _CONTROL_NAMES.get(label, label)
