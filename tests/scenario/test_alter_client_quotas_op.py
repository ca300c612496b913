"""The `alter-client-quotas` op (kafka-configs --alter --entity-type users|clients|ips): a
scenario sets and deletes quotas of named and default entities, a refusal comes with the
controller's text, every node ends with the same quotas, and a step that names no entity, or a
type both by name and at its default, is refused when the file is read."""

from __future__ import annotations

import pytest

from kraftsim.scenario.errors import ScenarioInvalid
from kraftsim.scenario.runner import run_scenario
from kraftsim.scenario.validate import parse_scenario

HEAD = """name = "quotas"

[cluster]
controllers = 1
brokers = 2
release = "3.9.2"
"""


def test_quotas_are_set_deleted_and_refused_as_the_controller_says(tmp_path):
    text = HEAD + """
[[step]]
op = "alter-client-quotas"
client_id = "app"
quotas = { producer_byte_rate = 1024, consumer_byte_rate = 2048 }

[[step]]
op = "alter-client-quotas"
user = "alice"
client_id = "app"
quotas = { request_percentage = 12.5 }

[[step]]
op = "alter-client-quotas"
default = ["user"]
quotas = { producer_byte_rate = 10 }

[[step]]
op = "alter-client-quotas"
client_id = "app"
delete = ["consumer_byte_rate"]

[[step]]
op = "alter-client-quotas"
ip = "10.0.0.1"
quotas = { connection_creation_rate = 1.5 }
expect_error = "connection_creation_rate cannot be a fractional value."
"""
    outcome = run_scenario(parse_scenario(text, "quotas.toml"), keep=tmp_path / "c")
    result = outcome.result
    assert result.passed, result
    assert [s.output for s in result.steps[:4]] == [["Completed updating config for client app."],
                                                    ["Completed updating config for user alice."],
                                                    ["Completed updating default config for users in the cluster."],
                                                    ["Completed updating config for client app."]]
    from kraftsim.sim import Simulation

    with Simulation.open(tmp_path / "c", passive=True) as sim:
        quotas = {repr(sim.image(n.id).client_quotas.entities.sorted_items()) for n in sim.nodes()}
        assert len(quotas) == 1
        assert dict(sim.image(1).client_quotas.entities.sorted_items()) == {
            (("client-id", "app"),): {"producer_byte_rate": 1024.0},
            (("client-id", "app"), ("user", "alice")): {"request_percentage": 12.5},
            (("user", None),): {"producer_byte_rate": 10.0}}


@pytest.mark.parametrize("step, text", [
    ('user = "a"', "expected quotas to set or delete"),
    ('quotas = { producer_byte_rate = 1 }', "expected an entity: user, client_id, ip or default"),
    ('user = "a"\ndefault = ["user"]\nquotas = { producer_byte_rate = 1 }', "'user' is both named and at its default"),
])
def test_a_step_without_an_entity_or_a_change_is_refused_when_read(step, text):
    with pytest.raises(ScenarioInvalid, match=text):
        parse_scenario(HEAD + f'\n[[step]]\nop = "alter-client-quotas"\n{step}\n', "quotas.toml")
