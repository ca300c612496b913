"""What an admin client does against the simulated cluster (a mixin of Simulation): topic
creation and deletion, partition creation, leader elections, partition reassignments, config
changes and kafka-features' UpdateFeatures, each answered by the active controller once the records it wrote are committed,
and sent again to the next leader when they were lost with the old one (Kafka's admin client
retries NOT_CONTROLLER).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from kraftsim.controller import (
    AclCreation, CreateAclsRequest, DeleteAclsFilter, DeleteAclsRequest, create_acls, delete_acls,
    MECHANISM_IDS, AlterClientQuotasRequest, AlterConfigsResource, AlterPartitionReassignmentsRequest,
    AlterUserScramCredentialsRequest, CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig,
    EntityData, EntryData, QuotaOp, ScramCredentialDeletion,
    ScramCredentialUpsertion, alter_client_quotas, alter_partition_reassignments, alter_user_scram_credentials,
    salted_password, CreatePartitionsRequest, CreatePartitionsTopic,
    CreateTopicsRequest, DeleteTopicState, DeleteTopicsRequest, ElectLeadersRequest,
    FeatureUpdate, IncrementalAlterConfigsRequest, LegacyAlterConfigsRequest, UpdateFeaturesRequest,
    UpdateFeaturesResponse, code_text, create_partitions, error_codes, create_topics, delete_topics, elect_leaders,
    incremental_alter_configs, legacy_alter_configs, unregister_broker,
)
from kraftsim.image.pmap import MISSING, PMap
from kraftsim.protocol.primitives import Uuid
from kraftsim.sim.types import MvChangeReport
from kraftsim.sim.engine.member import Member, entry_at
from kraftsim.sim.types import SimError, TopicsRefused
from kraftsim.versions import ToolFailure

if TYPE_CHECKING:  # features_tool is imported where used: serving a cluster never runs kafka-features
    from kraftsim.sim import features_tool
    from kraftsim.controller import ControllerContext, ControllerResult
    from kraftsim.sim.engine.core import Engine
    from kraftsim.sim.types import SimConfig
    from kraftsim.versions import Catalog

#: What a request sent to the active controller answers.
R = TypeVar("R")


def answered(result: ControllerResult | None) -> ControllerResult:
    """A request's result as Kafka's tools take it: SimError with the admin client's text when
    no active controller committed it in time, or with the controller's refusal of it whole."""
    if result is None:
        raise SimError("Timed out waiting for a node assignment: no active controller committed the request")
    if not result.ok:
        raise SimError(result.error.message or result.error.name)
    return result


def _base36(n: int) -> str:
    """`n` in base 36, as Java's BigInteger.toString(36)."""
    digits = ""
    while True:
        n, d = divmod(n, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[d] + digits
        if n == 0:
            return digits


class FreeNames:
    """The lowest free numbers of a topic-name prefix, as `create_topics` names new topics.

    Why: asking the image for `<prefix>0`, `<prefix>1`, ... from 0 on every request costs a
    lookup per topic of the cluster (20,000 topics in 100 requests: a million). Kept per
    prefix: the by-name map last scanned and its first free number (every lower one was
    taken there). The next scan starts there unless a name of the prefix was removed since,
    which the maps' difference tells at the cost of what changed."""

    def __init__(self) -> None:
        self.scanned: dict[str, tuple[PMap[str, Uuid], int]] = {}

    def lowest(self, by_name: PMap[str, Uuid], prefix: str, count: int) -> list[str]:
        """The `count` lowest free names `<prefix><i>` of `by_name`, in order."""
        i = 0
        kept = self.scanned.get(prefix)
        if kept is not None:
            before, first_free = kept
            if not any(new is MISSING and name.startswith(prefix) for name, _, new in before.diff(by_name)):
                i = first_free
        names: list[str] = []
        first_free = -1
        while len(names) < count:
            name = f"{prefix}{i}"
            if by_name.get(name) is None:
                if first_free < 0:
                    first_free = i
                names.append(name)
            i += 1
        self.scanned[prefix] = (by_name, i if first_free < 0 else first_free)
        return names


class AdminMixin:
    """Admin requests of a Simulation (see the module docstring); `self` is the Simulation."""

    if TYPE_CHECKING:  # what the Simulation this is mixed into provides
        engine: Engine
        config: SimConfig
        catalog: Catalog
        _mv_reports: list[MvChangeReport]
        free_names: FreeNames

        @property
        def seed(self) -> int: ...
        def leader(self) -> int | None: ...
        def finalized(self) -> dict[str, int]: ...
        def _finish_op(self, label: str) -> None: ...

    def _wait_leader(self) -> Member | None:
        e = self.engine
        e.run_until(e.now + self.config.request_timeout_ms * 5, lambda: e.leader_member() is not None
                    and e.controller is not None)
        return e.leader_member()

    def _client_request(self, call: Callable[[Member], R]) -> R | None:
        """What an admin client does: send the request to the active controller and wait for
        its answer, which comes once the records it wrote are committed; a request whose
        records were lost with a leader (NOT_CONTROLLER) is sent again to the next one, until
        `admin_timeout_ms`. Returns the controller's result, or None when it timed out."""
        e = self.engine
        deadline = e.now + self.config.admin_timeout_ms
        while e.now < deadline:
            e.run_until(deadline, lambda: e.leader_member() is not None and e.controller is not None)
            leader = e.leader_member()
            if leader is None or e.controller is None:
                return None
            start = leader.log.log_end_offset
            result = call(leader)
            if not leader.running or leader.log.log_end_offset == start:
                return result  # nothing written (refused, validate-only): answered at once
            e.raft.appended(leader, start)
            epoch, end = leader.epoch, leader.log.log_end_offset
            outcome: list[bool] = []

            def settled(epoch: int = epoch, end: int = end, outcome: list[bool] = outcome) -> bool:
                now_leader = e.leader_member()
                if now_leader is None or now_leader.high_watermark is None:
                    return False
                entry = entry_at(now_leader.log, end - 1)
                if entry is None and now_leader.epoch == epoch and end - 1 < now_leader.log.log_start_offset:
                    pass  # the same leader snapshotted past them (its log now starts later): committed
                elif entry is None or entry.epoch != epoch:
                    if now_leader.epoch == epoch:
                        return False
                    outcome.append(False)  # a later leader does not hold the records: they are lost
                    return True
                if now_leader.high_watermark < end:
                    return False
                if not outcome:
                    outcome.append(True)
                # every node that can reach the leader has applied it (a node still finding the
                # leader after a restart included; one cut off by a partition is not waited for)
                return all(m.applied >= end - 1 or (m.node and m.node.blocked)
                           or (m.leader != now_leader.id and not e.net.reachable(m.id, now_leader.id))
                           for m in e.members.values() if m.running)

            e.run_until(deadline, settled)
            if outcome and outcome[-1]:
                return result
            if not outcome:
                return None  # neither committed nor known lost by the deadline
        return None

    def _controller_call(self, rule: Callable[[ControllerContext], ControllerResult]) -> ControllerResult:
        return answered(self._client_request(lambda leader: self.engine.execute(rule)))

    def create_topics(self, count: int, partitions: int, replication_factor: int | None = None,
                      prefix: str = "topic-", names: Sequence[str] | None = None,
                      configs: Mapping[str, str] | None = None,
                      assignments: Sequence[Sequence[int]] | None = None, existing_ok: bool = False) -> list[str]:
        """`count` new topics `<prefix><i>` (the lowest free numbers), or the topics `names`,
        each with the topic configs `configs` (in their order, as a request lists them) and, when
        given, the replicas by partition `assignments` (as kafka-topics --replica-assignment
        sends them: no partition count or replication factor of their own): the names created.
        `existing_ok`: a topic the controller refuses as existing already is not an error (as
        kafka-topics --if-not-exists takes it); it is only not among the names returned."""
        brokers = [m for m in self.engine.ordered() if m.state.is_broker]
        rf = replication_factor if replication_factor is not None else min(3, len(brokers))
        if self._wait_leader() is None or self.engine.controller is None:
            raise SimError("Timed out waiting for a node assignment: no active controller")
        image = self.engine.controller.image
        if names is not None:
            names = list(names)
            count = len(names)
        else:
            names = self.free_names.lowest(image.topics.by_name, prefix, count)
        own = tuple(CreatableTopicConfig(k, v) for k, v in (configs or {}).items())
        placed = tuple(CreatableReplicaAssignment(i, tuple(r)) for i, r in enumerate(assignments or ()))
        if placed:
            partitions, rf = -1, -1
        request = CreateTopicsRequest(tuple(CreatableTopic(n, partitions, rf, placed, own) for n in names),
                                      seed=self.seed * 1_000_003 + len(image.topics))
        result = self._controller_call(lambda ctx: create_topics(ctx, request))
        refused = {t.name for t in result.response.topics if t.error_code != 0}
        exists = error_codes()["TOPIC_ALREADY_EXISTS"] if existing_ok else None
        errors = [t for t in result.response.topics if t.error_code not in (0, exists)]
        self._finish_op("create-topics")
        created = [n for n in names if n not in refused]
        if errors:
            raise TopicsRefused(errors[0].error_message or f"CreateTopics failed for {errors[0].name}", created)
        return created

    def _send_placing(self, label: str, rule: Callable[[ControllerContext, int], ControllerResult]) -> ControllerResult | None:
        """A request whose new replicas are placed, as a client sends it: `rule` given the
        placement seed (the simulation's, and the topics the controller has when it is sent)."""
        if self._wait_leader() is None or self.engine.controller is None:
            return None
        seed = self.seed * 1_000_003 + len(self.engine.controller.image.topics)
        result = self._client_request(lambda leader: self.engine.execute(lambda ctx: rule(ctx, seed)))
        self._finish_op(label)
        return result

    def send_create_topics(self, topics: Sequence[CreatableTopic], validate_only: bool = False) -> ControllerResult | None:
        """CreateTopics as a client sends it: the controller's result (its `response` holds
        one answer per topic) once committed, or None when no controller answered in time."""
        return self._send_placing("create-topics", lambda ctx, seed: create_topics(
            ctx, CreateTopicsRequest(tuple(topics), validate_only, seed=seed)))

    def send_create_partitions(self, topics: Sequence[CreatePartitionsTopic],
                               validate_only: bool = False) -> ControllerResult | None:
        """CreatePartitions as a client sends it: the controller's result (one answer per
        topic) once committed, or None when no controller answered in time."""
        return self._send_placing("create-partitions", lambda ctx, seed: create_partitions(
            ctx, CreatePartitionsRequest(tuple(topics), validate_only, seed=seed)))

    def create_partitions(self, names: Sequence[str], count: int,
                          assignments: Sequence[Sequence[int]] | None = None) -> None:
        """`kafka-topics --alter --topic NAME --partitions COUNT [--replica-assignment ...]` for
        each of `names`, in one request; the first topic refused raises SimError with its text."""
        topics = [CreatePartitionsTopic(n, count, None if assignments is None else tuple(map(tuple, assignments)))
                  for n in names]
        result = answered(self.send_create_partitions(topics))
        errors = [r for r in result.response.results if r.error_code != 0]
        if errors:
            raise SimError(code_text(errors[0].error_code, errors[0].error_message))

    def send_incremental_alter_configs(self, resources: Sequence[AlterConfigsResource],
                                       validate_only: bool = False) -> ControllerResult | None:
        """IncrementalAlterConfigs as the active controller receives it: its result (one answer
        per resource) once committed, or None when no controller answered in time."""
        request = IncrementalAlterConfigsRequest(tuple(resources), validate_only)
        result = self._client_request(
            lambda leader: self.engine.execute(lambda ctx: incremental_alter_configs(ctx, request)))
        self._finish_op("alter-configs")
        return result

    def send_legacy_alter_configs(self, resources: Sequence[AlterConfigsResource],
                                  validate_only: bool = False) -> ControllerResult | None:
        """AlterConfigs (the legacy API: each resource's configs become the ones named) as the
        active controller receives it: its result once committed, or None on a timeout."""
        request = LegacyAlterConfigsRequest(tuple(resources), validate_only)
        result = self._client_request(
            lambda leader: self.engine.execute(lambda ctx: legacy_alter_configs(ctx, request)))
        self._finish_op("alter-configs")
        return result

    def send_alter_client_quotas(self, entries: Sequence[EntryData], validate_only: bool = False
                                 ) -> ControllerResult | None:
        """AlterClientQuotas as the active controller receives it: its result (one answer per
        entity) once committed, or None when no controller answered in time."""
        request = AlterClientQuotasRequest(tuple(entries), validate_only)
        result = self._client_request(
            lambda leader: self.engine.execute(lambda ctx: alter_client_quotas(ctx, request)))
        self._finish_op("alter-client-quotas")
        return result

    def client_quotas(self, entity: Mapping[str, str | None]) -> Mapping[str, float]:
        """The quotas of one entity (entity type -> name, None for the default) as the active
        controller holds them, once one is active: what kafka-configs reads before it changes
        them. Empty when no controller became active in time."""
        leader = self._wait_leader()
        image = self.engine.controller_image() if leader is not None else None
        return {} if image is None else image.client_quotas.quotas(tuple(sorted(entity.items())))

    def held_configs(self, resource_type: int, name: str) -> Mapping[str, str]:
        """The dynamic configs of one resource (ConfigResource type and name: "" for the
        brokers' default) as the active controller holds them, once one is active: what
        kafka-configs reads before it changes them. Empty when no controller became active in
        time."""
        leader = self._wait_leader()
        image = self.engine.controller_image() if leader is not None else None
        return {} if image is None else image.configs.config(resource_type, name)

    def alter_client_quotas(self, entity: Mapping[str, str | None], quotas: Mapping[str, float],
                            delete: Sequence[str] = ()) -> list[str]:
        """`kafka-configs --alter --entity-type users|clients|ips` of one entity (`entity`: entity
        type -> name, None for the type's default; `--add-config` `quotas`, `--delete-config`
        `delete`): the tool's line, or SimError with the controller's text."""
        ops = [QuotaOp(k, float(v)) for k, v in sorted(quotas.items())] + [QuotaOp(k, remove=True) for k in delete]
        parts = tuple(EntityData(t, n) for t, n in entity.items())
        result = answered(self.send_alter_client_quotas([EntryData(parts, tuple(ops))]))
        answer = result.response.entries[0]
        if answer.error_code != 0:
            raise SimError(code_text(answer.error_code, answer.error_message))
        # (the tool names the first entity type it was given; a step names them by kind)
        kind, name = next((k, entity[t]) for t, k in (("user", "user"), ("client-id", "client"), ("ip", "ip"))
                          if t in entity)
        if name is None:
            return [f"Completed updating default config for {kind}s in the cluster."]
        return [f"Completed updating config for {kind} {name}."]

    def send_alter_user_scram_credentials(self, deletions: Sequence[ScramCredentialDeletion],
                                          upsertions: Sequence[ScramCredentialUpsertion]) -> ControllerResult | None:
        """AlterUserScramCredentials as the active controller receives it: its result (one
        answer per user) once committed, or None when no controller answered in time."""
        request = AlterUserScramCredentialsRequest(tuple(deletions), tuple(upsertions))
        result = self._client_request(
            lambda leader: self.engine.execute(lambda ctx: alter_user_scram_credentials(ctx, request)))
        self._finish_op("alter-scram-credentials")
        return result

    def scram_secret(self, user: str, mechanism: str, password: str, iterations: int) -> tuple[int, bytes, bytes]:
        """(iterations, salt, salted password) as Kafka's Admin client makes them from a
        password (a salt of 130 random bits in base 36, ScramFormatter.secureRandomBytes); the
        salt comes from the run's seed, the user, the mechanism and the simulated time, so a
        seed and a scenario still give the same bytes."""
        if mechanism not in MECHANISM_IDS:
            raise SimError(f"Unknown SCRAM mechanism {mechanism}")
        digest = hashlib.sha256(f"{self.seed}/{user}/{mechanism}/{self.engine.now}".encode("utf-8")).digest()
        bits = int.from_bytes(digest[:17], "big") >> 6  # 130 bits
        salt = _base36(bits).encode("ascii")
        return iterations, salt, salted_password(MECHANISM_IDS[mechanism], password, salt, iterations)

    def alter_scram_credentials(self, user: str, upsert: Mapping[str, tuple[int, bytes, bytes]],
                                delete: Sequence[str] = ()) -> list[str]:
        """`kafka-configs --alter --entity-type users --entity-name USER` of SCRAM credentials:
        `upsert` maps a mechanism's name (SCRAM-SHA-256, SCRAM-SHA-512) to (iterations, salt,
        salted password), `delete` names mechanisms; the tool's line, or SimError with the
        controller's text."""
        unknown = [m for m in [*upsert, *delete] if m not in MECHANISM_IDS]
        if unknown:
            raise SimError(f"Unknown SCRAM mechanism {unknown[0]}")
        result = answered(self.send_alter_user_scram_credentials(
            [ScramCredentialDeletion(user, MECHANISM_IDS[m]) for m in delete],
            [ScramCredentialUpsertion(user, MECHANISM_IDS[m], i, salt, salted)
             for m, (i, salt, salted) in sorted(upsert.items())]))
        refusals = [r for r in result.response.results if r.error_code != 0]
        if refusals:
            raise SimError(code_text(refusals[0].error_code, refusals[0].error_message))
        return [f"Completed updating config for user {user}."]

    def send_elect_leaders(self, request: ElectLeadersRequest) -> ControllerResult | None:
        """ElectLeaders as a client sends it: the controller's result (one answer per partition)
        once committed, or None when no controller answered in time."""
        result = self._client_request(lambda leader: self.engine.execute(lambda ctx: elect_leaders(ctx, request)))
        self._finish_op("elect-leaders")
        return result

    def send_alter_partition_reassignments(self, request: AlterPartitionReassignmentsRequest
                                           ) -> ControllerResult | None:
        """AlterPartitionReassignments as a client sends it: the controller's result (one answer
        per partition) once committed, or None when no controller answered in time. The
        reassignment itself goes on in the simulation: the new replicas' leader adds them to
        its ISR (IsrExpansion) and the controller then completes it."""
        result = self._client_request(
            lambda leader: self.engine.execute(lambda ctx: alter_partition_reassignments(ctx, request)))
        self._finish_op("reassign-partitions")
        return result

    def send_create_acls(self, creations: Sequence[AclCreation]) -> ControllerResult | None:
        """CreateAcls as a client sends it: the controller's result (one answer per creation)
        once committed, or None on a timeout. New ACLs' ids are drawn from the simulation's
        seed and the number of ACLs the controller holds before each."""
        request = CreateAclsRequest(tuple(creations), seed=self.seed)
        result = self._client_request(lambda leader: self.engine.execute(lambda ctx: create_acls(ctx, request)))
        self._finish_op("create-acls")
        return result

    def send_delete_acls(self, filters: Sequence[DeleteAclsFilter]) -> ControllerResult | None:
        """DeleteAcls as a client sends it: the controller's result (the ACLs each filter
        matched) once committed, or None on a timeout."""
        request = DeleteAclsRequest(tuple(filters))
        result = self._client_request(lambda leader: self.engine.execute(lambda ctx: delete_acls(ctx, request)))
        self._finish_op("delete-acls")
        return result

    def send_delete_topics(self, names: Sequence[str]) -> ControllerResult | None:
        """DeleteTopics as a client sends it: the controller's result, or None on a timeout."""
        request = DeleteTopicsRequest(tuple(DeleteTopicState(name=n) for n in names))
        result = self._client_request(lambda leader: self.engine.execute(lambda ctx: delete_topics(ctx, request)))
        self._finish_op("delete-topics")
        return result

    def send_unregister_broker(self, broker_id: int) -> ControllerResult | None:
        """UnregisterBroker as a client sends it: the controller's result, or None on a timeout."""
        e = self.engine

        def call(leader: Member) -> ControllerResult | None:
            assert e.controller is not None
            heartbeats = e.controller.heartbeats
            return e.execute(lambda ctx: unregister_broker(ctx, broker_id, heartbeats))

        result = self._client_request(call)
        self._finish_op("unregister-broker")
        return result

    def delete_topics(self, names: Sequence[str]) -> None:
        request = DeleteTopicsRequest(tuple(DeleteTopicState(name=n) for n in names))
        result = self._controller_call(lambda ctx: delete_topics(ctx, request))
        errors = [t for t in result.response.responses if t.error_code != 0]
        self._finish_op("delete-topics")
        if errors:
            raise SimError(errors[0].error_message or f"DeleteTopics failed for {errors[0].name}")

    def update_features(self, updates: Mapping[str, FeatureUpdate], validate_only: bool
                        ) -> tuple[UpdateFeaturesResponse | None, list[MvChangeReport]]:
        """UpdateFeatures to the active controller (None without one), then replication; the
        KIP-778 metadata.version changes the nodes carried out come back with what they dropped."""
        e = self.engine
        running = [m for m in e.ordered() if m.running and m.node is not None]
        before = {m.id: len(m.node.mv_changes()) for m in running}  # type: ignore[union-attr]
        snaps_before = {m.id: len(m.node.snapshot_events()) for m in running}  # type: ignore[union-attr]
        request = UpdateFeaturesRequest(tuple(updates[f] for f in sorted(updates)), validate_only)

        def call(leader: Member) -> ControllerResult:
            assert e.controller is not None
            start = leader.log.log_end_offset
            answer = e.controller.update_features(request)
            e.kraft_version = e.controller.kraft_version
            e.reconfig.membership_appended(leader, start)
            return answer

        result = self._client_request(call)
        if result is None:
            return None, []
        reports: list[MvChangeReport] = []
        for m in running:
            if m.node is None:
                continue
            new = m.node.mv_changes()[before.get(m.id, 0):]
            events = [x for x in m.node.snapshot_events()[snaps_before.get(m.id, 0):] if x.emitted]
            names = tuple(Path(x.result.path).name for x in events if x.result is not None)
            reports += [MvChangeReport(m.id, off, ch, names) for off, ch in new]
        self._mv_reports.extend(reports)
        for r in reports:
            e.emit(r.node_id, "feature", {"offset": r.offset, "metadata_version": r.change.new_level,
                                          "lossless": r.change.lossless})
        if reports and any(not r.change.lossless for r in reports) and e.leader_member() is not None:
            lead = e.leader_member()
            assert lead is not None
            e.drop_controller(lead)
            e.activate_controller(lead)  # reload from the lossy snapshot
        return result.response, reports

    def node_summaries(self) -> list[features_tool.NodeSummary]:
        """(id, roles, release, running) of every node, by id."""
        return [(m.id, m.state.roles, m.state.release, m.running) for m in self.engine.ordered()]

    def tool_release(self) -> str:
        """The release of the kafka-features an operator runs against this cluster."""
        from kraftsim.sim import features_tool

        release = features_tool.cluster_release(self.node_summaries())
        assert release is not None  # a simulation has nodes
        return release

    def features(self, action: str, *, metadata: str | None = None, release_version: str | None = None,
                 features: Mapping[str, int] | Sequence[str] | None = None, unsafe: bool = False,
                 dry_run: bool = False, tool_release: str | None = None) -> list[str]:
        """kafka-features upgrade|downgrade|disable of `tool_release` (default: the newest release
        running in the cluster, features_tool.cluster_release); its lines."""
        if isinstance(features, Mapping):
            feats = [f"{k}={v}" for k, v in sorted(features.items())]
        else:
            feats = list(features or [])
        from kraftsim.sim import features_tool

        lines: list[str] = []
        tool = self.catalog.at_release(tool_release or self.tool_release())
        before = {k: v for k, v in self.finalized().items()}
        try:
            features_tool.update(self, tool, action, metadata=metadata, release_version=release_version,  # type: ignore
                                 features=feats, unsafe=unsafe, dry_run=dry_run, out=lines.append)
        except ToolFailure as err:
            raise SimError("\n".join(lines + [str(err)])) from None
        finally:
            after = self.finalized()
            if after != before:
                self.engine.emit(self.leader(), "feature", {"before": before, "after": after})
            self._finish_op("features")
        return lines
