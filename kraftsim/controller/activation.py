"""What a controller writes when it becomes active, and the NoOpRecord it writes while idle.

Activation (Kafka's ActivationRecordsGenerator) depends on what replaying the log left:

* no metadata.version finalized (an empty log): the bootstrap records, as the bootstrap
  file holds them, plus a cluster-level `min.insync.replicas` when the bootstrap enables
  ELR. From 3.6-IV1 (metadata transactions) they are wrapped in Begin/EndTransactionRecord
  and may span batches; below it they are one atomic batch. If a bootstrap transaction was
  begun but never ended, it is aborted first and the bootstrap written again.
* a finalized metadata.version: only an in-flight transaction needs an answer, an
  AbortTransactionRecord ("Controller failover").

Kafka 3.5-3.9 also wrote ZkMigrationStateRecord(NONE) after the bootstrap records of a new
cluster; a release line does that when its catalog policy `activation_zk_migration_state`
is "write" (a catalog without the policy follows today's Kafka, which writes none).

The idle NoOpRecord (KIP-835) is written every `metadata.max.idle.interval.ms`, so a quiet
log still advances and followers can tell a live leader from a dead one.
"""

from __future__ import annotations

import msgspec

from kraftsim.controller.context import MIN_INSYNC_REPLICAS, ControllerContext
from kraftsim.controller.result import ControllerResult, accepted, controller_record
from kraftsim.errors import KraftsimError
from kraftsim.image import BROKER
from kraftsim.image import ELR_FEATURE
from kraftsim.protocol.entries import LogEntry, Payload
from kraftsim.storage.bootstrap import BootstrapMetadata, bootstrap_from_records
from kraftsim.versions import FEATURE_NAME as MV_NAME, Catalog

BOOTSTRAP_TRANSACTION = "Bootstrap records"
FAILOVER_REASON = "Controller failover"
DEFAULT_BOOTSTRAP_SOURCE = "the default bootstrap"
ZK_STATE_POLICY = "activation_zk_migration_state"
ZK_MIGRATION_STATE_NONE = 0


class ActivationError(KraftsimError):
    """The controller cannot become active (Kafka's RuntimeException; the text is Kafka's)."""


class Activation(msgspec.Struct, frozen=True):
    """The activation's response: the line Kafka logs when it activates."""

    message: str


def default_bootstrap(catalog: Catalog, metadata_version: int | None = None) -> BootstrapMetadata:
    """The bootstrap used without a bootstrap.checkpoint: only metadata.version, by default
    the line's latest production level (Kafka's BootstrapMetadata.fromVersion)."""
    level = catalog.latest_production.level if metadata_version is None else catalog.metadata_version(metadata_version).level
    rt = catalog.record_registry()["FeatureLevelRecord"]
    entry = LogEntry(0, 0, 0, False, rt, 0, rt.new(name=MV_NAME, feature_level=level))
    return bootstrap_from_records([entry], DEFAULT_BOOTSTRAP_SOURCE)


def writes_zk_migration_state(catalog: Catalog, metadata_version: int) -> bool:
    """Whether this line writes ZkMigrationStateRecord(NONE) when it bootstraps a new cluster."""
    policies = dict(catalog.release.policies)
    return policies.get(ZK_STATE_POLICY) == "write" and catalog.supports("migration", metadata_version)


def activation_records(ctx: ControllerContext, bootstrap: BootstrapMetadata,
                       transaction_start_offset: int | None = None) -> ControllerResult:
    """The records that activate the controller, from the state replay left in `ctx`.

    `transaction_start_offset` is the offset of the BeginTransactionRecord of a transaction
    the log left open (None when there is none). Raises ActivationError where Kafka cannot
    continue.
    """
    if ctx.metadata_version is None:
        return records_for_empty_log(ctx, bootstrap, transaction_start_offset)
    return records_for_non_empty_log(ctx, transaction_start_offset)


def records_for_empty_log(ctx: ControllerContext, bootstrap: BootstrapMetadata,
                          transaction_start_offset: int | None) -> ControllerResult:
    cat = ctx.catalog
    mv = cat.metadata_version(bootstrap.metadata_version_level)
    transactional = cat.supports("metadata_transactions", mv)
    records: list[Payload] = []
    message = "Performing controller activation. "
    count = len(bootstrap.records)
    if transaction_start_offset is not None:
        if not transactional:
            raise ActivationError(f"Detected partial bootstrap records transaction at {transaction_start_offset}, "
                                  f"but the metadata.version {mv} does not support transactions. Cannot continue.")
        message += (f"Aborting partial bootstrap records transaction at offset {transaction_start_offset}. "
                    f"Re-appending {count} bootstrap record(s) in new metadata transaction at metadata.version "
                    f"{mv} from bootstrap source '{bootstrap.source}'. ")
        records.append(controller_record(cat, mv.level, "AbortTransactionRecord", reason=FAILOVER_REASON))
        records.append(controller_record(cat, mv.level, "BeginTransactionRecord", name=BOOTSTRAP_TRANSACTION))
    else:
        message += f"The metadata log appears to be empty. Appending {count} bootstrap record(s) "
        if transactional:
            records.append(controller_record(cat, mv.level, "BeginTransactionRecord", name=BOOTSTRAP_TRANSACTION))
            message += "in metadata transaction "
        message += f"at metadata.version {mv} from bootstrap source '{bootstrap.source}'. "
    records.extend(bootstrap.payloads())
    if writes_zk_migration_state(cat, mv.level):
        message += "Setting the ZK migration state to NONE since this is a de-novo KRaft cluster. "
        records.append(controller_record(cat, mv.level, "ZkMigrationStateRecord",
                                         zk_migration_state=ZK_MIGRATION_STATE_NONE))
    if bootstrap.feature_levels().get(ELR_FEATURE, 0) > 0:
        records.append(controller_record(cat, mv.level, "ConfigRecord", resource_type=BROKER, resource_name="",
                                         name=MIN_INSYNC_REPLICAS, value=str(ctx.config.min_insync_replicas)))
    response = Activation(message.strip())
    if transactional:
        records.append(controller_record(cat, mv.level, "EndTransactionRecord"))
        return accepted(records, response, atomic=False)
    return accepted(records, response, atomic=True)


def records_for_non_empty_log(ctx: ControllerContext, transaction_start_offset: int | None) -> ControllerResult:
    cat = ctx.catalog
    mv = cat.metadata_version(ctx.finalized_level)
    records: list[Payload] = []
    message = "Performing controller activation. "
    if transaction_start_offset is not None:
        if not cat.supports("metadata_transactions", mv):
            raise ActivationError(f"Detected in-progress transaction at offset {transaction_start_offset}, but the "
                                  f"metadata.version {mv} does not support transactions. Cannot continue.")
        message += f"Aborting in-progress metadata transaction at offset {transaction_start_offset}. "
        records.append(controller_record(cat, mv.level, "AbortTransactionRecord", reason=FAILOVER_REASON))
    return accepted(records, Activation(message.strip()), atomic=True)


# ---------------------------------------------------------------------------- idle NoOpRecord


def noop_due(now_ms: int, last_noop_ms: int, interval_ms: int) -> bool:
    """Whether the periodic NoOpRecord is due; an interval of 0 turns it off."""
    return interval_ms > 0 and now_ms - last_noop_ms >= interval_ms


def noop_records(ctx: ControllerContext) -> ControllerResult:
    """One NoOpRecord, when the metadata.version has the record type (3.3-IV1 and later)."""
    mv = ctx.metadata_version
    if mv is None or "NoOpRecord" not in ctx.catalog.record_types(mv):
        return accepted(())
    return accepted([controller_record(ctx.catalog, mv, "NoOpRecord")], atomic=False)


def maybe_noop(ctx: ControllerContext, last_noop_ms: int) -> ControllerResult | None:
    """The NoOpRecord to write at `ctx.now_ms`, or None when it is not yet due."""
    if not noop_due(ctx.now_ms, last_noop_ms, ctx.config.max_idle_interval_ms):
        return None
    return noop_records(ctx)
