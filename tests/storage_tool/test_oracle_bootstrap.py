"""Formatting reproduces the bootstrap.checkpoint files real Kafka clusters wrote (../shared/oracle).

For each oracle file: read its records, work out the flags it was formatted with (the
metadata.version as --release-version, each other feature as --feature), format with that
version's own release line and a clock that returns the file's own batch timestamps, and
the file comes out byte for byte. Through the CLI with SOURCE_DATE_EPOCH, the records and
the batch layout are the same and every timestamp is SOURCE_DATE_EPOCH × 1000.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from kraftsim.storage import (
    bootstrap_bytes, read_bootstrap, read_server_config, read_snapshot, replay_clock, storage_format,
)
from kraftsim.storage import api_message_and_version_string
from kraftsim.storage.bootstrap_builder import bootstrap_metadata_string
from kraftsim.versions import default_catalog
from tests.conftest import ORACLE, oracle_files
from tests.storage_tool.conftest import CLUSTER_ID, SDE, config_for, run_format

BOOTSTRAPS = oracle_files("bootstrap.checkpoint")
CAT = default_catalog()
needs_oracle = pytest.mark.skipif(not BOOTSTRAPS, reason="../shared/oracle is not present")


def rel(p: Path) -> str:
    return str(p.relative_to(ORACLE))


def format_flags(path: Path) -> tuple[str, str, list[str]]:
    """(release line, --release-version, --feature args) that give this file's records."""
    boot = read_bootstrap(path)
    mv = CAT.metadata_version(boot.metadata_version_level)
    line = CAT.at_release(mv.release)
    levels = boot.feature_levels()
    features = [f"{name}={level}" for name, level in levels.items() if name != "metadata.version"]
    for f in line.production_features:  # a default the file does not have was turned off
        if f.name != "kraft.version" and f.name not in levels and f.default_version(mv).level != 0:
            features.append(f"{f.name}=0")
    return mv.release, mv.version, features


def test_the_oracle_is_there_when_expected() -> None:
    if ORACLE.is_dir():
        assert len(BOOTSTRAPS) >= 15


@needs_oracle
@pytest.mark.parametrize("path", BOOTSTRAPS, ids=rel)
def test_formatter_writes_the_oracle_bootstrap_byte_for_byte(path: Path, tmp_path: Path) -> None:
    release, mv, features = format_flags(path)
    config = read_server_config(config_for(tmp_path))
    timestamps = read_snapshot(path).batch_timestamps
    lines: list[str] = []
    result = storage_format(CAT.at_release(release), config, cluster_id=CLUSTER_ID, release_version=mv,
                            features=features, clock=replay_clock(timestamps), rng=random.Random(7),
                            out=lines.append, fsync=False)
    produced = tmp_path / "data" / "bootstrap.checkpoint"
    assert produced.read_bytes() == path.read_bytes()
    oracle = read_bootstrap(path)
    bootstrap_line = ("Bootstrap metadata: BootstrapMetadata(records=["
                      + ", ".join(api_message_and_version_string(p) for p in oracle.payloads())
                      + f"], metadataVersionLevel={oracle.metadata_version_level}, source=format command)")
    assert "Bootstrap metadata: " + bootstrap_metadata_string(
        result.bootstrap_records, result.release_version.level, "format command") == bootstrap_line
    # What the release's tool prints (policy format_text): 3.x names the directory alone,
    # 3.9 on its kind too, and 4.2 on prints the bootstrap metadata first.
    text = CAT.at_release(release).policy("format_text")
    kind = "" if text.startswith("dir") else "metadata directory "
    assert lines == ([bootstrap_line] if text == "kind-bootstrap" else []) + [
        f"Formatting {kind}{tmp_path / 'data'} with metadata.version {result.release_version}."]
    assert not (tmp_path / "data" / "__cluster_metadata-0").exists()  # a static quorum has no zero checkpoint


@needs_oracle
@pytest.mark.parametrize("path", BOOTSTRAPS, ids=rel)
def test_cli_with_source_date_epoch_gives_the_oracle_records_and_layout(
        path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    release, mv, features = format_flags(path)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(SDE))
    args = ["--release", release, "--release-version", mv]
    for f in features:
        args += ["--feature", f]
    code, out, err = run_format(capsys, config_for(tmp_path), *args)
    assert (code, err) == (0, "")
    produced = tmp_path / "data" / "bootstrap.checkpoint"
    mine, theirs = read_snapshot(produced), read_snapshot(path)
    assert [e.message for e in mine.entries()] == [e.message for e in theirs.entries()]
    assert [(e.offset, e.control, e.type_name, e.version) for e in mine.entries()] == \
           [(e.offset, e.control, e.type_name, e.version) for e in theirs.entries()]
    layout = lambda s: [(fb.position, fb.batch.base_offset, fb.batch.records_count, fb.batch.is_control,  # noqa: E731
                         fb.batch.partition_leader_epoch) for fb in s.batches]
    assert layout(mine) == layout(theirs)
    assert mine.batch_timestamps == [SDE * 1000] * 3
    assert produced.read_bytes() == bootstrap_bytes(read_bootstrap(path).payloads(), time_ms=SDE * 1000)
    assert f"with metadata.version {mv}." in out
