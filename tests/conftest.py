"""Shared test fixtures: where the real Kafka files of ../shared/oracle are."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.paths import ORACLE, REPO  # noqa: F401  (re-exported for tests)


def oracle_files(*patterns: str) -> list[Path]:
    """Oracle files matching glob patterns, sorted; empty when the oracle is absent."""
    if not ORACLE.is_dir():
        return []
    found: set[Path] = set()
    for pattern in patterns:
        found.update(ORACLE.rglob(pattern))
    return sorted(found)


@pytest.fixture(scope="session")
def oracle_dir() -> Path:
    if not ORACLE.is_dir():
        pytest.skip("../shared/oracle is not present")
    return ORACLE


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that uses the shared Spark session is a `spark` test (`-m "not spark"`
    leaves them all out)."""
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)
