"""Config names and values, ACL principals and SCRAM user names holding escape sequences,
bidirectional overrides and markup reach no terminal and no HTML page raw (issue: names
and text; the scenario name, description and topic are covered in test_paths and test_names)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.cli_support import on_a_terminal, run

HOSTILE = "</script><script>alert(1)</script>\x1b]0;owned\x07\u202egnp<b>&amp;\x1b[31m"
RAW = re.compile("[\x07\u202e\u2028]|\x1b\\]|\x1b\\[2J|\x1b\\[31m")  # what a terminal would obey (kraftsim's own colour is green)
SHOWN = "\\x1b]0;owned\\x07\\u202egnp"

SCENARIO = ('name = "inject"\n[cluster]\ncontrollers = 1\nbrokers = 1\nrelease = "3.9"\n'
            '[[step]]\nop = "alter-broker-config"\nconfigs = {{ {name} = {value} }}\n'
            '[[step]]\nop = "create-acl"\nprincipal = {principal}\noperation = "read"\nresource_name = {value}\n')


def _scenario(tmp_path: Path) -> Path:
    f = tmp_path / "s.toml"
    f.write_text(SCENARIO.format(name=json.dumps("x." + HOSTILE), value=json.dumps(HOSTILE),
                                 principal=json.dumps("User:" + HOSTILE)), encoding="utf-8")
    return f


def test_config_and_principal_in_the_html_report_are_inert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "r.html"
    code, _, err = run(capsys, "scenario", "run", str(_scenario(tmp_path)), "--html", str(report), "--json")
    assert code == 0, err
    page = report.read_text(encoding="utf-8")
    assert "<script>alert" not in page and "<b>&amp;" not in page
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f\u202e\u2028]", page)
    assert SHOWN.replace("\\", "\\\\") in page or SHOWN in page  # shown as escapes, not obeyed
    for blob in re.findall(r'<script type="application/json"[^>]*>(.*?)</script>', page, re.S):
        json.loads(blob)  # embedded JSON still parses


def test_config_and_principal_reach_a_terminal_as_escapes(tmp_path: Path) -> None:
    code, text = on_a_terminal("scenario", "run", str(_scenario(tmp_path)))
    assert code == 0, text
    assert not RAW.search(text) and SHOWN in text
    if "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb":
        assert "\x1b[32mPASS \x1b[0m" in text  # kraftsim's own colour still works on the guarded terminal


def test_acls_and_configs_commands_show_escapes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "c"
    code, _, err = run(capsys, "cluster", "create", str(d), "--controllers", "1", "--brokers", "1", "--release", "3.9")
    assert code == 0, err
    code, text = on_a_terminal("acls", "--cluster", str(d), "--add", "--allow-principal", "User:" + HOSTILE,
                                "--operation", "Read", "--topic", HOSTILE)
    assert code == 0 and not RAW.search(text) and SHOWN in text, text
    code, text = on_a_terminal("configs", "--cluster", str(d), "--alter", "--entity-type", "brokers",
                                "--entity-default", "--add-config", f"x.{HOSTILE}={HOSTILE}")
    assert not RAW.search(text), text


def test_a_scram_user_reaches_no_terminal_raw(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "meta"
    props = tmp_path / "server.properties"
    props.write_text(f"process.roles=controller\nnode.id=1\ncontroller.quorum.voters=1@localhost:9093\n"
                     f"log.dirs={d}\ncontroller.listener.names=CONTROLLER\nlisteners=CONTROLLER://:9093\n")
    user = "\x1b[2J\x07\u202eevil<b>"  # SCRAM's own syntax takes no , ] or =
    code, out, err = run(capsys, "storage", "format", "--config", str(props), "--cluster-id", "MkU3OEVBNTcwNTJENDM2Qk",
                         "--release-version", "3.9", "--add-scram", f"SCRAM-SHA-256=[name={user},password=pw]")
    assert code == 0, out + err
    shown_by = []
    for argv in (["replay", str(d / "__cluster_metadata-0")], ["log", "dump", str(next(d.rglob("*.checkpoint")))],
                 ["metadata-shell", "--snapshot", str(next(d.rglob("*.checkpoint"))), "find", "/"]):
        code, text = on_a_terminal(*argv)
        assert code in (0, 1), (argv, text)
        assert not RAW.search(text), (argv, text)
        shown_by += [argv[0]] if "\\x1b[2J\\x07\\u202eevil" in text else []
    assert shown_by, "no command showed the user name"


NAMED = ('name = "n\\u001b[2Jx\\u202e"\n[cluster]\ncontrollers = 1\nbrokers = 1\nrelease = "4.0"\n'
         '[[step]]\nop = "create-topics"\nnames = ["\\u001b[31mred"]\nexpect_error = "\\u001b[31mzz"\n')


def test_text_for_people_is_escaped_in_a_pipe_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`kraftsim ... | cat` hands the bytes to a terminal all the same: the scenario's name, its
    expected error and Kafka's error naming the topic are shown as escapes there too."""
    f = tmp_path / "s.toml"
    f.write_text(NAMED, encoding="utf-8")
    code, out, err = run(capsys, "scenario", "run", str(f))
    assert code == 1, out + err
    assert not RAW.search(out + err) and "\x1b" not in out + err, out
    assert "scenario n\\x1b[2Jx\\u202e (seed 0)" in out and "expected an error containing: \\x1b[31mzz" in out
    assert "Topic name is invalid: '\\x1b[31mred' contains one or more characters" in out
    code, out, err = run(capsys, "scenario", "check", str(f))
    assert code == 0 and out.endswith(": ok: scenario n\\x1b[2Jx\\u202e, 1 step(s)\n"), out + err


def test_json_in_a_pipe_is_left_as_it_is(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--json` is for programs: the same bytes as before, even right after a command whose
    text was escaped (the streams main guards are put back on return)."""
    f = tmp_path / "s.toml"
    f.write_text(NAMED, encoding="utf-8")
    run(capsys, "scenario", "check", str(f))
    code, out, _ = run(capsys, "scenario", "run", str(f), "--json")
    assert code == 1 and json.loads(out)["name"] == "n\x1b[2Jx\u202e" and "x\u202e" in out  # as result_json wrote it


def test_an_error_naming_a_prefix_is_escaped_in_a_pipe(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "c"
    assert run(capsys, "cluster", "create", str(d), "--controllers", "1", "--brokers", "1", "--release", "4.0")[0] == 0
    code, out, err = run(capsys, "topics", "--cluster", str(d), "create", "--prefix", "\x1b[31m")
    assert code != 0 and "\x1b" not in out + err
    assert "Topic name is invalid: '\\x1b[31m0' contains" in out + err, out + err
