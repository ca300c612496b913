"""docs/scenarios.md names every key and op the runner accepts, with an example each, and its
examples are valid scenario text (so the reference cannot drift from the language)."""

from __future__ import annotations

import re

import msgspec
import pytest

from kraftsim.scenario.language import ClusterSpec, Expect, RecordedFailure, ScenarioTop
from kraftsim.scenario.ops import OPS, StepBase
from kraftsim.scenario.validate import parse_scenario
from kraftsim.sim import SimConfig
from tests.paths import REPO

DOC = (REPO / "docs" / "scenarios.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```toml\n(.*?)```", DOC, re.S)
#: What a step example is wrapped in to be checked: a 4.4 cluster with ids 1..3 and 4..6.
WRAP = 'name = "doc-example"\n[cluster]\ncontrollers = 3\nbrokers = 3\nrelease = "4.4.0"\n'


def _fields(struct: type[msgspec.Struct]) -> list[str]:
    return [f.encode_name for f in msgspec.structs.fields(struct)]


def test_every_op_has_a_row_and_an_example() -> None:
    for op in OPS:
        assert f"| `{op}` |" in DOC, op
        assert any(f'op = "{op}"' in block for block in BLOCKS), op


@pytest.mark.parametrize("struct", [ScenarioTop, ClusterSpec, Expect, StepBase, SimConfig, RecordedFailure, *set(OPS.values())],
                         ids=lambda s: s.__name__)
def test_every_key_is_named(struct: type[msgspec.Struct]) -> None:
    missing = [name for name in _fields(struct) if name != "step" and f"`{name}`" not in DOC]
    assert not missing, f"{struct.__name__}: {missing}"


def test_every_example_is_valid() -> None:
    checked = 0
    for block in BLOCKS:
        if block.lstrip().startswith(("[config]", "[limits]", "[expect]")) or "[[step]]" in block:
            text = WRAP + block if not block.lstrip().startswith("#") else block
        elif block.lstrip().startswith("[cluster]"):
            if "from =" in block:
                continue  # names a real cluster's files
            text = 'name = "doc-example"\n' + block
        elif block.lstrip().startswith("name ="):
            text = block + '\n[cluster]\ncontrollers = 1\nrelease = "3.8"\n'
            text = text.replace('catalog = "my-future-kafka.toml"\n', "")  # names a file of the reader's
        else:
            text = block
        parse_scenario(text, "docs/scenarios.md")
        checked += 1
    assert checked >= len(OPS) + 5


def test_the_template_and_readme_point_to_the_reference() -> None:
    template = (REPO / "kraftsim" / "scenario" / "template.toml").read_text(encoding="utf-8")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "docs/scenarios.md" in template and "docs/scenarios.md" in readme
    assert "DESIGN.md" not in template and "keys and ops are contract 4" not in readme


def test_the_readme_counts_the_shipped_scenarios() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    said = re.findall(r"`scenarios/` ships (\d+) of them", readme)
    assert said == [str(len(list((REPO / "scenarios").glob("*.toml"))))]
