"""Kafka's own tools against `kraftsim serve` and against a live Kafka node of the same shape
(one combined node, id 1, the same release), their outputs compared after masking only what
legitimately differs between two clusters:

- the cluster id, host:port pairs and topic ids (each cluster has its own);
- `Epoch:` of kafka-features and `HighWatermark:` of kafka-metadata-quorum: offsets in the
  metadata log, which holds a different number of time-driven records on each side;
- in `kafka-metadata-quorum describe --replication`, the columns of REPLICATION_MASKED (the
  node's random directory id, its log end offset, and the two wall-clock timestamps), with the
  table's padding normalised (it follows the widths of those values);
- in `kafka-configs --describe --all` of the node, the log directory (log.dirs) and the lines of
  ALL_CONFIGS_MASKED: configs the live node's server.properties sets that a served node cannot
  take (their place in the listing is still compared);
- on stderr, stack frames and log lines (timestamps): the exception lines are compared.

kafka-topics --alter --partitions runs on a topic it created (an increase, then refusals), and
kafka-configs --alter sets, refuses and deletes that topic's configs, client quotas (clients,
users, the default user, a user and client together, an IP) and SCRAM credentials, and sets and
refuses the node's replication throttle rates through its broker listener; kafka-leader-election elects
every partition, one partition and one that does not exist;
kafka-acls lists, adds and removes ACLs (each refused: no authorizer); kafka-consumer-groups and
kafka-transactions list groups and transactions (none); kafka-transactions describes a partition's
producers and finds hanging transactions (none); kafka-consumer-groups describes and deletes
a group no coordinator knows, whose lookup creates `__consumer_offsets` (then described by
kafka-topics); kafka-get-offsets lists the offsets of logs nobody produced to;
kafka-client-metrics sets, refuses, describes, lists and deletes client-metrics subscriptions;
kafka-configs --entity-type groups sets, refuses (a bound, an unknown name), describes (also with
--all) and deletes a group's configs on 4.0 to 4.2 (GROUP_RUNS);
kafka-features upgrade, downgrade and disable run with and without `--dry-run`, through the
broker (`--bootstrap-server`) and the controller (`--bootstrap-controller`, which every release
the group covers, 3.7 onward, has), and include refused requests: their lines and exit codes are
compared like the rest.

Besides the tools, raw requests whose answers no tool shows whole: UnregisterBroker for an
unknown id (its ErrorMessage), validate-only CreateTopics and CreatePartitions at the
controller's size limits (SIZE_PROBES) and of illegal topic names (ILLEGAL_TOPIC_NAMES),
DescribeConfigs of resources Kafka refuses (DESCRIBE_REFUSALS), whole answers whose defaults no
tool shows (WHOLE_ANSWERS; the node's every config in its own order, which kafka-configs sorts
away), the config resources a node lists (CONFIG_RESOURCE_TYPES, 4.1 on), DeleteRecords of empty logs
(DELETE_RECORDS), and Metadata's automatic topic
creation (the live node runs with auto.create.topics.enable=true, Kafka's default, as `kraftsim
serve` does).

kafka-broker-api-versions is compared line by line, one difference per API, so a gap in one
range is named on its own. One case per release (`serve-tools/combined`); the live node is
started and stopped inside it (heap 384m).
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from kraftsim.conformance.cases.base import Case, ReleaseContext
from kraftsim.conformance.dist import KafkaDist, KafkaUnavailable
from kraftsim.conformance.node import LiveNode
from kraftsim.conformance.tools import TOOL_TIMEOUT_S, log_config_options, main_classes
from kraftsim.conformance.wire_client import WireClient
from kraftsim.protocol.primitives import Uuid
from kraftsim.wire import API_KEYS

def _bs(*args: str) -> list[str]:
    """A tool's arguments, bootstrapped from the node's broker listener."""
    return ["--bootstrap-server", "{bs}", *args]


def _bc(*args: str) -> list[str]:
    """A tool's arguments, bootstrapped from the node's controller listener."""
    return ["--bootstrap-controller", "{bc}", *args]


def _alter(entity_type: str, *args: str) -> list[str]:
    """kafka-configs --alter of an entity type (`args`: which entity, and the change)."""
    return _bs("--alter", "--entity-type", entity_type, *args)


HEAP = "384m"
#: (name, tool, arguments; "{bs}" is the bootstrap server, "{bc}" the controller, 3.7 onward), run in this order on each side.
RUNS: list[tuple[str, str, list[str]]] = [
    ("topics --create", "topics", _bs("--create", "--topic", "t", "--partitions", "2", "--replication-factor", "1")),
    # topic configs the controller refuses: a value its type cannot parse, a name it does not define
    ("topics --create --config (bad value)", "topics", _bs("--create", "--topic", "u", "--partitions", "1",
                                                           "--replication-factor", "1", "--config",
                                                           "retention.ms=soon")),
    ("topics --create --config (unknown name)", "topics", _bs("--create", "--topic", "u", "--partitions", "1",
                                                              "--replication-factor", "1", "--config",
                                                              "retention.days=7")),
    # CreatePartitions: an increase, one that is not, a manual assignment naming an unknown broker
    ("topics --alter --partitions", "topics", _bs("--alter", "--topic", "t", "--partitions", "3")),
    ("topics --alter --partitions (no increase)", "topics", _bs("--alter", "--topic", "t", "--partitions", "2")),
    ("topics --alter --replica-assignment (unknown broker)", "topics", _bs("--alter", "--topic", "t", "--partitions",
                                                                           "4", "--replica-assignment", "1,1,1,7")),
    # ElectLeaders: every partition (none needs an election), one that needs none, one that does not exist
    ("leader-election --all-topic-partitions", "leader-election", _bs("--election-type", "preferred",
                                                                      "--all-topic-partitions")),
    ("leader-election (a partition)", "leader-election", _bs("--election-type", "preferred", "--topic", "t",
                                                             "--partition", "0")),
    ("leader-election unclean (no such partition)", "leader-election", _bs("--election-type", "unclean", "--topic",
                                                                           "t", "--partition", "9")),
    ("topics --list", "topics", _bs("--list")),
    ("topics --describe", "topics", _bs("--describe")),
    # IncrementalAlterConfigs on a topic: set two, a bad value, an unknown name, delete one; the describe shows the rest
    ("configs --alter topic", "configs", _alter("topics", "--entity-name", "t", "--add-config",
                                                "retention.ms=1000,cleanup.policy=compact")),
    ("configs --alter topic (bad value)", "configs", _alter("topics", "--entity-name", "t", "--add-config",
                                                            "retention.ms=soon")),
    ("configs --alter topic (unknown name)", "configs", _alter("topics", "--entity-name", "t", "--add-config",
                                                               "retention.days=7")),
    ("configs --alter topic --delete-config", "configs", _alter("topics", "--entity-name", "t", "--delete-config",
                                                                "cleanup.policy")),
    # a broker's replication throttle rates through its own listener (the broker checks them first): set, refused
    ("configs --alter broker throttle", "configs", _alter("brokers", "--entity-name", "1", "--add-config",
                                                          "leader.replication.throttled.rate=1000")),
    ("configs --alter broker throttle (bad value)", "configs", _alter("brokers", "--entity-name", "1", "--add-config",
                                                                      "follower.replication.throttled.rate=-5")),
    ("configs --alter broker throttle (not a number)", "configs", _alter("brokers", "--entity-name", "1",
                                                                         "--add-config",
                                                                         "leader.replication.throttled.rate=fast")),
    ("configs topic", "configs", _bs("--describe", "--entity-type", "topics", "--entity-name", "t")),
    ("configs broker", "configs", _bs("--describe", "--entity-type", "brokers", "--entity-name", "1")),
    ("configs broker default", "configs", _bs("--describe", "--entity-type", "brokers", "--entity-default")),
    # the node's every config: its server.properties (masked where the two sides' differ: ALL_CONFIGS_MASKED),
    # its dynamic configs (the throttle rate set above), the release's defaults; the cluster default's
    ("configs broker --all", "configs", _bs("--describe", "--all", "--entity-type", "brokers", "--entity-name", "1")),
    ("configs broker default --all", "configs", _bs("--describe", "--all", "--entity-type", "brokers",
                                                    "--entity-default")),
    # every config of the topic (its own written as the node parses them, the others inherited from the node's
    # and the cluster's dynamic broker configs, set through the controller, or the release's defaults)
    ("configs --alter topic (values written otherwise)", "configs", _alter(
        "topics", "--entity-name", "t", "--add-config", "segment.bytes=+2000000,preallocate=TRUE,"
                                                        "min.cleanable.dirty.ratio=0.50")),
    ("configs --alter broker default (controller)", "configs", _bc(
        "--alter", "--entity-type", "brokers", "--entity-default", "--add-config",
        "log.retention.ms=5000,log.segment.bytes=3000000,log.retention.bytes=777,log.roll.hours=2")),
    ("configs --alter broker 1 (controller)", "configs", _bc(
        "--alter", "--entity-type", "brokers", "--entity-name", "1", "--add-config",
        "log.retention.bytes=888,log.cleanup.policy=compact")),
    ("configs topic --all", "configs", _bs("--describe", "--all", "--entity-type", "topics", "--entity-name", "t")),
    ("configs broker (dynamic set)", "configs", _bs("--describe", "--entity-type", "brokers", "--entity-name", "1")),
    ("configs broker default (dynamic set)", "configs", _bs("--describe", "--entity-type", "brokers",
                                                            "--entity-default")),
    ("configs broker --all (dynamic set)", "configs", _bs("--describe", "--all", "--entity-type", "brokers",
                                                          "--entity-name", "1")),
    ("configs broker default --all (dynamic set)", "configs", _bs("--describe", "--all", "--entity-type", "brokers",
                                                                  "--entity-default")),
    # client quotas (AlterClientQuotas, DescribeClientQuotas; a user's describe also asks for its SCRAM
    # credentials): set, refused, deleted, a key never set, the default user, user and client together, an IP
    ("configs --alter client quotas", "configs", _alter("clients", "--entity-name", "c1", "--add-config",
                                                        "producer_byte_rate=1024,consumer_byte_rate=2048")),
    ("configs --alter client quotas (fractional)", "configs", _alter("clients", "--entity-name", "c1", "--add-config",
                                                                     "producer_byte_rate=1.5")),
    ("configs --alter client quotas (unknown key)", "configs", _alter("ips", "--entity-name", "10.0.0.1",
                                                                      "--add-config", "producer_byte_rate=5")),
    ("configs --alter user default quotas", "configs", _alter("users", "--entity-default", "--add-config",
                                                              "request_percentage=50")),
    ("configs --alter user and client quotas", "configs", _alter("users", "--entity-name", "alice", "--entity-type",
                                                                 "clients", "--entity-name", "c1", "--add-config",
                                                                 "producer_byte_rate=10")),
    ("configs --alter ip quotas", "configs", _alter("ips", "--entity-name", "10.0.0.1", "--add-config",
                                                    "connection_creation_rate=10")),
    ("configs --alter client quotas --delete-config", "configs", _alter("clients", "--entity-name", "c1",
                                                                        "--delete-config", "consumer_byte_rate")),
    ("configs --alter client quotas --delete-config (not set)", "configs", _alter("clients", "--entity-name", "c1",
                                                                                  "--delete-config",
                                                                                  "consumer_byte_rate")),
    # SCRAM credentials (AlterUserScramCredentials): set, refused by the controller (too many iterations),
    # deleted, deleted again (refused); the describes below show what is left
    ("configs --alter scram", "configs", _alter("users", "--entity-name", "alice", "--add-config",
                                                "SCRAM-SHA-256=[iterations=8192,password=alice-secret]")),
    ("configs --alter scram (too many iterations)", "configs", _alter("users", "--entity-name", "bob", "--add-config",
                                                                      "SCRAM-SHA-512=[iterations=20000,password=b]")),
    ("configs --alter scram (bob)", "configs", _alter("users", "--entity-name", "bob", "--add-config",
                                                      "SCRAM-SHA-512=[password=bob-secret]")),
    ("configs --alter scram --delete-config", "configs", _alter("users", "--entity-name", "bob", "--delete-config",
                                                                "SCRAM-SHA-512")),
    ("configs --alter scram --delete-config (again)", "configs", _alter("users", "--entity-name", "bob",
                                                                        "--delete-config", "SCRAM-SHA-512")),
    ("configs clients", "configs", _bs("--describe", "--entity-type", "clients")),
    ("configs users", "configs", _bs("--describe", "--entity-type", "users")),
    ("configs user", "configs", _bs("--describe", "--entity-type", "users", "--entity-name", "alice")),
    ("configs user and client", "configs", _bs("--describe", "--entity-type", "users", "--entity-name", "alice",
                                               "--entity-type", "clients", "--entity-name", "c1")),
    ("configs ips", "configs", _bs("--describe", "--entity-type", "ips")),
    ("features describe", "features", _bs("describe")),
    # metadata.version levels: 7 is 3.3-IV3 (the oldest KRaft level), 19 is 3.7-IV4. On 3.7 the
    # upgrade to 19 is a no-op; on 4.x it is a downgrade by `upgrade`, refused. The downgrade to 7
    # and disabling metadata.version are refused on every release (no --unsafe).
    ("features upgrade --dry-run", "features", _bs("upgrade", "--feature", "metadata.version=19", "--dry-run")),
    ("features upgrade (controller)", "features", _bc("upgrade", "--feature", "metadata.version=19")),
    ("features downgrade --dry-run", "features", _bs("downgrade", "--feature", "metadata.version=7", "--dry-run")),
    ("features downgrade (controller)", "features", _bc("downgrade", "--feature", "metadata.version=7")),
    ("features disable --dry-run", "features", _bs("disable", "--feature", "metadata.version", "--dry-run")),
    ("features disable (controller)", "features", _bc("disable", "--feature", "metadata.version")),
    # group.version: unknown to 3.7, which accepts disabling it as a no-op; finalized at 1 on 4.x, where
    # disabling it succeeds and the describe after it shows level 0.
    ("features disable group.version (controller)", "features", _bc("disable", "--feature", "group.version")),
    ("features describe (controller)", "features", _bc("describe")),
    ("metadata-quorum --status", "quorum", _bs("describe", "--status")),
    ("metadata-quorum --replication", "quorum", _bs("describe", "--replication")),
    ("broker-api-versions", "api-versions", _bs()),
    ("cluster-id", "cluster", ["cluster-id", "--bootstrap-server", "{bs}"]),
    ("unregister unknown", "cluster", ["unregister", "--bootstrap-server", "{bs}", "--id", "42"]),
    ("acls --list", "acls", _bs("--list")),
    # CreateAcls and DeleteAcls: refused per entry, as by a node without an authorizer (Kafka's default)
    ("acls --add", "acls", _bs("--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "t")),
    ("acls --remove", "acls", _bs("--remove", "--force", "--allow-principal", "User:alice", "--operation", "Read",
                                  "--topic", "t")),
    # ListGroups and ListTransactions: a cluster that never served a group or a transaction lists none
    ("consumer-groups --list", "consumer-groups", _bs("--list")),
    ("consumer-groups --list --state", "consumer-groups", _bs("--list", "--state", "Stable")),
    # FindCoordinator creates __consumer_offsets (both nodes run with offsets.topic.replication.factor=1);
    # the group is one its coordinator does not know: described, its members and state, and deleted
    ("consumer-groups --describe", "consumer-groups", _bs("--describe", "--group", "g1")),
    ("consumer-groups --describe --members", "consumer-groups", _bs("--describe", "--group", "g1", "--members")),
    ("consumer-groups --describe --state", "consumer-groups", _bs("--describe", "--group", "g1", "--state")),
    ("consumer-groups --delete", "consumer-groups", _bs("--delete", "--group", "g1")),
    ("topics --describe __consumer_offsets", "topics", _bs("--describe", "--topic", "__consumer_offsets")),
    # ListOffsets of logs nobody produced to: latest, earliest, max timestamp, earliest local, a time,
    # a topic's partitions and all topics' (internal ones included), an unknown topic
    ("get-offsets --time -1", "get-offsets", _bs("--topic", "t", "--time", "-1")),
    ("get-offsets --time -2", "get-offsets", _bs("--topic", "t", "--time", "-2")),
    ("get-offsets --time -3", "get-offsets", _bs("--topic", "t", "--time", "-3")),
    ("get-offsets --time -4", "get-offsets", _bs("--topic", "t", "--time", "-4")),
    ("get-offsets --time (a timestamp)", "get-offsets", _bs("--topic", "t", "--time", "1764416400000")),
    ("get-offsets --topic-partitions", "get-offsets", _bs("--topic-partitions", "t:1,__consumer_offsets:3-5")),
    ("get-offsets (all topics)", "get-offsets", _bs()),
    ("get-offsets (unknown topic)", "get-offsets", _bs("--topic", "nope")),
    ("transactions list", "transactions", _bs("list")),
    # the producers of logs nobody produced to: none, and no hanging transaction (an unknown topic's: the
    # tool retries its leader lookup until it times out, on both sides)
    ("transactions describe-producers", "transactions", _bs("describe-producers", "--topic", "t", "--partition", "0")),
    ("transactions find-hanging", "transactions", _bs("find-hanging", "--broker-id", "1")),
    # client-metrics subscriptions (KIP-714): set, refused by the controller (interval, selector), a second one,
    # described (one, an unknown one, all), listed, one deleted
    ("client-metrics --alter", "client-metrics", _bs(
        "--alter", "--name", "sub", "--metrics", "org.apache.kafka.producer.,org.apache.kafka.consumer.",
        "--interval", "1000", "--match", "client_software_name=kafka-java,client_id=app-.*")),
    ("client-metrics --alter (interval out of range)", "client-metrics", _bs("--alter", "--name", "sub", "--interval",
                                                                             "50")),
    ("client-metrics --alter (unknown selector)", "client-metrics", _bs("--alter", "--name", "sub", "--match",
                                                                        "client_ip=10.0.0.1")),
    ("client-metrics --alter (bad regex)", "client-metrics", _bs("--alter", "--name", "sub", "--match",
                                                                 "client_id=(app")),
    ("client-metrics --alter (another)", "client-metrics", _bs("--alter", "--name", "other", "--metrics", "a.")),
    ("client-metrics --describe --name", "client-metrics", _bs("--describe", "--name", "sub")),
    ("client-metrics --describe --name (unknown)", "client-metrics", _bs("--describe", "--name", "nobody")),
    ("client-metrics --list", "client-metrics", _bs("--list")),
    ("client-metrics --describe", "client-metrics", _bs("--describe")),
    ("client-metrics --delete", "client-metrics", _bs("--delete", "--name", "other")),
    ("client-metrics --list (after --delete)", "client-metrics", _bs("--list")),
]
#: A group's configs (KIP-848): set, refused by the controller (a bound, an unknown name), described
#: (its dynamic configs, then --all; the tool of 4.1 on lists the groups with ListConfigResources
#: first), one deleted. Run on 4.0 to 4.2: from 4.3 a broker describes a group's configs with
#: broker synonyms, which kraftsim does not carry out.
GROUP_RUNS: list[tuple[str, str, list[str]]] = [
    ("configs --alter group", "configs", _alter("groups", "--entity-name", "app", "--add-config",
                                                "consumer.session.timeout.ms=50000,consumer.heartbeat.interval.ms=6000")),
    ("configs --alter group (out of bounds)", "configs", _alter("groups", "--entity-name", "app", "--add-config",
                                                                "consumer.session.timeout.ms=1")),
    ("configs --alter group (unknown name)", "configs", _alter("groups", "--entity-name", "app", "--add-config",
                                                               "color=red")),
    ("configs --describe group", "configs", _bs("--describe", "--entity-type", "groups", "--entity-name", "app")),
    ("configs --describe --all group", "configs", _bs("--describe", "--all", "--entity-type", "groups",
                                                      "--entity-name", "app")),
    ("configs --alter group --delete-config", "configs", _alter("groups", "--entity-name", "app", "--delete-config",
                                                                "consumer.heartbeat.interval.ms")),
    ("configs --describe group (after --delete-config)", "configs", _bs("--describe", "--entity-type", "groups",
                                                                        "--entity-name", "app")),
]
GROUP_RUN_LINES = ("4.0", "4.1", "4.2")
ToolOutputs = dict[str, tuple[int, str, list[str]]]
#: What one side answered: its tools' outputs and its raw answers.
Sides = tuple[ToolOutputs, dict[str, object]]


#: Columns of `describe --replication` that legitimately differ: DirectoryId is each node's own
#: random log directory id, LogEndOffset counts the time-driven records of each metadata log,
#: and the two timestamps are each cluster's clock. NodeId, Lag and Status are compared.
REPLICATION_MASKED = {"DirectoryId", "LogEndOffset", "LastFetchTimestamp", "LastCaughtUpTimestamp"}


def _mask_replication(text: str) -> str:
    """The replication table with its padding normalised and REPLICATION_MASKED columns masked."""
    lines, header = text.splitlines(keepends=True), None
    for i, line in enumerate(lines):
        cells = line.split()
        if "LogEndOffset" in cells and "Status" in cells:
            header = cells
        elif header is not None and len(cells) >= len(header):
            cells = [f"<{col}>" if col in REPLICATION_MASKED else cell for col, cell in zip(header, cells)]
        else:
            continue
        lines[i] = " ".join(cells) + "\n"
    return "".join(lines)


#: Configs the live node's server.properties sets for the harness's sake (kraftsim.conformance.node)
#: that a served node cannot take (it takes only storage.server_config.NODE_CONFIGS): in a node's
#: every config (`kafka-configs --describe --all`) their lines are masked whole on both sides,
#: their place in the listing still compared. The live node's log directory (log.dirs), like its
#: ports, is its own: masked wherever it is named.
ALL_CONFIGS_MASKED = ("transaction.state.log.replication.factor", "transaction.state.log.min.isr",
                      "group.initial.rebalance.delay.ms", "num.partitions", "auto.create.topics.enable")
_MASKED_CONFIG_LINE = re.compile(r"^  (" + "|".join(re.escape(n) for n in ALL_CONFIGS_MASKED) + r")=.*$", re.M)


def _mask_all_configs(text: str) -> str:
    """A node's every config with ALL_CONFIGS_MASKED's lines and log.dirs' values masked."""
    text = _MASKED_CONFIG_LINE.sub(r"  \1=<set for the live node's harness>", text)
    return re.sub(r"(log\.dirs=)[^ ,}\n]+", r"\1<DIR>", text)


def mask(text: str, cluster_id: str) -> str:
    text = _mask_replication(text)
    text = _mask_all_configs(text)
    text = text.replace(cluster_id, "<CLUSTER-ID>") if cluster_id else text
    text = re.sub(r"127\.0\.0\.1:\d+", "<HOST:PORT>", text)
    text = re.sub(r"TopicId: \S+", "TopicId: <TOPIC-ID>", text)
    text = re.sub(r"Epoch: \d+", "Epoch: <OFFSET>", text)
    return re.sub(r"HighWatermark:(\s+)\d+", r"HighWatermark:\1<OFFSET>", text)


def _exception_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines()
            if line.strip() and not line.startswith("\tat ") and not line.startswith("[") and "... " not in line]


def run_tools(dist: KafkaDist, bs: str, bc: str,
              runs: list[tuple[str, str, list[str]]] | None = None) -> ToolOutputs:
    """Every run of `runs` (by default RUNS of the tools the release has, and GROUP_RUNS on
    their lines) against `bs` and `bc`: (exit code, stdout, stderr's exception lines)."""
    classes = main_classes(dist.release.version)
    out = {}
    if runs is None:
        runs = [r for r in RUNS if r[1] in classes] + (GROUP_RUNS if dist.release.line in GROUP_RUN_LINES else [])
    for name, tool, args in runs:
        cmd = [str(dist.java.path), "-Xmx128m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
               *log_config_options(dist), "-cp", dist.classpath, classes[tool], *(a.format(bs=bs, bc=bc) for a in args)]
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)
        if "Could not find or load main class" in run.stderr:  # (both sides would agree on nothing)
            raise RuntimeError(f"{classes[tool]} is not in Kafka {dist.release.version}'s jars")
        out[name] = (run.returncode, run.stdout, _exception_lines(run.stderr))
    return out


def _undefined_name_set(bc: str) -> dict[str, object]:
    """custom.x=1 set at the cluster default through the controller `bc`: its answer."""
    host, port = bc.rsplit(":", 1)
    with WireClient(host, int(port), timeout=30) as c:
        return _without_throttle(c.request("IncrementalAlterConfigs", 0, {"Resources": [{
            "ResourceType": 4, "ResourceName": "", "Configs": [{"Name": "custom.x", "ConfigOperation": 0, "Value": "1"}]}],
            "ValidateOnly": False}))


def raw_answers(bs: str, bc: str | None, settle: Callable[[], None]) -> dict[str, object]:
    """The answers no tool shows whole, from the broker `bs` (and the controller `bc`, None
    where controllers take no admin requests: before 3.7, KIP-919): UnregisterBroker's text,
    Metadata's auto-creation, the controller's size limits, illegal topic names, the
    describes of configs Kafka refuses and the node's every config."""
    host, port = bs.rsplit(":", 1)
    with WireClient(host, int(port), timeout=30) as c:
        unregister = c.request("UnregisterBroker", 0, {"BrokerId": 42})

        def topic(name: str, version: int = 12, allow: bool = True) -> tuple[int, int]:
            t = c.request("Metadata", version, {"Topics": [{"Name": name}], "AllowAutoTopicCreation": allow})["Topics"][0]
            return t["ErrorCode"], len(t["Partitions"])

        first = topic("auto1")
        settle()
        sequence = [first, topic("auto1"), topic("auto2", allow=False), topic("auto2", allow=False),
                    topic("bad name!"), topic("auto3", version=4)]
        settle()
        sequence.append(topic("auto3", version=4))
        sizes = {name: _size_answers(c, api, body) for name, api, body in SIZE_PROBES}
        named = c.request("CreateTopics", 5, {"Topics": [{"Name": n, "NumPartitions": 1, "ReplicationFactor": 1}
                                                         for n in ILLEGAL_TOPIC_NAMES],
                                              "timeoutMs": 30000, "validateOnly": True})["Topics"]
        described = c.request("DescribeConfigs", 4, {"Resources": [{"ResourceType": t, "ResourceName": n,
                                                                    "ConfigurationKeys": None}
                                                                   for t, n in DESCRIBE_REFUSALS]})["Results"]
        offered = _offered(c)  # (asked once; what a release does not take, it is not asked: 3.x lacks the newer APIs)
        answered: dict[str, object] = {f"{api} v{version} ({i})": _without_throttle(c.request(api, version, body))
                                       for i, (api, version, body) in enumerate(WHOLE_ANSWERS, 1)
                                       if _takes(offered, api, version)}
        answered.update(_list_offsets_every_version(c, offered))
        answered.update(_config_resources(c, offered))
        answered.update(_authorized_operations(c, offered))
        # a name Kafka does not define, at the cluster default, through the controller (through the broker, its
        # check of the log.cleanup.policy it holds is not modelled on 4.4): the node describes it as sensitive,
        # and lists it before the definitions from 4.2
        if bc is not None:
            answered["IncrementalAlterConfigs v0 of an undefined broker config name"] = _undefined_name_set(bc)
            settle()
        answered["DescribeConfigs v4 of broker 1 (every config, in order)"] = _node_description(c)
        answered["DescribeConfigs v4 of the cluster default (documented)"] = c.request("DescribeConfigs", 4, {
            "Resources": [{"ResourceType": 4, "ResourceName": "", "ConfigurationKeys": None}],
            "IncludeSynonyms": True, "IncludeDocumentation": True})["Results"]
        answered.update(_deleted_records(c, settle))
        answered.update(_named_topic_orders(c, settle))
        answered.update(_partition_orders(c, settle))
    return {"unregister": (unregister["ErrorCode"], unregister["ErrorMessage"]), "auto-create": sequence, **sizes,
            **answered,
            "illegal topic names": [(t["Name"], t["ErrorCode"], t["ErrorMessage"]) for t in named],
            "describe-configs refusals": [(r["ResourceType"], r["ResourceName"], r["ErrorCode"], r["ErrorMessage"],
                                           r["Configs"]) for r in described]}


#: DeleteRecords of empty logs (after every other answer: it creates topic "d", whose own
#: cleanup.policy is delete, while "t" inherits broker 1's compact, and a topic named
#: __share_group_state, internal from 3.9 only): offsets at, past and below the high watermark
#: (-1 stands for it), internal topics, a partition asked twice, unknown partitions and topics;
#: then requests of unknown partitions alone (up to four and more: Kafka answers them from an
#: immutable Map).
DELETE_RECORDS: tuple[list[tuple[str, list[tuple[int, int]]]], ...] = (
    [("d", [(0, 0), (1, -1), (2, 5)]), ("t", [(0, 0)]), ("nope", [(0, 0)]), ("__consumer_offsets", [(0, 0)]),
     ("d", [(7, 0), (1, -2)]), ("__share_group_state", [(0, 0)])],
    [("nope", [(1, 0), (0, 0)]), ("gone", [(3, 0)])],
    [("nope", [(i, 0) for i in range(6)]), ("gone", [(3, 0), (1, 0)])],
)


def _deleted_records(c: WireClient, settle: Callable[[], None]) -> dict[str, object]:
    created = c.request("CreateTopics", 5, {"Topics": [
        {"Name": "d", "NumPartitions": 3, "ReplicationFactor": 1,
         "Configs": [{"Name": "cleanup.policy", "Value": "delete"}]},
        {"Name": "__share_group_state", "NumPartitions": 1, "ReplicationFactor": 1}],
        "timeoutMs": 30000, "validateOnly": False})["Topics"]
    settle()
    described = c.request("Metadata", 12, {"Topics": [{"Name": "__share_group_state"}],
                                           "AllowAutoTopicCreation": False})["Topics"]
    answers: dict[str, object] = {"CreateTopics of d and __share_group_state": [t["ErrorCode"] for t in created],
                                  "Metadata v12 of __share_group_state (error, internal)":
                                      [(t["ErrorCode"], t["IsInternal"]) for t in described]}
    for i, asked in enumerate(DELETE_RECORDS, 1):
        body = {"Topics": [{"Name": n, "Partitions": [{"PartitionIndex": p, "Offset": o} for p, o in parts]}
                           for n, parts in asked], "TimeoutMs": 30000}
        for version in (0, 2):
            answers[f"DeleteRecords v{version} ({i})"] = _without_throttle(c.request("DeleteRecords", version, body))
    return answers


#: ListConfigResources v1's type lists (4.1 on, KIP-1142): every type (none named), groups with
#: brokers' loggers and brokers, topics alone, and a type no broker lists (UNSUPPORTED_VERSION).
CONFIG_RESOURCE_TYPES: tuple[list[int], ...] = ([], [32, 8, 4], [2], [1])


#: A node's ApiVersions: API key -> (min, max version).
Offered = dict[int, tuple[int, int]]


def _offered(c: WireClient) -> Offered:
    """The node's ApiVersions: API key -> (min, max version)."""
    keys = c.request("ApiVersions", 3, {"ClientSoftwareName": "kraftsim-conformance",
                                        "ClientSoftwareVersion": "1"})["ApiKeys"]
    return {k["ApiKey"]: (k["MinVersion"], k["MaxVersion"]) for k in keys}


def _takes(offered: Offered, api: str, version: int) -> bool:
    """Whether a node offering `offered` takes `api` at `version` (a live node closes the
    connection on a request it does not)."""
    lo, hi = offered.get(API_KEYS[api], (0, -1))
    return lo <= version <= hi


def _config_resources(c: WireClient, offered: Offered) -> dict[str, object]:
    """ListConfigResources v1 of each of CONFIG_RESOURCE_TYPES, where the node takes v1."""
    if not _takes(offered, "ListConfigResources", 1):
        return {}
    return {f"ListConfigResources v1 of types {types}":
            _without_throttle(c.request("ListConfigResources", 1, {"ResourceTypes": types}))
            for types in CONFIG_RESOURCE_TYPES}


#: Metadata v12 requests of names (some known: t, o1, o2, o3) whose answers' order is compared:
#: up to four names (answered in the order asked), more (by the release's hash orders), repeated
#: and illegal names; then (True) requests that create the legal unknown names.
NAMED_TOPIC_ORDERS: tuple[tuple[bool, list[str]], ...] = (
    (False, ["o1", "nope"]), (False, ["nope", "o1"]), (False, ["o2", "o1"]), (False, ["o1", "o1", "nope", "nope"]),
    (False, ["o2", "t", "zz", "nope", "b", "c"]), (False, ["q", "r", "s", "u", "v"]),
    (False, [*(f"x{i}" for i in range(1, 10)), "o1", "o3", "t", "bad name!"]),
    (True, ["o1", "bad name!", "n1", "n2"]), (True, [*(f"n{i}" for i in range(3, 9)), "also bad!", "o2"]),
)
#: Topic ids no topic has, asked for (with known topics' ids) in Metadata v12.
UNKNOWN_TOPIC_IDS = tuple(Uuid.from_longs(0x1234_5678_9ABC_DEF0 * i % (1 << 63), 0x0FED_CBA9_8765_4321 * i % (1 << 63))
                          for i in range(1, 7))


def _named_topic_orders(c: WireClient, settle: Callable[[], None]) -> dict[str, object]:
    """The order of the topics of each Metadata v12 request of NAMED_TOPIC_ORDERS, of requests
    by id (unknown ids alone, and a few mixed with the ids of known topics, which differ between
    the two sides and so are compared by name), and of every topic."""
    c.request("CreateTopics", 5, {"Topics": [{"Name": n, "NumPartitions": 1, "ReplicationFactor": 1}
                                             for n in ("o1", "o2", "o3")], "timeoutMs": 30000, "validateOnly": False})
    settle()

    def order(topics: list[dict[str, object]]) -> list[tuple[object, object]]:
        return [(t["Name"] if t["Name"] is not None else str(t["TopicId"]), t["ErrorCode"]) for t in topics]

    out: dict[str, object] = {}
    for create, names in NAMED_TOPIC_ORDERS:
        answer = c.request("Metadata", 12, {"Topics": [{"Name": n} for n in names], "AllowAutoTopicCreation": create})
        out[f"Metadata v12 of {names} (auto-creation {create}): order"] = order(answer["Topics"])
    settle()
    ids = {t["Name"]: t["TopicId"] for t in c.request("Metadata", 12, {
        "Topics": [{"Name": n} for n in ("t", "o1")], "AllowAutoTopicCreation": False})["Topics"]}
    for asked in (list(UNKNOWN_TOPIC_IDS), [ids["o1"], UNKNOWN_TOPIC_IDS[0], ids["t"]],
                  [UNKNOWN_TOPIC_IDS[1], ids["t"], ids["o1"], UNKNOWN_TOPIC_IDS[2]]):
        answer = c.request("Metadata", 12, {"Topics": [{"TopicId": i, "Name": None} for i in asked],
                                            "AllowAutoTopicCreation": False})
        shown = [{v: k for k, v in ids.items()}.get(i, str(i)) for i in asked]
        out[f"Metadata v12 of ids {shown}: order"] = order(answer["Topics"])
    out["Metadata v12 of every topic: order"] = order(c.request("Metadata", 12, {
        "Topics": None, "AllowAutoTopicCreation": False})["Topics"])
    return out


#: Topics of these many partitions whose Metadata partition order `_partition_orders` takes.
PARTITION_ORDER_COUNTS = (5, 13, 40)


def _partition_orders(c: WireClient, settle: Callable[[], None]) -> dict[str, object]:
    """The order of the partitions of topics of PARTITION_ORDER_COUNTS partitions in Metadata
    v0, v1 and v12 (by their hash codes up to 4.2, by index from 4.3)."""
    names = [f"parts{n}" for n in PARTITION_ORDER_COUNTS]
    c.request("CreateTopics", 5, {"Topics": [{"Name": name, "NumPartitions": n, "ReplicationFactor": 1}
                                             for name, n in zip(names, PARTITION_ORDER_COUNTS)],
                                  "timeoutMs": 30000, "validateOnly": False})
    settle()
    out: dict[str, object] = {}
    for version in (0, 1, 12):
        body: dict[str, object] = {"Topics": [{"Name": n} for n in names]}
        if version >= 4:
            body["AllowAutoTopicCreation"] = False
        answer = c.request("Metadata", version, body)
        out[f"Metadata v{version} partition order"] = {
            t["Name"]: [p["PartitionIndex"] for p in t["Partitions"]] for t in answer["Topics"]}
    return out


def _authorized_operations(c: WireClient, offered: Offered) -> dict[str, object]:
    """The AuthorizedOperations fields (KIP-430) of topic t and of an unknown topic, and of the
    cluster, asked for and not, through Metadata (v8, v10, v12), DescribeCluster and, where the
    node takes it, DescribeTopicPartitions. Topics by name (their order is `_named_topic_orders`')."""
    out: dict[str, object] = {}
    for version, cluster, topics in ((8, True, True), (8, False, False), (10, True, False), (12, False, True)):
        body: dict[str, object] = {"Topics": [{"Name": "t"}, {"Name": "nope"}], "AllowAutoTopicCreation": False,
                                   "IncludeTopicAuthorizedOperations": topics}
        if version <= 10:
            body["IncludeClusterAuthorizedOperations"] = cluster
        answer = c.request("Metadata", version, body)
        out[f"Metadata v{version} authorized operations (cluster {cluster}, topics {topics})"] = (
            answer.get("ClusterAuthorizedOperations"),
            sorted((t["Name"], t["ErrorCode"], t["TopicAuthorizedOperations"]) for t in answer["Topics"]))
    for asked in (True, False):
        out[f"DescribeCluster v0 authorized operations ({asked})"] = c.request(
            "DescribeCluster", 0, {"IncludeClusterAuthorizedOperations": asked})["ClusterAuthorizedOperations"]
    if _takes(offered, "DescribeTopicPartitions", 0):
        answer = c.request("DescribeTopicPartitions", 0, {"Topics": [{"Name": "t"}, {"Name": "nope"}],
                                                          "ResponsePartitionLimit": 10, "Cursor": None})
        out["DescribeTopicPartitions v0 authorized operations"] = [
            (t["Name"], t["ErrorCode"], t["TopicAuthorizedOperations"]) for t in answer["Topics"]]
    return out


def _masked_value(name: str, value: object) -> object:
    """Config `name`'s described value with the node's ports and log directory masked (as `mask` does)."""
    if not isinstance(value, str):
        return value
    return "<DIR>" if name == "log.dirs" else re.sub(r"127\.0\.0\.1:\d+", "<HOST:PORT>", value)


def _node_description(c: WireClient) -> list[object]:
    """The node's every config as DescribeConfigs answers it with synonyms and documentation, in the node's order
    (which kafka-configs sorts away): ALL_CONFIGS_MASKED's entries by name only, log.dirs'
    values and the ports masked."""
    body = {"Resources": [{"ResourceType": 4, "ResourceName": "1", "ConfigurationKeys": None}],
            "IncludeSynonyms": True, "IncludeDocumentation": True}
    out: list[object] = []
    for e in c.request("DescribeConfigs", 4, body)["Results"][0]["Configs"]:
        if e["Name"] in ALL_CONFIGS_MASKED:
            out.append(e["Name"])
            continue
        out.append({**e, "Value": _masked_value(e["Name"], e["Value"]),
                    "Synonyms": [{**y, "Value": _masked_value(y["Name"], y["Value"])} for y in e["Synonyms"]]})
    return out


def _offsets(*topics: tuple[str, list[tuple[int, int, int]]]) -> list[dict[str, object]]:
    """ListOffsets' topics: (name, [(partition, timestamp, current leader epoch), ...])."""
    return [{"Name": name, "Partitions": [{"PartitionIndex": p, "Timestamp": ts, "CurrentLeaderEpoch": epoch}
                                         for p, ts, epoch in parts]} for name, parts in topics]


#: ListOffsets whose whole answers are compared (besides `_list_offsets_every_version`), at versions every
#: release from 3.7 serves: every special
#: timestamp (-5 and -7 are refused from 3.9 on), a time, known and unknown leader epochs, an unknown topic
#: and partition, in the order Kafka answers (4.0 on: by hash); a repeated partition and topic, from a
#: debugging tool (a follower may answer) reading committed offsets; an isolation level Kafka does not know;
#: no topic; a topic without partitions.
LIST_OFFSETS: list[tuple[str, int, dict[str, object]]] = [
    ("ListOffsets", 8, {"ReplicaId": -1, "IsolationLevel": 0, "Topics": _offsets(
        ("t", [(0, -1, 0), (1, -2, -1), (2, -3, 0)]),
        ("__consumer_offsets", [(3, -4, -1), (7, -5, -1), (12, 1764416400000, -1), (30, -7, -1), (31, 0, 5)]),
        ("nope", [(0, -1, -1)]), ("auto1", [(0, -2, -1), (1, -1, -1)]), ("t", [(9, -1, -1)]))}),
    ("ListOffsets", 5, {"ReplicaId": -2, "IsolationLevel": 1, "Topics": _offsets(
        ("t", [(0, -1, -1), (0, -2, -1), (1, -1, -1)]), ("auto1", [(0, -1, -1)]), ("t", [(2, -2, -1)]))}),
    ("ListOffsets", 4, {"ReplicaId": -1, "IsolationLevel": 2, "Topics": _offsets(
        ("t", [(0, -1, -1), (1, -2, -1)]), ("nope", [(0, -1, -1)]))}),
    ("ListOffsets", 1, {"ReplicaId": -1, "Topics": _offsets(("t", [(2, -1, -1), (0, -2, -1)]))}),
    ("ListOffsets", 7, {"ReplicaId": -1, "IsolationLevel": 0, "Topics": []}),
    ("ListOffsets", 6, {"ReplicaId": -1, "IsolationLevel": 0, "Topics": _offsets(("t", []), ("auto1", [(0, -3, -1)]))}),
]


def _list_offsets_every_version(c: WireClient, offered: Offered) -> dict[str, object]:
    """ListOffsets at every version the node advertises (v0 on 3.x), each asking for every special
    timestamp there is and two times: what a version may ask for changed in 3.9 and 4.2."""
    lo, hi = offered[API_KEYS["ListOffsets"]]
    answers: dict[str, object] = {}
    for version in range(lo, hi + 1):
        if version == 0:  # (the old style: at most MaxNumOffsets offsets before a time; none of a time here)
            parts = [{"PartitionIndex": i, "Timestamp": ts, "MaxNumOffsets": most}
                     for i, (ts, most) in enumerate(((-1, 1), (-2, 5), (-3, 1)))]
            body = {"ReplicaId": -1, "Topics": [{"Name": "t", "Partitions": parts},
                                                {"Name": "nope", "Partitions": parts[:1]}]}
        else:
            body = {"ReplicaId": -1, "IsolationLevel": 0, "TimeoutMs": 1000, "Topics": _offsets(
                ("t", [(0, -1, -1), (1, -2, -1), (2, -3, -1)]),
                ("__consumer_offsets", [(i, ts, -1) for i, ts in enumerate((-4, -5, -6, -7, 0, 1764416400000))]))}
        answers[f"ListOffsets v{version} (every timestamp)"] = _without_throttle(c.request("ListOffsets", version, body))
    return answers


#: Requests whose whole answers are compared (ThrottleTimeMs aside), after the tool runs: every config of
#: topic t with synonyms, types and documentation, and again with an empty list of keys (all of them); its
#: retention.ms and the cluster default's dynamic configs with synonyms and types, and three of node 1's (one
#: at a time: Kafka lists a node's in the order of all its configs); a validate-only topic's configs as the
#: controller answers them (CreateTopics v5 on); client c1's quotas, alice's and bob's SCRAM
#: credentials, an empty validate-only feature update (each field's default where Kafka sets none), two
#: groups no coordinator knows described and their offsets fetched (all, and two partitions). (Not
#: every quota at once: kraftsim lists entities in another order.)
WHOLE_ANSWERS: list[tuple[str, int, dict[str, object]]] = [
    ("DescribeConfigs", 4, {"Resources": [{"ResourceType": 2, "ResourceName": "t", "ConfigurationKeys": None}],
                            "IncludeSynonyms": True, "IncludeDocumentation": True}),
    ("DescribeConfigs", 3, {"Resources": [{"ResourceType": 2, "ResourceName": "t", "ConfigurationKeys": []}],
                            "IncludeSynonyms": False}),
    ("DescribeConfigs", 4, {"Resources": [{"ResourceType": 2, "ResourceName": "t", "ConfigurationKeys": ["retention.ms"]},
                                          {"ResourceType": 4, "ResourceName": "", "ConfigurationKeys": None}],
                            "IncludeSynonyms": True}),
    *(("DescribeConfigs", 4, {"Resources": [{"ResourceType": 4, "ResourceName": "1", "ConfigurationKeys": [key]}],
                              "IncludeSynonyms": True})
      for key in ("log.retention.bytes", "log.cleanup.policy", "leader.replication.throttled.rate")),
    ("CreateTopics", 5, {"Topics": [{"Name": "v", "NumPartitions": 1, "ReplicationFactor": 1,
                                     "Configs": [{"Name": "retention.ms", "Value": "01000"},
                                                 {"Name": "cleanup.policy", "Value": "compact, delete"}]}],
                         "timeoutMs": 30000, "validateOnly": True}),
    ("DescribeClientQuotas", 1, {"Components": [{"EntityType": "client-id", "MatchType": 0, "Match": "c1"}],
                                 "Strict": True}),
    ("DescribeUserScramCredentials", 0, {"Users": [{"Name": "alice"}, {"Name": "bob"}]}),
    ("UpdateFeatures", 1, {"FeatureUpdates": [], "ValidateOnly": True}),
    ("DescribeGroups", 5, {"Groups": ["g1", "g2"]}),
    ("DescribeGroups", 5, {"Groups": ["g1"], "IncludeAuthorizedOperations": True}),
    # the producers of known, unknown and illegal topics' partitions, of one index the topic lacks
    ("DescribeProducers", 0, {"Topics": [{"Name": "t", "PartitionIndexes": [0, 2, 9]},
                                         {"Name": "nope", "PartitionIndexes": [0, 1]},
                                         {"Name": "bad name!", "PartitionIndexes": [0]},
                                         {"Name": "t", "PartitionIndexes": []}]}),
    ("OffsetFetch", 8, {"Groups": [{"GroupId": "g1", "Topics": None},
                                   {"GroupId": "g2", "Topics": [{"Name": "t", "PartitionIndexes": [0, 1]}]}]}),
    *LIST_OFFSETS,
    # a client-metrics subscription's whole description (4.1 on: every config, with types, synonyms and
    # documentation), one no change named, one config asked for; the subscriptions listed; validate-only
    # changes each release reads differently (a number it cannot parse, a trailing comma in a list)
    ("DescribeConfigs", 4, {"Resources": [{"ResourceType": 16, "ResourceName": "sub", "ConfigurationKeys": None},
                                          {"ResourceType": 16, "ResourceName": "nobody", "ConfigurationKeys": None}],
                            "IncludeSynonyms": True, "IncludeDocumentation": True}),
    ("DescribeConfigs", 4, {"Resources": [{"ResourceType": 16, "ResourceName": "sub", "ConfigurationKeys": ["match"]}],
                            "IncludeSynonyms": False}),
    ("ListConfigResources", 0, {}),
    *(("IncrementalAlterConfigs", 1, {"Resources": [{"ResourceType": 16, "ResourceName": "sub", "Configs": [
        {"Name": name, "ConfigOperation": 0, "Value": value}]}], "ValidateOnly": True})
      for name, value in (("interval.ms", "soon"), ("interval.ms", " 500"), ("match", "client_id=a,"),
                          ("metrics", "a,"), ("color", "red"))),
    # the legacy AlterConfigs of a subscription: its whole set (validate-only: nothing changes), a value refused
    *(("AlterConfigs", 1, {"Resources": [{"ResourceType": 16, "ResourceName": "sub", "Configs": [
        {"Name": name, "Value": value}]}], "ValidateOnly": True})
      for name, value in (("metrics", "x."), ("interval.ms", "5"))),
]


def _without_throttle(answer: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in answer.items() if k != "ThrottleTimeMs"}


#: Topic names Kafka's Topic.validate refuses (CreateTopics answers each with its text).
ILLEGAL_TOPIC_NAMES = ("", ".", "..", "x" * 250, "a b")
#: DescribeConfigs resources (type, name) that node 1 answers without configs: a topic that does not exist,
#: an illegal topic name, another broker, a broker name that is no number, a broker's loggers without a name
#: and of another broker, a client-metrics subscription without a name.
DESCRIBE_REFUSALS = ((2, "nope"), (2, "a b"), (4, "7"), (4, "x"), (8, ""), (8, "7"), (16, ""))


#: Validate-only requests at the controller's size limits (policy user_op_limits), answered by
#: each release as its own: 2 x 5,000 partitions (10,002 records), 6,000 + 4,001 partitions, and
#: topic t grown by 10,002 partitions at once.
SIZE_PROBES: list[tuple[str, str, dict[str, object]]] = [
    ("create-topics 10,002 records", "CreateTopics",
     {"Topics": [{"Name": n, "NumPartitions": 5000, "ReplicationFactor": 1} for n in ("big-a", "big-b")],
      "timeoutMs": 30000, "validateOnly": True}),
    ("create-topics 10,001 partitions", "CreateTopics",
     {"Topics": [{"Name": n, "NumPartitions": p, "ReplicationFactor": 1} for n, p in (("big-a", 6000), ("big-b", 4001))],
      "timeoutMs": 30000, "validateOnly": True}),
    ("create-partitions 10,002 more", "CreatePartitions",
     {"Topics": [{"Name": "t", "Count": 10005, "Assignments": None}], "TimeoutMs": 30000, "ValidateOnly": True}),
]


def _size_answers(c: WireClient, api: str, body: dict[str, object]) -> list[tuple[object, ...]]:
    """(name, error code, message) per topic of a SIZE_PROBES request (version 5 / 2: on every release)."""
    answer = c.request(api, 5 if api == "CreateTopics" else 2, body)
    return [(t["Name"], t["ErrorCode"], t["ErrorMessage"]) for t in answer["Topics" if api == "CreateTopics" else "Results"]]


def _cluster_id(tools: ToolOutputs) -> str:
    return next((ln[len("Cluster ID: "):] for ln in tools["cluster-id"][1].splitlines()
                 if ln.startswith("Cluster ID: ")), "")


def live_side(dist: KafkaDist, workdir: Path) -> Sides:
    with LiveNode(dist, workdir, heap=HEAP, extra_config="auto.create.topics.enable=true\n") as node:
        node.format()
        node.start()
        tools = run_tools(dist, node.bootstrap, f"127.0.0.1:{node.controller_port}")
        raw = raw_answers(node.bootstrap, _admin_controller(dist, f"127.0.0.1:{node.controller_port}"),
                          lambda: time.sleep(2))  # the broker learns the topic from the controller
    return tools, raw


def served_side(dist: KafkaDist) -> Sides:
    from kraftsim.wire import serve

    with serve(combined=1, release=dist.release.line,  # the line's newest release kraftsim knows
               configs={"offsets.topic.replication.factor": 1}) as k:  # (as the live node runs)
        tools = run_tools(dist, k.bootstrap_servers, k.bootstrap_controllers)
        return tools, raw_answers(k.bootstrap_servers, _admin_controller(dist, k.bootstrap_controllers), lambda: None)


def _admin_controller(dist: KafkaDist, bc: str) -> str | None:
    """`bc` where the release's controllers take admin requests (3.7 on, KIP-919), else None."""
    return bc if dist.release.line_tuple >= (3, 7) else None


def _api_lines(stdout: str) -> dict[str, str]:
    return {m.group(1): line.strip().rstrip(",") for line in stdout.splitlines()
            if (m := re.match(r"\s*(\w+)\(\d+\):", line))}


def differences(live: Sides, served: Sides) -> list[str]:
    """One line per difference: `run: what`, kafka-broker-api-versions per API."""
    (live_tools, live_raw), (served_tools, served_raw) = live, served
    live_id, served_id = _cluster_id(live_tools), _cluster_id(served_tools)
    diffs = []
    for name in live_tools:
        code_l, out_l, err_l = live_tools[name]
        code_s, out_s, err_s = served_tools[name]
        out_l, out_s = mask(out_l, live_id), mask(out_s, served_id)
        err_l, err_s = [mask(x, live_id) for x in err_l], [mask(x, served_id) for x in err_s]
        if name == "broker-api-versions":
            apis_l, apis_s = _api_lines(out_l), _api_lines(out_s)
            diffs += [f"{name}: {api}: Kafka {apis_l.get(api)!r}, kraftsim {apis_s.get(api)!r}"
                      for api in sorted(apis_l.keys() | apis_s.keys()) if apis_l.get(api) != apis_s.get(api)]
            out_l = "\n".join(x for x in out_l.splitlines() if not _api_lines(x))
            out_s = "\n".join(x for x in out_s.splitlines() if not _api_lines(x))
        if (code_l, out_l, err_l) != (code_s, out_s, err_s):
            diffs.append(f"{name}: Kafka (exit {code_l}) {out_l!r} {err_l}; kraftsim (exit {code_s}) {out_s!r} {err_s}")
    for key in sorted(live_raw.keys() | served_raw.keys()):
        if live_raw.get(key) != served_raw.get(key):
            diffs.append(f"raw {key}: Kafka {live_raw.get(key)!r}, kraftsim {served_raw.get(key)!r}")
    return diffs


def live_then_served(live: Callable[[], Sides], served: Callable[[], Sides],
                     differ: Callable[[Sides, Sides], list[str]]) -> list[str]:
    """The differences between the live side and the served one, run one after the other (one
    JVM cluster at a time); a live node that did not run is the one difference."""
    try:
        live_answers = live()
    except KafkaUnavailable as e:
        return [f"the live node did not run: {e}"]
    return differ(live_answers, served())


def compare(dist: KafkaDist, workdir: Path) -> list[str]:
    """Both sides of one release."""
    return live_then_served(lambda: live_side(dist, workdir), lambda: served_side(dist), differences)


def cases(ctx: ReleaseContext) -> Iterable[Case]:
    if ctx.missing_line():
        return []
    return [Case("serve-tools/combined", (), lambda runs: compare(ctx.dist, ctx.scratch("serve-tools")))]


__all__ = ["ALL_CONFIGS_MASKED", "GROUP_RUNS", "REPLICATION_MASKED", "RUNS", "cases", "compare", "differences",
           "live_side", "main_classes", "mask", "served_side"]
