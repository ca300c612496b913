"""The scenario ops add-controller and remove-controller (contract 4), `[cluster]
dynamic_quorum` and `[expect] voters`: checked when the file is read, carried out by the runner."""

from __future__ import annotations

import pytest

from kraftsim.scenario import ScenarioInvalid, parse_scenario
from kraftsim.scenario.runner import run_text

HEAD = """name = "m"
seed = 5
[cluster]
controllers = 3
brokers = 1
release = "4.1"
dynamic_quorum = true
"""


@pytest.mark.parametrize(("step", "key", "says"), [
    ("op = 'remove-controller'\nid = 9", "id", "node 9 does not exist"),
    ("op = 'add-controller'\nid = 4", "id", "node 4 is a broker"),
    ("op = 'add-controller'\nrelease = '9.9'", "release", "unknown release"),
    ("op = 'add-controller'\ncrash_leader_after_ms = -1", "crash_leader_after_ms", "expected an integer >= 0"),
])
def test_bad_membership_steps_are_refused_when_read(step: str, key: str, says: str) -> None:
    with pytest.raises(ScenarioInvalid) as info:
        parse_scenario(HEAD + f"[[step]]\n{step}\n", "m.toml")
    assert info.value.key == key and says in str(info.value)


def test_steps_change_the_voters_and_expect_checks_them() -> None:
    out = run_text(HEAD + """
[[step]]
op = "add-controller"
expect = { voters = [1, 2, 3, 5] }

[[step]]
op = "remove-controller"
id = 2

[[step]]
op = "remove-controller"
id = 2
expect_error = "Cannot remove voter ReplicaKey(id=2"

[expect]
voters = [1, 3, 5]
running = [1, 2, 3, 4, 5]
""")
    r = out.result
    assert r.passed, (r.steps, r.expect, r.invariants)
    assert r.steps[0].output[0].startswith("Added controller 5 with directory id ")
    assert [i.name for i in r.invariants][-2:] == ["NoDisjointMajorities", "VoterOfSeenSet"]
    assert [(e.key, e.actual) for e in r.expect if e.key == "voters"] == [("voters", [1, 2, 3, 5]), ("voters", [1, 3, 5])]
