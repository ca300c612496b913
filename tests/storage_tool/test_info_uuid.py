"""`kraftsim storage info` (StorageTool.infoCommand's lines) and `random-uuid`."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from kraftsim.storage import read_meta_properties
from tests.storage_tool.conftest import CLUSTER_ID, config_for, run, run_format


def test_info_of_formatted_directories(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = config_for(tmp_path, dirs=("b", "a"))
    assert run_format(capsys, config, "--release", "3.9")[0] == 0
    code, out, err = run(capsys, "storage", "info", "-c", str(config))
    dir_id = read_meta_properties(tmp_path / "a").meta.directory_id
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "Found log directories:",
        f"  {tmp_path / 'a'}",
        f"  {tmp_path / 'b'}",
        "",
        f"Found metadata: {{cluster.id={CLUSTER_ID}, directory.id={dir_id}, node.id=1, version=1}}",
        "",
    ]
    code, out, _ = run(capsys, "storage", "info", "--dir", str(tmp_path / "a"), "--bootstrap")
    assert code == 0
    assert out.splitlines()[0] == "Found log directory:"
    assert out.splitlines()[-1] == f"Found bootstrap metadata in {tmp_path / 'a'}: metadata.version=21 (3.9-IV0)"


def test_info_problems(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_format(capsys, config_for(tmp_path, dirs=("f",)))[0] == 0
    (tmp_path / "empty").mkdir()
    (tmp_path / "file").write_text("x")
    other = tmp_path / "other"
    other.mkdir()
    (other / "meta.properties").write_text("version=1\ncluster.id=MvDxzVmcRsaTz33bUuRU6A\nnode.id=1\n")
    dirs = [tmp_path / n for n in ("f", "empty", "file", "missing", "other")]
    code, out, _ = run(capsys, "storage", "info", *[a for d in dirs for a in ("--dir", str(d))])
    assert code == 1
    meta = read_meta_properties(tmp_path / "f").meta
    assert out.splitlines() == [
        "Found log directories:",
        f"  {tmp_path / 'empty'}",
        f"  {tmp_path / 'f'}",
        f"  {tmp_path / 'other'}",
        "",
        f"Found metadata: {{cluster.id={CLUSTER_ID}, directory.id={meta.directory_id}, node.id=1, version=1}}",
        "",
        "Found problems:",
        f"  {tmp_path / 'empty'} is not formatted.",
        f"  {tmp_path / 'file'} is not a directory",
        f"  {tmp_path / 'missing'} does not exist",
        "  Mismatched cluster IDs between storage directories.",
        "",
    ]


def test_info_kraft_config_with_legacy_directories(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "meta.properties").write_text("version=0\nbroker.id=1\n")
    code, out, _ = run(capsys, "storage", "info", "-c", str(config_for(tmp_path)))
    assert code == 1
    assert out.splitlines()[-3:] == [
        "Found problem:",
        "  The kafka configuration file appears to be for a cluster in KRaft mode, but the directories are "
        "formatted for legacy mode.",
        "",
    ]
    code, out, _ = run(capsys, "storage", "info")
    assert (code, out) == (0, "No directories specified.\n")


def test_random_uuid(capsys: pytest.CaptureFixture[str]) -> None:
    seen = set()
    for _ in range(20):
        code, out, _ = run(capsys, "storage", "random-uuid")
        text = out.strip()
        assert code == 0 and len(text) == 22 and not text.startswith("-")
        raw = base64.urlsafe_b64decode(text + "==")
        assert len(raw) == 16 and raw[6] >> 4 == 4 and raw[8] >> 6 == 2  # a java.util.UUID.randomUUID
        seen.add(text)
    assert len(seen) == 20
    assert run(capsys, "storage", "random-uuid", "--seed", "9")[1] == run(capsys, "storage", "random-uuid", "--seed", "9")[1]


def test_a_meta_properties_that_is_a_fifo_is_refused_not_waited_on(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """`storage info` and `storage format` opened a FIFO named meta.properties and waited for a
    writer forever (fifo_unblocked_after ends such a wait after 10 s: a regression fails here)."""
    import os
    import time

    from tests.cli_support import fifo_unblocked_after

    d = tmp_path / "data"
    d.mkdir()
    fifo = d / "meta.properties"
    os.mkfifo(fifo)
    config = config_for(tmp_path)
    for argv in (("storage", "info", "--dir", str(d)), ("storage", "format", "-c", str(config), "--cluster-id",
                                                         CLUSTER_ID, "--release", "3.9")):
        started = time.monotonic()
        with fifo_unblocked_after(fifo):
            code, _, err = run(capsys, *argv)
        assert code == 1 and time.monotonic() - started < 10, (argv, err)
    assert [p.name for p in d.iterdir()] == ["meta.properties"]
