"""Where the real Kafka files are: ../shared/oracle, relative to the repository root.

Tests that need them skip when the folder is absent (a checkout without the shared
material), instead of failing.
"""

from __future__ import annotations

from pathlib import Path

from tests.paths import KAFKA_SCHEMAS, ORACLE, REPO  # noqa: F401  (re-exported)


def oracle_record_files() -> list[Path]:
    """Every `.log` segment and `.checkpoint` snapshot (bootstrap.checkpoint included), sorted."""
    if not ORACLE.is_dir():
        return []
    return sorted(p for p in ORACLE.rglob("*") if p.is_file() and p.suffix in (".log", ".checkpoint"))


def oracle_file(relative: str) -> Path:
    return ORACLE / relative


def rel(path: Path) -> str:
    """A short test id: the path below the oracle folder."""
    return str(path.relative_to(ORACLE))
