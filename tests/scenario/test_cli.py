"""`kraftsim scenario ...` and `kraftsim topics ...`: exit codes, stdout discipline, --keep."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_support import run

from tests.scenario.helpers import REPO, SUITE, scenario_text

PASSING = scenario_text("[[step]]\nop = 'create-topics'\ncount = 2\n[expect]\ntopics = 2\nhas_leader = true\n",
                        name="passing")
FAILING = scenario_text("[expect]\ntopics = 5\n", name="failing")




def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_json_lines_and_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = write(tmp_path, "a.toml", PASSING)
    code, out, err = run(capsys, "scenario", "run", str(good), "--json")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["passed"] is True
    bad = write(tmp_path, "b.toml", FAILING)
    code, out, _ = run(capsys, "scenario", "run", str(good), str(bad), "--json", "--seed", "5")
    assert code == 1
    results = [json.loads(line) for line in out.splitlines()]
    assert [(r["name"], r["passed"], r["seed"]) for r in results] == [("passing", True, 5), ("failing", False, 5)]


def test_human_output_names_the_failed_expectation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write(tmp_path, "b.toml", FAILING)
    code, out, _ = run(capsys, "scenario", "run", str(bad))
    assert code == 1
    assert "  expect topics: FAILED, expected 5, actual 0" in out
    assert out.rstrip().endswith("FAIL failing")
    # (how long brokers were fenced comes before the final state: none here)
    assert "  brokers fenced: none\n  final: " in out


def test_invalid_file_exits_2_before_anything_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = write(tmp_path, "a.toml", PASSING)
    bad = write(tmp_path, "z.toml", scenario_text("[[step]]\nop = 'explode'\n"))
    code, out, err = run(capsys, "scenario", "run", str(good), str(bad), "--json")
    assert code == 2 and out == ""
    assert err.strip() == f"kraftsim: error: {bad}: step 1: key `op`: unknown op 'explode'; expected one of " \
                          "create-topics, delete-topics, roll, add-node, features-upgrade, features-downgrade, " \
                          "features-disable, crash, stop, start, partition, heal, disk-fault, snapshot, run, wait, " \
                          "add-controller, remove-controller, alter-broker-config, unregister-controller, create-acl, " \
                          "unregister-broker, create-partitions, alter-topic-config, elect-leaders, alter-client-quotas, " \
                          "alter-scram-credentials, reassign-partitions, alter-client-metrics, alter-group-config, delete-acls"
    code, out, err = run(capsys, "scenario", "check", str(good), str(bad))
    assert code == 2 and "z.toml: step 1" in err


@pytest.mark.parametrize("cluster, says", [
    ("release = '3.7.0'\ndynamic_quorum = true", "Release 3.7.0 has no kraft.version feature"),
    ("release = '3.7.0'\nfeatures = { 'metadata.version' = 99999 }", "unable to parse 99999 as a short"),
    ("release = '3.7.0'\nfeatures = { 'group.version' = 1 }", "Unsupported feature: group.version"),
    ("release = '3.7.0'\nrelease_version = '3.8-IV0'", "not ready for production use yet"),
    ("release = '3.7.0'\nrelease_version = '3.2-IV0'", "before 3.3-IV0 are not supported"),
])
def test_a_cluster_its_format_refuses_is_refused_by_check_and_before_any_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], cluster: str, says: str) -> None:
    """`check` passed these (its checks were of the file alone), and `run` ran the files before
    them first: the format each node would get now runs in a scratch directory first."""
    good = write(tmp_path, "a.toml", PASSING)
    bad = write(tmp_path, "z.toml", f"name = 'z'\n[cluster]\ncontrollers = 1\n{cluster}\n")
    for command in (("check", str(bad)), ("check", str(good), str(bad)), ("run", str(good), str(bad)),
                    ("run", str(bad))):
        code, out, err = run(capsys, "scenario", *command)
        assert (code, out) == (2, ""), (command, out, err)
        assert f"{bad}: key `cluster`: the cluster cannot be created: " in err and says in err, err


@pytest.mark.parametrize("source, says", [
    ("plain", "neither a __cluster_metadata-0 directory"),  # a folder of anything else (`/etc`)
    ("notes.txt", "not a metadata file"),
    ("00000000000000000000.log", "a log segment alone does not hold a cluster"),
    ("snap.checkpoint", "the file name does not say which offset this snapshot ends at"),
    ("logdir/meta.properties", "a log directory without a __cluster_metadata-0 directory"),
])
def test_check_refuses_a_from_that_run_refuses(tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str,
                                               says: str) -> None:
    """`check` passed a `from` the import refuses by its names alone, which `run` refused only
    after printing the scenario's header: both now refuse it, before anything is printed."""
    path = tmp_path / source
    path.parent.mkdir(parents=True, exist_ok=True)
    if source == "plain":
        path.mkdir()
        (path / "hosts").write_text("127.0.0.1 localhost\n", encoding="utf-8")
    else:
        path.write_text("", encoding="utf-8")
    origin = path.parent if source.endswith("meta.properties") else path
    file = write(tmp_path, "from.toml", f"name = 'x'\n[cluster]\nfrom = '{origin.name}'\n")
    for command in ("check", "run"):
        code, out, err = run(capsys, "scenario", command, str(file))
        assert (code, out) == (2, ""), (command, out, err)
        assert f"{file}: key `cluster.from`: the cluster cannot be imported: {origin}: " in err and says in err, err


def test_no_traceback_from_the_real_command(tmp_path: Path) -> None:
    bad = write(tmp_path, "m.toml", "name = [\n")
    proc = subprocess.run([sys.executable, "-m", "kraftsim", "scenario", "run", str(bad)], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and "m.toml: not valid TOML" in proc.stderr


def test_check_list_and_new(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "scenario", "check", str(write(tmp_path, "a.toml", PASSING)))
    assert code == 0 and "ok: scenario passing, 1 step(s)" in out
    code, out, _ = run(capsys, "scenario", "list")
    names = sorted(p.stem for p in SUITE.glob("*.toml"))
    rows = [line.split() for line in out.splitlines() if not line.startswith(" ")]
    assert code == 0 and rows == [[name, str(SUITE / f"{name}.toml")] for name in names]
    target = tmp_path / "mine.toml"
    code, out, _ = run(capsys, "scenario", "new", "mine", "-o", str(target))
    assert code == 0 and target.read_text(encoding="utf-8").startswith("# Question:")
    code, out, _ = run(capsys, "scenario", "run", str(target), "--json")
    assert code == 0 and json.loads(out)["name"] == "mine"  # the template runs and passes as written
    assert run(capsys, "scenario", "new", "mine", "-o", str(target))[0] == 1  # never overwrites


def test_new_quotes_the_hint_and_adds_no_second_toml(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """`new 'my test'` suggested `scenario run my test.toml` (two arguments in a shell), and
    `new x.toml` wrote x.toml.toml holding scenario "x.toml"."""
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "scenario", "new", "my test")
    assert (code, out) == (0, "Wrote my test.toml: edit it, then `kraftsim scenario run 'my test.toml'`.\n")
    code, out, _ = run(capsys, "scenario", "new", "x.toml")
    assert (code, out) == (0, "Wrote x.toml: edit it, then `kraftsim scenario run x.toml`.\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my test.toml", "x.toml"]
    code, out, _ = run(capsys, "scenario", "check", "x.toml")
    assert (code, out) == (0, "x.toml: ok: scenario x, 4 step(s)\n")


@pytest.mark.parametrize("name", ['a"b', "a\\b", "my test", "\u00fcn\u00ef"])
def test_a_new_scenario_of_any_plain_name_checks_and_its_comments_name_its_file(
        name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The name went into the file unescaped (`a"b` wrote a file that is not TOML), and its
    comments named NAME.toml unquoted, also where -o writes elsewhere."""
    import shlex

    monkeypatch.chdir(tmp_path)
    out_file = tmp_path / "sub dir" / "w.toml"
    out_file.parent.mkdir()
    assert run(capsys, "scenario", "new", name, "-o", str(out_file))[0] == 0
    code, out, _ = run(capsys, "scenario", "check", str(out_file))
    assert (code, out) == (0, f"{out_file}: ok: scenario {name}, 4 step(s)\n")
    assert f"kraftsim scenario run {shlex.quote(str(out_file))} " in out_file.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", ["a\x1bb", "a\tb", "a\x7fb", "ab\u202ecd", "../x", ".hidden", "a/b"])
def test_new_refuses_a_name_with_a_folder_or_a_control_character(name: str, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """`/` and a leading `.` were refused, but an escape character became part of a file name."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "scenario", "new", name)
    assert (code, out) == (2, "")
    assert err.strip() == ("kraftsim: error: NAME: expected a plain scenario name (no '/', no leading '.', no "
                           f"control or direction characters), got {name!r}")
    assert list(tmp_path.iterdir()) == []


def test_new_refuses_an_output_it_cannot_write_before_writing(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A missing folder was an internal error (exit 70, FileNotFoundError); it is said as the
    other commands say it (storage.safepath), as is a folder given for the file."""
    missing = tmp_path / "nodir" / "x.toml"
    code, out, err = run(capsys, "scenario", "new", "x", "-o", str(missing))
    assert (code, out, err.strip()) == (2, "", f"kraftsim: error: --output {missing}: {missing.parent}: no such directory")
    code, out, err = run(capsys, "scenario", "new", "x", "-o", str(tmp_path))
    assert (code, out, err.strip()) == (2, "", f"kraftsim: error: --output {tmp_path}: is a directory; expected a file "
                                               "to write")
    assert list(tmp_path.iterdir()) == []


def test_keep_leaves_a_cluster_the_other_commands_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    keep = tmp_path / "kept"
    code, _, _ = run(capsys, "scenario", "run", str(write(tmp_path, "a.toml", PASSING)), "--keep", str(keep), "--json")
    assert code == 0
    code, out, _ = run(capsys, "log", "dump", "--json", str(keep / "node-1" / "__cluster_metadata-0"))
    assert code == 0 and any(json.loads(line)["type"] == "TOPIC_RECORD" for line in out.splitlines())
    code, out, _ = run(capsys, "replay", str(keep / "node-2"))
    assert code == 0 and "OK   replay verification of" in out
    code, out, _ = run(capsys, "downgrade-report", str(keep / "node-1"), "--to", "3.7-IV1", "--details")
    assert code == 1 and "      topic topic-0 partition 0" in out  # what would be lost
    code, out, _ = run(capsys, "topics", "--cluster", str(keep), "list")
    assert code == 0 and out.split() == ["topic-0", "topic-1"]
    code, out, _ = run(capsys, "topics", "--cluster", str(keep), "create", "--count", "2", "--partitions", "3")
    assert code == 0 and out.splitlines() == ["Created topic topic-2.", "Created topic topic-3."]
    code, out, _ = run(capsys, "topics", "--cluster", str(keep), "delete", "topic-0")
    assert code == 0
    assert run(capsys, "topics", "--cluster", str(keep), "list")[1].split() == ["topic-1", "topic-2", "topic-3"]
    code, _, err = run(capsys, "topics", "--cluster", str(keep), "delete", "nope")
    assert code == 1 and err.strip() == "This server does not host this topic-partition."
    code, _, err = run(capsys, "topics", "--cluster", str(keep), "create", "--partitions", "0")
    assert code == 2 and "--partitions: expected a positive integer" in err
    code, _, err = run(capsys, "topics", "--cluster", str(keep), "create", "--count", "99999999999")
    assert code == 2 and "--count: expected a positive integer up to 1,000,000, got 99999999999" in err
    code, _, err = run(capsys, "topics", "--cluster", str(keep), "create", "--count", "5000", "--partitions", "5000")
    assert code == 2 and "expected at most 10,000,000 partitions in all" in err
    # --keep refuses a directory that holds something
    code, _, err = run(capsys, "scenario", "run", str(tmp_path / "a.toml"), "--keep", str(keep))
    assert code == 2 and "not an empty directory" in err


def test_topics_create_splits_requests_as_the_scenario_op_does(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """15,000 partitions in three topics: over Kafka's 10,000 for one CreateTopics request, so
    sent as two (as `create-topics` in a scenario); a failing later request leaves the topics
    of the earlier ones created, and named."""
    d = tmp_path / "c"
    assert run(capsys, "cluster", "create", str(d), "--controllers", "1", "--brokers", "1", "--release", "3.9")[0] == 0
    code, out, err = run(capsys, "topics", "--cluster", str(d), "create", "--count", "3", "--partitions", "5000")
    assert (code, out.splitlines()) == (0, [f"Created topic topic-{i}." for i in range(3)]), err
    code, _, err = run(capsys, "topics", "--cluster", str(d), "create", "--partitions", "10001")
    assert code == 1 and err.strip() == "Excessively large number of partitions per request."
    # c_d2 collides with c.d2 ('.' and '_' collide in metric names): the second request fails
    assert run(capsys, "topics", "--cluster", str(d), "create", "--prefix", "c.d", "--count", "3")[0] == 0
    assert run(capsys, "topics", "--cluster", str(d), "delete", "c.d0", "c.d1")[0] == 0
    code, out, err = run(capsys, "topics", "--cluster", str(d), "create", "--prefix", "c_d", "--count", "3",
                         "--partitions", "5000")
    assert code == 1 and out.splitlines() == ["Created topic c_d0.", "Created topic c_d1."]
    assert err.strip() == "Topic 'c_d2' collides with existing topic: c.d2"
    code, out, _ = run(capsys, "topics", "--cluster", str(d), "list")
    assert out.split() == ["c.d2", "c_d0", "c_d1", "topic-0", "topic-1", "topic-2"]


def test_one_report_into_a_folder_is_named_after_its_scenario(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """--html naming an existing folder for one scenario ended the run with an internal error;
    it now gets NAME.html, as several scenarios do. A device is refused before the run."""
    reports = tmp_path / "reports"
    reports.mkdir()
    code, out, err = run(capsys, "scenario", "run", str(write(tmp_path, "a.toml", PASSING)), "--html", str(reports))
    assert code == 0, err
    assert f"  report: {reports / 'passing.html'}" in out and (reports / "passing.html").read_text().startswith("<!")
    assert sorted(p.name for p in reports.iterdir()) == ["passing.html"]
    if Path("/dev/full").exists():
        code, out, err = run(capsys, "scenario", "run", str(tmp_path / "a.toml"), "--html", "/dev/full")
        assert (code, out) == (2, "") and "--html /dev/full: not a regular file" in err


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
@pytest.mark.parametrize("flag", ["--html", "--keep"])
@pytest.mark.parametrize("count", [1, 2])
def test_an_output_no_file_can_be_made_in_is_refused_before_the_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, count: int) -> None:
    """Root may write in /proc by its permission bits, yet nothing can be made there: --html
    ran every scenario and then failed (with several, as an internal error), --keep failed as
    if the scenario's cluster were wrong. Both are refused first now, and the other output
    (a new nested folder, tried too) is left as it was: not there."""
    files = [str(write(tmp_path, f"{i}.toml", PASSING.replace('name = "passing"', f'name = "p{i}"')))
             for i in range(count)]
    other = ["--keep", str(tmp_path / "new" / "kept")] if flag == "--html" else ["--html", str(tmp_path / "new" / "r")]
    code, out, err = run(capsys, "scenario", "run", *files, *other, flag, "/proc/out")
    assert (code, out) == (2, "")
    said = "cannot create the folder /proc/out" if count > 1 or flag == "--keep" else "cannot write in /proc"
    assert err == f"kraftsim: error: {flag} /proc/out: {said}: No such file or directory\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{i}.toml" for i in range(count)]


def test_several_scenarios_get_a_report_and_a_cluster_each(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write(tmp_path, "a.toml", PASSING)
    b = write(tmp_path, "b.toml", FAILING)
    code, out, _ = run(capsys, "scenario", "run", str(a), str(b), "--html", str(tmp_path / "reports"),
                       "--keep", str(tmp_path / "kept"))
    assert code == 1
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == ["failing.html", "passing.html"]
    assert sorted(p.name for p in (tmp_path / "kept").iterdir()) == ["failing", "passing"]
    assert f"  report: {tmp_path / 'reports' / 'passing.html'}" in out
    assert "FAIL</span>" in (tmp_path / "reports" / "failing.html").read_text(encoding="utf-8")
    code, out, _ = run(capsys, "scenario", "run", str(a), "--html", str(tmp_path / "one.html"), "--json")
    assert code == 0 and len(out.splitlines()) == 1 and (tmp_path / "one.html").is_file()


def test_cluster_status_reads_a_kept_cluster(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    keep = tmp_path / "kept"
    assert run(capsys, "scenario", "run", str(write(tmp_path, "a.toml", PASSING)), "--keep", str(keep), "--json")[0] == 0
    code, out, err = run(capsys, "cluster", "status", str(keep))
    assert code == 0, err
    assert "Voters: 1; leader: node 1" in out


def test_empty_folder_and_list_of_another_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    code, out, err = run(capsys, "scenario", "run", str(tmp_path / "empty"))
    assert code == 2 and out == "" and "no scenario files" in err
    mine = tmp_path / "mine"
    mine.mkdir()
    write(mine, "a.toml", "# Question: does it list?\n" + PASSING)
    code, out, _ = run(capsys, "scenario", "list", "--dir", str(mine))
    assert code == 0 and out.splitlines() == [f"passing  {mine / 'a.toml'}", "    does it list?"]


def test_run_and_check_take_a_shipped_scenario_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the name is not a path here
    code, out, _ = run(capsys, "scenario", "check", "torn-tail", "disable-feature.toml")
    assert code == 0 and out.splitlines() == [f"{SUITE / 'torn-tail.toml'}: ok: scenario torn-tail, 5 step(s)",
                                              f"{SUITE / 'disable-feature.toml'}: ok: scenario disable-feature, 2 step(s)"]
    code, out, _ = run(capsys, "scenario", "run", "torn-tail", "--json")
    assert code == 0 and json.loads(out)["name"] == "torn-tail"
    (tmp_path / "torn-tail").write_text(PASSING, encoding="utf-8")  # a file of that name wins over the suite
    code, out, _ = run(capsys, "scenario", "run", "torn-tail", "--json")
    assert code == 0 and json.loads(out)["name"] == "passing"
    code, _, err = run(capsys, "scenario", "run", "no-such-scenario")
    assert code == 2 and "no-such-scenario: cannot be read" in err


def test_a_folder_holding_a_file_nested_too_deeply_is_refused_as_invalid_input(tmp_path: Path,
                                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """`scenario run DIR` first asks each file whether it is `slow = true`, with a parse that had
    none of the TOML bounds: `[[[[...` was an internal error (exit 70) before the file's own check."""
    (tmp_path / "deep.toml").write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    code, out, err = run(capsys, "scenario", "run", str(tmp_path))
    assert (code, out) == (2, ""), err
    assert err.startswith(f"kraftsim: error: {tmp_path / 'deep.toml'}: arrays or tables nested too deeply")
