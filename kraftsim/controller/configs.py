"""Dynamic configuration: Kafka's IncrementalAlterConfigs and (legacy) AlterConfigs on the controller.

Each operation (SET, DELETE, APPEND, SUBTRACT) becomes a ConfigRecord when it changes the
value, and always for BROKER resources (KAFKA-14136: brokers reload on every record). The
legacy AlterConfigs names a resource's whole set: each named config is set as above, and
each config the resource holds but the request leaves out is deleted (its records after the
others, in the order the controller's map of the resource's configs lists them).
The rules a resource is checked against, in Kafka's order: the ELR rules on
min.insync.replicas, the value size, the resource name, then its existence. With ELR on,
a change to min.insync.replicas also clears the ELRs it may invalidate (ClearElrRecord).
A topic's resulting configs are checked against its release's definitions, as Kafka's
controller checks them (kraftsim.controller.topic_configs), and so are a client-metrics
subscription's (kraftsim.controller.client_metrics) and a group's (kraftsim.controller.group_configs;
a release before 4.0 has no GROUP type). Broker configs are not (Kafka's controller checks only
the broker's id).
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Mapping
from functools import cache
from importlib import resources

import msgspec

from kraftsim.controller import cordon
from kraftsim.controller.api_errors import NONE, ApiError
from kraftsim.controller.client_metrics import client_metrics_check
from kraftsim.controller.group_configs import group_config_check, has_group_configs
from kraftsim.controller.context import MIN_INSYNC_REPLICAS, ControllerContext, metadata_version_of, registry_of
from kraftsim.controller.partition_change import elr_enabled
from kraftsim.controller.topic_configs import topic_config_error
from kraftsim.storage import topic_name_error
from kraftsim.controller.result import NO_METADATA_VERSION, ControllerResult, accepted, payload, refused
from kraftsim.image import BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP, TOPIC
from kraftsim.javacompat import parse_int, string_hash, string_hash_order, timeline_hash_order
from kraftsim.protocol.entries import Payload

OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3
_OP_NAMES = {OP_SET: "SET", OP_DELETE: "DELETE", OP_APPEND: "APPEND", OP_SUBTRACT: "SUBTRACT"}
#: Kafka's ConfigResource.Type names, by id.
RESOURCE_TYPE_NAMES = {0: "UNKNOWN", TOPIC: "TOPIC", BROKER: "BROKER", BROKER_LOGGER: "BROKER_LOGGER",
                       CLIENT_METRICS: "CLIENT_METRICS", GROUP: "GROUP"}
MAX_VALUE_LENGTH = 32767  # Short.MAX_VALUE


@cache
def list_keys() -> dict[str, dict[str, str]]:
    """LIST-typed config keys by resource type name, with their defaults (data/configs.toml)."""
    text = resources.files("kraftsim.controller").joinpath("data/configs.toml").read_text("utf-8")
    keys: dict[str, dict[str, str]] = tomllib.loads(text)["list_keys"]
    return keys


class AlterableConfig(msgspec.Struct, frozen=True):
    name: str
    config_operation: int = OP_SET
    value: str | None = None


class AlterConfigsResource(msgspec.Struct, frozen=True):
    resource_type: int
    resource_name: str
    configs: tuple[AlterableConfig, ...]


class IncrementalAlterConfigsRequest(msgspec.Struct, frozen=True):
    resources: tuple[AlterConfigsResource, ...]
    validate_only: bool = False


class LegacyAlterConfigsRequest(msgspec.Struct, frozen=True):
    """AlterConfigs, the legacy API: each resource's configs become the ones named (their
    values; `AlterableConfig.config_operation` is not read, a None value deletes)."""

    resources: tuple[AlterConfigsResource, ...]
    validate_only: bool = False


class AlterConfigsResourceResponse(msgspec.Struct, frozen=True):
    resource_type: int
    resource_name: str
    error_code: int = 0
    error_message: str | None = None


class IncrementalAlterConfigsResponse(msgspec.Struct, frozen=True):
    responses: tuple[AlterConfigsResourceResponse, ...]


def _resource_name_error(ctx: ControllerContext, rtype: int, name: str) -> ApiError:
    """Kafka's ControllerConfigurationValidator (resource names) and existence checker."""
    if rtype == TOPIC:
        if not name:
            return ApiError("INVALID_REQUEST", "Default topic resources are not allowed.")
        text = topic_name_error(name)
        if text is not None:
            return ApiError("INVALID_TOPIC_EXCEPTION", text)
        if ctx.image.topics.get_topic_by_name(name) is None:
            return ApiError("UNKNOWN_TOPIC_OR_PARTITION", f"The topic '{name}' does not exist.")
        return NONE
    if rtype == BROKER:
        if not name:
            return NONE  # the cluster-wide default
        node = parse_int(name)  # (Integer.valueOf: no spaces or underscores, unlike int())
        if node is None:
            return ApiError("INVALID_REQUEST", "Unable to parse broker name as a base 10 number.")
        if node < 0:
            return ApiError("INVALID_REQUEST", "Invalid negative broker ID.")
        known = (ctx.image.cluster.broker(node) is not None or ctx.image.cluster.controller(node) is not None
                 or node in ctx.static_voters or node == ctx.node_id)
        if not known:
            return ApiError("BROKER_ID_NOT_REGISTERED", f"No node with id {node} found.")
        return NONE
    if rtype == GROUP and not has_group_configs(ctx.catalog.release.name):
        return ApiError("INVALID_REQUEST", "Unknown resource type UNKNOWN")  # (id 32 is no type it knows)
    if rtype == GROUP and not name:
        return ApiError("INVALID_REQUEST", "Default group resources are not allowed.")
    if rtype in (CLIENT_METRICS, GROUP):
        return NONE
    return ApiError("INVALID_REQUEST", f"Unknown resource type {RESOURCE_TYPE_NAMES.get(rtype, 'UNKNOWN')}")


def _new_value(rtype: int, key: str, op: int, current: str | None, value: str | None) -> tuple[str | None, ApiError]:
    if op == OP_SET:
        return value, NONE
    if op == OP_DELETE:
        return None, NONE
    if op in (OP_APPEND, OP_SUBTRACT):
        defaults = list_keys().get(RESOURCE_TYPE_NAMES.get(rtype, ""), {})
        if key not in defaults:
            return None, ApiError("INVALID_CONFIG", f"Can't {_OP_NAMES[op]} to key {key} because its type is not LIST.")
        base = current if current is not None else defaults[key]
        parts = [p for p in base.split(",") if p]
        for v in (value or "").split(","):
            if op == OP_APPEND and v not in parts:
                parts.append(v)
            elif op == OP_SUBTRACT and v in parts:
                parts.remove(v)
        return ",".join(parts), NONE
    return None, ApiError("INVALID_REQUEST", f"Unknown alter config operation {op}")


def _in_hash_map_order(configs: tuple[AlterableConfig, ...]) -> list[AlterableConfig]:
    """The changes as Kafka's controller takes them: put by name into a HashMap (ControllerApis,
    and the CreateTopics path's), so a name given twice keeps its first place and its last
    change, and the names go in the map's order, which is also the order of their records."""
    last = {c.name: c for c in configs}
    return [last[name] for name in string_hash_order(list(last))]


def alter_resource_records(ctx: ControllerContext, rtype: int, name: str, configs: tuple[AlterableConfig, ...],
                           *, newly_created: bool = False) -> tuple[list[Payload], ApiError]:
    """The ConfigRecords of one resource's changes, or the error that refuses them all."""
    current = ctx.image.configs.config(rtype, name)
    changed: list[tuple[str, str | None]] = []
    for c in _in_hash_map_order(configs):
        old = current.get(c.name)
        new, err = _new_value(rtype, c.name, c.config_operation, old, c.value)
        if not err.ok:
            return [], err
        if new != old or rtype == BROKER:
            changed.append((c.name, new))
    return _checked_records(ctx, rtype, name, current, changed, newly_created=newly_created)


def replace_resource_records(ctx: ControllerContext, rtype: int, name: str,
                             configs: tuple[AlterableConfig, ...]) -> tuple[list[Payload], ApiError]:
    """The ConfigRecords of a legacy AlterConfigs of one resource (its configs become
    `configs`' values), or the error that refuses them all: the named ones as
    `alter_resource_records` sets them, then a deletion of each config held but not named."""
    current = ctx.image.configs.config(rtype, name)
    named = _in_hash_map_order(configs)
    wanted = {c.name for c in named}
    changed = [(c.name, c.value) for c in named if c.value != current.get(c.name) or rtype == BROKER]
    # (kraftsim's image keeps a resource's configs in the order they were put: the map's history)
    changed += [(key, None) for key in timeline_hash_order(list(current), string_hash) if key not in wanted]
    return _checked_records(ctx, rtype, name, current, changed)


def _checked_records(ctx: ControllerContext, rtype: int, name: str, current: Mapping[str, str],
                     changed: list[tuple[str, str | None]], *,
                     newly_created: bool = False) -> tuple[list[Payload], ApiError]:
    """The ConfigRecords writing `changed` ((key, value or None to delete), in record order)
    to a resource holding `current`, once the controller's checks pass (validateAlterConfig)."""
    mv = metadata_version_of(ctx)
    reg = registry_of(ctx)
    records: list[Payload] = []
    elr = mv is not None and elr_enabled(ctx, mv)
    for key, value in changed:
        if elr and key == MIN_INSYNC_REPLICAS and rtype == BROKER and name:
            return [], ApiError("INVALID_CONFIG", f"Broker-level {MIN_INSYNC_REPLICAS} cannot be altered while ELR "
                                                  "is enabled.")
        if elr and key == MIN_INSYNC_REPLICAS and rtype == BROKER and not name and value is None:
            return [], ApiError("INVALID_CONFIG", f"Cluster-level {MIN_INSYNC_REPLICAS} cannot be removed while ELR "
                                                  "is enabled.")
        if rtype == BROKER:
            err = cordon.config_error(ctx, mv, key)
            if not err.ok:
                return [], err
        if value is not None and len(value) > MAX_VALUE_LENGTH:
            return [], ApiError("INVALID_CONFIG", "The configuration value cannot be added because it exceeds the "
                                                  f"maximum value size of {MAX_VALUE_LENGTH} bytes.")
    err = _resource_name_error(ctx, rtype, name)
    missing = err.name == "UNKNOWN_TOPIC_OR_PARTITION"  # (the validator's checks come before existence's)
    if not err.ok and not missing:
        return [], err
    if rtype == TOPIC:
        config_err = topic_config_error(ctx.catalog.release.name, ctx.catalog.latest_production.version,
                                        configs_after(current, changed))
        if not config_err.ok:
            return [], config_err
    if rtype == CLIENT_METRICS:
        config_err = client_metrics_check(ctx.catalog.release.name, name, configs_after(current, changed)).error
        if not config_err.ok:
            return [], config_err
    if rtype == GROUP:
        config_err = group_config_check(ctx.catalog.release.name, configs_after(current, changed)).error
        if not config_err.ok:
            return [], config_err
    if missing and not newly_created:
        return [], err
    for key, value in changed:
        records.append(payload(reg, "ConfigRecord", 0, resource_type=rtype, resource_name=name, name=key, value=value))
    return records, NONE


def incremental_configs_after(rtype: int, current: Mapping[str, str],
                              configs: tuple[AlterableConfig, ...]) -> dict[str, str]:
    """A resource's configs once IncrementalAlterConfigs' operations `configs` are applied to
    `current` (an operation the controller refuses changes nothing)."""
    changed = []
    for c in _in_hash_map_order(configs):
        new, err = _new_value(rtype, c.name, c.config_operation, current.get(c.name), c.value)
        if err.ok:
            changed.append((c.name, new))
    return configs_after(current, changed)


def configs_after(current: Mapping[str, str], changed: list[tuple[str, str | None]]) -> dict[str, str]:
    """A resource's configs once `changed` ((key, value or None to delete)) is applied to `current`."""
    after = dict(current)
    for key, value in changed:
        if value is None:
            after.pop(key, None)
        else:
            after[key] = value
    return after


def clear_elr_records(ctx: ControllerContext, config_records: list[Payload]) -> list[Payload]:
    """Kafka's createClearElrRecordsAsNeeded: with ELR on, every change of
    min.insync.replicas clears the ELRs of that topic (or of every topic)."""
    mv = metadata_version_of(ctx)
    if mv is None or not elr_enabled(ctx, mv):
        return []
    reg = registry_of(ctx)
    out = []
    for r in config_records:
        m = r.message
        if r.record_type.name == "ConfigRecord" and m.name == MIN_INSYNC_REPLICAS:
            out.append(payload(reg, "ClearElrRecord", 0, topic_name=m.resource_name if m.resource_type == TOPIC else ""))
    return out


def incremental_alter_configs(ctx: ControllerContext, req: IncrementalAlterConfigsRequest) -> ControllerResult:
    """Kafka's IncrementalAlterConfigs on the controller: per-resource results, all records
    (ConfigRecords, then any ClearElrRecords) committed atomically; none when validate_only."""
    return _alter_each(ctx, req.resources, req.validate_only, alter_resource_records)


def legacy_alter_configs(ctx: ControllerContext, req: LegacyAlterConfigsRequest) -> ControllerResult:
    """Kafka's legacy AlterConfigs on the controller: as `incremental_alter_configs`, each
    resource's configs replaced by the ones named (`replace_resource_records`)."""
    return _alter_each(ctx, req.resources, req.validate_only, replace_resource_records)


def _alter_each(ctx: ControllerContext, resources: tuple[AlterConfigsResource, ...], validate_only: bool,
                records_of: Callable[[ControllerContext, int, str, tuple[AlterableConfig, ...]],
                                     tuple[list[Payload], ApiError]]) -> ControllerResult:
    """Each resource's records (`records_of`) or refusal, then the ClearElrRecords they call for."""
    if metadata_version_of(ctx) is None:
        return refused(NO_METADATA_VERSION)
    records: list[Payload] = []
    out = []
    for res in resources:
        recs, err = records_of(ctx, res.resource_type, res.resource_name, res.configs)
        records += recs
        out.append(AlterConfigsResourceResponse(res.resource_type, res.resource_name, err.code, err.message))
    records += clear_elr_records(ctx, records)
    return accepted([] if validate_only else records, IncrementalAlterConfigsResponse(tuple(out)))
