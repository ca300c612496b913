"""Seeded outputs are byte-identical to those frozen from main before kraftsim.sim was
restructured: every shipped scenario's `--json` line and kept files, and CLI sequences
over both engines (the tick engine; the event engine's partitions, crashes, torn tails,
wipes and rolls). The data is written by `python3 -m tests.sim.frozen_outputs`."""

from __future__ import annotations

import json

import pytest

from tests.paths import ORACLE
from tests.sim import frozen_outputs as frozen

FROZEN = json.loads(frozen.DATA.read_text(encoding="utf-8"))


def _diff(expected: dict[str, str], actual: dict[str, str]) -> list[str]:
    return sorted(k for k in expected.keys() | actual.keys() if expected.get(k) != actual.get(k))


def test_every_shipped_scenario_gives_the_frozen_bytes():
    if not ORACLE.is_dir():
        pytest.skip("the from-real scenarios need the shared oracle files (KRAFTSIM_SHARED)")
    paths = frozen.scenario_paths()
    assert sorted(p.stem for p in paths) == sorted(FROZEN["scenarios"]), "a scenario was added: refreeze from main"
    actual = frozen.scenario_digests(paths)
    changed = {name: ["--json"] * (got["json"] != FROZEN["scenarios"][name]["json"])
               + _diff(FROZEN["scenarios"][name]["files"], got["files"])  # type: ignore[arg-type]
               for name, got in actual.items()}
    assert {k: v for k, v in changed.items() if v} == {}


@pytest.mark.parametrize("engine", ["ticks", "events"])
def test_cli_sequences_give_the_frozen_bytes(engine):
    actual = frozen.sequence_digests(frozen.TICKS if engine == "ticks" else frozen.EVENTS)
    assert actual["steps"] == FROZEN[engine]["steps"]
    assert _diff(FROZEN[engine]["files"], actual["files"]) == []  # type: ignore[arg-type]
