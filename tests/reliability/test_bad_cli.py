"""A corpus of bad command lines, run in this process: none may end in a traceback (an
internal error, exit 70), and none may be accepted (exit 0); each is refused with exit 1
(a check failed or the tool refused) or 2 (usage or invalid input). A few odd but valid
lines that Kafka's tools accept are accepted the same way.

Commands run with a scratch folder as the working directory, so nothing a wrongly
accepted line writes can land in the repository.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from kraftsim.cli.main import main
from tests.reliability import damage
from tests.reliability.test_damaged_corpus import run_cli


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Good and bad paths to put on command lines."""
    root = tmp_path_factory.mktemp("places")
    d = damage.build_log_dir(root / "logdir")
    (root / "text.txt").write_text("hello\n")
    (root / "garbage.log").write_bytes(b"\x00\x01garbage" * 10)
    (root / "empty.checkpoint").write_bytes(b"")
    (root / "emptydir").mkdir()
    (root / "nonutf8.toml").write_bytes(b'name = "\xff"\n')
    (root / "deep.toml").write_text("x = " + "[" * 3000 + "\n")
    (root / "broken.toml").write_text("[[releases]\n")
    (root / "schemas").mkdir()
    (root / "schemas" / "Bad.toml").write_bytes(b"\xff\xfe")
    broken_log = damage.build_log_dir(root / "damaged")
    seg = sorted(broken_log.glob("*.log"))[1]
    seg.write_bytes(damage.duplicate_batch(seg.read_bytes(), 2))
    cluster = root / "cluster"
    assert main(["cluster", "create", str(cluster), "--controllers", "1", "--release", "3.7"]) == 0
    return {
        "dir": str(d), "seg": str(next(d.glob("*.log"))), "snap": str(next(d.glob("*.checkpoint"))),
        "cluster": str(cluster), "missing": str(root / "missing"), "text": str(root / "text.txt"),
        "garbage": str(root / "garbage.log"), "emptysnap": str(root / "empty.checkpoint"),
        "emptydir": str(root / "emptydir"), "nonutf8": str(root / "nonutf8.toml"), "deep": str(root / "deep.toml"),
        "broken": str(root / "broken.toml"), "badschemas": str(root / "schemas"), "out": str(root / "out"),
        "damaged": str(broken_log),
    }


BAD_PATHS = ["{missing}", "{text}", "{garbage}", "{emptysnap}", "{emptydir}", ""]
BAD_CATALOGS = ["{missing}", "{nonutf8}", "{deep}", "{broken}", "{emptydir}"]
BAD_MVS = ["3.6.", "3", "banana", "3.6-IV99", "", "99.0", "-1"]
BAD_FEATURES = ["group.version", "group.version=", "=1", "group.version=x", "group.version=99999", "nope=1",
                "group.version=1=2"]
BAD_COUNTS = ["-1", "0", "x", "1e3", "", "99999999999999999999"]


def bad_lines() -> list[list[str]]:
    lines: list[list[str]] = [
        [], ["--bogus"], ["nope"], ["log"], ["log", "bogus"], ["cluster"], ["storage"], ["features"], ["spark"],
        ["snapshot"], ["log", "dump"], ["log", "verify"], ["export"], ["replay"], ["downgrade-report"],
        ["--debug"], ["log", "dump", "--jsn", "{seg}"], ["log", "verify", "--schemas", "{badschemas}", "{seg}"],
        ["log", "dump", "--schemas", "{missing}", "{seg}"], ["log", "dump", "--schemas", "{text}", "{seg}"],
        ["demo", "--topics", "-1", "--no-spark", "--out", "{out}"], ["demo", "--partitions", "0", "--no-spark", "--out", "{out}"],
        ["demo", "--topics", "x"],
    ]
    for cmd, path in itertools.product((["log", "dump"], ["log", "verify"], ["replay"], ["export", "-o", "{out}/x.pq"],
                                        ["downgrade-report", "--to", "3.5"], ["snapshot", "create", "--offset", "3",
                                                                               "-o", "{out}"]), BAD_PATHS):
        lines.append([*cmd, path])
    lines += [["snapshot", "diff", a, b] for a, b in itertools.product(["{snap}", "{missing}"], BAD_PATHS[1:4])]
    for catalog in BAD_CATALOGS:
        lines += [["replay", "{dir}", "--catalog", catalog], ["export", "{seg}", "-o", "{out}/x.pq", "--catalog", catalog],
                  ["downgrade-report", "{dir}", "--to", "3.5", "--catalog", catalog],
                  ["storage", "version-mapping", "--catalog", catalog], ["snapshot", "diff", "{snap}", "{snap}",
                                                                          "--catalog", catalog],
                  ["cluster", "create", "{out}/c", "--controllers", "1", "--release", "3.7", "--catalog", catalog]]
    for mv in BAD_MVS:
        lines += [["storage", "version-mapping", "--release-version", mv],
                  ["features", "version-mapping", "--release-version", mv],
                  # The directory's own release (3.7, from its metadata.version) has level 3 (3.1-IV0); 4.0 has not.
                  ["downgrade-report", "{dir}", "--to", mv] + (["--release", "4.0"] if mv == "3" else []),
                  ["snapshot", "create", "{dir}", "--offset", "19", "--metadata-version", mv, "-o", "{out}"]
                  + (["--release", "4.0"] if mv == "3" else []),
                  ["cluster", "create", "{out}/c", "--controllers", "1", "--release", "3.7", "--release-version", mv],
                  ["storage", "format", "--cluster-id", "fdAdMZWDQ6OTF3IHmgy6Mg", "--dir", "{out}/f",
                   "--release-version", mv],
                  ["features", "--cluster", "{cluster}", "upgrade", "--release-version", mv, "--dry-run"]]
    for release in ["3.6.", "banana", "", "9.9", "3"]:
        lines += [["cluster", "create", "{out}/c", "--controllers", "1", "--release", release],
                  ["cluster", "roll", "{cluster}", "--release", release],
                  ["cluster", "add", "{cluster}", "--broker", "--release", release],
                  ["storage", "version-mapping", "--release", release],
                  ["replay", "{dir}", "--release", release]]
    for feature in BAD_FEATURES:
        lines += [["storage", "feature-dependencies", "--feature", feature],
                  ["features", "feature-dependencies", "--feature", feature],
                  ["storage", "format", "--cluster-id", "fdAdMZWDQ6OTF3IHmgy6Mg", "--dir", "{out}/f", "--feature", feature],
                  ["cluster", "create", "{out}/c", "--controllers", "1", "--release", "3.7", "--feature", feature],
                  ["features", "--cluster", "{cluster}", "upgrade", "--feature", feature, "--dry-run"]]
    for count in BAD_COUNTS:
        lines += [["cluster", "create", "{out}/c", "--controllers", count, "--release", "3.7"],
                  ["export", "{seg}", "-o", "{out}/x.pq", "--batch-rows", count],
                  ["replay", "{dir}", "--at", count if count not in ("0",) else "-5"],
                  ["cluster", "roll", "{cluster}", "--release", "3.8", "--nodes", count if count != "0" else "0,0"],
                  ["spark", "corpus", "{dir}", "--local", "--partitions", count]]
    for nodes in ["", ",", " ", "1,", "1,,2", "2147483648", "x", "1;2"]:
        lines.append(["cluster", "roll", "{cluster}", "--release", "3.8", "--nodes", nodes])
    for where in ["{missing}", "{emptydir}", "{text}", "{dir}"]:
        lines += [["cluster", "status", where], ["cluster", "roll", where, "--release", "3.8"],
                  ["cluster", "add", where, "--broker", "--release", "3.8"],
                  ["features", "--cluster", where, "describe"]]
    lines += [
        ["cluster", "add", "{cluster}", "--broker", "--release", "3.8", "--id", "2147483648"],
        ["cluster", "add", "{cluster}", "--broker", "--release", "3.8", "--id", "1"],  # taken by the controller
        ["cluster", "add", "{cluster}", "--release", "3.8"],
        ["cluster", "create", "{cluster}", "--controllers", "1", "--release", "3.7"],  # exists
        ["cluster", "create", "{out}/c", "--controllers", "1", "--release", "3.7", "--policy", "bogus"],
        ["cluster", "roll", "{cluster}", "--release", "3.8", "--nodes", "7"],  # no such node
        ["features", "describe"],  # no --cluster
        ["features", "--cluster", "{cluster}", "describe", "--node-id", "-1"],
        ["features", "--cluster", "{cluster}", "upgrade"],  # nothing to upgrade
        ["features", "--cluster", "{cluster}", "downgrade", "--metadata", "3.3-IV0"],
        ["features", "--cluster", "{cluster}", "disable", "--feature", "metadata.version", "--dry-run"],
        ["export", "{seg}", "-o", "{out}"], ["export", "{seg}", "-o", "{missing}/x.pq"],
        ["export", "{seg}", "-o", "{out}/x.pq", "--table", "bogus"],
        ["export", "{seg}", "-o", "{out}/x.pq", "--compression", "bogus"],
        ["export", "{seg}", "-o", "{seg}"],  # exists, no --overwrite
        ["replay", "{dir}", "--snapshot", "bogus"], ["replay", "{dir}", "--snapshot", "5-1"],
        ["replay", "{dir}", "--roundtrip", "bogus"], ["replay", "{dir}", "--mv-change", "bogus"],
        ["replay", "{dir}", "--at", "100000"],
        ["snapshot", "create", "{dir}", "-o", "{out}"], ["snapshot", "create", "{dir}", "--offset", "3"],
        ["snapshot", "create", "{dir}", "--offset", "100000", "-o", "{out}"],
        ["snapshot", "create", "{dir}", "--offset", "x", "-o", "{out}"],
        ["snapshot", "create", "{dir}", "--offset", "19", "-o", "{out}", "--time-ms", "-1"],
        ["snapshot", "diff", "{snap}"],
        ["downgrade-report", "{dir}"], ["downgrade-report", "{dir}", "--to", "3.5", "--at", "x"],
        ["downgrade-report", "{dir}", "--to", "3.5", "--controller-id", "-2"],
        ["storage", "format", "--dir", "{out}/f"],  # no cluster id
        ["storage", "format", "--cluster-id", "not-a-uuid", "--dir", "{out}/f"],
        ["storage", "format", "--cluster-id", "fdAdMZWDQ6OTF3IHmgy6Mg"],  # no directory
        ["storage", "format", "--cluster-id", "fdAdMZWDQ6OTF3IHmgy6Mg", "--dir", "{out}/f", "--node-id", "-1"],
        ["storage", "format", "--cluster-id", "fdAdMZWDQ6OTF3IHmgy6Mg", "--config", "{missing}"],
        ["storage", "format", "--cluster-id", "fdAdMZWDQ6OTF3IHmgy6Mg", "--config", "{garbage}"],
        ["storage", "info", "--config", "{missing}"], ["storage", "random-uuid", "--seed", "x"],
        ["storage", "feature-dependencies"],
        ["spark", "corpus"], ["spark", "bogus"], ["spark", "snapshot-cost", "--grid", "bogus", "--local"],
        ["spark", "snapshot-cost", "--grid", "topics=-1", "--local"],
        ["spark", "corpus", "{dir}", "--local", "--partitions-per-core", "0"],
        ["spark", "corpus", "{dir}", "--local", "--conf", "novalue"],
        # a damaged log: refused, or labelled partial (exit 1) with --up-to-damage (its duplicated
        # batch is only irregular to `log dump`, which prints it as kafka-dump-log does, with exit 0)
        ["log", "verify", "{damaged}"], ["replay", "{damaged}"],
        ["replay", "{damaged}", "--up-to-damage"], ["downgrade-report", "{damaged}", "--to", "3.7-IV4"],
        ["downgrade-report", "{damaged}", "--to", "3.7-IV4", "--up-to-damage"],
        ["snapshot", "diff", "{damaged}", "{dir}"], ["snapshot", "diff", "{damaged}", "{dir}", "--up-to-damage"],
        ["snapshot", "create", "{damaged}", "--offset", "39", "-o", "{out}"],
        ["snapshot", "create", "{damaged}", "--offset", "39", "-o", "{out}", "--up-to-damage"],
        ["export", "{damaged}", "-o", "{out}/d.pq"], ["export", "{damaged}", "-o", "{out}/d.pq", "--up-to-damage"],
        ["export", "{damaged}", "-o", "{out}/e.pq", "--table", "image_entities"],
        ["log", "verify", "--up-to-damage", "{dir}"],
    ]
    return lines


# Odd but valid: Kafka's own tools accept these, so kraftsim does too.
GOOD_LINES = [
    ["storage", "feature-dependencies", "--feature", "group.version= 1"],
    ["storage", "feature-dependencies", "--feature", " group.version=1 "],
    ["storage", "version-mapping", "--release-version", "3.6.1"],
    ["storage", "version-mapping", "--release-version", "3.6.1."],
    ["features", "version-mapping", "--release-version", "3.9"],
    ["cluster", "status", "{cluster}"],
    ["log", "verify", "{dir}"],
]


def _fill(argv: list[str], places: dict[str, str]) -> list[str]:
    return [a.format(**places) for a in argv]


def test_the_corpus_is_large_enough() -> None:
    assert len(bad_lines()) >= 200


def test_bad_command_lines_are_refused_without_traceback(places: dict[str, str], tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    Path(places["out"]).mkdir(exist_ok=True)
    crashed, accepted = [], []
    for argv in bad_lines():
        line = _fill(argv, places)
        code, out, err = run_cli(capsys, *line)
        if code == 70 or "Traceback" in out + err:
            crashed.append((argv, err[-400:]))
        elif code == 0:
            accepted.append((argv, out[-300:]))
        elif code not in (1, 2) or not (err.strip() or "PROBLEM: " in out):  # verify reports on stdout
            crashed.append((argv, f"exit {code} with stderr {err!r}"))
    assert not crashed, crashed[:5]
    assert not accepted, f"{len(accepted)} invalid command lines accepted: {accepted[:6]}"
    assert not any(tmp_path.iterdir())  # nothing landed in the working directory


@pytest.mark.parametrize("argv", GOOD_LINES, ids=" ".join)
def test_odd_but_valid_lines_are_accepted(places: dict[str, str], argv: list[str],
                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, *_fill(argv, places))
    assert code == 0, err
