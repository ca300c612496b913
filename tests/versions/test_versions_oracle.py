"""The catalog against files real Kafka releases wrote (../shared/oracle).

Each RegisterBrokerRecord / RegisterControllerRecord carries the ranges its software
advertises, and its maximum metadata.version names the release (every release has its
own LATEST_PRODUCTION). Record versions, snapshot contents and bootstrap files are then
checked against what the catalog says that release writes.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from kraftsim.protocol.batch import BatchSlice, parse_batch, split_batches
from kraftsim.protocol.entries import LogEntry, decode_batch
from kraftsim.protocol.registry import default_registry
from kraftsim.versions import default_catalog
from tests.conftest import ORACLE, oracle_files

CAT = default_catalog()
FILES = oracle_files("*.log", "*.checkpoint")
pytestmark = pytest.mark.skipif(not FILES, reason="../shared/oracle is not present")


@cache
def entries(path: Path) -> list[LogEntry]:
    data = path.read_bytes()
    out: list[LogEntry] = []
    for piece in split_batches(data):
        if isinstance(piece, BatchSlice):
            out += [e for e in decode_batch(parse_batch(piece.data), default_registry()) if not e.control]
    return out


def finalized(path: Path) -> dict[str, int]:
    levels: dict[str, int] = {}
    for e in entries(path):
        if e.type_name == "FEATURE_LEVEL_RECORD":
            levels[e.message.name] = e.message.feature_level
    return levels


def registrations(path: Path) -> list[dict[str, tuple[int, int]]]:
    out = []
    for e in entries(path):
        if e.type_name in ("REGISTER_BROKER_RECORD", "REGISTER_CONTROLLER_RECORD"):
            out.append({f.name: (f.min_supported_version, f.max_supported_version) for f in e.message.features})
    return out


def release_of(advertised: dict[str, tuple[int, int]]) -> str:
    top = advertised["metadata.version"][1]
    (line,) = {r.line for r in CAT.releases if r.latest_production == top}  # patch releases share a line's support
    return line


def name(p: Path) -> str:
    return str(p.relative_to(ORACLE))


@pytest.mark.parametrize("path", FILES, ids=name)
def test_advertised_features_are_the_releases(path):
    for advertised in registrations(path):
        assert advertised == CAT.at_release(release_of(advertised)).supported_features()


@pytest.mark.parametrize("path", FILES, ids=name)
def test_records_are_written_at_the_versions_the_mv_allows(path):
    mv = finalized(path)["metadata.version"]
    line = CAT.at_release("3.9") if mv <= 21 else CAT
    allowed = set(line.record_types(mv))
    for e in entries(path):
        record = e.record_type.name
        assert record in allowed, f"offset {e.offset}: {record} at metadata.version {mv}"
        if record in ("RegisterBrokerRecord", "PartitionRecord", "PartitionChangeRecord"):
            assert e.version == line.record_version(record, mv), f"offset {e.offset}"
        else:
            assert e.version <= line.record_version(record, mv), f"offset {e.offset}"


SNAPSHOTS = [p for p in FILES if p.suffix == ".checkpoint" and p.name != "bootstrap.checkpoint"]


@pytest.mark.parametrize("path", SNAPSHOTS, ids=name)
def test_snapshots_follow_the_zk_migration_state_policy(path):
    regs = registrations(path)
    if not regs:
        pytest.skip("no registration to tell the writer's release")
    line = CAT.at_release(release_of(regs[0]))
    mv = finalized(path)["metadata.version"]
    expected = line.policy("snapshot_zk_migration_state") == "write" and line.supports("migration", mv)
    written = any(e.type_name == "ZK_MIGRATION_STATE_RECORD" for e in entries(path))
    assert written == expected


@pytest.mark.parametrize("path", sorted(ORACLE.rglob("bootstrap.checkpoint")) if ORACLE.is_dir() else [], ids=name)
def test_bootstrap_files_hold_the_default_levels(path):
    levels = finalized(path)
    mv = levels["metadata.version"]
    defaults = CAT.default_levels(mv, production_only=True)
    expected = {"metadata.version": mv, **{f: lv for f, lv in defaults.items() if lv > 0 and f != "kraft.version"}}
    assert levels == expected
    assert entries(path)[0].message.name == "metadata.version"
