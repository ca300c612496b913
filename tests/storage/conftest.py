"""Fixtures for the storage tests: where the real Kafka files are, and small builders.

The oracle lives in ../shared/oracle relative to the repository root. Tests that need it
skip cleanly when it is absent. Oracle files are only ever read; tests that damage a file
copy it into tmp_path first.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from kraftsim.protocol.entries import Payload
from kraftsim.protocol.registry import default_registry
from kraftsim.storage.log import MetadataLog
from kraftsim.storage.names import SnapshotId
from kraftsim.storage.snapshot import write_snapshot

from tests.paths import ORACLE
HAVE_ORACLE = ORACLE.is_dir()
needs_oracle = pytest.mark.skipif(not HAVE_ORACLE, reason="../shared/oracle is not present")


def oracle_paths(pattern: str, *, dirs: bool = False) -> list[Path]:
    """Oracle paths matching a glob (files, or directories with dirs=True), sorted; [] when absent."""
    if not HAVE_ORACLE:
        return []
    return sorted(p for p in ORACLE.rglob(pattern) if (p.is_dir() if dirs else p.is_file()))


def rel(path: Path) -> str:
    """A readable test id: the path below the oracle folder."""
    return str(path.relative_to(ORACLE))


def tree_fingerprint(root: Path) -> dict[str, tuple[int, int, str]]:
    """(size, mtime, sha256) of every file below root: proves a read-only open changed nothing."""
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
        for p in sorted(root.rglob("*")) if p.is_file()
    }


@pytest.fixture(scope="session")
def oracle() -> Path:
    if not HAVE_ORACLE:
        pytest.skip("../shared/oracle is not present")
    return ORACLE


REGISTRY = default_registry()


def config_payload(value_len: int, name: str = "k") -> Payload:
    """A ConfigRecord whose encoded size grows with value_len (for batches of chosen sizes)."""
    rt = REGISTRY["ConfigRecord"]
    return Payload(rt, 0, rt.new(resource_type=2, resource_name="t", name=name, value="x" * value_len))


def feature_payload(name: str, level: int) -> Payload:
    rt = REGISTRY["FeatureLevelRecord"]
    return Payload(rt, 0, rt.new(name=name, feature_level=level))


def noop_payload() -> Payload:
    rt = REGISTRY["NoOpRecord"]
    return Payload(rt, 0, rt.new())


def log_with_two_snapshots(d: Path) -> MetadataLog:
    """A log of small segments (400 bytes) with snapshots at offsets 11 and 21, open for writing."""
    log = MetadataLog.open(d, segment_bytes=400, fsync=False)
    log.append_records([feature_payload("metadata.version", 21)], epoch=1, timestamp=1000)
    for i in range(1, 30):
        log.append_records([config_payload(80, name=f"k{i}")], epoch=1, timestamp=1000 + i)
        if i in (10, 20):
            write_snapshot(d, SnapshotId(log.log_end_offset, 1), [feature_payload("metadata.version", 21)],
                           last_contained_log_timestamp=1000 + i, time_ms=5000 + i, fsync=False)
    return log
