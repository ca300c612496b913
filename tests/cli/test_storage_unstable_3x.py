"""`kafka-storage format` at a release's unstable metadata.version on 3.7 and 3.8 (policy
format_unstable). Ground truth: the real StorageTool of 3.7.2 and 3.8.1 run on the same
server.properties (2026-11-29): 3.7 reads unstable.metadata.versions.enable, 3.8 reads
unstable.feature.versions.enable, each ignores the other's name, and both print a warning line
of their own wording before the Formatting line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_support import run

CASES = [
    ("3.7.2", "3.8-IV0", None, 1, "Metadata version 3.8-IV0 is not ready for production use yet."),
    ("3.7.2", "3.8-IV0", "unstable.feature.versions.enable", 1,
     "Metadata version 3.8-IV0 is not ready for production use yet."),
    ("3.7.2", "3.8-IV0", "unstable.metadata.versions.enable", 0,
     "WARNING: using pre-production metadata version 3.8-IV0.\nFormatting {logs} with metadata.version 3.8-IV0."),
    ("3.8.1", "3.9-IV0", None, 1, "The metadata.version 3.9-IV0 is not ready for production use yet."),
    ("3.8.1", "3.9-IV0", "unstable.metadata.versions.enable", 1,
     "The metadata.version 3.9-IV0 is not ready for production use yet."),
    ("3.8.1", "3.9-IV0", "unstable.feature.versions.enable", 0,
     "WARNING: using pre-production metadata.version 3.9-IV0.\nFormatting {logs} with metadata.version 3.9-IV0."),
]


@pytest.mark.parametrize("release,version,config,code,text", CASES)
def test_format_at_an_unstable_level_reads_the_releases_own_config(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], release: str, version: str, config: str | None,
        code: int, text: str) -> None:
    logs = tmp_path / "logs"
    props = tmp_path / "server.properties"
    props.write_text("process.roles=broker,controller\nnode.id=1\ncontroller.quorum.voters=1@localhost:9093\n"
                     "listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093\n"
                     f"controller.listener.names=CONTROLLER\nlog.dirs={logs}\n"
                     + (f"{config}=true\n" if config else ""), encoding="utf-8")
    got, out, err = run(capsys, "storage", "format", "--release", release, "-t", "AAAAAAAAAAAAAAAAAAAAAA",
                        "-c", str(props), "--release-version", version)
    assert got == code
    assert (out if code == 0 else err).strip() == text.format(logs=logs)
    assert logs.exists() == (code == 0)


@pytest.mark.parametrize("version,level", [("4.0-IV0", 22), ("4.0-IV1", 23)])
def test_3_9_bootstraps_transaction_version_at_its_unstable_4_0_levels(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], version: str, level: int) -> None:
    """Seen with 3.9.1's StorageTool (unstable.feature.versions.enable=true): the bootstrap
    file at 4.0-IV0 and 4.0-IV1 holds metadata.version, then transaction.version=2."""
    logs = tmp_path / "logs"
    props = tmp_path / "server.properties"
    props.write_text("process.roles=broker,controller\nnode.id=1\ncontroller.quorum.voters=1@localhost:9093\n"
                     "listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093\n"
                     f"controller.listener.names=CONTROLLER\nlog.dirs={logs}\nunstable.feature.versions.enable=true\n",
                     encoding="utf-8")
    code, out, _ = run(capsys, "storage", "format", "--release", "3.9.1", "-t", "AAAAAAAAAAAAAAAAAAAAAA",
                       "-c", str(props), "--release-version", version)
    assert code == 0 and out == f"Formatting metadata directory {logs} with metadata.version {version}.\n"
    code, out, _ = run(capsys, "log", "dump", str(logs / "bootstrap.checkpoint"))
    levels = [line.split('"data":')[1] for line in out.splitlines() if "FEATURE_LEVEL_RECORD" in line]
    assert levels == [f'{{"name":"metadata.version","featureLevel":{level}}}}}',
                      '{"name":"transaction.version","featureLevel":2}}']


@pytest.mark.parametrize("release,config,version", [("3.7.2", "unstable.metadata.versions.enable", "3.7-IV4"),
                                                    ("3.8.1", "unstable.feature.versions.enable", "3.8-IV0")])
def test_3_7_and_3_8_default_to_latest_production_with_unstable_enabled(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], release: str, config: str, version: str) -> None:
    """Live (conformance storage-format/unstable/default on 3.7.2 and 3.8.1): without
    --release-version the bootstrap is LATEST_PRODUCTION even with unstable versions enabled."""
    logs = tmp_path / "logs"
    props = tmp_path / "server.properties"
    props.write_text("process.roles=broker,controller\nnode.id=1\ncontroller.quorum.voters=1@localhost:9093\n"
                     "listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093\n"
                     f"controller.listener.names=CONTROLLER\nlog.dirs={logs}\n{config}=true\n", encoding="utf-8")
    code, out, _ = run(capsys, "storage", "format", "--release", release, "-t", "AAAAAAAAAAAAAAAAAAAAAA",
                       "-c", str(props))
    assert code == 0 and out.endswith(f"with metadata.version {version}.\n")
