"""The scenario language: every rejection path gives one line naming file, step, key and
what was expected; valid files decode into the ops and keys of contract 4."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.scenario import ScenarioInvalid, load_scenario, parse_scenario
from kraftsim.scenario.header import parse_header
from kraftsim.scenario.language import MAX_NODES_PER_ROLE
from kraftsim.scenario.ops import OPS
from kraftsim.scenario.validate import resolve_release
from kraftsim.versions import default_catalog

from tests.scenario.helpers import scenario_text

CONTRACT_OPS = ("create-topics", "delete-topics", "roll", "add-node", "features-upgrade", "features-downgrade",
                "features-disable", "crash", "stop", "start", "partition", "heal", "disk-fault", "snapshot", "run",
                "wait", "add-controller", "remove-controller")


def reject(text: str) -> ScenarioInvalid:
    with pytest.raises(ScenarioInvalid) as info:
        parse_scenario(text, "bad.toml")
    err = info.value
    assert str(err).startswith("bad.toml: ")
    assert "\n" not in str(err)
    return err


def step(body: str) -> str:
    return scenario_text("[[step]]\n" + body + "\n")


# (text, step number or None, key or None, fragment of what was expected)
REJECTIONS = [
    ("name = \n", None, None, "not valid TOML"),
    ("name = 'x'\n[cluster]\ncontrollers = 1\nrelease = '3.8'\n[step]\nop = 'heal'\n", None, "step", "[[step]]"),
    ("[cluster]\ncontrollers = 1\nrelease = '3.8'\n", None, "name", "required key is missing"),
    ("name = 'x'\n", None, "cluster", "required key is missing"),
    ("name = ''\n[cluster]\ncontrollers = 1\nrelease = '3.8'\n", None, "name", "non-empty"),
    ("name = 7\n[cluster]\ncontrollers = 1\nrelease = '3.8'\n", None, "name", "expected a string, got an integer"),
    ("name = 'x'\nseed = 'one'\n[cluster]\ncontrollers = 1\nrelease = '3.8'\n", None, "seed", "expected an integer"),
    ("name = 'x'\nspeed = 1\n[cluster]\ncontrollers = 1\nrelease = '3.8'\n", None, "speed", "unknown key"),
    ("name = 'x'\npolicy = 'kip778'\n[cluster]\ncontrollers = 1\nrelease = '3.8'\n", None, "policy", "kafka, kip-778"),
    ("name = 'x'\n[cluster]\nbrokers = 1\nrelease = '3.8'\n", None, "cluster.controllers", "required key is missing"),
    ("name = 'x'\n[cluster]\ncontrollers = 0\nrelease = '3.8'\n", None, "cluster.controllers", "at least one"),
    ("name = 'x'\n[cluster]\ncontrollers = 1\nbrokers = -1\nrelease = '3.8'\n", None, "cluster.brokers", ">= 0"),
    ("name = 'x'\n[cluster]\ncontrollers = 1\n", None, "cluster.release", "required key is missing"),
    ("name = 'x'\n[cluster]\ncontrollers = 1\nrelease = '2.8'\n", None, "cluster.release", "unknown release '2.8'"),
    ("name = 'x'\n[cluster]\ncontrollers = true\nrelease = '3.8'\n", None, "cluster.controllers",
     "expected an integer or a list, got true or false"),
    ("name = 'x'\n[cluster]\ncontrollers = 1\nrelease = '3.8'\nzones = 2\n", None, "cluster.zones", "unknown key"),
    # 3.7 lists 3.8-IV0 as its unstable placeholder, and nothing later
    ("name = 'x'\n[cluster]\ncontrollers = 1\nrelease = '3.7'\nrelease_version = '3.9-IV0'\n", None,
     "cluster.release_version", "unknown metadata.version '3.9-IV0'"),
    ("name = 'x'\n[cluster]\ncontrollers = 1\nrelease = '3.8'\nfeatures = { 'nope.version' = 1 }\n", None,
     "cluster.features.nope.version", "unknown feature 'nope.version'"),
    ("name = 'x'\n[cluster]\ncontrollers = 1\nrelease = '3.8'\nconfigs = { 'log.dirs' = '/x' }\n", None,
     "cluster.configs", "node config 'log.dirs' is not one kraftsim simulates"),
    ("name = 'x'\n[cluster]\ncontrollers = 1\nrelease = '3.8'\nconfigs = { 'unstable.feature.versions.enable' = 'yes' }\n",
     None, "cluster.configs", "Expected value to be either true or false"),
    ("name = 'x'\n[cluster]\ncontrollers = 1\nrelease = '3.8'\nconfigs = { 'unstable.feature.versions.enable' = 1 }\n",
     None, "cluster.configs.unstable.feature.versions.enable", "expected true or false or a string"),
    ("name = 'x'\n[cluster]\ncontrollers = 1\nrelease = '3.8'\nfrom = 'missing-dir'\n", None, "cluster.from",
     "does not exist"),
    ("name = 'x'\ncatalog = 'no-such-catalog.toml'\n[cluster]\ncontrollers = 1\nrelease = '3.8'\n", None,
     "catalog", "does not exist"),
    # a folder (here the current one) is there: it was called missing
    ("name = 'x'\ncatalog = '.'\n[cluster]\ncontrollers = 1\nrelease = '3.8'\n", None,
     "catalog", "expected a catalog file; . is not a file"),
    (step("release = '3.9'"), 1, "op", "required key is missing"),
    (step("op = 'rol'"), 1, "op", "unknown op 'rol'"),
    (step("op = 3"), 1, "op", "unknown op 3"),
    (step("op = 'roll'"), 1, "release", "required key is missing"),
    (step("op = 'roll'\nrelease = '3.9'\nnode = [1]"), 1, "node", "known keys here: op, expect_error, note, expect, release, nodes"),
    (step("op = 'roll'\nrelease = 3.9"), 1, "release", "expected a string, got a number"),
    (step("op = 'roll'\nrelease = '5.0'"), 1, "release", "unknown release '5.0'"),
    (step("op = 'roll'\nrelease = '3.9'\nnodes = 'everything'"), 1, "nodes", "all, controllers, brokers"),
    (step("op = 'roll'\nrelease = '3.9'\nnodes = [1, 9]"), 1, "nodes", "node 9 does not exist"),
    (step("op = 'roll'\nrelease = '3.9'\nnodes = []"), 1, "nodes", "at least one node"),
    (step("op = 'roll'\nrelease = '3.9'\nnodes = [1, 1]"), 1, "nodes", "listed twice"),
    (step("op = 'roll'\nrelease = '3.9'\nnodes = 2"), 1, "nodes", "expected a string or a list"),
    (step("op = 'create-topics'\ncount = 0"), 1, "count", ">= 1"),
    (step("op = 'create-topics'\ncount = 99999999999"), 1, "count", "<= 1,000,000 (the most one step creates, whatever [limits] says: split it across steps), got 99,999,999,999"),
    (step("op = 'create-topics'\ncount = 5000\npartitions = 5000"), 1, "count x partitions", "<= 10,000,000"),
    (step("op = 'create-topics'\npartitions = '3'"), 1, "partitions", "expected an integer"),
    (step("op = 'create-topics'\nreplication_factor = 0"), 1, "replication_factor", ">= 1"),
    (step("op = 'delete-topics'"), 1, "names", "required key is missing"),
    (step("op = 'delete-topics'\nnames = 'topic-0'"), 1, "names", "expected a list"),
    (step("op = 'add-node'\nrole = 'observer'\nrelease = '3.8'"), 1, "role", "broker, controller"),
    (step("op = 'add-node'\nrole = 'broker'\nrelease = '3.8'\nid = 2"), 1, "id", "node 2 already exists"),
    (step("op = 'add-node'\nrole = 'broker'\nrelease = '1.0'"), 1, "release", "unknown release"),
    # `names` stands for `count`: an empty list created nothing while the step said "create 1 topic(s)",
    # and a long list escaped the per-step and per-file bounds (count 1 x partitions was checked)
    (step("op = 'create-topics'\nnames = []"), 1, "names", "expected at least one topic name"),
    (step("op = 'create-topics'\nnames = ['a', 'b', 'c']\npartitions = 5000000"), 1, "names x partitions",
     "expected an integer <= 10,000,000 (the most one step creates, whatever [limits] says: split it across "
     "steps), got 15,000,000"),
    (scenario_text("[limits]\ntopics = 2\n[[step]]\nop = 'create-topics'\nnames = ['a', 'b', 'c']\n"), 1, "names",
     "expected at most 2 topics created by the whole file, got 3"),
    # node.id is an int32: a larger id failed the run with a misleading "No readable meta.properties"
    (step("op = 'add-node'\nrole = 'broker'\nrelease = '3.8'\nid = 2147483648"), 1, "id",
     "expected an integer <= 2,147,483,647, got 2,147,483,648"),
    (step("op = 'add-controller'\nid = 99999999999999"), 1, "id", "expected an integer <= 2,147,483,647"),
    (step("op = 'unregister-broker'\nid = 2147483648"), 1, "id", "expected an integer <= 2,147,483,647"),
    (step("op = 'unregister-controller'\nid = 2147483648"), 1, "id", "expected an integer <= 2,147,483,647"),
    (step("op = 'features-upgrade'"), 1, "metadata", "one of metadata, release_version or features"),
    (step("op = 'features-upgrade'\nmetadata = '3.99'"), 1, "metadata", "unknown metadata.version '3.99'"),
    (step("op = 'features-upgrade'\nrelease_version = '9.9-IV9'"), 1, "release_version", "unknown metadata.version"),
    (step("op = 'features-upgrade'\nfeatures = { 'x.version' = 1 }"), 1, "features.x.version", "unknown feature"),
    (step("op = 'features-downgrade'\nmetadata = '3.7'\nunsafe = 'yes'"), 1, "unsafe", "expected true or false"),
    (step("op = 'features-upgrade'\nfeatures = { 'group.version' = 'one' }"), 1, "features.group.version",
     "expected an integer"),
    (step("op = 'features-disable'\nfeatures = []"), 1, "features", "at least one feature"),
    (step("op = 'features-disable'\nfeatures = ['nope']"), 1, "features", "unknown feature 'nope'"),
    (step("op = 'crash'"), 1, "nodes", "required key is missing"),
    (step("op = 'stop'\nnodes = [4]"), 1, "nodes", "node 4 does not exist"),
    (step("op = 'start'\nnodes = [1]\nrelease = '0.9'"), 1, "release", "unknown release"),
    (step("op = 'partition'\ngroups = [[1], [7]]"), 1, "groups[1]", "node 7 does not exist"),
    (step("op = 'partition'\ngroups = [[1, 2], [2, 3]]"), 1, "groups[1]", "node 2 is in two groups"),
    (step("op = 'partition'\ngroups = []"), 1, "groups", "at least one group"),
    (step("op = 'heal'\nnodes = [1]"), 1, "nodes", "unknown key"),
    (step("op = 'disk-fault'\nnodes = [1]\nkind = 'fire'"), 1, "kind", "torn-tail, wipe"),
    (step("op = 'snapshot'\nnodes = [5]"), 1, "nodes", "node 5 does not exist"),
    (step("op = 'run'"), 1, "ms", "required key is missing"),
    (step("op = 'run'\nms = -5"), 1, "ms", ">= 0"),
    (step("op = 'run'\nms = 1.5"), 1, "ms", "expected an integer, got a number"),
    (step("op = 'wait'\ntimeout_ms = 0"), 1, "timeout_ms", ">= 1"),
    (step("op = 'heal'\nexpect_error = ''"), 1, "expect_error", "non-empty"),
    (scenario_text("[[step]]\nop = 'heal'\n[[step]]\nop = 'add-node'\nrole = 'broker'\nrelease = '3.8'\n"
                   "[[step]]\nop = 'crash'\nnodes = [5]\n"), 3, "nodes", "node 5 does not exist"),
    (scenario_text("[[step]]\n'op' = 'heal'\n[[step]]\nop = 'heal'\nextra = 1\n"), 2, "extra", "unknown key"),
    (scenario_text("[expect]\nmetadata_version = '3.99-IV0'\n"), None, "expect.metadata_version",
     "unknown metadata.version"),
    (scenario_text("[expect]\nfinalized = { 'a.version' = 1 }\n"), None, "expect.finalized.a.version",
     "unknown feature"),
    (scenario_text("[expect]\nrunning = [1, 8]\n"), None, "expect.running", "node 8 does not exist"),
    (scenario_text("[expect]\nhas_leader = 1\n"), None, "expect.has_leader", "expected true or false"),
    (scenario_text("[expect]\nleader = 9\n"), None, "expect.leader", "node 9 does not exist"),
    (scenario_text("[expect]\nreleases = { 'one' = '3.8' }\n"), None, "expect.releases.one", "node id"),
    (scenario_text("[expect]\nreleases = { '1' = '2.0' }\n"), None, "expect.releases.1", "unknown release"),
    (scenario_text("[expect]\ntopics = -1\n"), None, "expect.topics", ">= 0"),
    (scenario_text("[expect]\nmetadata_versoin = '3.8'\n"), None, "expect.metadata_versoin", "unknown key"),
    (step("op = 'heal'\n[step.expect]\nrunning = [4]"), 1, "expect.running", "node 4 does not exist"),
    (step("op = 'heal'\n[step.expect]\nrunnin = [1]"), 1, "expect.runnin", "known keys here: metadata_version"),
    (step("op = 'heal'\n[step.expect]\nfenced = 'none'"), 1, "expect.fenced", "expected a list"),
    (step("op = 'heal'\n[step.expect]\nmetadata_version = '0.1-IV0'"), 1, "expect.metadata_version",
     "unknown metadata.version"),
    (scenario_text("[config]\nheartbeat = 5\n"), None, "config.heartbeat", "known keys here: election_timeout_ms"),
    (scenario_text("[config]\nelection_timeout_ms = 2.5\n"), None, "config.election_timeout_ms",
     "expected an integer, got a number"),
    (scenario_text("[config]\nmessage_loss = 'some'\n"), None, "config.message_loss", "got a string"),
    # out of range: these crashed the run (segment_bytes, election_timeout_ms) or spun forever
    # at one simulated instant (a timer of 0 ms or less), or ran on silently (loss above 1)
    (scenario_text("[config]\nsegment_bytes = 0\n"), None, "config.segment_bytes", "expected an integer >= 12"),
    (scenario_text("[config]\nelection_timeout_ms = -1\n"), None, "config.election_timeout_ms", ">= 1"),
    (scenario_text("[config]\nfetch_timeout_ms = -1\n"), None, "config.fetch_timeout_ms", ">= 1"),
    (scenario_text("[config]\nrequest_timeout_ms = 0\n"), None, "config.request_timeout_ms", ">= 1"),
    (scenario_text("[config]\nbroker_heartbeat_interval_ms = 0\n"), None, "config.broker_heartbeat_interval_ms",
     ">= 1"),
    (scenario_text("[config]\nmetadata_max_idle_interval_ms = 0\n"), None,
     "config.metadata_max_idle_interval_ms", ">= 1"),
    (scenario_text("[config]\nnetwork_delay_min_ms = -5\n"), None, "config.network_delay_min_ms", ">= 0"),
    (scenario_text("[config]\nmessage_loss = 2.0\n"), None, "config.message_loss", "expected a number <= 1.0"),
    (scenario_text("[config]\nmessage_loss = nan\n"), None, "config.message_loss", "expected a number"),
    (scenario_text("[config]\nretention_bytes = -2\n"), None, "config.retention_bytes", ">= -1"),
    (scenario_text("[config]\nnetwork_delay_min_ms = 100\nnetwork_delay_max_ms = 1\n"), None, "config",
     "network_delay_min_ms 100 is above network_delay_max_ms 1"),
]


@pytest.mark.parametrize("text,step_no,key,fragment", REJECTIONS)
def test_rejections_name_step_key_and_expectation(text: str, step_no: int | None, key: str | None,
                                                  fragment: str) -> None:
    err = reject(text)
    assert err.step == step_no, str(err)
    assert err.key == key, str(err)
    assert fragment in str(err), str(err)
    if step_no is not None:
        assert f": step {step_no}: " in str(err)
    if key is not None:
        assert f"key `{key}`" in str(err)


#: kraftsim's additions to contract 4 (Kafka 4.3/4.4's controller operations), after its ops.
ADDED_OPS = ("alter-broker-config", "unregister-controller", "create-acl", "unregister-broker", "create-partitions",
             "alter-topic-config", "elect-leaders", "alter-client-quotas",
             "alter-scram-credentials", "reassign-partitions", "alter-client-metrics", "alter-group-config",
             "delete-acls")


def test_every_contract_op_has_a_struct() -> None:
    assert tuple(OPS) == CONTRACT_OPS + ADDED_OPS


def test_valid_file_with_every_op_decodes(tmp_path: Path) -> None:
    body = "".join(f"[[step]]\n{b}\n" for b in (
        "op = 'create-topics'\ncount = 2\npartitions = 3\nreplication_factor = 2",
        "op = 'delete-topics'\nnames = ['topic-0']",
        "op = 'roll'\nrelease = '3.9.0'\nnodes = 'controllers'",
        "op = 'add-node'\nrole = 'broker'\nrelease = '3.9'\nid = 10",
        "op = 'features-upgrade'\nmetadata = '3.9'\ndry_run = true",
        "op = 'features-downgrade'\nrelease_version = '3.8-IV0'\nunsafe = true",
        "op = 'features-disable'\nfeatures = ['group.version']",
        "op = 'crash'\nnodes = [10]",
        "op = 'stop'\nnodes = 'brokers'",
        "op = 'start'\nnodes = 'all'\nrelease = '3.9'",
        "op = 'partition'\ngroups = [[1], [2, 3]]",
        "op = 'heal'",
        "op = 'disk-fault'\nnodes = [2]\nkind = 'wipe'",
        "op = 'snapshot'",
        "op = 'run'\nms = 100",
        "op = 'wait'\ntimeout_ms = 1000\nnote = 'until stable'",
        "op = 'add-controller'\nid = 11\nrelease = '3.9'",
        "op = 'remove-controller'\nid = 1",
    ))
    path = tmp_path / "all.toml"
    path.write_text("# Question: q\n# Source: s\n#   more\n# Answer: a\n" + scenario_text(body), encoding="utf-8")
    s = load_scenario(path)
    assert [st.op for st in s.steps] == list(CONTRACT_OPS)
    # releases as Kafka names them; a line means its newest patch release
    assert s.steps[2].release == "3.9.0" and s.steps[3].release == "3.9.2" and s.steps[9].release == "3.9.2"
    assert s.nodes == {1: ("controller",), 2: ("broker",), 3: ("broker",)}
    assert s.steps[16].release == "3.9.2"  # add-controller: a release as Kafka names it
    assert s.header.source == "s more" and s.header.question == "q" and s.header.answer == "a"


def test_combined_nodes_come_first() -> None:
    s = parse_scenario("name = 'c'\n[cluster]\ncombined = 2\ncontrollers = 1\nbrokers = 1\nrelease = '3.9'\n", "c.toml")
    assert s.nodes == {1: ("broker", "controller"), 2: ("broker", "controller"), 3: ("controller",), 4: ("broker",)}


@pytest.mark.parametrize("key", ["controllers", "brokers", "combined"])
@pytest.mark.parametrize("count", [101, 100_000, 100_000_000, 100_000_000_000])
def test_node_counts_are_bounded_as_cluster_create_bounds_them(key: str, count: int) -> None:
    """A count `cluster create` refuses is refused before any node is numbered (a huge one
    once grew the node table until the process was killed)."""
    def cluster(n: int) -> str:
        counts = {"controllers": 1, "brokers": 0, "combined": 0, key: n}
        return "name = 'big'\n[cluster]\n" + "".join(f"{k} = {v}\n" for k, v in counts.items()) + "release = '3.9'\n"

    err = reject(cluster(count))
    assert err.key == f"cluster.{key}"
    assert f"expected an integer <= {MAX_NODES_PER_ROLE}, got {count:,}" in str(err)
    edge = parse_scenario(cluster(MAX_NODES_PER_ROLE), "edge.toml")  # the limit itself, as `cluster create` allows
    assert len(edge.nodes) == MAX_NODES_PER_ROLE + (key != "controllers")


def test_release_names_and_lines() -> None:
    cat = default_catalog()
    newest_37 = resolve_release(cat, "3.7")
    assert newest_37 is not None and newest_37.startswith("3.7")
    assert resolve_release(cat, "3.7.2") in ("3.7", "3.7.2")
    assert resolve_release(cat, "3.77") is None and resolve_release(cat, "x") is None


def test_expect_error_relaxes_tool_checked_names_only() -> None:
    s = parse_scenario(step("op = 'features-upgrade'\nmetadata = '3.99'\nexpect_error = 'Unknown metadata.version'"),
                       "ok.toml")
    assert s.steps[0].metadata == "3.99"
    reject(step("op = 'roll'\nrelease = '9.9'\nexpect_error = 'x'"))  # releases are ours to check, always


def test_user_catalog_is_loaded_relative_to_the_file(tmp_path: Path) -> None:
    (tmp_path / "cat.toml").write_text("this is = not a catalog [", encoding="utf-8")
    f = tmp_path / "s.toml"
    f.write_text("name = 'x'\ncatalog = 'cat.toml'\n[cluster]\ncontrollers = 1\nrelease = '3.8'\n", encoding="utf-8")
    with pytest.raises(ScenarioInvalid) as info:
        load_scenario(f)
    assert info.value.key == "catalog" and "expected a valid catalog file" in str(info.value)


def test_unreadable_and_non_utf8_files(tmp_path: Path) -> None:
    with pytest.raises(ScenarioInvalid, match="cannot be read"):
        load_scenario(tmp_path / "missing.toml")
    bad = tmp_path / "latin.toml"
    bad.write_bytes(b"name = '\xe9'\n")
    with pytest.raises(ScenarioInvalid, match="expected UTF-8 text"):
        load_scenario(bad)


def test_header_parsing_stops_at_the_first_key() -> None:
    h = parse_header("# Question: one\n#  two\n# Answer: yes\nname = 'x'\n# Source: not header\n")
    assert (h.question, h.answer, h.source) == ("one two", "yes", "")
