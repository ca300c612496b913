"""The conformance harness itself, without Kafka: comparisons must catch what they are
meant to catch and mask only what is not deterministic in Kafka."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from kraftsim.conformance.cases import AGREE, DIFFER, POLICY, Policy, judge, load_policies
from kraftsim.conformance.compare import (
    POLICY_MARK, compare_meta_properties, compare_metadata_file, compare_payloads, compare_runs, dump_log_payloads,
    json_dump_payloads,
)
from kraftsim.conformance.dist import KafkaUnavailable, _logging_artifacts, _pom, known_releases, resolve_release
from kraftsim.conformance.tools import ToolRun, _parse_batch
from kraftsim.conformance.kraftsim_side import run_kraftsim
from kraftsim.storage import replay_clock, storage_format, ServerConfig
from kraftsim.versions import load_catalog


def _format(root: Path, clock_ms: int, seed: int) -> Path:
    """kraftsim formats a combined node; the clock and directory id are what Kafka leaves random."""
    config = ServerConfig.for_directories([str(root)], 1, dynamic_quorum=True)
    storage_format(load_catalog(None, line="4.2"), config, cluster_id="ZnVsbHkgcmVwcm9kdWNpYg", release_version=None,
                   features=[], standalone=True, initial_controllers=None, no_initial_controllers=False,
                   add_scram=[], ignore_formatted=False, rng=random.Random(seed),
                   clock=replay_clock([clock_ms + i for i in range(6)]), out=lambda line: None)
    return root


def test_metadata_files_agree_when_only_time_and_ids_differ(tmp_path):
    a, b = _format(tmp_path / "a", 1_000_000, 1), _format(tmp_path / "b", 2_000_000, 2)
    zero = "__cluster_metadata-0/00000000000000000000-0000000000.checkpoint"
    assert (a / zero).read_bytes() != (b / zero).read_bytes()
    ids = [json.loads(json.dumps(_did(d))) for d in (a, b)]
    assert compare_metadata_file(a / zero, b / zero, kafka_dir_id=ids[0], kraftsim_dir_id=ids[1]) == []
    assert compare_metadata_file(a / "bootstrap.checkpoint", b / "bootstrap.checkpoint") == []


def test_metadata_files_differ_on_a_changed_record(tmp_path):
    a = _format(tmp_path / "a", 1_000_000, 1)
    data = bytearray((a / "bootstrap.checkpoint").read_bytes())
    other = tmp_path / "other.checkpoint"
    # Same length, other metadata.version level: kraftsim's writer makes a valid file of it.
    config = ServerConfig.for_directories([str(tmp_path / "c")], 1, dynamic_quorum=False)
    storage_format(load_catalog(None, line="4.2"), config, cluster_id="ZnVsbHkgcmVwcm9kdWNpYg",
                   release_version="4.0-IV3", features=[], standalone=False, initial_controllers=None,
                   no_initial_controllers=False, add_scram=[], ignore_formatted=False, rng=random.Random(1),
                   clock=replay_clock([1_000_000 + i for i in range(3)]), out=lambda line: None)
    other.write_bytes((tmp_path / "c" / "bootstrap.checkpoint").read_bytes())
    diffs = compare_metadata_file(a / "bootstrap.checkpoint", other)
    assert any("featureLevel" in d for d in diffs), diffs
    assert bytes(data) == (a / "bootstrap.checkpoint").read_bytes()


def test_corrupt_file_is_reported(tmp_path):
    a = _format(tmp_path / "a", 1_000_000, 1)
    data = bytearray((a / "bootstrap.checkpoint").read_bytes())
    data[-1] ^= 0xFF
    bad = tmp_path / "bad.checkpoint"
    bad.write_bytes(bytes(data))
    assert any("kraftsim's bad.checkpoint" in d or "CRC" in d for d in compare_metadata_file(a / "bootstrap.checkpoint", bad))


def _did(directory: Path) -> str:
    for line in (directory / "meta.properties").read_text().splitlines():
        if line.startswith("directory.id="):
            return line.split("=", 1)[1]
    raise AssertionError("no directory.id")


def test_meta_properties_key_order_is_a_policy_only_for_javas_hash_order(tmp_path):
    sorted_text = "#\n#Thu Nov 26 05:32:34 UTC 2026\ncluster.id=X\ndirectory.id=AAAAAAAAAAAAAAAAAAAAAA\nnode.id=1\nversion=1\n"
    hashed = "#\n#Wed Jan 01 00:00:00 UTC 2025\nnode.id=1\ndirectory.id=BBBBBBBBBBBBBBBBBBBBBB\nversion=1\ncluster.id=X\n"
    odd = "#\n#Wed Jan 01 00:00:00 UTC 2025\nversion=1\nnode.id=1\ndirectory.id=BBBBBBBBBBBBBBBBBBBBBB\ncluster.id=X\n"
    k, s, o = tmp_path / "k", tmp_path / "s", tmp_path / "o"
    k.write_text(hashed), s.write_text(sorted_text), o.write_text(odd)
    assert compare_meta_properties(k, s) == [POLICY_MARK + "properties-key-order"]
    assert not any(d.startswith(POLICY_MARK) for d in compare_meta_properties(o, s))
    s2 = tmp_path / "s2"
    s2.write_text(sorted_text.replace("node.id=1", "node.id=2"))
    assert any(d.startswith("-node.id=1") for d in compare_meta_properties(k, s2))


def test_runs_compare_codes_streams_and_name_the_one_line_policy():
    kafka = ToolRun((), 1, "", 'Exception in thread "main" java.lang.IllegalArgumentException: bad thing\n'
                                "\tat a.b.C.d(C.java:1)\n")
    assert compare_runs(kafka, ToolRun((), 1, "", "bad thing\n")) == [POLICY_MARK + "one-line-errors"]
    assert any("exit code" in d for d in compare_runs(kafka, ToolRun((), 2, "", "bad thing\n")))
    assert any("other thing" in d for d in compare_runs(kafka, ToolRun((), 1, "", "other thing\n")))
    same = ToolRun((), 0, "a\nb\n", "SLF4J: noise\n")
    assert compare_runs(same, ToolRun((), 0, "a\nb\n", "")) == []
    assert compare_runs(same, ToolRun((), 0, "a\nc\n", "")) != []


def test_judge():
    policies = load_policies()
    assert judge("c", "4.2.0", [], policies).result == AGREE
    assert judge("c", "4.2.0", [POLICY_MARK + "one-line-errors"], policies).result == POLICY
    mixed = judge("c", "4.2.0", [POLICY_MARK + "one-line-errors", "-x", "+y"], policies)
    assert mixed.result == DIFFER and "-x" in mixed.detail and POLICY_MARK not in mixed.detail
    named = [Policy("p", "storage-*", ("4.*",), "needle", "because")]
    assert judge("storage-x", "4.1.2", ["a needle"], named).result == POLICY
    assert judge("storage-x", "3.9.1", ["a needle"], named).result == DIFFER
    assert judge("storage-x", "4.1.2", ["a pin"], named).result == DIFFER
    for p in policies:  # every documented policy says why
        assert p.why.strip()


def test_dump_log_parsing_matches_kraftsim_json(tmp_path):
    a = _format(tmp_path / "a", 1_000_000, 1)
    zero = a / "__cluster_metadata-0" / "00000000000000000000-0000000000.checkpoint"
    ours = json_dump_payloads(run_kraftsim(["log", "dump", "--json", str(zero)]).stdout)
    # The text dump prints the same records in kafka-dump-log's layout (control records labelled).
    text = run_kraftsim(["log", "dump", str(zero)]).stdout
    assert compare_payloads(dump_log_payloads(text), ours, "zero") == []
    assert len(ours) == 4
    # Kafka prints only the type of a log segment's control records; then only the type counts.
    kafka = [(0, {"control": "SNAPSHOT_HEADER"})] + dump_log_payloads(text)[1:]
    assert compare_payloads(kafka, ours, "zero") == []
    changed = [(off, {**obj, "data": {"x": 1}}) if off == 1 else (off, obj) for off, obj in ours]
    assert compare_payloads(dump_log_payloads(text), changed, "zero") != []


def test_tool_batch_output_parsing():
    cmds = [("storage", ("a",)), ("storage", ("b",)), ("storage", ("c",))]
    out = b"@@toolbatch 0 3 0\nhi\n@@toolbatch 1 0 4\nerr\n"
    runs = _parse_batch(out, cmds)
    assert [(r.code, r.stdout, r.stderr) for r in runs] == [(0, "hi\n", ""), (1, "", "err\n")]
    assert _parse_batch(b"garbage", cmds) == []


def test_releases_and_pom():
    versions = [r.version for r in known_releases()]
    assert len(versions) == len(set(versions))
    lines = [r.line for r in known_releases() if r.default]
    assert len(lines) == len(set(lines)), "one default release per line"
    assert resolve_release("4.3").version in versions
    assert resolve_release("9.8.7").version == "9.8.7"  # unknown to the table, left to Maven
    with pytest.raises(KafkaUnavailable, match="unknown Kafka release"):
        resolve_release("not-a-version")
    pom = _pom(resolve_release("4.4"))
    assert "kafka_2.13" in pom and "kafka-tools" in pom
    assert ("kafka-shell" in pom) == resolve_release("4.4").shell


def test_logging_artifacts(tmp_path):
    (tmp_path / "slf4j-api-1.7.36.jar").write_bytes(b"")
    assert [a.split(":")[1] for a in _logging_artifacts(tmp_path)] == ["log4j-api", "log4j-core", "log4j-slf4j-impl"]
    (tmp_path / "log4j-api-2.25.4.jar").write_bytes(b"")
    assert _logging_artifacts(tmp_path) == ["org.apache.logging.log4j:log4j-slf4j-impl:2.25.4"]
    (tmp_path / "slf4j-reload4j-1.7.36.jar").write_bytes(b"")
    assert _logging_artifacts(tmp_path) == []


def test_missing_java_or_maven_is_one_clear_line(tmp_path, monkeypatch):
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("KRAFTSIM_KAFKA_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(empty))
    run = run_kraftsim(["kafka", "fetch", "4.3"])
    assert run.code == 2 and run.stderr.strip().count("\n") == 0
    assert "needs Java 17" in run.stderr
    old_java = empty / "java"
    old_java.write_text('#!/bin/sh\necho \'openjdk version "11.0.2"\' >&2\n')
    old_java.chmod(0o755)
    run = run_kraftsim(["kafka", "fetch", "4.3"])
    assert run.code == 2 and "found only" in run.stderr and "Java 11" in run.stderr
    new_java = empty / "java"
    new_java.write_text('#!/bin/sh\necho \'openjdk version "17.0.15"\' >&2\n')
    run = run_kraftsim(["kafka", "fetch", "4.3"])
    assert run.code == 2 and "needs Maven: no mvn on PATH" in run.stderr
    run = run_kraftsim(["conformance", "run", "--release", "4.3"])
    assert run.code == 2 and "needs Maven" in run.stderr
    assert not (tmp_path / "cache" / "4.3.1").exists()


def test_conformance_table_from_json_lines(tmp_path):
    lines = [{"case": "storage-format/combined/default", "release": "4.2.0", "result": "agree", "detail": ""},
             {"case": "storage-format/combined/-r 4.0-IV3", "release": "4.2.0", "result": "differ", "detail": "-x"},
             {"case": "storage-format/combined/default", "release": "3.9.1", "result": "policy", "detail": "p: why"},
             {"case": "live-node/features describe", "release": "4.2.0", "result": "agree", "detail": ""}]
    saved = tmp_path / "out.jsonl"
    saved.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    run = run_kraftsim(["conformance", "table", str(saved), "--summary"])
    assert run.code == 0
    rows = {ln.split("  ")[0]: ln for ln in run.stdout.splitlines()}
    assert "1/2 (1 differ)" in rows["storage-format/combined"] and "1/1" in rows["storage-format/combined"]
    assert "live-node" in rows
    assert "4 case runs: 2 agree, 1 policy, 1 differ" in run.stdout
    full = run_kraftsim(["conformance", "table", str(saved), "--markdown"])
    assert full.stdout.splitlines()[1].startswith("| --- |")
    saved.write_text('{"case": "x"}\n')
    bad = run_kraftsim(["conformance", "table", str(saved)])
    assert bad.code == 2 and "line 1" in bad.stderr


def test_each_roll_step_runs_kraftsim_as_the_exact_release(tmp_path, monkeypatch):
    """A roll step given 4.2.0 runs kraftsim as 4.2.0, not as the 4.2 line's newest patch
    (the Kafka side is a stand-in here: only the kraftsim commands are looked at)."""
    from kraftsim.conformance import roll
    from kraftsim.conformance.cases.base import ReleaseContext, catalog_release
    from kraftsim.conformance.dist import KafkaDist

    assert catalog_release(resolve_release("4.2.0")) == "4.2.0"
    assert catalog_release(resolve_release("4.2")) == "4.2.0"  # the suite's 4.2 is 4.2.0
    assert catalog_release(resolve_release("3.6.2")) == "3.6.2"

    class Node:
        bootstrap, dist = "127.0.0.1:9", None

        def format(self, *flags):
            return None

        start = stop = format

    dists = [KafkaDist(resolve_release(v), tmp_path, (), None) for v in ("4.2.0", "4.4.0")]  # type: ignore[arg-type]
    seen = []
    monkeypatch.setattr(ReleaseContext, "kraftsim", lambda self, argv: seen.append(argv) or ToolRun(argv, 0, "", ""))
    monkeypatch.setattr(roll, "run_tool", lambda dist, tool, args, **kw: ToolRun(args, 0, "", ""))
    monkeypatch.setattr(roll, "_held_differences", lambda node, sim: [])  # (it asks the live node)
    ctx = ReleaseContext(dists[0], tmp_path / "scratch")
    list(roll._roll(ctx, Node(), tmp_path / "sim", dists, [], lambda line: None))
    releases = [a[a.index("--release") + 1] for a in seen if "--release" in a]
    assert releases[0] == "4.2.0" and "4.2.2" not in releases
    assert [a[:2] for a in seen if a[1] == "roll"] == [["cluster", "roll"]]
    assert "4.4.0" in releases



def test_live_quorum_runs_kafkas_side_again_when_a_controller_is_lost(tmp_path, monkeypatch):
    """A controller JVM that dies mid-session is the machine's doing: Kafka's side runs once
    more, and a second loss fails with the node's own log saying why."""
    import subprocess
    import sys
    from types import SimpleNamespace

    from kraftsim.conformance.cases import live_quorum as lq

    node = tmp_path / "node-1"
    node.mkdir()
    (node / "server.log").write_text("INFO fine\nERROR [RaftManager] fatal: disk gone\n", encoding="utf-8")
    dead = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    dead.wait()
    checked = lq.QuorumSession(SimpleNamespace())
    checked.procs = {1: dead}
    with pytest.raises(lq.ControllerLost, match=r"controller 1 exited \(code 3\)(.|\n)*disk gone"):
        checked._checked(ToolRun((), 0, "", ""), {1: 1}, tmp_path)
    checked.procs = {}
    warned = ToolRun((), 1, "", "WARN Connection to node 1 (/127.0.0.1:5) could not be established.")
    with pytest.raises(lq.ControllerLost, match="could not reach a controller"):
        checked._checked(warned, {}, tmp_path)

    def session(losses: int) -> tuple[lq.QuorumSession, list[int]]:
        """A session whose Kafka side loses a controller in its first `losses` runs."""
        s, runs = lq.QuorumSession(SimpleNamespace()), []

        def kafka_side() -> None:
            runs.append(len(runs) + 1)
            if len(runs) <= losses:
                raise lq.ControllerLost(f"controller 1 exited (run {len(runs)})")
            s.kafka.update({step: ToolRun((), 0, "same", "") for step in lq.STEPS})

        monkeypatch.setattr(s, "_run_kafka", kafka_side)
        monkeypatch.setattr(s, "_simulate", lambda: s.sim.update({st: ToolRun((), 0, "same", "") for st in lq.STEPS}))
        return s, runs

    once, runs = session(1)
    assert once.diff("status-3") == [] and runs == [1, 2] and once.retried == ["controller 1 exited (run 1)"]
    twice, runs = session(2)
    assert twice.diff("remove-4") == ["the session did not run: Kafka's side was lost in every run: "
                                      "controller 1 exited (run 1) | controller 1 exited (run 2)"]
    assert runs == [1, 2]


def test_kafkas_shell_is_asked_again_when_it_hangs(monkeypatch):
    """Kafka 3.7's shell can wait forever on a small file (its loader applied the last batch
    before the reader exposed the high-water mark): a run killed at the timeout is run again,
    and only a shell that hangs every time fails the case."""
    from types import SimpleNamespace

    from kraftsim.conformance.cases import shell_lines

    def kafka(hangs: int) -> list[list[str]]:
        """Kafka's shell as a fake: no answer in its first `hangs` runs, then the answer "same"."""
        runs: list[list[str]] = []

        def run_tool(dist, tool, args, *, stdin=None, timeout=0.0):
            runs.append(list(args))
            if len(runs) <= hangs:
                raise KafkaUnavailable(f"Kafka 3.7.2 {tool} {' '.join(args)}: no answer within {timeout:.0f} s; killed")
            return ToolRun(tuple(args), 0, "same\n", "")

        monkeypatch.setattr(shell_lines, "run_tool", run_tool)
        return runs

    ctx = SimpleNamespace(dist=None)
    ours = ToolRun((), 0, "same\n", "")
    args = ["--snapshot", "bootstrap.checkpoint", "tree", "/image"]
    runs = kafka(shell_lines.HANG_ATTEMPTS - 1)
    assert shell_lines._asked(ctx, "bootstrap tree /image", args, None, ours) == []
    assert runs == [args] * shell_lines.HANG_ATTEMPTS
    kafka(shell_lines.HANG_ATTEMPTS)
    with pytest.raises(KafkaUnavailable, match="no answer within 60 s"):
        shell_lines._asked(ctx, "bootstrap tree /image", args, None, ours)
