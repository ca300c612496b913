"""Invalid input is refused with what was expected, not guessed at; what Kafka's own tools
accept is accepted the same way."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kraftsim.cli.main import main
from tests.cli_support import fifo_unblocked_after, run
from tests.reliability import damage




@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("c") / "cluster"
    assert main(["cluster", "create", str(d), "--controllers", "1", "--brokers", "1", "--release", "3.7"]) == 0
    return d


def tree(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("nodes", ["", ",", " ", ",,", "1,", ",2", "1,,2", "x", "1;2", "1,1", "-1", "2147483648",
                                   "99999999999", "1.0", "0x1"])
def test_roll_refuses_a_node_list_that_names_no_node_or_a_bad_one(cluster: Path, capsys: pytest.CaptureFixture[str],
                                                                  nodes: str) -> None:
    before = tree(cluster)
    code, out, err = run(capsys, "cluster", "roll", str(cluster), "--release", "3.8", "--nodes", nodes)
    assert code == 2
    assert "argument --nodes: " in err and repr(nodes) in err
    assert tree(cluster) == before  # no node was rolled


@pytest.mark.parametrize("argv, flag", [
    (["add", "--broker", "--release", "3.8", "--id", "2147483648"], "--id"),
    (["add", "--broker", "--release", "3.8", "--id", "-5"], "--id"),
])
def test_node_ids_beyond_int32_are_refused(cluster: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                                           flag: str) -> None:
    before = tree(cluster)
    code, _, err = run(capsys, "cluster", argv[0], str(cluster), *argv[1:])
    assert code == 2 and f"argument {flag}: expected a node id from 0 to 2147483647" in err
    assert tree(cluster) == before


@pytest.mark.parametrize("argv, expected", [
    (["cluster", "create", "{d}", "--controllers", "-3", "--release", "3.7"], "a number of controllers from 0 to 100"),
    (["cluster", "create", "{d}", "--controllers", "1000000", "--release", "3.7"], "from 0 to 100"),
    (["cluster", "create", "{d}", "--controllers", "0", "--combined", "-1", "--release", "3.7"],
     "a number of combined nodes from 0 to 100"),
    (["cluster", "create", "{d}", "--controllers", "1", "--brokers", "-1", "--release", "3.7"], "a number of brokers"),
    (["export", "{f}", "-o", "{d}/x.parquet", "--batch-rows", "0"], "a number of rows from 1 to"),
    (["export", "{f}", "-o", "{d}/x.parquet", "--batch-rows", "-10"], "a number of rows from 1 to"),
    (["snapshot", "create", "{f}", "--offset", "-1", "-o", "{d}"], "an offset from 0 to"),
    (["downgrade-report", "{f}", "--to", "3.6", "--at", "-7"], "an offset from 0 to"),
    (["downgrade-report", "{f}", "--to", "3.6", "--controller-id", "4294967296"], "a node id from 0 to"),
    (["spark", "corpus", "{f}", "--partitions", "0", "--local"], "a number of tasks from 1 to"),
    (["spark", "corpus", "{f}", "--partitions-per-core", "-2", "--local"], "a number of tasks per core"),
    (["features", "describe", "--node-id", "-1"], "a node id from 0 to"),
])
def test_negative_or_absurd_counts_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                                               expected: str) -> None:
    f = next(damage.build_log_dir(tmp_path / "log").glob("*.log"))
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    args = [a.format(d=out_dir, f=f) for a in argv]
    code, _, err = run(capsys, *args)
    assert code == 2, err
    assert expected in err
    assert not any(out_dir.iterdir())  # nothing was written


@pytest.mark.parametrize("command", [["storage", "version-mapping"], ["features", "version-mapping"]])
@pytest.mark.parametrize("version", ["3.6.", "3.6..", "3", "3.6-IV9", ".3.6", ""])
def test_release_versions_kafka_refuses_are_refused(capsys: pytest.CaptureFixture[str], command: list[str],
                                                    version: str) -> None:
    code, out, err = run(capsys, *command, "--release-version", version)
    assert code == 1
    assert f"Unknown metadata.version '{version}'" in err


@pytest.mark.parametrize("version, level", [("3.6", 14), ("3.6.1", 14), ("3.6.1.", 14), ("3.6-IV2", 14)])
def test_release_versions_kafka_accepts_are_accepted(capsys: pytest.CaptureFixture[str], version: str,
                                                     level: int) -> None:
    code, out, _ = run(capsys, "storage", "version-mapping", "--release-version", version)
    assert code == 0
    assert out.splitlines()[0] == f"metadata.version={level} ({version})"


def test_an_abbreviated_option_is_not_taken_for_another(capsys: pytest.CaptureFixture[str]) -> None:
    """`features version-mapping --release 3.6.` once ran as `--release-version 3.6.`."""
    code, _, err = run(capsys, "features", "version-mapping", "--release", "3.6")
    assert code == 2 and "unrecognized arguments: --release 3.6" in err


def test_a_feature_level_with_spaces_is_trimmed_as_kafka_does(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "storage", "feature-dependencies", "--feature", "group.version= 1")
    assert code == 0
    code2, out2, _ = run(capsys, "storage", "feature-dependencies", "--feature", "group.version=1")
    assert (code2, out2) == (code, out)


def test_export_reads_the_catalog_it_is_given(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = next(damage.build_log_dir(tmp_path / "log").glob("*.log"))
    out = tmp_path / "x.parquet"
    code, _, err = run(capsys, "export", str(f), "-o", str(out), "--catalog", str(tmp_path / "missing.toml"))
    assert code == 2 and f"catalog file {tmp_path / 'missing.toml'}: does not exist" in err
    broken = tmp_path / "broken.toml"
    broken.write_text("[[releases]\n")
    code, _, err = run(capsys, "export", str(f), "-o", str(out), "--catalog", str(broken))
    assert code == 2 and "broken.toml" in err and "not valid TOML" in err
    assert not out.exists() and not (tmp_path / "x.parquet.part").exists()


def test_replay_says_a_missing_or_fifo_catalog_is_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A missing catalog was `rule schema broken: cannot read catalog file`, naming no rule it
    broke; a FIFO hung the open."""
    log = damage.build_log_dir(tmp_path / "log")
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    for catalog, says in ((tmp_path / "nonexist", "does not exist"), (fifo, "cannot read it: not a regular file")):
        code, _, err = run(capsys, "replay", str(log), "--catalog", str(catalog))
        assert code == 2 and f"kraftsim: error: catalog file {catalog}: {says}" in err, err
        assert "rule" not in err


def test_conformance_table_refuses_a_fifo_nobody_writes_to(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A FIFO is read as the pipe it is; one nobody writes to was waited on forever."""
    from kraftsim import regular_file

    monkeypatch.setattr(regular_file, "PIPE_WAIT_S", 0.2)
    fifo = tmp_path / "outcomes.jsonl"
    os.mkfifo(fifo)
    with fifo_unblocked_after(fifo):
        code, out, err = run(capsys, "conformance", "table", str(fifo))
    assert (code, out) == (2, "") and err == (f"kraftsim: error: {fifo}: cannot be read: a pipe nothing was written "
                                              "to in 0.2 s (no writer?)\n")


@pytest.mark.parametrize("content, says", [
    (b'{"case": 1, "release": [], "result": {}}\n', "line 1: expected text for case, release and detail"),
    (b'{"case": "a", "release": "3.9", "result": "maybe"}\n', "a result of agree, policy, differ"),
    (b'[1]\n', "line 1: expected a conformance JSON object"),
    (b'\xff\xfe\n', "expected UTF-8 text (byte 0 is not)"),
    (b'[' * 100_000 + b'\n', "line 1: expected a conformance JSON object (arrays or objects nested too deeply)"),
])
def test_conformance_table_refuses_what_is_not_its_json_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              content: bytes, says: str) -> None:
    """Outcomes of the wrong types were an internal error (exit 70), a wrong encoding too."""
    saved = tmp_path / "outcomes.jsonl"
    saved.write_bytes(content)
    code, out, err = run(capsys, "conformance", "table", str(saved))
    assert (code, out) == (2, "") and says in err and len(err.strip().splitlines()) == 1
    code, _, err = run(capsys, "conformance", "table", str(tmp_path / "missing.jsonl"))
    assert code == 2 and "cannot be read: No such file or directory" in err
