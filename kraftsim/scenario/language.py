"""The scenario language (contract 4 of DESIGN.md) as msgspec structs.

A scenario file is TOML: top-level keys, a `[cluster]` table, `[[step]]` tables (one op
each, typed in `ops.py`) and an `[expect]` table. Every struct forbids unknown keys, so a
misspelt key is an error rather than something silently ignored. `validate.py` decodes a
file into these structs, one step at a time (so that errors can name the step), and checks
what the types cannot: names against the catalog and node ids against the cluster.
"""

from __future__ import annotations

from typing import Literal

import msgspec

#: "all" | "controllers" | "brokers" | [ids]; kraftsim adds "leader" (the active controller
#: when the step starts).
NodeSel = str | list[int]
NODE_GROUPS = ("all", "controllers", "brokers", "leader")
POLICIES = ("kafka", "kip-778")
DISK_FAULTS = ("torn-tail", "wipe")
#: kafka-leader-election --election-type (an `elect-leaders` step).
ELECTION_TYPES = ("preferred", "unclean")
#: The SCRAM mechanisms an `alter-scram-credentials` step names (Kafka's ScramMechanism).
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
ROLES = ("broker", "controller")


class _Strict(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    pass


class ClusterSpec(_Strict, kw_only=True, forbid_unknown_fields=True):
    """`[cluster]`: the shape and software of the cluster the scenario starts from."""

    controllers: int | list[int] | None = None  # with `from`: the voter ids, overriding the source's
    brokers: int = 0
    combined: int = 0
    from_: str | None = msgspec.field(default=None, name="from")
    release: str | None = None
    #: kraftsim's addition: node id (as a TOML key) -> the release that node runs, for a cluster
    #: of mixed releases (an operator mid-roll); the other nodes run `release`.
    releases: dict[str, str] = {}
    release_version: str | None = None
    features: dict[str, int] = {}
    #: A KIP-853 dynamic quorum (`--standalone` for one controller, else `--initial-controllers`).
    dynamic_quorum: bool = False
    #: kraftsim's addition: server configs every node runs with, as in server.properties (today
    #: the unstable-versions ones: `{ "unstable.feature.versions.enable" = true }`, 3.7's
    #: `unstable.metadata.versions.enable`), as `cluster create --config`.
    configs: dict[str, str | bool] = {}

    @property
    def controller_count(self) -> int:
        """Controllers a created cluster starts with (a list of voter ids goes with `from` only)."""
        return self.controllers if isinstance(self.controllers, int) else 0


class Expect(_Strict, kw_only=True, forbid_unknown_fields=True):
    """`[expect]`: checked after the last step. The first four keys are contract 4's;
    `leader`, `failed`, `stopped`, `releases`, `topics` and `fenced` are kraftsim's additions."""

    metadata_version: str | int | None = None
    finalized: dict[str, int] | None = None
    running: list[int] | None = None
    has_leader: bool | None = None
    leader: int | None = None
    failed: list[int] | None = None  # nodes whose start failed (state "failed")
    stopped: list[int] | None = None  # nodes down at the end for any reason
    releases: dict[str, str] | None = None  # node id (as a TOML key) -> release it runs
    topics: int | None = None  # topics in the leader's image
    fenced: list[int] | None = None  # brokers fenced at the end
    voters: list[int] | None = None  # the committed voter set


#: Limits of one create-topics (the op and `kraftsim topics create`): a simulated cluster holds
#: every partition in memory (about 200 bytes each); Kafka's replication factor is an int16.
MAX_TOPICS = 1_000_000
MAX_PARTITIONS = 10_000_000
MAX_REPLICATION = 32_767
#: Controllers, brokers and combined nodes (each) a created cluster starts with (`cluster create`,
#: a scenario's `[cluster]`): every node is a simulated process with its own directory and log.
MAX_NODES_PER_ROLE = 100


class Limits(_Strict, kw_only=True, forbid_unknown_fields=True):
    """kraftsim's addition, `[limits]`: how much work a file may ask for. The defaults keep a
    mistyped number (a `run` of 10^15 ms, 100,000 steps) from running for hours; a file
    that means it raises them."""

    #: Simulated milliseconds one `run` (ms) or `wait` (timeout_ms) may last.
    step_ms: int = 3_600_000
    #: Steps in the file.
    steps: int = 1_000
    #: Topics and partitions created by all the file's create-topics steps together.
    topics: int = MAX_TOPICS
    partitions: int = MAX_PARTITIONS


class RecordedFailure(_Strict, kw_only=True, forbid_unknown_fields=True):
    """kraftsim's addition, `[recorded_failure]`: the check a state machine found broken after
    the file's last step (kraftsim.scenario.recorded_failure says what `scenario run` makes of it)."""

    #: The invariant (or the machine's property) that failed; or `rule`, the rule that raised.
    invariant: str | None = None
    rule: str | None = None
    #: The assertion's text, as plain text.
    message: str
    #: The machine class that found it, "module:Class" (its `replay` re-checks the file).
    machine: str
    #: The simulator's seed the machine ran with.
    seed: int = 0
    #: Whether shrinking was cut short by the time budget (a longer file than needed).
    cut_short: bool = False


class ScenarioTop(_Strict, kw_only=True, forbid_unknown_fields=True):
    """The top level of a file; steps stay raw tables here and are decoded one by one."""

    name: str
    cluster: ClusterSpec
    description: str = ""
    seed: int = 0
    policy: Literal["kafka", "kip-778"] = "kafka"
    catalog: str | None = None
    step: list[dict[str, object]] = []
    expect: Expect = msgspec.field(default_factory=Expect)
    #: kraftsim's addition: the simulator's timeouts, intervals and network (kraftsim.sim.SimConfig).
    config: dict[str, int | float] = {}
    #: kraftsim's addition: the bounds on the work a file asks for.
    limits: Limits = msgspec.field(default_factory=Limits)
    #: kraftsim's addition: the failure a state machine recorded (a counterexample's file).
    recorded_failure: RecordedFailure | None = None
    #: kraftsim's addition: the file takes minutes (a what-if at production scale); the test
    #: suite's run of every shipped scenario and the suite benchmark leave it out.
    slow: bool = False
