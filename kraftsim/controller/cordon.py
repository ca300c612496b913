"""Cordoned log directories (KIP-1066, Kafka 4.3): what the controller records.

A broker's `cordoned.log.dirs` (a static or dynamic broker config; `*` cordons them all)
names log directories that take no new replicas. The broker reports the cordoned
directory ids when it registers (RegisterBrokerRecord v4 keeps them) and in every
heartbeat; when they differ from its registration the controller writes
BrokerRegistrationChangeRecord v3 with the new list. Below 4.3-IV0 the broker reports
none and nothing is recorded; a static setting then has no effect, and setting the
config dynamically is refused. Placement skips a broker whose directories are all
cordoned (replication.usable_brokers), so a cluster with no other broker cannot create
topics or partitions ("InvalidReplicationFactorException").
"""

from __future__ import annotations

from typing import Sequence

from kraftsim.controller.api_errors import NONE, ApiError
from kraftsim.controller.context import ControllerContext, registry_of
from kraftsim.controller.result import payload
from kraftsim.image import BROKER, ConfigurationsImage
from kraftsim.protocol.entries import Payload
from kraftsim.protocol.primitives import Uuid
from kraftsim.versions import MetadataVersion

CORDONED_LOG_DIRS = "cordoned.log.dirs"
#: ServerLogConfigs.CORDONED_LOG_DIRS_ALL: cordon every log directory.
CORDON_ALL = "*"
#: ConfigurationControlManager's INVALID_CONFIG refusal of any change to a broker's
#: cordoned.log.dirs below 4.3-IV0, a removal included (read from the 4.3.1 and 4.4.0 jars).
NOT_BEFORE_4_3_IV0 = (f"The {CORDONED_LOG_DIRS} configuration value cannot be set because it requires "
                      "metadata.version >= 4.3-IV0")


def cordoning_supported(ctx: ControllerContext, mv: MetadataVersion | None) -> bool:
    """Kafka's MetadataVersion.isCordonedLogDirsSupported."""
    return mv is not None and ctx.catalog.supports("cordoned_log_dirs", mv)


def registration_cordoned(ctx: ControllerContext, mv: MetadataVersion,
                          reported: Sequence[Uuid] | None) -> list[Uuid] | None:
    """CordonedLogDirs of a new RegisterBrokerRecord: what the broker reported, from 4.3-IV0."""
    if reported is None or not cordoning_supported(ctx, mv):
        return None
    return list(reported)


def heartbeat_cordon_records(ctx: ControllerContext, mv: MetadataVersion, broker_id: int, epoch: int,
                             reported: Sequence[Uuid] | None) -> list[Payload]:
    """BrokerRegistrationChangeRecord v3 when the cordoned directories a heartbeat reports
    differ from the registration's (None: the heartbeat reported nothing)."""
    if reported is None or not cordoning_supported(ctx, mv):
        return []
    reg = ctx.image.cluster.broker(broker_id)
    if reg is None or tuple(reported) == (reg.cordoned_directories or ()):
        return []
    return [payload(registry_of(ctx), "BrokerRegistrationChangeRecord", 3, broker_id=broker_id,
                    broker_epoch=epoch, cordoned_log_dirs=list(reported))]


def config_error(ctx: ControllerContext, mv: MetadataVersion | None, key: str) -> ApiError:
    """The dynamic `cordoned.log.dirs` needs 4.3-IV0: setting it and removing it alike."""
    if key == CORDONED_LOG_DIRS and not cordoning_supported(ctx, mv):
        return ApiError("INVALID_CONFIG", NOT_BEFORE_4_3_IV0)
    return NONE


def configured_cordoned_dirs(image_configs: ConfigurationsImage, broker_id: int) -> str | None:
    """The broker's dynamic `cordoned.log.dirs`: its own (BROKER resource "<id>"), else the
    cluster-wide default (BROKER resource ""); None when neither sets it."""
    own = image_configs.config(BROKER, str(broker_id)).get(CORDONED_LOG_DIRS)
    return own if own is not None else image_configs.config(BROKER, "").get(CORDONED_LOG_DIRS)


def cordoned_by_config(value: str | None, directories: Sequence[tuple[str, Uuid]]) -> tuple[Uuid, ...]:
    """The ids of the broker's log directories (path, id) that a `cordoned.log.dirs` value
    names: `*` names them all; otherwise the comma-separated paths."""
    if value is None or not value.strip():
        return ()
    entries = {e.strip() for e in value.split(",") if e.strip()}
    if CORDON_ALL in entries:
        return tuple(d for _, d in directories)
    return tuple(d for path, d in directories if path in entries or path.rstrip("/") in entries)
