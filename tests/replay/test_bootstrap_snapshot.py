"""Replay verification of a KIP-1170 bootstrap snapshot (`00000000000000000000-0000000000.checkpoint`
holding the formatter's feature records): it is checked against the log's bootstrap write,
not as the log's state at offset 0, on a simulated 4.4 node and a damaged copy of it."""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec
import pytest

from kraftsim.cli.main import main
from kraftsim.image import verify_directory
from kraftsim.storage import SnapshotId, read_snapshot
from kraftsim.storage.snapshot import write_snapshot
from kraftsim.versions import default_catalog
from tests.cli_support import run

CHECK = "bootstrap snapshot records = the log's bootstrap write"
ZERO = "00000000000000000000-0000000000.checkpoint"


@pytest.fixture(scope="module")
def node_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("sim44") / "cluster"
    assert main(["cluster", "create", str(d), "--engine", "events", "--controllers", "0", "--brokers", "0",
                 "--combined", "1", "--release", "4.4.0", "--seed", "0"]) == 0
    meta = d / "node-1" / "__cluster_metadata-0"
    assert (meta / ZERO).is_file()
    return meta


def _zero(result):
    return next(s for s in result.snapshots if s.snapshot == ZERO)


def test_a_4_4_node_with_its_bootstrap_snapshot_verifies(node_dir: Path) -> None:
    result = verify_directory(node_dir, catalog=default_catalog())
    zero = _zero(result)
    assert result.ok, zero
    assert [f.check for f in zero.fields] == [CHECK]
    assert zero.fields[0].ok and "all 6" in str(zero.fields[0].found)


def test_replay_cli_passes_on_a_4_4_node(node_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "replay", "--release", "4.4.0", str(node_dir))
    assert code == 0, out
    assert f"OK   {CHECK}" in out


def test_a_bootstrap_snapshot_the_log_does_not_hold_fails(node_dir: Path, tmp_path: Path) -> None:
    meta = tmp_path / "__cluster_metadata-0"
    shutil.copytree(node_dir, meta)
    snap = read_snapshot(meta / ZERO)
    payloads = snap.payloads()
    mv = payloads[0]
    assert mv.message.name == "metadata.version"
    payloads[0] = mv._replace(message=msgspec.structs.replace(mv.message, feature_level=mv.message.feature_level - 1))
    (meta / ZERO).unlink()
    write_snapshot(meta, SnapshotId(0, 0), payloads, last_contained_log_timestamp=snap.last_contained_log_timestamp,
                   time_ms=0)
    result = verify_directory(meta, catalog=default_catalog())
    zero = _zero(result)
    assert not result.ok and not zero.ok
    field = next(f for f in zero.fields if f.check == CHECK)
    assert not field.ok and "metadata.version" in str(field.found)
