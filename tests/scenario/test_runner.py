"""The runner: scenarios written here exercise every op and every `[expect]` key, the
outcome rules of `expect_error`, invariants, loss reports and determinism (contract 5)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kraftsim.scenario.results import result_json
from kraftsim.sim import INVARIANTS, InvariantResult, Simulation
from kraftsim.sim.tools.directory import simulation_status

from tests.scenario.helpers import run_text, unsupported


def steps_ok(outcome) -> None:  # type: ignore[no-untyped-def]
    bad = [(s.index, s.op, s.error) for s in outcome.result.steps if not s.ok]
    assert not bad, bad


def expect_of(outcome, key: str):  # type: ignore[no-untyped-def]
    return next(e for e in outcome.result.expect if e.key == key)


def test_topics_ops_and_the_topics_key() -> None:
    o = run_text("""
[[step]]
op = "create-topics"
count = 3
partitions = 2
replication_factor = 2
[[step]]
op = "delete-topics"
names = ["topic-1"]
[[step]]
op = "delete-topics"
names = ["topic-1"]
expect_error = "This server does not host this topic-partition."
[expect]
topics = 2
""")
    steps_ok(o)
    assert o.result.steps[0].output == ["Created topic topic-0.", "Created topic topic-1.", "Created topic topic-2."]
    assert o.result.steps[2].error is not None and o.result.passed
    assert expect_of(o, "topics").actual == 2


def test_a_create_topics_step_refused_in_part_says_what_it_created() -> None:
    """Kafka creates a request's other topics when it refuses one; the failed step's output
    was empty, as if nothing had been created."""
    o = run_text("""
[[step]]
op = "create-topics"
names = ["ok", "b/c", "ok2"]
expect_error = "Topic name is invalid: 'b/c'"
[expect]
topics = 2
""")
    assert o.result.passed and o.result.steps[0].output == ["Created topic ok.", "Created topic ok2."]


def test_roll_stop_start_and_node_keys() -> None:
    o = run_text("""
[[step]]
op = "roll"
release = "3.9.0"
nodes = "brokers"
[[step]]
op = "stop"
nodes = [2]
[[step]]
op = "start"
nodes = [2]
release = "3.8"
[[step]]
op = "wait"
timeout_ms = 30000
[step.expect]
fenced = []
[[step]]
op = "stop"
nodes = [3]
[expect]
releases = { "1" = "3.8.1", "2" = "3.8", "3" = "3.9.0" }
running = [1, 2]
stopped = [3]
failed = []
has_leader = true
leader = 1
""")
    steps_ok(o)
    assert o.result.passed, [e for e in o.result.expect if not e.ok]
    states = {n.id: n.state for n in o.result.final.nodes}
    assert states == {1: "running", 2: "running", 3: "stopped"}
    assert o.result.steps[0].time_ms > 0  # a roll takes simulated time (controlled shutdowns, registration)


def test_add_node_of_both_roles() -> None:
    o = run_text("""
[[step]]
op = "add-node"
role = "broker"
release = "3.8"
[[step]]
op = "add-node"
role = "controller"
release = "3.8"
id = 9
[expect]
running = [1, 2, 3, 4, 9]
has_leader = true
""")
    steps_ok(o)
    assert o.result.passed
    roles = {n.id: n.roles for n in o.result.final.nodes}
    assert roles[4] == ["broker"] and roles[9] == ["controller"]


def test_features_upgrade_downgrade_dry_run_and_mv_keys() -> None:
    head = """
name = "f"
seed = 0
policy = "kafka"
[cluster]
controllers = 1
brokers = 1
release = "3.9"
release_version = "3.8-IV0"
"""
    o = run_text("""
[[step]]
op = "features-upgrade"
metadata = "3.9"
dry_run = true
[[step]]
op = "features-upgrade"
features = { "metadata.version" = 21 }
[[step]]
op = "features-downgrade"
release_version = "3.8-IV0"
[[step]]
op = "features-upgrade"
release_version = "3.9-IV0"
unsafe = false
[expect]
metadata_version = 21
finalized = { "metadata.version" = 21 }
""", head=head)
    steps_ok(o)
    assert o.result.steps[0].output[-1] == "metadata.version can be upgraded to 21."
    assert o.result.steps[2].loss_report is not None and o.result.steps[2].loss_report.lossless
    assert o.result.passed and o.result.final.metadata_version.name == "3.9-IV0"


def test_features_disable() -> None:
    o = run_text("""
[[step]]
op = "features-disable"
features = ["group.version"]
dry_run = true
[[step]]
op = "features-disable"
features = ["group.version"]
[expect]
finalized = { "group.version" = 0 }
metadata_version = "4.0-IV3"
""", release="4.0")
    steps_ok(o)
    assert o.result.steps[0].output == ["group.version can be disabled."]
    assert o.result.passed


def test_lossy_downgrade_loss_report_under_both_policies() -> None:
    body = """
[[step]]
op = "create-topics"
count = 1
partitions = 2
[[step]]
op = "features-downgrade"
metadata = "3.7-IV1"
unsafe = true
{expect_error}
"""
    kafka = run_text(body.format(expect_error='expect_error = "Unsafe metadata downgrade is not supported"'))
    kip = run_text(body.format(expect_error=""), policy="kip-778")
    for o in (kafka, kip):
        steps_ok(o)
        report = o.result.steps[1].loss_report
        assert report is not None and not report.lossless
        assert report.items == ["broker log dirs: broker 2", "broker log dirs: broker 3",
                                "replica directory assignment: topic topic-0 partition 0",
                                "replica directory assignment: topic topic-0 partition 1"]
    assert kafka.result.final.metadata_version.level == 20 and not kafka.result.mv_changes
    assert kip.result.final.metadata_version.level == 16
    change = kip.result.mv_changes[0]
    assert (change.old, change.new, change.lossless, change.nodes) == ("3.8-IV0", "3.7-IV1", False, [1, 2, 3])
    assert change.losses == kip.result.steps[1].loss_report.items


def test_run_and_wait_advance_simulated_time() -> None:
    o = run_text("""
[[step]]
op = "run"
ms = 3000
[[step]]
op = "wait"
timeout_ms = 10000
""")
    steps_ok(o)
    first = o.result.steps[0].time_ms
    assert first == 3000
    assert o.result.steps[1].time_ms >= first



#: Three controllers and no broker: controller 1 leads first.
THREE_CONTROLLERS = """
name = "{name}"
seed = {seed}
policy = "{policy}"
[cluster]
controllers = 3
release = "{release}"
"""


def test_has_leader_means_a_majority_knows_one_not_a_stale_leader_alone(tmp_path: Path) -> None:
    """Every controller cut off alone: 2 and 3 give up on 1 and campaign in epoch 2 while 1
    still leads epoch 1 (its check-quorum has not ended it yet). No majority of the voters
    knows a leader: `has_leader` is false and the final leader null, as `cluster status` says."""
    o = run_text("""
[[step]]
op = "partition"
groups = [[1], [2], [3]]
[[step]]
op = "run"
ms = 3000
[expect]
has_leader = false
""", head=THREE_CONTROLLERS, release="3.9.0", keep=tmp_path / "kept")
    steps_ok(o)
    status = simulation_status(tmp_path / "kept")
    assert [(n["id"], n["epoch"], n["leader"]) for n in status["nodes"]] == [(1, 1, 1), (2, 2, None), (3, 2, None)]
    assert o.result.passed, [e for e in o.result.expect if not e.ok]
    assert o.result.final.leader is None is status["leader"]


#: Three controllers (1 leads first) and brokers 4 and 5.
THREE_CONTROLLERS_TWO_BROKERS = THREE_CONTROLLERS.replace("release =", "brokers = 2\nrelease =")


def test_a_roll_step_stops_at_the_first_node_that_does_not_start() -> None:
    """A roll of every node back from 4.0 (metadata.version 25) to 3.9: the first controller
    dies on start with Kafka's text, the step's error; the roll stops there (as `cluster roll`),
    so the other nodes still run 4.0 and the quorum keeps its leader."""
    o = run_text("""
[[step]]
op = "roll"
release = "3.9.0"
expect_error = "No MetadataVersion with feature level 25"
[expect]
running = [1, 3, 4, 5]
failed = [2]
has_leader = true
releases = { "1" = "4.0.0", "2" = "3.9.0", "3" = "4.0.0", "4" = "4.0.0", "5" = "4.0.0" }
""", head=THREE_CONTROLLERS_TWO_BROKERS, release="4.0.0")
    steps_ok(o)
    assert o.result.steps[0].error == "No MetadataVersion with feature level 25"
    assert o.result.passed, [e for e in o.result.expect if not e.ok]

FAULTS = {
    "crash": ("[[step]]\nop = 'crash'\nnodes = [3]\n[[step]]\nop = 'start'\nnodes = [3]\n"
              "[[step]]\nop = 'wait'\ntimeout_ms = 60000\n", {"running": [1, 2, 3]}),
    "partition-heal": ("[[step]]\nop = 'partition'\ngroups = [[1, 2], [3]]\n[[step]]\nop = 'run'\nms = 5000\n"
                       "[[step]]\nop = 'heal'\n[[step]]\nop = 'wait'\ntimeout_ms = 60000\n", {"running": [1, 2, 3]}),
    "disk-fault": ("[[step]]\nop = 'stop'\nnodes = [3]\n[[step]]\nop = 'disk-fault'\nnodes = [3]\nkind = 'wipe'\n"
                   "[[step]]\nop = 'start'\nnodes = [3]\n[[step]]\nop = 'wait'\ntimeout_ms = 60000\n",
                   {"running": [1, 2, 3]}),
    "snapshot": ("[[step]]\nop = 'create-topics'\ncount = 1\n[[step]]\nop = 'snapshot'\n", {"topics": 1}),
}


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_fault_ops(name: str) -> None:
    body, expect = FAULTS[name]
    o = run_text(body + "[expect]\n" + "".join(f"{k} = {v}\n" for k, v in expect.items()) + "has_leader = true\n")
    missing = unsupported(o)
    if missing is not None:
        pytest.skip(f"the simulator does not do this yet: {missing}")
    steps_ok(o)
    assert o.result.passed, [e for e in o.result.expect if not e.ok]
    if name == "snapshot":
        assert o.result.steps[1].output and all(line.endswith(" bytes)") for line in o.result.steps[1].output)


def test_expect_error_rules_and_skipped_steps() -> None:
    o = run_text("""
[[step]]
op = "run"
ms = 500
expect_error = "anything"
[[step]]
op = "run"
ms = 500
""")
    first, second = o.result.steps
    assert not first.ok and first.error is None and first.expected_error == "anything"
    assert second.skipped and not second.ok and second.error == "not run: step 1 failed"
    assert not o.result.passed
    wrong = run_text("""
[[step]]
op = "features-upgrade"
metadata = "3.9"
expect_error = "some other text"
""")
    step = wrong.result.steps[0]
    assert not step.ok and "Unknown metadata.version '3.9'" in step.error


EXPECT_FAILS = [
    ("metadata_version = '3.9-IV0'", "metadata_version", "3.8-IV0"),
    ("metadata_version = 21", "metadata_version", 20),
    ("finalized = { 'metadata.version' = 21, 'group.version' = 1 }", "finalized", {"group.version": 0,
                                                                                     "metadata.version": 20}),
    ("running = [1]", "running", [1, 2, 3]),
    ("has_leader = false", "has_leader", True),
    ("leader = 2", "leader", 1),
    ("failed = [2]", "failed", []),
    ("stopped = [3]", "stopped", []),
    ("releases = { '2' = '3.9' }", "releases", {"2": "3.8.1"}),  # the line 3.8 runs its newest patch
    ("topics = 4", "topics", 0),
    ("fenced = [2]", "fenced", []),
]


@pytest.mark.parametrize("line,key,actual", EXPECT_FAILS)
def test_every_expect_key_reports_expected_and_actual(line: str, key: str, actual: object) -> None:
    o = run_text(f"[expect]\n{line}\n", release="3.8")
    e = expect_of(o, key)
    assert not e.ok and e.actual == actual
    assert not o.result.passed


def test_invariant_failures_name_the_step(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"n": 0}

    def broken(self: Simulation) -> list[InvariantResult]:
        calls["n"] += 1
        ok = calls["n"] < 2
        return [InvariantResult(n, ok or n != "ImageMatchesLog", None if ok else "node 2 differs at offset 7")
                for n in INVARIANTS]

    monkeypatch.setattr(Simulation, "invariants", broken)
    o = run_text("[[step]]\nop = 'run'\nms = 500\n[[step]]\nop = 'run'\nms = 500\n")
    inv = {i.name: i for i in o.result.invariants}
    assert [i.name for i in o.result.invariants] == list(INVARIANTS)
    assert not inv["ImageMatchesLog"].ok and inv["ImageMatchesLog"].detail == "after step 2: node 2 differs at offset 7"
    assert all(i.ok for n, i in inv.items() if n != "ImageMatchesLog")
    assert not o.result.passed


def test_same_seed_same_bytes_other_seed_other_digest() -> None:
    body = "[[step]]\nop = 'create-topics'\ncount = 2\n[[step]]\nop = 'roll'\nrelease = '3.9'\n"
    a, b, c = run_text(body, seed=3), run_text(body, seed=3), run_text(body, seed=4)
    assert result_json(a.result) == result_json(b.result)
    assert a.result.digest != c.result.digest and c.result.seed == 4
    assert a.result.digest.startswith("sha256:") and len(a.result.digest) == 71


def test_contract_five_keys_in_order() -> None:
    import json
    o = run_text("[[step]]\nop = 'run'\nms = 0\n[expect]\nhas_leader = true\n")
    d = json.loads(result_json(o.result))
    assert list(d)[:8] == ["name", "seed", "passed", "steps", "expect", "invariants", "final", "digest"]
    assert list(d["steps"][0])[:5] == ["index", "op", "ok", "error", "expected_error"]
    assert list(d["expect"][0])[:4] == ["key", "expected", "actual", "ok"]
    assert list(d["invariants"][0]) == ["name", "ok", "detail"]
    assert list(d["final"]) == ["metadata_version", "finalized", "leader", "nodes"]
    assert list(d["final"]["metadata_version"]) == ["level", "name"]
    assert list(d["final"]["nodes"][0])[:4] == ["id", "roles", "release", "state"]


def test_leader_selector_and_config_table() -> None:
    o = run_text("""
[config]
broker_heartbeat_interval_ms = 1000
[[step]]
op = "stop"
nodes = "leader"
[[step]]
op = "run"
ms = 2000
[[step]]
op = "start"
nodes = [1]
[[step]]
op = "wait"
timeout_ms = 30000
[expect]
running = [1, 2, 3]
has_leader = true
""")
    steps_ok(o)
    assert o.result.passed
    # the only controller was the leader: while it was down the cluster had none
    assert any(s.leader is None for s in o.timeline.samples)


def test_a_hypothetical_catalog_named_by_the_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from kraftsim.scenario import ScenarioInvalid, load_scenario
    from kraftsim.scenario.runner import run_scenario
    from tests.scenario.helpers import REPO

    example = REPO / "kraftsim" / "versions" / "data" / "examples" / "kip778.toml"
    body = """
[cluster]
controllers = 1
brokers = 1
release = "4.2"
[[step]]
op = "roll"
release = "4.9"
[[step]]
op = "features-upgrade"
metadata = "4.9-IV3"
[[step]]
op = "features-downgrade"
metadata = "4.9-IV2"
expect_error = "Refusing to perform the requested downgrade"
[expect]
metadata_version = "4.9-IV3"
"""
    without = tmp_path / "without.toml"
    without.write_text('name = "h"\n' + body, encoding="utf-8")
    with pytest.raises(ScenarioInvalid, match="unknown release '4.9'"):
        load_scenario(without)  # 4.9 exists only in the hypothetical catalog
    (tmp_path / "cat.toml").write_bytes(example.read_bytes())
    (tmp_path / "kip778_records").mkdir()
    for f in (example.parent / "kip778_records").iterdir():
        (tmp_path / "kip778_records" / f.name).write_bytes(f.read_bytes())
    with_catalog = tmp_path / "with.toml"
    with_catalog.write_text('name = "h"\ncatalog = "cat.toml"\n' + body, encoding="utf-8")
    o = run_scenario(load_scenario(with_catalog))
    steps_ok(o)
    assert o.result.passed and o.result.final.metadata_version.level == 38  # KIP-778's V4
    assert o.result.steps[2].loss_report is not None and o.result.steps[2].loss_report.lossless


def test_combined_nodes() -> None:
    head = """
name = "c"
seed = 0
policy = "kafka"
[cluster]
combined = 3
brokers = 1
release = "3.9"
"""
    o = run_text("""
[[step]]
op = "create-topics"
count = 2
[[step]]
op = "crash"
nodes = [1]
[[step]]
op = "start"
nodes = [1]
[[step]]
op = "wait"
timeout_ms = 60000
[expect]
running = [1, 2, 3, 4]
topics = 2
fenced = []
""", head=head)
    steps_ok(o)
    assert o.result.passed
    assert [n.roles for n in o.result.final.nodes] == [["broker", "controller"]] * 3 + [["broker"]]


def test_a_kept_cluster_is_saved_after_every_operation_a_temporary_one_is_not(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """cluster.json (written and fsynced) is what reopens a cluster: a kept cluster has it
    current after every operation; a temporary one, never opened again, skips that work. Both
    simulate the same (the same result line)."""
    saved: list[int] = []
    plain_save = Simulation.save

    def counting(sim: Simulation) -> None:
        saved.append(sim.now_ms)
        plain_save(sim)
    monkeypatch.setattr(Simulation, "save", counting)
    body = '[[step]]\nop = "create-topics"\ncount = 2\npartitions = 3\n\n[[step]]\nop = "run"\nms = 5000\n'
    temporary = run_text(body)
    by_temporary = len(saved)
    kept = run_text(body, keep=tmp_path / "kept")
    by_kept = len(saved) - by_temporary
    assert by_temporary == 1 and by_kept > 2  # (the temporary one's at its creation only)
    assert result_json(kept.result) == result_json(temporary.result)
    reopened = Simulation.open(tmp_path / "kept")
    assert reopened.now_ms == saved[-1] > 0
    reopened.close()


def test_a_temporary_cluster_is_removed_from_when_its_files_are_closed_before_the_caches_are_freed(
        monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Its removal (a thread: kraftsim.storage.scratch) starts once no file in it is open, the
    simulation's caches freed meanwhile; the run returns with nothing left behind."""
    from kraftsim.sim.engine.core import Engine
    from kraftsim.storage.scratch import Scratch

    order: list[str] = []
    scratches: list[Scratch] = []
    plain_remove, plain_drop = Scratch.remove_soon, Engine.drop_caches

    def remove_soon(scratch: Scratch) -> None:
        fds = Path("/proc/self/fd")
        open_inside = [p for p in (os.path.realpath(fds / fd) for fd in os.listdir(fds))
                       if p.startswith(str(scratch.path.resolve()) + os.sep)] if fds.is_dir() else []
        order.append(f"remove ({len(open_inside)} open)")
        scratches.append(scratch)
        plain_remove(scratch)

    def drop_caches(engine: Engine) -> None:
        order.append("drop caches")
        plain_drop(engine)
    monkeypatch.setattr(Scratch, "remove_soon", remove_soon)
    monkeypatch.setattr(Engine, "drop_caches", drop_caches)
    outcome = run_text('[[step]]\nop = "create-topics"\ncount = 2\npartitions = 3\n')
    steps_ok(outcome)
    assert order == ["remove (0 open)", "drop caches"]
    assert not scratches[0].path.exists()
