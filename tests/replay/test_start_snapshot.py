"""Which snapshot a node starts from, per release (policy start_snapshot, KAFKA-15076).

Kafka 3.3 to 3.5 replay a log that still starts at offset 0 whole and pass every snapshot by
(a live 3.3.2 node restarted on a lossy kraftsim snapshot at its log's end served the log's
metadata.version, conformance live-node); 3.6 on start from the newest snapshot. The
directory is a real 3.4 node's log (3.4-IV0), with a snapshot at 3.3-IV3 added at its end.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kraftsim.storage.log import MetadataLog
from kraftsim.image.loader.loading import passes_snapshots_by
from tests.cli_support import run
from tests.conftest import ORACLE

pytestmark = pytest.mark.skipif(not ORACLE.is_dir(), reason="../shared/oracle is not present")

K34 = ORACLE / "kafka-3.4_cooler-SAI"
LOG_END = 1570


@pytest.fixture
def with_older_snapshot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    d = tmp_path / "k"
    shutil.copytree(K34, d)
    meta = d / "__cluster_metadata-0"
    code, _, err = run(capsys, "snapshot", "create", str(d), "--offset", str(LOG_END), "--metadata-version",
                       "3.3-IV3", "--release", "3.4", "-o", str(meta))
    assert code == 0, err
    return d


def _served(capsys: pytest.CaptureFixture[str], d: Path, *flags: str) -> tuple[str, str | None]:
    code, out, err = run(capsys, "replay", str(d), "--json", "--no-verify", *flags)
    assert code == 0, err
    result = json.loads(out)["results"][0]
    mv = result["summary"]["features"]["metadata.version"]
    return (mv["version"] if isinstance(mv, dict) else mv), result["load"]["snapshot"]


@pytest.mark.parametrize("release", ["3.4", "3.5"])  # (3.3 cannot read a 3.4-IV0 log)
def test_3_3_to_3_5_replay_a_log_starting_at_0_whole(with_older_snapshot: Path, capsys, release: str) -> None:
    assert _served(capsys, with_older_snapshot, "--release", release) == ("3.4-IV0", None)
    # asked for, the newest snapshot is still there to load
    assert _served(capsys, with_older_snapshot, "--release", release, "--snapshot", "latest")[0] == "3.3-IV3"


@pytest.mark.parametrize("release", ["3.6", "4.0"])
def test_3_6_on_start_from_the_newest_snapshot(with_older_snapshot: Path, capsys, release: str) -> None:
    mv, snapshot = _served(capsys, with_older_snapshot, "--release", release)
    assert mv == "3.3-IV3" and snapshot is not None and snapshot.startswith(f"{LOG_END:020d}-")


def test_a_snapshot_the_raft_layer_cuts_the_log_to_is_read(with_older_snapshot: Path) -> None:
    meta = with_older_snapshot / "__cluster_metadata-0"
    written = next(meta.glob("*.checkpoint"))
    with MetadataLog.open(meta, read_only=True) as log:
        assert passes_snapshots_by(log)  # at the log's end, in its epoch: the log is kept
    # beyond the log's end in the same epoch, or of a later epoch: truncateToLatestSnapshot
    for name in (f"{LOG_END + 1:020d}-0000000001.checkpoint", f"{LOG_END:020d}-0000000002.checkpoint"):
        moved = written.rename(meta / name)
        with MetadataLog.open(meta, read_only=True) as log:
            assert not passes_snapshots_by(log), name
        written = moved.rename(written)


def test_no_snapshot_means_the_log(tmp_path: Path) -> None:
    d = tmp_path / "k"
    shutil.copytree(K34, d)
    with MetadataLog.open(d / "__cluster_metadata-0", read_only=True) as log:
        assert passes_snapshots_by(log)
