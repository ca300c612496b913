"""`kraftsim scenario run` of a state machine's counterexample says which recorded failure it
reproduces and how to re-check it with the machine, instead of a bare PASS; a file that no
longer reaches the recorded state fails; a malformed `[recorded_failure]` is invalid input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kraftsim.scenario.recorded_failure import plain
from tests.cli_support import run

#: What ClusterStateMachine wrote for a user's invariant "metadata.version stays >= 3.8-IV0".
REPRODUCER = '''# Question: Does stays hold for every sequence of ops test_mine.Never38 generates?
# Answer: No. After step 1, stays fails: AssertionError: went below 3.8-IV0

name = "Never38: stays"
seed = 0
policy = "kafka"

[cluster]
controllers = 1
brokers = 1
release = "3.8.1"

[[step]]
op = "features-downgrade"
features = { "metadata.version" = 17 }

[expect]
metadata_version = 17
running = [1, 2]
has_leader = true

[recorded_failure]
invariant = "stays"
message = "AssertionError: went below 3.8-IV0\\nassert 17 >= 20"
machine = "tests.test_mine:Never38"
seed = 0
'''


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "repro.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_reproducer_says_what_it_reproduces_and_how_to_recheck(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, REPRODUCER)
    code, out, err = run(capsys, "scenario", "run", str(path))
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert not any(line.startswith("PASS") for line in lines)
    assert lines[-1] == "REPRODUCES Never38: stays: invariant stays recorded as failing"
    assert ("  recorded failure: invariant stays of tests.test_mine:Never38 failed after the last step: "
            "AssertionError: went below 3.8-IV0") in lines
    assert "    assert 17 >= 20" in lines
    assert f"    python -m pytest --kraftsim-replay {path} tests/test_mine.py" in lines


def test_json_carries_the_recorded_failure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, REPRODUCER)
    code, out, _ = run(capsys, "scenario", "run", "--json", str(path))
    result = json.loads(out)
    assert code == 0 and result["passed"] is True
    assert result["recorded_failure"] == {"invariant": "stays", "rule": None, "machine": "tests.test_mine:Never38",
                                          "message": "AssertionError: went below 3.8-IV0\nassert 17 >= 20",
                                          "seed": 0, "cut_short": False}
    plain_run = run(capsys, "scenario", "run", "--json", str(write(tmp_path, REPRODUCER.split("[recorded_failure]")[0])))
    assert json.loads(plain_run[1]) == {k: v for k, v in result.items() if k != "recorded_failure"}


def test_a_reproducer_that_no_longer_reaches_the_recorded_state_fails(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, REPRODUCER.replace("metadata_version = 17", "metadata_version = 18"))
    code, out, _ = run(capsys, "scenario", "run", str(path))
    assert code == 1
    assert out.splitlines()[-1] == "FAIL Never38: stays: invariant stays recorded as failing"
    assert "the simulator did not reach the recorded state" in out


def test_a_cut_short_reproducer_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, REPRODUCER + "cut_short = true\n")
    code, out, _ = run(capsys, "scenario", "run", str(path))
    assert code == 0 and "shrinking was cut short" in out


@pytest.mark.parametrize("table, key", [
    ('invariant = "a"\nrule = "b"\nmessage = "m"\nmachine = "m:C"\n', "recorded_failure.invariant"),
    ('message = "m"\nmachine = "m:C"\n', "recorded_failure.invariant"),
    ('invariant = "a"\nmessage = "m"\nmachine = "NoClass"\n', "recorded_failure.machine"),
    ('invariant = "a"\nmachine = "m:C"\n', "message"),
])
def test_a_malformed_table_is_invalid_input(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            table: str, key: str) -> None:
    path = write(tmp_path, REPRODUCER.split("[recorded_failure]")[0] + "[recorded_failure]\n" + table)
    code, _, err = run(capsys, "scenario", "run", str(path))
    assert code == 2 and key in err and "Traceback" not in err


def test_plain_text_leaves_out_object_reprs_and_pytest_where_lines() -> None:
    text = ("AssertionError: <kraftsim.testing.handle.ClusterHandle object at 0x7f3a2b10> is at 17\n"
            "assert 17 >= 20\n"
            " +  where 17 = <bound method ClusterHandle.metadata_version of "
            "<kraftsim.testing.handle.ClusterHandle object at 0x7f3a2b10>>()")
    assert plain(text) == "AssertionError: ClusterHandle is at 17\nassert 17 >= 20"
    assert plain("<function f at 0x7f00> failed") == "<function f> failed"
