"""`[cluster] releases = { "ID" = "R" }`: a cluster of mixed releases, as an operator has in
the middle of a roll. A created cluster is formatted and started on `release`, then each
named node is restarted on its own release (controllers first); an imported cluster's named
nodes run the given release instead of the inferred one. Every refused form is one line
naming the file, the key and what was expected."""

from __future__ import annotations

import pytest

from kraftsim.scenario import ScenarioInvalid, parse_scenario
from kraftsim.scenario.runner import run_scenario
from tests.paths import SHARED
from tests.sim.test_import import needs_oracle

MIXED = """
name = "mid-roll"
[cluster]
combined = 3
brokers = 1
release = "3.8.1"
releases = {{ {releases} }}
"""


def _parse(releases: str, body: str = "") -> object:
    return parse_scenario(MIXED.format(releases=releases) + body, "mixed.toml")


def test_a_created_cluster_mid_roll_runs_each_node_on_its_release() -> None:
    """Nodes 1 and 4 already run 3.9 and nodes 2 and 3 still run 3.8: finalizing 3.9 is refused
    by Kafka's rule (every controller must support it) until the roll is complete."""
    body = """
[[step]]
op = "features-upgrade"
features = { "metadata.version" = 21 }
expect_error = "only supports versions 1-20"
[step.expect]
releases = { "1" = "3.9.2", "2" = "3.8.1", "3" = "3.8.1", "4" = "3.9.2" }
metadata_version = "3.8-IV0"

[[step]]
op = "roll"
release = "3.9.1"
nodes = [2, 3]

[[step]]
op = "features-upgrade"
metadata = "3.9"

[expect]
metadata_version = "3.9-IV0"
running = [1, 2, 3, 4]
"""
    scenario = _parse('"1" = "3.9", "4" = "3.9.2"', body)
    assert scenario.cluster.releases == {"1": "3.9.2", "4": "3.9.2"}  # a line resolves to its newest patch
    result = run_scenario(scenario).result
    assert result.setup_error is None
    assert result.passed, [s for s in result.steps if not s.ok] + [e for e in result.expect if not e.ok]
    assert all(i.ok for i in result.invariants)


def test_a_node_that_cannot_run_its_release_is_a_setup_error() -> None:
    """Formatted on 3.9 (metadata.version 3.9-IV0, level 21), a broker restarted on 3.7 cannot
    start: 3.7 lists no level 21 (policy bootstrap_metadata_version). The scenario fails
    before its first step, naming the node and Kafka's text."""
    text = MIXED.format(releases='"4" = "3.7.2"').replace('release = "3.8.1"', 'release = "3.9.1"')
    result = run_scenario(parse_scenario(text + '[[step]]\nop = "wait"\n', "mixed.toml")).result
    assert not result.passed
    assert result.setup_error is not None and result.setup_error.startswith("node 4 did not come up on Kafka 3.7.2")
    assert "No MetadataVersion with metadata version 21" in result.setup_error  # 3.7's words
    assert result.steps[0].skipped


@pytest.mark.parametrize("releases,key,expected", [
    ('"four" = "3.9.1"', "cluster.releases.four", "expected a node id as the key"),
    # "02" named node 2 here (where "2" could silently replace it) and no node in [expect]
    ('"02" = "3.9.1"', "cluster.releases.02", "expected a node id as the key"),
    ('"\u00b2" = "3.9.1"', "cluster.releases.\u00b2", "expected a node id as the key"),  # (was an internal error)
    ('"9" = "3.9.1"', "cluster.releases.9", "expected one of the cluster's nodes (1, 2, 3, 4); node 9 does not exist"),
    ('"2" = "2.8.0"', "cluster.releases.2", "unknown release '2.8.0'"),
    ('"2" = 39', "cluster.releases.2", "expected a string, got an integer"),
])
def test_refused_forms(releases: str, key: str, expected: str) -> None:
    with pytest.raises(ScenarioInvalid) as info:
        _parse(releases)
    text = str(info.value)
    assert text.startswith(f"mixed.toml: key `{key}`: ") and expected in text and "\n" not in text


@pytest.mark.parametrize("key", ["02", "\u00b2", "+2"])
def test_expected_releases_name_nodes_as_the_cluster_does(key: str) -> None:
    text = MIXED.format(releases='"4" = "3.9.1"') + f'[expect]\nreleases = {{ "{key}" = "3.9.1" }}\n'
    with pytest.raises(ScenarioInvalid) as info:
        parse_scenario(text, "mixed.toml")
    assert str(info.value).startswith(f"mixed.toml: key `expect.releases.{key}`: expected a node id as the key")


def test_releases_must_be_a_table() -> None:
    with pytest.raises(ScenarioInvalid) as info:
        parse_scenario(MIXED.replace("releases = {{ {releases} }}", 'releases = "3.9.1"'), "mixed.toml")
    assert str(info.value).startswith("mixed.toml: key `cluster.releases`: expected a table")


IMPORTED = f'name = "x"\n[cluster]\nfrom = "{SHARED}/oracle/cp-kafka-7.5.1_3voters_greenlemonT/kafka3"\n'


@needs_oracle
def test_an_imported_cluster_takes_per_node_releases() -> None:
    text = IMPORTED + 'releases = { "2" = "3.7" }\n[expect]\nhas_leader = true\n'
    result = run_scenario(parse_scenario(text, "x.toml")).result
    assert result.passed
    assert [(n.id, n.release) for n in result.final.nodes] == [(1, "3.5.2"), (2, "3.7.2"), (3, "3.5.2")]


@needs_oracle
def test_an_imported_cluster_without_that_node() -> None:
    scenario = parse_scenario(IMPORTED + 'releases = { "7" = "3.7" }\n', "x.toml")  # ids are known at import
    with pytest.raises(ScenarioInvalid) as info:
        run_scenario(scenario)
    text = str(info.value)
    assert text.startswith("x.toml: key `cluster.releases.7`: expected a node of the imported cluster") and "no node 7" in text


TOOL = """
name = "whose-tool"
[cluster]
combined = 1
brokers = 1
release = "3.9.1"
releases = {{ "2" = "4.0" }}

[[step]]
op = "features-upgrade"
metadata = "4.0"
{tool}
"""


def test_a_features_step_runs_the_newest_running_releases_tool() -> None:
    """Mid-roll the operator runs the new installation's kafka-features: the 4.0 tool knows
    4.0-IV3 and sends it, and the 3.9 controller refuses it (3.x words the refusal per feature);
    `tool_release` picks the old tool, which refuses the version itself, before any request."""
    newest = run_scenario(parse_scenario(TOOL.format(tool=""), "t.toml")).result.steps[0]
    assert newest.output == ["kafka-features of Kafka 4.0.2 (the newest release running in the cluster)"]
    assert newest.error is not None and newest.error.splitlines()[1:] == [
        "Could not upgrade metadata.version to 25. Invalid update version 25 for feature metadata.version. "
        "Local controller 1 only supports versions 1-21", "1 out of 1 operation(s) failed."]
    old = run_scenario(parse_scenario(TOOL.format(tool='tool_release = "3.9"'), "t.toml")).result.steps[0]
    assert old.output == ["kafka-features of Kafka 3.9.2 (chosen)"]
    assert old.error is not None and old.error.startswith("Unknown metadata.version '4.0'.")


def test_tool_release_must_be_a_known_release() -> None:
    with pytest.raises(ScenarioInvalid, match=r"step 1: key `tool_release`: unknown release '2\.0'"):
        parse_scenario(TOOL.format(tool='tool_release = "2.0"'), "t.toml")
