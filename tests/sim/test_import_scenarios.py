"""The shipped scenarios that start from a real cluster (`scenarios/from-real/*.toml`, whose
`from` names a set of ../shared/oracle beside the repository; they live in their own folder
so that the main suite runs without the oracle): each says what it answers
and passes; one runs twice and gives the same bytes. `from` with keys it does not go with
is not a valid scenario."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kraftsim.scenario import ScenarioInvalid, load_scenario, parse_scenario
from kraftsim.scenario.runner import run_scenario
from tests.paths import REPO, SHARED
from tests.scenario.helpers import check_shipped
from tests.sim.test_import import needs_oracle

FILES = sorted((REPO / "scenarios" / "from-real").glob("*.toml"))
TWICE = {"from-real-3.6-roll-to-4.1-and-finalize"}


def _load(path: Path):  # type: ignore[no-untyped-def]
    """The scenario with its `from` pointing at the shared folder wherever it is (a worktree
    or CI names it with KRAFTSIM_SHARED)."""
    text = path.read_text(encoding="utf-8")
    assert 'from = "../../../shared/' in text
    scenario = parse_scenario(text.replace('"../../../shared/', f'"{SHARED}/'), str(path), path.parent)
    scenario.path = path
    return scenario


def test_at_least_three_ship() -> None:
    assert len(FILES) >= 3 and TWICE <= {p.stem for p in FILES}


@needs_oracle
@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_from_real_scenario_passes(path: Path) -> None:
    check_shipped(path, _load, twice=path.stem in TWICE)


@needs_oracle
@pytest.mark.parametrize("extra,key", [("brokers = 2", "cluster.brokers"), ("combined = 1", "cluster.combined"),
                                       ('release_version = "3.6-IV2"', "cluster.release_version"),
                                       ("controllers = 3", "cluster.controllers")])
def test_from_refuses_keys_it_does_not_go_with(extra: str, key: str) -> None:
    text = f'name = "x"\n[cluster]\nfrom = "{SHARED}/oracle/kafka-3.6.0_jeongrae"\n{extra}\n'
    with pytest.raises(ScenarioInvalid) as e:
        parse_scenario(text, "x.toml")
    assert key in str(e.value)


def test_from_a_missing_path(tmp_path: Path) -> None:
    with pytest.raises(ScenarioInvalid, match="does not exist"):
        parse_scenario('name = "x"\n[cluster]\nfrom = "nowhere/__cluster_metadata-0"\n', "x.toml", tmp_path)


@needs_oracle
def test_from_with_overrides_runs_on_the_given_software(tmp_path: Path) -> None:
    text = (f'name = "x"\n[cluster]\nfrom = "{SHARED}/oracle/cp-kafka-7.5.1_3voters_greenlemonT/kafka3"\n'
            'release = "3.6"\ncontrollers = [1, 2, 3]\n[expect]\nhas_leader = true\nmetadata_version = 11\n')
    result = run_scenario(parse_scenario(text, "x.toml")).result
    assert result.passed
    assert [(n.id, list(n.roles), n.release) for n in result.final.nodes] == \
        [(i, ["broker", "controller"], "3.6.2") for i in (1, 2, 3)]  # a line: its newest patch


@needs_oracle
def test_from_with_a_hypothetical_catalog(tmp_path: Path) -> None:
    """The imported cluster keeps the scenario's catalog: its nodes can roll to a release
    that exists only there (KIP-778's example versions, shipped as an example catalog)."""
    example = REPO / "kraftsim" / "versions" / "data" / "examples" / "kip778.toml"
    (tmp_path / "cat.toml").write_bytes(example.read_bytes())
    shutil.copytree(example.parent / "kip778_records", tmp_path / "kip778_records")
    text = (f'name = "h"\ncatalog = "cat.toml"\n[cluster]\nfrom = "{SHARED}/oracle/kafka-4.2_induswargods"\n'
            '[[step]]\nop = "roll"\nrelease = "4.9"\n[[step]]\nop = "features-upgrade"\nmetadata = "4.9-IV3"\n'
            '[expect]\nmetadata_version = "4.9-IV3"\n')
    (tmp_path / "h.toml").write_text(text, encoding="utf-8")
    result = run_scenario(load_scenario(tmp_path / "h.toml")).result
    assert result.passed, [s for s in result.steps if not s.ok]
    assert result.final.metadata_version.level == 38
