"""The `alter-scram-credentials` op (kafka-configs --alter --entity-type users of SCRAM-SHA-256 /
SCRAM-SHA-512): a password is salted as Kafka's Admin client salts it, with a salt made from the
run's seed (the same seed and scenario give the same credential bytes), the controller's
refusals come with its texts (two mechanisms of one user in one request included, as Kafka
refuses them), and a step is checked when the file is read."""

from __future__ import annotations

import pytest

from kraftsim.controller import scram_keys_of_password
from kraftsim.scenario.errors import ScenarioInvalid
from kraftsim.scenario.runner import run_scenario
from kraftsim.scenario.validate import parse_scenario
from kraftsim.sim import Simulation

HEAD = """name = "scram"

[cluster]
controllers = 1
brokers = 1
release = "3.9.2"
"""

STEPS = """
[[step]]
op = "alter-scram-credentials"
user = "alice"
credentials = { "SCRAM-SHA-256" = { iterations = 8192, password = "alice-secret" } }

[[step]]
op = "alter-scram-credentials"
user = "alice"
credentials = { "SCRAM-SHA-512" = { password = "x" } }

[[step]]
op = "alter-scram-credentials"
user = "carol"
credentials = { "SCRAM-SHA-256" = { password = "c" }, "SCRAM-SHA-512" = { password = "c" } }
expect_error = "A user credential cannot be altered twice in the same request"

[[step]]
op = "alter-scram-credentials"
user = "bob"
credentials = { "SCRAM-SHA-512" = { iterations = 20000, password = "b" } }
expect_error = "Too many iterations"

[[step]]
op = "alter-scram-credentials"
user = "alice"
delete = ["SCRAM-SHA-512"]
"""


def _credentials(tmp_path, name: str):
    result = run_scenario(parse_scenario(HEAD + STEPS, "scram.toml"), keep=tmp_path / name).result
    assert result.passed, result
    assert result.steps[0].output == ["Completed updating config for user alice."]
    with Simulation.open(tmp_path / name, passive=True) as sim:
        return list(sim.image(1).scram.sorted_credentials())


def test_a_password_is_salted_from_the_seed_and_checked_by_the_controller(tmp_path):
    first, again = _credentials(tmp_path, "a"), _credentials(tmp_path, "b")
    assert first == again  # (a seed and a scenario give the same bytes)
    [((mechanism, user), credential)] = first
    assert (mechanism, user, credential.iterations) == (1, "alice", 8192)
    assert (credential.stored_key, credential.server_key) == scram_keys_of_password(1, "alice-secret",
                                                                                   credential.salt, 8192)


@pytest.mark.parametrize("step, text", [
    ('user = "a"', "expected credentials to set or delete"),
    ('user = "a"\ndelete = ["SCRAM-SHA-1"]', "unknown SCRAM mechanism 'SCRAM-SHA-1'"),
    ('user = "a"\ncredentials = { "SCRAM-SHA-256" = { iterations = 4096 } }',
     "expected a password, or a salt and a salted_password"),
    ('user = "a"\ncredentials = { "SCRAM-SHA-256" = { password = "p", salt = "c2FsdA==" } }',
     "expected a password, or a salt and a salted_password"),
    ('user = "a"\ncredentials = { "SCRAM-SHA-256" = { salt = "c2FsdA==", salted_password = "not base64!" } }',
     "expected base64"),
])
def test_a_step_is_checked_when_read(step, text):
    with pytest.raises(ScenarioInvalid, match=text):
        parse_scenario(HEAD + f'\n[[step]]\nop = "alter-scram-credentials"\n{step}\n', "scram.toml")
