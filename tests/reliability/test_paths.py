"""Nothing is written outside what the user named: scenario names made safe as file names,
symbolic links in cluster and log directories refused, an output over its own input
refused, and output locations checked before anything runs."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kraftsim.storage import MetadataLog, SymlinkRefused, safe_file_name
from tests.cli_support import on_a_terminal, run

SCENARIO = """name = {name!r}
[cluster]
controllers = 1
release = "3.8"
"""


@given(st.text(max_size=300))
def test_a_safe_name_is_one_plain_file_name(name: str) -> None:
    safe = safe_file_name(name)
    assert safe and "/" not in safe and "\\" not in safe and "\x00" not in safe
    assert not safe.startswith(".") and safe not in (".", "..")
    assert safe.isascii() and len(safe.encode()) <= 120
    assert Path("base", safe).parent == Path("base")
    assert safe_file_name(name) == safe


@given(st.text(max_size=40), st.text(max_size=40))
def test_two_names_never_share_a_file(a: str, b: str) -> None:
    if a != b:
        assert safe_file_name(a) != safe_file_name(b)


def test_plain_names_are_kept() -> None:
    assert safe_file_name("rollback-after-mv-bump") == "rollback-after-mv-bump"
    assert safe_file_name("../x").startswith("_x-")
    assert safe_file_name("/etc/passwd").startswith("_etc_passwd-")


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


def test_scenario_names_stay_inside_html_and_keep(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    victim = tmp_path / "victim.html"
    victim.write_text("precious")
    src = tmp_path / "src"
    src.mkdir()
    names = ["../victim", str(tmp_path / "abs"), "a/../../b", "\x1b]0;title\x07"]
    for i, name in enumerate(names):
        (src / f"s{i}.toml").write_text(SCENARIO.format(name=name))
    out, keep = tmp_path / "out" / "reports", tmp_path / "out" / "kept"
    before = _files(tmp_path) - _files(tmp_path / "out")
    code, stdout, err = run(capsys, "scenario", "run", str(src), "--html", str(out), "--keep", str(keep))
    assert code == 0, err
    assert victim.read_text() == "precious"
    after = _files(tmp_path)
    assert {p for p in after if tmp_path / "out" not in p.parents and p != tmp_path / "out"} == before
    reports = sorted(p.name for p in out.iterdir())
    assert len(reports) == len(names) and all(r.endswith(".html") for r in reports)
    assert len([p for p in keep.iterdir() if p.is_dir()]) == len(names)


def test_an_unwritable_output_is_refused_before_anything_runs(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "s.toml"
    f.write_text(SCENARIO.format(name="x"))
    blocker = tmp_path / "file"
    blocker.write_text("")
    for flag in ("--html", "--keep"):
        code, out, err = run(capsys, "scenario", "run", str(f), flag, str(blocker / "sub" / "r"))
        assert code == 2, err
        assert "not a directory" in err and "scenario x" not in out  # nothing ran
    code, out, err = run(capsys, "scenario", "run", str(f), "--html", str(f))
    assert code == 2 and "input" in err
    assert f.read_text() == SCENARIO.format(name="x")


def test_export_never_replaces_its_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "cluster", "create", str(tmp_path / "c"), "--controllers", "1", "--release", "3.8")
    assert code == 0, err
    log_dir = tmp_path / "c" / "node-1" / "__cluster_metadata-0"
    segment = sorted(log_dir.glob("*.log"))[0]
    before = segment.read_bytes()
    for out in (segment, log_dir / "x.parquet", log_dir.parent):
        code, _, err = run(capsys, "export", str(segment if out != log_dir / "x.parquet" else log_dir),
                           "-o", str(out), "--overwrite")
        assert code == 2 and "input" in err, err
    assert segment.read_bytes() == before
    assert not (log_dir / "x.parquet").exists()


def test_a_symlinked_segment_is_never_followed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "c"
    code, _, err = run(capsys, "cluster", "create", str(d), "--controllers", "1", "--brokers", "1",
                       "--release", "3.8")
    assert code == 0, err
    code, _, err = run(capsys, "cluster", "stop", str(d), "--nodes", "2")
    assert code == 0, err
    log_dir = d / "node-2" / "__cluster_metadata-0"
    segment = sorted(log_dir.glob("*.log"))[-1]
    outside = tmp_path / "outside.log"
    shutil.move(segment, outside)
    with outside.open("ab") as f:
        f.write(b"\x00" * 7)  # a torn tail recovery would cut
    original = outside.read_bytes()
    segment.symlink_to(outside)
    for argv in (["cluster", "start", str(d), "--nodes", "2"], ["cluster", "roll", str(d), "--release", "3.9"],
                 ["topics", "--cluster", str(d), "create", "--count", "1"]):
        code, out, err = run(capsys, *argv)
        assert code != 0 and str(segment) in err and "symbolic link" in err, (argv, out, err)
    assert outside.read_bytes() == original
    with pytest.raises(SymlinkRefused, match=str(segment)):
        MetadataLog.open(log_dir)
    with MetadataLog.open(log_dir, read_only=True):  # a reader may look (it changes nothing)
        pass
    assert outside.read_bytes() == original


HOSTILE = "</script><script>alert(1)</script>\x1b]0;owned\x07\u202egnp.exe<b>&amp;\u2028"


def test_hostile_text_in_the_html_report_is_inert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json
    import re

    f = tmp_path / "s.toml"
    f.write_text('name = ' + json.dumps(HOSTILE) + '\ndescription = ' + json.dumps(HOSTILE)
                 + '\n[cluster]\ncontrollers = 1\nbrokers = 1\nrelease = "3.8"\n'
                 + '[[step]]\nop = "roll"\nrelease = "3.9"\nnote = ' + json.dumps(HOSTILE) + "\n", encoding="utf-8")
    report = tmp_path / "r.html"
    code, _, err = run(capsys, "scenario", "run", str(f), "--html", str(report), "--json")
    assert code == 0, err
    page = report.read_text(encoding="utf-8")
    assert "<script>alert" not in page and "<b>&amp;" not in page
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f\u202e\u2028]", page)
    assert "\\x1b]0;owned\\x07" in page and "\\u202e" in page  # shown, not obeyed
    scripts = re.findall(r'<script type="application/json" id="result">(.*?)</script>', page, re.S)
    assert len(scripts) == 1 and json.loads(scripts[0])["name"] == HOSTILE  # what JSON.parse of its text gives


def test_hostile_names_reach_a_terminal_as_escapes(tmp_path: Path) -> None:
    import json

    f = tmp_path / "s.toml"
    f.write_text("name = " + json.dumps(HOSTILE) + '\n[cluster]\ncontrollers = 1\nrelease = "3.8"\n', encoding="utf-8")
    code, text = on_a_terminal("scenario", "check", str(f))
    assert code == 0, text
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert "\\x1b]0;owned\\x07\\u202egnp.exe" in text


def test_a_symlink_loop_or_a_path_through_a_file_is_not_called_missing(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A symbolic link loop is there (`ls` lists it): "no such file or directory" sent the user
    looking for a typo. The OS's own reason is said, for every reader of metadata paths."""
    loop = tmp_path / "00000000000000000000.log"
    loop.symlink_to(tmp_path / "other")
    (tmp_path / "other").symlink_to(loop)
    (tmp_path / "a-file").write_text("x")
    through = tmp_path / "a-file" / "00000000000000000000.log"
    for path, reason in ((loop, "too many levels of symbolic links"), (through, "not a directory")):
        for argv in (["log", "dump", str(path)], ["log", "verify", str(path)], ["replay", str(path)],
                     ["snapshot", "create", str(path), "--at", "1", "-o", str(tmp_path / "out.checkpoint")],
                     ["snapshot", "diff", str(path), str(path)]):
            code, _, err = run(capsys, *argv)
            assert code == 2 and f"{path}: {reason}" in err, (argv, code, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["00000000000000000000.log", "a-file", "other"]


def test_a_path_that_is_neither_file_nor_directory_is_not_called_missing(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """A FIFO (or a device) exists: saying "no such file or directory" sent the user looking
    for a typo; it is refused for what it is, and never opened (a FIFO would block)."""
    fifo = tmp_path / "00000000000000000000.log"
    os.mkfifo(fifo)
    for argv in (["log", "dump", str(fifo)], ["replay", str(fifo)], ["metadata-shell", "-s", str(fifo), "ls", "/"]):
        code, _, err = run(capsys, *argv)
        assert code in (1, 2) and f"{fifo}: not a regular file or a directory" in err, (argv, code, err)
