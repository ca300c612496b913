"""Fixtures of the pipeline tests: one embedded SparkSession for every Spark test, and the CLI.

Starting Spark costs several seconds (more on a loaded machine), so one `local[2]` session
serves the whole test session; tests that need another master or another Java start a
separate `kraftsim` process instead (see test_spark_cli.py).

The `spark` and `no_system_java` markers are registered in pyproject.toml; tests/conftest.py
puts `spark` on every test that uses the `spark` fixture.
"""

from __future__ import annotations

import sys
from typing import Sequence

import pytest

import kraftsim.cli.main as cli_main


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
