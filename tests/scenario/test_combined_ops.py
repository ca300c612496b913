"""Every scenario op on a cluster of combined nodes (`process.roles=broker,controller`): a
crash, stop or disk fault of such a node takes its broker and its controller down together
(its broker is fenced, the quorum elects without it), and the node comes back in both roles."""

from __future__ import annotations

from kraftsim.scenario.ops import OPS
from kraftsim.scenario.runner import run_scenario
from kraftsim.scenario.validate import parse_scenario

EVERY_OP = """
name = "combined-every-op"
seed = 3
[cluster]
combined = 3
release = "3.9"

[[step]]
op = "create-topics"
count = 3
partitions = 2

[[step]]
op = "delete-topics"
names = ["topic-0"]
[step.expect]
topics = 2

[[step]]
op = "create-partitions"
names = ["topic-1"]
count = 4

[[step]]
op = "create-partitions"
names = ["topic-2"]
count = 2
expect_error = "Topic already has 2 partition(s)."

[[step]]
op = "elect-leaders"
partitions = { "topic-1" = [0, 3] }

[[step]]
op = "reassign-partitions"
partitions = [{ topic = "topic-1", partition = 0, replicas = [3, 2, 1] }, { topic = "topic-1", partition = 1 }]
expect_error = "topic-1-1: No partition reassignment is in progress."

[[step]]
op = "alter-topic-config"
topic = "topic-1"
configs = { "retention.ms" = "60000" }

[[step]]
op = "alter-scram-credentials"
user = "alice"
credentials = { "SCRAM-SHA-512" = { password = "alice-secret" } }

[[step]]
op = "alter-client-quotas"
client_id = "app"
default = ["user"]
quotas = { producer_byte_rate = 1024 }

[[step]]
op = "alter-topic-config"
topic = "topic-1"
configs = { "retention.ms" = "soon" }
expect_error = "Invalid value soon for configuration retention.ms: Not a number of type LONG"

[[step]]
op = "features-downgrade"
metadata = "3.8-IV0"

[[step]]
op = "stop"
nodes = [2]
[step.expect]
stopped = [2]
has_leader = true

[[step]]
op = "disk-fault"
nodes = [2]
kind = "torn-tail"

[[step]]
op = "start"
nodes = [2]

[[step]]
op = "wait"
timeout_ms = 60000
[step.expect]
running = [1, 2, 3]
fenced = []

[[step]]
op = "partition"
groups = [[1], [2, 3]]

[[step]]
op = "run"
ms = 8000
[step.expect]
has_leader = true

[[step]]
op = "heal"

[[step]]
op = "crash"
nodes = [3]

[[step]]
op = "run"
ms = 15000
[step.expect]
stopped = [3]
fenced = [3]
has_leader = true

[[step]]
op = "disk-fault"
nodes = [3]
kind = "wipe"

[[step]]
op = "start"
nodes = [3]

[[step]]
op = "wait"
timeout_ms = 60000
[step.expect]
running = [1, 2, 3]
fenced = []
topics = 2

[[step]]
op = "snapshot"

[[step]]
op = "add-node"
role = "broker"
release = "3.9"

[[step]]
op = "roll"
release = "4.0"

[[step]]
op = "features-upgrade"
metadata = "4.0"

[[step]]
op = "features-disable"
features = ["group.version"]

[[step]]
op = "alter-broker-config"
broker = 4
configs = { "cordoned.log.dirs" = "*" }
expect_error = "requires metadata.version >= 4.3-IV0"

[[step]]
op = "create-acl"
principal = "User:alice"
operation = "read"
resource_name = "topic-1"

[[step]]
op = "delete-acls"
resource_name = "topic-1"
pattern_type = "match"

[[step]]
op = "unregister-controller"
id = 3
expect_error = "The current MetadataVersion is too old to support controller unregistration."

[[step]]
op = "add-controller"
expect_error = "Cluster doesn't support adding voter because the kraft.version feature is 0"

[[step]]
op = "remove-controller"
id = 3
expect_error = "Cluster doesn't support removing voter because the kraft.version feature is 0"

[[step]]
op = "unregister-broker"
id = 9
expect_error = "Broker ID 9 is not currently registered"

[[step]]
op = "alter-client-metrics"
name = "producers"
configs = { metrics = "org.apache.kafka.producer.", "interval.ms" = "60000" }

[[step]]
op = "alter-client-metrics"
name = "producers"
configs = { "interval.ms" = "10" }
expect_error = "Invalid value 10 for interval.ms, interval must be between 100 and 3600000 (1 hour)"

[[step]]
op = "alter-group-config"
group = "orders-app"
configs = { "consumer.session.timeout.ms" = "50000" }

[[step]]
op = "alter-group-config"
group = "orders-app"
configs = { "consumer.heartbeat.interval.ms" = "20000" }
expect_error = "consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms"

[expect]
metadata_version = "4.0-IV3"
finalized = { "group.version" = 0 }
running = [1, 2, 3, 4, 5]  # the controller add-controller started stays up as an observer
fenced = []
topics = 2
releases = { "1" = "4.0", "2" = "4.0", "3" = "4.0", "4" = "4.0" }
"""


def test_every_op_on_combined_nodes() -> None:
    scenario = parse_scenario(EVERY_OP, "combined-every-op.toml")
    assert {s.op for s in scenario.steps} == set(OPS), "an op is missing here"
    result = run_scenario(scenario).result
    assert result.setup_error is None
    assert all(s.ok for s in result.steps), [s for s in result.steps if not s.ok]
    assert all(e.ok for e in result.expect), [e for e in result.expect if not e.ok]
    assert all(i.ok for i in result.invariants), [i for i in result.invariants if not i.ok]
    assert [(n.id, n.roles) for n in result.final.nodes] == \
        [(1, ["broker", "controller"]), (2, ["broker", "controller"]), (3, ["broker", "controller"]), (4, ["broker"]),
         (5, ["controller"])]
