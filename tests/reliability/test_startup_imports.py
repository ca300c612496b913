"""Start-up stays light: `kraftsim.cli` imports only the module of the command being run.

Each case runs a command in a fresh interpreter and lists the modules it imported; the
heavy dependencies (pandas, pyarrow, Spark, numpy) and the demo, the simulator and the
pipeline must be absent unless the command needs them.
"""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
from pathlib import Path


from kraftsim.cli.main import COMMANDS, Parser
from tests.reliability import damage

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("pandas", "pyarrow", "pyspark", "numpy", "kraftsim.demo", "kraftsim.pipeline", "kraftsim.sim",
         "kraftsim.controller", "kraftsim.cli.demo_cmd", "kraftsim.cli.spark_cmd", "kraftsim.cli.export_cmd")

_PROBE = """
import contextlib, io, json, sys
from kraftsim.cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        code = main(sys.argv[1:])
    except SystemExit as e:
        code = e.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def imported_by(*argv: str) -> tuple[int, set[str]]:
    done = subprocess.run([sys.executable, "-c", _PROBE, *argv], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return found["code"], set(found["modules"])


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


def test_help_imports_no_command_module() -> None:
    code, modules = imported_by("--help")
    assert code == 0
    assert sorted(m for m in modules if m.startswith("kraftsim")) == [
        "kraftsim", "kraftsim.cli", "kraftsim.cli.main", "kraftsim.errors", "kraftsim.textsafe"]
    assert not heavy(modules)


def test_log_dump_imports_only_what_reading_files_needs(tmp_path: Path) -> None:
    directory = damage.build_log_dir(tmp_path)
    code, modules = imported_by("log", "dump", str(next(directory.glob("*.log"))))
    assert code == 0
    assert "kraftsim.cli.log_cmd" in modules
    assert not heavy(modules), heavy(modules)
    assert not [m for m in modules if m.startswith("kraftsim.cli.") and m not in (
        "kraftsim.cli.main", "kraftsim.cli.log_cmd", "kraftsim.cli.dump_gaps", "kraftsim.cli.progress")]
    # kraftsim.storage loads its re-exports on first use: reading files needs no formatter
    assert not [m for m in modules if m.startswith(("kraftsim.storage.formatter", "kraftsim.storage.storage_tool",
                                                    "kraftsim.image"))]


def test_version_mapping_imports_neither_the_simulator_nor_the_pipeline() -> None:
    code, modules = imported_by("features", "version-mapping")
    assert code == 0
    assert not heavy(modules), heavy(modules)


def test_the_command_table_matches_the_modules() -> None:
    """Each stand-in in --help says what the module's own parser says, under the same name."""
    for command in COMMANDS:
        parser = Parser(prog="kraftsim")
        sub = parser.add_subparsers(parser_class=Parser)
        importlib.import_module(command.module).register(sub)
        registered = {a.dest: a.help for a in sub._choices_actions}
        assert registered == {command.name: command.help}, command.module
    assert len({c.name for c in COMMANDS}) == len(COMMANDS)


def test_no_abbreviated_options() -> None:
    """`--release` must not silently stand for `--release-version` (argparse's prefix matching)."""
    from kraftsim.cli.main import build_parser

    parser = build_parser()
    todo: list[argparse.ArgumentParser] = [parser]
    while todo:
        p = todo.pop()
        assert p.allow_abbrev is False, p.prog
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo.extend(action.choices.values())


def test_every_argument_has_help() -> None:
    """`--help` of every command explains every option and positional argument."""
    missing = []
    for command in COMMANDS:
        parser = Parser(prog="kraftsim")
        sub = parser.add_subparsers(parser_class=Parser)
        importlib.import_module(command.module).register(sub)
        todo: list[tuple[str, argparse.ArgumentParser]] = [(command.name, sub.choices[command.name])]
        while todo:
            where, p = todo.pop()
            for action in p._actions:
                if isinstance(action, argparse._SubParsersAction):
                    todo.extend((f"{where} {name}", child) for name, child in action.choices.items())
                elif not isinstance(action, argparse._HelpAction) and not action.help:
                    missing.append(f"{where}: {'/'.join(action.option_strings) or action.dest}")
    assert missing == []


def test_serve_imports_only_what_its_first_answer_needs() -> None:
    """`kraftsim serve`'s modules (those its _run imports) leave out the simulator's other faces:
    kafka-features, the tick engine, the scenario runner, the DescribeQuorum view."""
    probe = ("import json, sys\nimport kraftsim.cli.serve_cmd, kraftsim.wire.ready, kraftsim.wire.session, "
             "kraftsim.wire.target\nprint(json.dumps(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    modules = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert "kraftsim.sim.simulation" in modules  # the probe does load what serving needs
    unneeded = ("kraftsim.sim.features_tool", "kraftsim.sim.ticks", "kraftsim.scenario", "kraftsim.sim.engine.quorum_view",
                "kraftsim.pipeline", "kraftsim.demo", "pandas", "pyarrow", "numpy")
    assert sorted(m for m in modules if any(m == u or m.startswith(u + ".") for u in unneeded)) == []
