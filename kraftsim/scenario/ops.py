"""Every op of the scenario language (contract 4) as a typed value: one msgspec struct per op,
tagged by its `op` key, so that a step is an `Op` wherever it comes from (a scenario file,
a state machine's rule, a sweep's fault schedule) and `apply.apply` carries it out.

Decoding stays one step at a time (`validate.py`): a step's table is converted to the struct
its `op` names, so an error names the file, the step number and the key. `OPS` lists the
ops in the order error messages and the reference name them.
"""

from __future__ import annotations

from typing import Literal, cast

import msgspec

from kraftsim.scenario.language import Expect, NodeSel


class StepBase(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, tag_field="op"):
    """Keys every step takes. `note` (a sentence shown in reports) and `expect` are kraftsim's additions.
    `op` is the tag: each op's struct is named by it."""

    expect_error: str | None = None
    note: str | None = None
    #: kraftsim's addition: `[expect]` keys checked right after this step ([step.expect]).
    expect: Expect | None = None

    @property
    def op(self) -> str:
        """The op's name as a scenario file writes it."""
        return cast(str, self.__struct_config__.tag)


class CreateTopics(StepBase, kw_only=True, forbid_unknown_fields=True, tag="create-topics"):
    count: int = 1
    partitions: int = 1
    replication_factor: int | None = None  # default: min(3, brokers)
    #: kraftsim's addition: these names instead of `count` topics `topic-<i>` (a recorded session's topics).
    names: list[str] | None = None
    #: kraftsim's addition: each topic's own configs (kafka-topics --config NAME=VALUE; a recorded
    #: session's, such as those of the `__consumer_offsets` a served broker creates).
    configs: dict[str, str] | None = None
    #: kraftsim's addition: each topic's replicas by partition (kafka-topics --create
    #: --replica-assignment; a recorded session's): its partitions and replication factor are
    #: the assignment's (`partitions` and `replication_factor` are not used).
    assignments: list[list[int]] | None = None

    @property
    def topic_count(self) -> int:
        """How many topics the step creates: its `names` when given (then `count` is not used)."""
        return len(self.names) if self.names is not None else self.count

    @property
    def partition_count(self) -> int:
        """Each topic's partitions: its `assignments`' when given."""
        return len(self.assignments) if self.assignments is not None else self.partitions


class DeleteTopics(StepBase, kw_only=True, forbid_unknown_fields=True, tag="delete-topics"):
    names: list[str]


class CreatePartitions(StepBase, kw_only=True, forbid_unknown_fields=True, tag="create-partitions"):
    """kraftsim's addition: kafka-topics --alter --partitions COUNT for these topics, in one
    CreatePartitions request; `assignments`: the new partitions' replicas (--replica-assignment)."""

    names: list[str]
    count: int
    assignments: list[list[int]] | None = None


class Roll(StepBase, kw_only=True, forbid_unknown_fields=True, tag="roll"):
    release: str
    nodes: NodeSel = "all"


class AddNode(StepBase, kw_only=True, forbid_unknown_fields=True, tag="add-node"):
    role: Literal["broker", "controller"]
    release: str
    id: int | None = None


class FeaturesChange(StepBase, kw_only=True, forbid_unknown_fields=True):
    """features-upgrade / features-downgrade: kafka-features upgrade / downgrade."""

    metadata: str | None = None
    release_version: str | None = None
    features: dict[str, int] | None = None
    unsafe: bool = False
    dry_run: bool = False
    tool_release: str | None = None  # whose kafka-features; default: the newest release running


class FeaturesUpgrade(FeaturesChange, kw_only=True, forbid_unknown_fields=True, tag="features-upgrade"):
    pass


class FeaturesDowngrade(FeaturesChange, kw_only=True, forbid_unknown_fields=True, tag="features-downgrade"):
    pass


class FeaturesDisable(StepBase, kw_only=True, forbid_unknown_fields=True, tag="features-disable"):
    features: list[str]
    dry_run: bool = False
    tool_release: str | None = None


class NodesStep(StepBase, kw_only=True, forbid_unknown_fields=True):
    """crash / stop."""

    nodes: NodeSel


class Crash(NodesStep, kw_only=True, forbid_unknown_fields=True, tag="crash"):
    pass


class Stop(NodesStep, kw_only=True, forbid_unknown_fields=True, tag="stop"):
    pass


class Start(StepBase, kw_only=True, forbid_unknown_fields=True, tag="start"):
    nodes: NodeSel
    release: str | None = None


class Partition(StepBase, kw_only=True, forbid_unknown_fields=True, tag="partition"):
    groups: list[list[int]]


class Heal(StepBase, kw_only=True, forbid_unknown_fields=True, tag="heal"):
    pass


class DiskFault(StepBase, kw_only=True, forbid_unknown_fields=True, tag="disk-fault"):
    nodes: NodeSel
    kind: Literal["torn-tail", "wipe"]


class Snapshot(StepBase, kw_only=True, forbid_unknown_fields=True, tag="snapshot"):
    nodes: NodeSel | None = None  # default: every running node


class Run(StepBase, kw_only=True, forbid_unknown_fields=True, tag="run"):
    ms: int


class Wait(StepBase, kw_only=True, forbid_unknown_fields=True, tag="wait"):
    timeout_ms: int = 60_000


class AlterBrokerConfig(StepBase, kw_only=True, forbid_unknown_fields=True, tag="alter-broker-config"):
    """kafka-configs --alter --entity-type brokers; `cordoned.log.dirs` cordons log dirs (KIP-1066)."""

    broker: int | None = None  # None: the cluster-wide default (--entity-default)
    configs: dict[str, str] = {}  # --add-config
    delete: list[str] = []  # --delete-config


class AddController(StepBase, kw_only=True, forbid_unknown_fields=True, tag="add-controller"):
    """kafka-metadata-quorum add-controller (KIP-853): a new controller (formatted with
    --no-initial-controllers, caught up as an observer) or an observer controller `id` joins the voters."""

    id: int | None = None
    release: str | None = None  # default: the newest release a controller runs
    #: kraftsim's addition: the active controller crashes this long after the step starts (a
    #: fault in the middle of the change).
    crash_leader_after_ms: int | None = None


class RemoveController(StepBase, kw_only=True, forbid_unknown_fields=True, tag="remove-controller"):
    """kafka-metadata-quorum remove-controller for voter `id` (its own directory id)."""

    id: int


class AlterTopicConfig(StepBase, kw_only=True, forbid_unknown_fields=True, tag="alter-topic-config"):
    """kraftsim's addition: kafka-configs --alter --entity-type topics --entity-name TOPIC."""

    topic: str
    configs: dict[str, str] = {}  # --add-config
    delete: list[str] = []  # --delete-config


class AlterClientMetrics(StepBase, kw_only=True, forbid_unknown_fields=True, tag="alter-client-metrics"):
    """kraftsim's addition: kafka-client-metrics --alter|--delete --name NAME, a client-metrics
    subscription's configs (KIP-714, 3.7 on), judged as the controller's release judges them."""

    name: str
    configs: dict[str, str] = {}  # --metrics / --interval / --match, as the configs they set
    delete: list[str] = []  # the configs deleted (--delete deletes every one held)


class AlterGroupConfig(StepBase, kw_only=True, forbid_unknown_fields=True, tag="alter-group-config"):
    """kraftsim's addition: kafka-configs --alter --entity-type groups --entity-name GROUP, a
    group's configs (KIP-848, 4.0 on), judged as the controller's release judges them."""

    group: str
    configs: dict[str, str] = {}  # --add-config
    delete: list[str] = []  # --delete-config


class ElectLeaders(StepBase, kw_only=True, forbid_unknown_fields=True, tag="elect-leaders"):
    """kraftsim's addition: kafka-leader-election --election-type TYPE for `partitions` (topic:
    partition ids), or for every partition (--all-topic-partitions) when absent."""

    election_type: Literal["preferred", "unclean"] = "preferred"
    partitions: dict[str, list[int]] | None = None


class ReassignedPartition(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One partition of a `reassign-partitions` step, as kafka-reassign-partitions' JSON plan
    names it; without `replicas`, the partition's reassignment is cancelled."""

    topic: str
    partition: int
    replicas: list[int] | None = None


class ReassignPartitions(StepBase, kw_only=True, forbid_unknown_fields=True, tag="reassign-partitions"):
    """kraftsim's addition: kafka-reassign-partitions --execute (partitions with `replicas`) and
    --cancel (partitions without), in one AlterPartitionReassignments request;
    `allow_replication_factor_change = false` is --disallow-replication-factor-change (4.1+: the
    tool and the active controller must both have it)."""

    partitions: list[ReassignedPartition]
    allow_replication_factor_change: bool = True


class UnregisterController(StepBase, kw_only=True, forbid_unknown_fields=True, tag="unregister-controller"):
    """Controller unregistration (KIP-1312, Kafka 4.4)."""

    id: int


class UnregisterBroker(StepBase, kw_only=True, forbid_unknown_fields=True, tag="unregister-broker"):
    """`kafka-cluster unregister --id N` (UnregisterBroker): the broker's registration is removed."""

    id: int


class CreateAcl(StepBase, kw_only=True, forbid_unknown_fields=True, tag="create-acl"):
    """kafka-acls --add: one binding; `host` may be a CIDR range from 4.4-IV1 (KIP-1276).
    `admin_client` sends it as an Admin client may: the principal is not parsed, so one without
    a colon, which kafka-acls refuses, reaches the controller (which takes it)."""

    principal: str
    operation: str
    resource_name: str
    resource_type: str = "topic"
    pattern_type: str = "literal"
    host: str = "*"
    permission: str = "allow"
    admin_client: bool = False


class DeleteAcls(StepBase, kw_only=True, forbid_unknown_fields=True, tag="delete-acls"):
    """kraftsim's addition: kafka-acls --remove (DeleteAcls) of one filter; every binding it
    matches goes. Left out, a key matches anything ("any"); pattern type "match" also matches
    the literal, wildcard and prefixed bindings that cover `resource_name`."""

    resource_type: str = "any"
    resource_name: str | None = None
    pattern_type: str = "any"
    principal: str | None = None
    host: str | None = None
    operation: str = "any"
    permission: str = "any"


class AlterClientQuotas(StepBase, kw_only=True, forbid_unknown_fields=True, tag="alter-client-quotas"):
    """kraftsim's addition: kafka-configs --alter --entity-type users|clients|ips of one entity:
    `user`, `client_id` and `ip` name its parts, `default` lists the entity types at their default
    entity (`--entity-default`)."""

    user: str | None = None
    client_id: str | None = None
    ip: str | None = None
    default: list[Literal["user", "client-id", "ip"]] = []
    quotas: dict[str, float] = {}  # --add-config
    delete: list[str] = []  # --delete-config

    def entity(self) -> dict[str, str | None]:
        """Entity type -> name (None: the default entity), as AlterClientQuotas names them."""
        named = {"user": self.user, "client-id": self.client_id, "ip": self.ip}
        return {t: named[t] for t in ("user", "client-id", "ip") if named[t] is not None or t in self.default}


class ScramSecret(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One mechanism's credential: a `password` (salted as Kafka's Admin client salts it, with
    a salt made from the run's seed), or the `salt` and `salted_password` a client sent
    (base64: what a recording of `kraftsim serve` holds)."""

    iterations: int = 4096
    password: str | None = None
    salt: str | None = None
    salted_password: str | None = None


class AlterScramCredentials(StepBase, kw_only=True, forbid_unknown_fields=True, tag="alter-scram-credentials"):
    """kraftsim's addition: kafka-configs --alter --entity-type users --entity-name USER of SCRAM
    credentials: `credentials` by mechanism (SCRAM-SHA-256, SCRAM-SHA-512) to set, `delete` the
    mechanisms to remove."""

    user: str
    credentials: dict[str, ScramSecret] = {}  # --add-config 'SCRAM-SHA-256=[iterations=8192,password=...]'
    delete: list[str] = []  # --delete-config SCRAM-SHA-512


#: One step of any op (a tagged union: msgspec picks the struct by `op`).
Op = (CreateTopics | DeleteTopics | Roll | AddNode | FeaturesUpgrade | FeaturesDowngrade | FeaturesDisable | Crash
      | Stop | Start | Partition | Heal | DiskFault | Snapshot | Run | Wait | AddController | RemoveController
      | AlterBrokerConfig | UnregisterController | CreateAcl | UnregisterBroker | CreatePartitions | AlterTopicConfig
      | ElectLeaders | AlterClientQuotas | AlterScramCredentials
      | ReassignPartitions | AlterClientMetrics | AlterGroupConfig | DeleteAcls)
#: The name the runner and reports have used for a step.
Step = Op

#: Every op of contract 4 and the struct its step decodes into, in the order messages list them.
OPS: dict[str, type[StepBase]] = {
    cls.__struct_config__.tag: cls  # type: ignore[misc]
    for cls in (CreateTopics, DeleteTopics, Roll, AddNode, FeaturesUpgrade, FeaturesDowngrade, FeaturesDisable,
                Crash, Stop, Start, Partition, Heal, DiskFault, Snapshot, Run, Wait, AddController,
                RemoveController,
                # kraftsim's additions to contract 4: controller operations of Kafka 4.3/4.4
                AlterBrokerConfig, UnregisterController, CreateAcl,
                # and kafka-cluster unregister (what `kraftsim serve` records for an UnregisterBroker request)
                UnregisterBroker,
                # and kafka-topics --alter --partitions (CreatePartitions), kafka-configs --alter on a topic
                CreatePartitions, AlterTopicConfig,
                # and kafka-leader-election (ElectLeaders), kafka-configs --alter on client quotas and
                # SCRAM credentials, kafka-reassign-partitions (AlterPartitionReassignments)
                ElectLeaders, AlterClientQuotas, AlterScramCredentials, ReassignPartitions,
                # and kafka-client-metrics --alter|--delete (IncrementalAlterConfigs of a subscription)
                AlterClientMetrics,
                # and kafka-configs --alter on a group (IncrementalAlterConfigs of a GROUP resource)
                AlterGroupConfig,
                # and kafka-acls --remove (DeleteAcls: what `kraftsim serve` records for one)
                DeleteAcls)
}


def make(op: str, args: dict[str, object]) -> StepBase:
    """The typed op `op` with `args` (keys as a scenario file writes them); a bad op or key
    raises msgspec.ValidationError (programs building ops, not files: files go through validate)."""
    cls = OPS.get(op)
    if cls is None:
        raise msgspec.ValidationError(f"unknown op {op!r}; expected one of {', '.join(OPS)}")
    return msgspec.convert({**args, "op": op}, type=cls)


def to_table(op: StepBase) -> dict[str, object]:
    """A step as a scenario file's table: `op` first, then the op's own keys, then the keys every
    step takes; keys at their default are left out."""
    common = [f.name for f in msgspec.structs.fields(StepBase)]
    fields = msgspec.structs.fields(op)
    table: dict[str, object] = {"op": op.op}
    for f in sorted(fields, key=lambda f: f.name in common):  # (a stable sort: each group keeps its order)
        value = getattr(op, f.name)
        default = f.default_factory() if f.default_factory is not msgspec.NODEFAULT else f.default
        if value != default or default is msgspec.NODEFAULT:
            table[f.encode_name] = msgspec.to_builtins(value)
    return table
