"""QuorumController: the active controller of a simulated quorum, committing to a real log.

It decides nothing itself. Every operation is a rule, `rule(ctx) -> ControllerResult`,
run against a fresh ControllerContext; on success the records are appended to the
metadata log (Kafka's bytes: an atomic result is one batch, a non-atomic one is split
only where a batch would pass Kafka's 8 MiB limit), then replayed into the controller's
state. The state is whatever replaying the log gives, exactly as a standby controller
would rebuild it, so a controller reopened on the same log has the same image.

Replay follows the metadata transaction markers the way Kafka's loader does: records
between BeginTransactionRecord and EndTransactionRecord are held back and applied
together at the end; an AbortTransactionRecord drops them; a transaction the log leaves
open is in flight (its start offset is what activation needs).

Time comes from an injected clock (milliseconds), so runs are deterministic.
"""

from __future__ import annotations

from typing import Callable, Iterable, Iterator, Mapping, Protocol, Sequence

from kraftsim.controller import (
    acls, activation, client_quotas, cluster_control, configs, delegation_tokens, leader_election, producer_ids,
    reassignments, replication, scram, topics,
)
from kraftsim.controller.api_errors import ApiError
from kraftsim.controller.cluster_control import BrokerHeartbeats
from kraftsim.controller.context import ControllerConfig, ControllerContext, Range
from kraftsim.controller.replica_index import ReplicaIndex
from kraftsim.controller.features import (
    KRaftUpgrade, UpdateFeaturesRequest, update_features, voters_support_kraft_upgrade,
)
from kraftsim.controller.result import ControllerResult, payload, refused
from kraftsim.errors import KraftsimError
from kraftsim.image import EMPTY_IMAGE, MetadataDelta, MetadataImage, MetadataProvenance
from kraftsim.image.delta import TRANSACTION_RECORDS
from kraftsim.protocol.entries import LogEntry, Payload, encode_control_batch
from kraftsim.protocol.registry import Registry
from kraftsim.storage import (
    MAX_BATCH_SIZE_BYTES, BatchAccumulator, BootstrapMetadata, MetadataLog, RecordBatchTooLarge,
)
from kraftsim.storage.batchfile import decode_file_batch
from kraftsim.versions import Catalog, default_catalog

Rule = Callable[[ControllerContext], ControllerResult]
Clock = Callable[[], int]


class ControllerNotActive(KraftsimError):
    """An operation was asked of a controller that has not been activated."""


class ReplayState:
    """What replaying a metadata log gives: the committed image, the in-flight transaction
    (start offset and held-back records) and the kraft.version the control records set."""

    def __init__(self, catalog: Catalog, image: MetadataImage = EMPTY_IMAGE, kraft_version: int = 0):
        self.catalog = catalog
        self.image = image
        self.kraft_version = kraft_version
        self.transaction_start_offset: int | None = None
        self._pending: list[LogEntry | Payload] = []
        #: Partitions by replica role, built on first use and advanced with every batch.
        self.replicas = ReplicaIndex()

    def replay_batch(self, records: Sequence[LogEntry | Payload], *, base_offset: int, epoch: int, timestamp: int,
                     control: bool = False) -> MetadataDelta | None:
        """Replay one batch's records (LogEntry or Payload), in order; the delta applied (None
        for a control batch or no records)."""
        if not records:
            return None
        if control:
            for r in records:
                self._read_control(r)
            return None
        delta = MetadataDelta(self.image, self.catalog)
        if self.transaction_start_offset is None and not any(t.name in TRANSACTION_RECORDS
                                                             for t in {r.record_type for r in records}):
            delta.replay_all(records)  # (the same as replay() on each; topic and partition records in bulk)
        else:
            for i, r in enumerate(records):
                name = r.record_type.name
                if name in TRANSACTION_RECORDS:
                    self._marker(name, base_offset + i, delta)
                elif self.transaction_start_offset is not None:
                    self._pending.append(r)
                else:
                    delta.replay(r)
        last = base_offset + len(records) - 1
        before = self.image
        provenance = before.provenance
        if self.transaction_start_offset is None:
            provenance = MetadataProvenance(last, epoch, timestamp, True)
        self.image = delta.apply(provenance)
        if self.image.topics is not before.topics:
            self.replicas.follow(delta.topics, self.image.topics)
        return delta

    def rebase(self, image: MetadataImage) -> None:
        """Stand on `image`, which the caller found equal (metadata and provenance) to this
        state's image but another object: the controller then shares image objects with the
        loaders holding it (kraftsim.sim.node.commit_share). The replica index describes the
        old object, so it is rebuilt on its next use."""
        if image is not self.image:
            self.image = image
            self.replicas.forget()

    def _read_control(self, record: LogEntry | Payload) -> None:
        if record.record_type.name == "KRaftVersionRecord":
            self.kraft_version = record.message.k_raft_version

    def _marker(self, name: str, offset: int, delta: MetadataDelta) -> None:
        if name == "BeginTransactionRecord":
            if self.transaction_start_offset is not None:
                raise KraftsimError(f"BeginTransactionRecord at offset {offset} while the transaction begun at "
                                    f"offset {self.transaction_start_offset} is still in progress")
            self.transaction_start_offset = offset
            return
        if self.transaction_start_offset is None:
            raise KraftsimError(f"{name} at offset {offset} without a transaction in progress")
        if name == "EndTransactionRecord":
            delta.replay_all(self._pending)
        self._pending = []
        self.transaction_start_offset = None

    def replay_log(self, log: MetadataLog, registry: Registry | None = None) -> "ReplayState":
        """Load the newest snapshot at or above the log start (if any), then every batch after it."""
        start = log.log_start_offset
        snap = log.read_latest_snapshot(registry)
        if snap is not None:
            sid = snap.snapshot_id
            assert sid is not None  # the log names its snapshots by id
            delta = MetadataDelta(self.image, self.catalog)
            delta.replay_all(self._metadata_entries(snap.entries()))  # (the same as replay() on each, in bulk)
            delta.finish_snapshot()
            self.image = delta.apply(MetadataProvenance(sid.end_offset - 1, sid.epoch,
                                                        snap.last_contained_log_timestamp, True))
            self.replicas.forget()
            start = sid.end_offset
        return self.replay_from(log, start, registry)

    def _metadata_entries(self, entries: Iterable[LogEntry]) -> Iterator[LogEntry]:
        """`entries` but the control records, which are read as they pass (a snapshot's
        kraft.version), in order."""
        for e in entries:
            if e.control:
                self._read_control(e)
            else:
                yield e

    def replay_from(self, log: MetadataLog, start: int, registry: Registry | None = None) -> "ReplayState":
        """Replay the log's batches from offset `start` on (this state holds what is below it)."""
        for fb in log.batches(start):
            entries = [e for e in decode_file_batch(fb, registry) if e.offset >= start]
            if entries:
                b = fb.batch
                self.replay_batch(entries, base_offset=entries[0].offset, epoch=b.partition_leader_epoch,
                                  timestamp=b.max_timestamp, control=b.is_control)
        return self

    def copy(self) -> "ReplayState":
        """An independent state at the same point (the image is immutable and shared)."""
        other = ReplayState(self.catalog, self.image, self.kraft_version)
        other.transaction_start_offset = self.transaction_start_offset
        other._pending = list(self._pending)
        return other


def replay_log(log: MetadataLog, catalog: Catalog | None = None, registry: Registry | None = None) -> ReplayState:
    """Replay a whole metadata log from scratch (what a new standby controller does)."""
    cat = catalog if catalog is not None else default_catalog()
    return ReplayState(cat).replay_log(log, registry or cat.record_registry())


class BatchObserver(Protocol):
    """Told about each metadata batch the controller appends and replays (`_commit`).

    Why: the nodes' loaders replay the same batch once it commits; an observer can hand them
    what the controller got instead (kraftsim.sim.node.commit_share). `prepare` runs before the
    replay (it may `rebase` the state onto an equal image object), `replayed` after it."""

    def prepare(self, state: ReplayState, base_offset: int) -> None: ...

    def replayed(self, raw: bytes, records: Sequence[LogEntry | Payload], base_offset: int, epoch: int,
                 before: MetadataImage, delta: MetadataDelta, state: ReplayState) -> None: ...


class QuorumController:
    """The active controller: node id, software (supported ranges), log, epoch, clock, config.

    `catalog` is the release line the controller runs (e.g. `default_catalog().at_release("4.1")`);
    its advertised ranges are `supported`, by default the line's (with `unstable`, up to
    the latest testing levels). The existing log is replayed when the controller is made
    (`resume`: from a kept ReplayState of its first offsets, the rest only).
    `raft_upgrade` stands for the raft layer's kraft.version upgrade (default: every voter
    must support the level); `upgrade_voters` gives the VotersRecord raft writes with an
    upgrade to kraft.version 1 (the voter set with the directory ids the leader learned; none
    when not given); `max_batch_bytes` is Kafka's batch limit unless a test lowers it.
    """

    def __init__(self, node_id: int, log: MetadataLog, *, clock: Clock, catalog: Catalog | None = None,
                 supported: Mapping[str, Range] | None = None, unstable: bool = False, epoch: int = 1,
                 config: ControllerConfig = ControllerConfig(), static_voters: Iterable[int] = (),
                 kraft_version: int = 0, raft_upgrade: KRaftUpgrade | None = None,
                 upgrade_voters: Callable[[], list[Payload]] | None = None,
                 max_batch_bytes: int = MAX_BATCH_SIZE_BYTES,
                 token_settings: delegation_tokens.DelegationTokenSettings = delegation_tokens.DelegationTokenSettings(),
                 resume: tuple[ReplayState, int] | None = None):
        self.node_id = node_id
        self.log = log
        self.clock = clock
        self.catalog = catalog if catalog is not None else default_catalog()
        self.supported: dict[str, Range] = dict(supported if supported is not None
                                                else self.catalog.supported_features(unstable))
        self.config = config
        self.static_voters = tuple(static_voters)
        self.registry = self.catalog.record_registry()
        self.raft_upgrade = raft_upgrade
        self.upgrade_voters = upgrade_voters
        self.max_batch_bytes = max_batch_bytes
        if resume is not None:  # a state the caller kept of this log's first `resume[1]` offsets
            self.state = resume[0].copy().replay_from(log, resume[1], self.registry)
        else:
            self.state = ReplayState(self.catalog, kraft_version=kraft_version).replay_log(log, self.registry)
        last_epoch = max((e.epoch for e in log.leader_epochs()), default=-1)
        if epoch < last_epoch:
            raise KraftsimError(f"controller {node_id} cannot lead in epoch {epoch}: the log already holds "
                                f"epoch {last_epoch}")
        self.epoch = epoch
        self.token_settings = token_settings
        self.active = False
        self.last_noop_ms = 0
        #: (catalog, metadata.version, the NoOpRecord result) last written (maybe_write_noop).
        self._noop_kept: tuple[Catalog, object, ControllerResult] | None = None
        #: Soft state about brokers' sessions, rebuilt from the image on activation (as Kafka does).
        self.heartbeats = BrokerHeartbeats(config.broker_session_timeout_ms)
        #: Told about each metadata batch `_commit` appends (None: nobody).
        self.observer: BatchObserver | None = None

    # ------------------------------------------------------------------ state

    @property
    def image(self) -> MetadataImage:
        return self.state.image

    @property
    def kraft_version(self) -> int:
        return self.state.kraft_version

    @property
    def transaction_start_offset(self) -> int | None:
        return self.state.transaction_start_offset

    def context(self) -> ControllerContext:
        """The context a rule decides against now."""
        return ControllerContext(
            node_id=self.node_id, supported=self.supported, image=self.state.image, catalog=self.catalog,
            config=self.config, static_voters=self.static_voters, next_write_offset=self.log.log_end_offset,
            kraft_version=self.state.kraft_version, now_ms=self.clock(), replicas=self.state.replicas)

    # ------------------------------------------------------------------ leadership

    def write_leader_change(self, voters: Iterable[int] | None = None) -> None:
        """The LeaderChangeMessage raft writes at the start of an epoch (control batch), so a
        simulated log begins as Kafka's do. Voters default to the static voters, else this node."""
        ids = sorted(voters if voters is not None else (self.static_voters or (self.node_id,)))
        voter = self.registry["LeaderChangeMessage"].nested["Voter"]
        self._append_control("LeaderChangeMessage", version=0, leader_id=self.node_id,
                             voters=[voter(voter_id=i) for i in ids], granting_voters=[voter(voter_id=i) for i in ids])

    def _append_control(self, record_type: str, *more: Payload, **fields: object) -> None:
        """One control batch, as raft writes it: one record, then `more` records."""
        records = [payload(self.registry, record_type, 0, **fields), *more]
        base, now = self.log.log_end_offset, self.clock()
        self.log.append(encode_control_batch(base, records, epoch=self.epoch, timestamp=now))
        self.state.replay_batch(records, base_offset=base, epoch=self.epoch, timestamp=now, control=True)

    def activate(self, bootstrap: BootstrapMetadata | None = None) -> ControllerResult:
        """Become active: write the activation records for what the replayed log left.

        Without a bootstrap, an empty log is bootstrapped at the line's latest production
        metadata.version. Raises ActivationError where Kafka cannot continue.
        """
        boot = bootstrap if bootstrap is not None else activation.default_bootstrap(self.catalog)
        ctx = self.context()
        result = activation.activation_records(ctx, boot, self.state.transaction_start_offset)
        self._commit(result, ctx.now_ms)
        self.active = True
        self.last_noop_ms = ctx.now_ms
        self.heartbeats = BrokerHeartbeats.from_image(
            self.image, ctx.now_ms, self.config.broker_session_timeout_ms,
            fenced_too=self.catalog.policy("activation_sessions") == "every-broker")
        return result

    # ------------------------------------------------------------------ operations

    def execute(self, rule: Rule) -> ControllerResult:
        """Run a rule against the current state and commit what it decides."""
        return self._execute(rule)

    def _execute(self, rule: Rule, before_commit: Callable[[], None] | None = None) -> ControllerResult:
        if not self.active:
            raise ControllerNotActive(f"controller {self.node_id} is not active: call activate() first")
        ctx = self.context()
        result = rule(ctx)
        if result.ok:
            if before_commit is not None:
                before_commit()
            try:
                self._commit(result, ctx.now_ms)
            except RecordBatchTooLarge as e:
                return refused(ApiError("RECORD_LIST_TOO_LARGE", str(e)))
        return result

    def update_features(self, request: UpdateFeaturesRequest) -> ControllerResult:
        """UpdateFeatures. A kraft.version upgrade that raft accepts is recorded as raft does it
        (LeaderState.maybeAppendUpgradedKRaftVersion): one control batch ahead of the
        controller's NoOpRecord, holding the KRaftVersionRecord and, from `upgrade_voters`,
        the VotersRecord of the static voter set; only when the whole request succeeds."""
        check = self.raft_upgrade or voters_support_kraft_upgrade
        upgraded: list[int] = []

        def raft(ctx: ControllerContext, new_level: int, validate_only: bool) -> None:
            level = new_level
            check(ctx, level, validate_only)
            # Before 4.1 the raft layer answers the upgrade as done and keeps its kraft.version.
            applied = ctx.catalog.policy("kraft_version_upgrade") == "applied"
            if applied and not validate_only and level != ctx.kraft_version:
                upgraded.append(level)

        def write_kraft_version() -> None:
            if upgraded:
                voters = self.upgrade_voters() if self.upgrade_voters is not None else []
                self._append_control("KRaftVersionRecord", *voters, version=0, k_raft_version=upgraded[-1])

        return self._execute(lambda ctx: update_features(ctx, request, raft), write_kraft_version)

    # Cluster control (kraftsim.controller.cluster_control); these use the heartbeat soft state.

    def register_broker(self, request: cluster_control.BrokerRegistrationRequest) -> ControllerResult:
        return self.execute(lambda ctx: cluster_control.register_broker(ctx, request, self.heartbeats))

    def register_controller(self, request: cluster_control.ControllerRegistrationRequest) -> ControllerResult:
        return self.execute(lambda ctx: cluster_control.register_controller(ctx, request))

    def broker_heartbeat(self, request: cluster_control.BrokerHeartbeatRequest) -> ControllerResult:
        return self.execute(lambda ctx: cluster_control.broker_heartbeat(ctx, request, self.heartbeats))

    def unregister_broker(self, broker_id: int) -> ControllerResult:
        return self.execute(lambda ctx: cluster_control.unregister_broker(ctx, broker_id, self.heartbeats))

    def unregister_controller(self, controller_id: int) -> ControllerResult:
        return self.execute(lambda ctx: cluster_control.unregister_controller(ctx, controller_id))

    def expire_sessions(self) -> ControllerResult:
        return self.execute(lambda ctx: cluster_control.expire_sessions(ctx, self.heartbeats))

    # Topics, partitions and the smaller families.

    def create_topics(self, request: topics.CreateTopicsRequest) -> ControllerResult:
        return self.execute(lambda ctx: topics.create_topics(ctx, request))

    def delete_topics(self, request: topics.DeleteTopicsRequest) -> ControllerResult:
        return self.execute(lambda ctx: topics.delete_topics(ctx, request))

    def alter_partition(self, request: replication.AlterPartitionRequest) -> ControllerResult:
        return self.execute(lambda ctx: replication.alter_partition(ctx, request))

    def alter_partition_reassignments(self, request: reassignments.AlterPartitionReassignmentsRequest
                                      ) -> ControllerResult:
        return self.execute(lambda ctx: reassignments.alter_partition_reassignments(ctx, request))

    def elect_leaders(self, request: leader_election.ElectLeadersRequest) -> ControllerResult:
        return self.execute(lambda ctx: leader_election.elect_leaders(ctx, request))

    def incremental_alter_configs(self, request: configs.IncrementalAlterConfigsRequest) -> ControllerResult:
        return self.execute(lambda ctx: configs.incremental_alter_configs(ctx, request))

    def legacy_alter_configs(self, request: configs.LegacyAlterConfigsRequest) -> ControllerResult:
        return self.execute(lambda ctx: configs.legacy_alter_configs(ctx, request))

    def alter_client_quotas(self, request: client_quotas.AlterClientQuotasRequest) -> ControllerResult:
        return self.execute(lambda ctx: client_quotas.alter_client_quotas(ctx, request))

    def allocate_producer_ids(self, request: producer_ids.AllocateProducerIdsRequest) -> ControllerResult:
        return self.execute(lambda ctx: producer_ids.allocate_producer_ids(ctx, request))

    def create_acls(self, request: acls.CreateAclsRequest) -> ControllerResult:
        return self.execute(lambda ctx: acls.create_acls(ctx, request))

    def delete_acls(self, request: acls.DeleteAclsRequest) -> ControllerResult:
        return self.execute(lambda ctx: acls.delete_acls(ctx, request))

    def alter_user_scram_credentials(self, request: scram.AlterUserScramCredentialsRequest) -> ControllerResult:
        return self.execute(lambda ctx: scram.alter_user_scram_credentials(ctx, request))

    def create_delegation_token(self, request: delegation_tokens.CreateDelegationTokenRequest) -> ControllerResult:
        return self.execute(lambda ctx: delegation_tokens.create_delegation_token(ctx, request, self.token_settings))

    def renew_delegation_token(self, request: delegation_tokens.RenewDelegationTokenRequest) -> ControllerResult:
        return self.execute(lambda ctx: delegation_tokens.renew_delegation_token(ctx, request, self.token_settings))

    def expire_delegation_token(self, request: delegation_tokens.ExpireDelegationTokenRequest) -> ControllerResult:
        return self.execute(lambda ctx: delegation_tokens.expire_delegation_token(ctx, request, self.token_settings))

    def maybe_write_noop(self) -> ControllerResult | None:
        """Write the periodic NoOpRecord if `metadata.max.idle.interval.ms` has passed."""
        if not self.active:
            raise ControllerNotActive(f"controller {self.node_id} is not active: call activate() first")
        ctx = self.context()
        if not activation.noop_due(ctx.now_ms, self.last_noop_ms, ctx.config.max_idle_interval_ms):
            return None  # (activation.maybe_noop's test)
        # The records are the same every time for a catalog and metadata.version (a frozen
        # result): worked out once, not every metadata.max.idle.interval.ms.
        mv = ctx.metadata_version
        kept = self._noop_kept
        if kept is not None and kept[0] is ctx.catalog and kept[1] == mv:
            result = kept[2]
        else:
            result = activation.noop_records(ctx)
            self._noop_kept = (ctx.catalog, mv, result)
        self.last_noop_ms = ctx.now_ms
        self._commit(result, ctx.now_ms)
        return result

    # ------------------------------------------------------------------ committing

    def _commit(self, result: ControllerResult, now_ms: int) -> None:
        """Append the records and replay each batch as it lands.

        Atomic: all records in one batch (RecordBatchTooLarge when they do not fit).
        Non-atomic: record by record into the open batch, a new batch only when the next
        record would pass Kafka's maximum batch size.
        """
        if not result.records:
            return
        acc = BatchAccumulator(epoch=self.epoch, clock=lambda: now_ms, base_offset=self.log.log_end_offset,
                               max_batch_bytes=self.max_batch_bytes)
        if result.atomic:
            acc.append(result.records)
        else:
            try:  # the usual case: all fit one batch, where record-by-record appends put them too
                acc.append(result.records)
            except RecordBatchTooLarge:  # (a fresh accumulator is left as it was)
                for p in result.records:
                    acc.append([p])
        position = 0
        observer, state = self.observer, self.state
        for raw in acc.drain(force=True):
            entry = self.log.append(raw)
            count = entry.last_offset - entry.base_offset + 1
            if observer is not None:
                observer.prepare(state, entry.base_offset)
            before, records = state.image, result.records[position:position + count]
            delta = state.replay_batch(records, base_offset=entry.base_offset, epoch=self.epoch, timestamp=now_ms)
            if observer is not None and delta is not None:
                observer.replayed(raw, records, entry.base_offset, self.epoch, before, delta, state)
            position += count
