"""UpdateFeatures: Kafka's controller rules for changing finalized feature levels.

One request names features and target levels, each with an upgrade type. The controller
checks each update in a fixed order (upgrade type, negative level, support by the whole
quorum, direction, then the feature's own rules). From Kafka 4.0 the first failure fails
the whole request: nothing is written. A 3.x controller decides each update on its own:
the valid ones are written, the others refused, one result per feature (the release's
policy `update_features_errors`; 3.x also checks no feature dependencies). Dependencies are checked against the state the whole request
would leave ("proposed"), and only a level's own dependencies; changing metadata.version
checks none. On success the records are committed as one atomic set.

Kafka visits the requested features in hash-map order (unspecified). Here they are visited
sorted by name, so which error a request with several bad updates gets, and the order of
the records, are deterministic.

Beyond Kafka: with the named policy "kip-778" (ControllerConfig.policies), a lossy
metadata.version downgrade of type UNSAFE_DOWNGRADE is accepted, as KIP-778 designed it;
writing the lossy snapshot afterwards is the loader's job. Kafka's refusal is the default.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Protocol

import msgspec

from kraftsim.controller.api_errors import NONE, ApiError
from kraftsim.controller.context import MIN_INSYNC_REPLICAS, ControllerContext
from kraftsim.controller.quorum_features import DISABLED, advertised_range, contains, reason_not_supported
from kraftsim.controller.result import ControllerResult, accepted, controller_record, refused
from kraftsim.image import BROKER
from kraftsim.image import ELR_FEATURE, KRAFT_VERSION
from kraftsim.javacompat import string_hash_order
from kraftsim.protocol.entries import Payload
from kraftsim.versions import FEATURE_NAME as MV_NAME, IllegalArgument

#: Prefix of the top-level error message of a failed UpdateFeatures response.
FAILED_PREFIX = "The update failed for all features since the following feature had an error: "
KIP_778 = "kip-778"
#: The update_features_errors value of 3.x controllers: each update decided on its own.
PER_FEATURE = "per-feature"


class UpgradeType(IntEnum):
    """FeatureUpdate.UpgradeType codes on the wire (UpdateFeaturesRequest v1+)."""

    UNKNOWN = 0
    UPGRADE = 1
    SAFE_DOWNGRADE = 2
    UNSAFE_DOWNGRADE = 3

    @classmethod
    def from_code(cls, code: int) -> "UpgradeType":
        """Any code Kafka does not define reads as UNKNOWN."""
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN


def upgrade_type_from_allow_downgrade(allow_downgrade: bool) -> UpgradeType:
    """UpdateFeaturesRequest v0 has AllowDowngrade instead of UpgradeType: true means SAFE_DOWNGRADE."""
    return UpgradeType.SAFE_DOWNGRADE if allow_downgrade else UpgradeType.UPGRADE


class FeatureUpdate(msgspec.Struct, frozen=True):
    """One entry of FeatureUpdates: the feature, its new level, the upgrade type code."""

    feature: str
    max_version_level: int
    upgrade_type: int = 1  # UpgradeType.UPGRADE, the field's default on the wire


class UpdateFeaturesRequest(msgspec.Struct, frozen=True):
    """UpdateFeaturesRequest (apiKey 57). A feature named twice keeps its last entry, as
    the controller's map of updates does."""

    updates: tuple[FeatureUpdate, ...] = ()
    validate_only: bool = False


class FeatureUpdateResult(msgspec.Struct, frozen=True):
    """A per-feature result (response v0-1 only; v2 drops them)."""

    feature: str
    error_code: int = 0
    error_message: str | None = None


class UpdateFeaturesResponse(msgspec.Struct, frozen=True):
    """The answer: a top-level error in Kafka's form, per-feature results on success."""

    error_code: int = 0
    error_message: str | None = None
    results: tuple[FeatureUpdateResult, ...] = ()


class KRaftUpgradeRefused(Exception):
    """The raft layer refuses a kraft.version upgrade with a Kafka error (returned as is)."""

    def __init__(self, error: ApiError):
        super().__init__(error.message)
        self.error = error


class KRaftUpgrade(Protocol):
    """The raft layer's kraft.version upgrade (Kafka's upgradeKRaftVersion).

    Called for an UPGRADE of kraft.version once every controller-side check passed. It
    raises KRaftUpgradeRefused (its error is the answer) or IllegalArgument (answered as
    INVALID_UPDATE_VERSION with the usual prefix); with `validate_only` it only checks.
    """

    def __call__(self, ctx: ControllerContext, new_level: int, validate_only: bool) -> None: ...


def voters_support_kraft_upgrade(ctx: ControllerContext, new_level: int, validate_only: bool) -> None:
    """The default raft check: every voter must support the new kraft.version.

    Voters are the static voter list, or for a dynamic quorum the registered controllers.
    The local controller's range is its own software's; another voter's is the range its
    controller registration advertises (0-0 when it has not registered or lists none).
    Raft-side messages name levels by Kafka's constants (KRAFT_VERSION_1).
    """
    feature = ctx.catalog.feature(KRAFT_VERSION)
    old, new = feature.const_name(ctx.kraft_version), feature.const_name(new_level)
    if new_level == ctx.kraft_version:
        return
    if new_level < ctx.kraft_version:
        raise KRaftUpgradeRefused(ApiError(
            "INVALID_UPDATE_VERSION",
            f"Invalid upgrade of {KRAFT_VERSION} from version {old} to {new} because the new version is a downgrade"))
    voters = ctx.static_voters or tuple(ctx.image.cluster.controllers)
    for voter in sorted(voters):
        if voter == ctx.node_id:
            rng = ctx.supported.get(KRAFT_VERSION, DISABLED)
        else:
            reg = ctx.image.cluster.controller(voter)
            rng = DISABLED if reg is None else advertised_range(reg.supported_features, KRAFT_VERSION)
        if not contains(rng, new_level):
            raise KRaftUpgradeRefused(ApiError(
                "INVALID_UPDATE_VERSION",
                f"Invalid upgrade of {KRAFT_VERSION} to {new} because not all of the voters support it"))


def invalid_update(feature: str, level: int, reason: str) -> ApiError:
    """Kafka's invalidUpdateVersion: INVALID_UPDATE_VERSION with the standard prefix."""
    return ApiError("INVALID_UPDATE_VERSION", f"Invalid update version {level} for feature {feature}. {reason}")


def update_features(ctx: ControllerContext, request: UpdateFeaturesRequest,
                    raft: KRaftUpgrade | None = None) -> ControllerResult:
    """Decide an UpdateFeatures request (Kafka's FeatureControlManager.updateFeatures, wrapped
    by ConfigurationControlManager for the ELR safety configs).

    The result's `error` is the controller's own error; `response` is the wire answer with
    the top-level message in Kafka's "The update failed for all features ..." form.
    Needs an activated controller (a finalized metadata.version).
    """
    if ctx.metadata_version is None:
        raise ValueError("update_features needs a finalized metadata.version: activate the controller first")
    raft = raft or voters_support_kraft_upgrade
    levels: dict[str, int] = {}
    types: dict[str, UpgradeType] = {}
    for u in request.updates:
        levels[u.feature] = u.max_version_level
        types[u.feature] = UpgradeType.from_code(u.upgrade_type)
    proposed = ctx.image.features.all_levels()
    proposed[MV_NAME] = ctx.metadata_version
    proposed.update(levels)

    if ctx.catalog.policy("update_features_errors") == PER_FEATURE:
        return _update_each(ctx, levels, types, request.validate_only, raft)
    records: list[Payload] = []
    for feature in sorted(levels):
        error = _update_feature(ctx, feature, levels[feature], types[feature], proposed, request.validate_only,
                                raft, records)
        if not error.ok:
            return refused(error, UpdateFeaturesResponse(error.code, FAILED_PREFIX + (error.message or "")))
    response = UpdateFeaturesResponse(results=tuple(FeatureUpdateResult(f) for f in sorted(levels)))
    if request.validate_only:
        return accepted((), response)
    if levels.get(ELR_FEATURE, 0) > 0:
        records = elr_safety_records(ctx) + records
    return accepted(records, response, atomic=True)


def _update_each(ctx: ControllerContext, levels: dict[str, int], types: dict[str, UpgradeType], validate_only: bool,
                 raft: KRaftUpgrade) -> ControllerResult:
    """Kafka 3.x: every update is decided on its own, the valid ones are committed together and
    each feature gets its own result (policy update_features_errors = per-feature).

    The controller walks its HashMap of updates, so the records come in that order. The
    result's `error` is the first refusal by name when nothing was accepted, else NONE.
    """
    records: list[Payload] = []
    errors: dict[str, ApiError] = {}
    for feature in string_hash_order(list(levels)):
        errors[feature] = _update_feature(ctx, feature, levels[feature], types[feature], {}, validate_only,
                                          raft, records, check_feature=False)
    response = UpdateFeaturesResponse(error_message="", results=tuple(  # (3.x leaves the top-level message's default)
        FeatureUpdateResult(f, errors[f].code, errors[f].message) for f in sorted(levels)))
    refusals = [errors[f] for f in sorted(levels) if not errors[f].ok]
    if refusals and len(refusals) == len(levels):
        return refused(refusals[0], response)
    return accepted(() if validate_only else records, response, atomic=True)


def _update_feature(ctx: ControllerContext, feature: str, level: int, upgrade_type: UpgradeType,
                    proposed: dict[str, int], validate_only: bool, raft: KRaftUpgrade,
                    records: list[Payload], check_feature: bool = True) -> ApiError:
    """One update's checks in Kafka's order; records go to `records` on success.

    `check_feature` is Kafka 4.0's check of a feature level against its Feature enum and
    dependencies; a 3.x controller writes any level the quorum supports, 0 included (so
    disabling a feature it never finalized, or does not know, writes a level-0 record)."""
    if upgrade_type is UpgradeType.UNKNOWN:
        return invalid_update(feature, level, "The controller does not support the given upgrade type.")
    if feature == MV_NAME:
        current = ctx.metadata_version or 0
    elif feature == KRAFT_VERSION and not ctx.catalog.keeps_kraft_version_feature():
        current = ctx.kraft_version
    else:
        current = ctx.image.features.level(feature)
    if level < 0:
        return invalid_update(feature, level, "A feature version cannot be less than 0.")
    reason = reason_not_supported(ctx, feature, level)
    if reason is not None:
        return invalid_update(feature, level, reason)
    if level < current and upgrade_type is UpgradeType.UPGRADE:
        return invalid_update(feature, level, "Can't downgrade the version of this feature without setting the "
                                              "upgrade type to either safe or unsafe downgrade.")
    if level > current and upgrade_type is not UpgradeType.UPGRADE:
        return invalid_update(feature, level, "Can't downgrade to a newer version.")
    if feature == MV_NAME:
        return _update_metadata_version(ctx, current, level, upgrade_type, records)
    if feature == KRAFT_VERSION and not ctx.catalog.keeps_kraft_version_feature():
        return _update_kraft_version(ctx, current, level, upgrade_type, validate_only, raft, records)
    try:
        if check_feature:
            ctx.catalog.feature_level(feature, level, unstable=True)  # the range was checked above
            ctx.catalog.validate_version(feature, level, proposed)
    except IllegalArgument as e:
        return invalid_update(feature, level, str(e))
    records.append(controller_record(ctx.catalog, ctx.finalized_level, "FeatureLevelRecord",
                                     name=feature, feature_level=level))
    return NONE


def _update_metadata_version(ctx: ControllerContext, current: int, level: int, upgrade_type: UpgradeType,
                             records: list[Payload]) -> ApiError:
    """metadata.version: only lossless downgrades (either downgrade type), no dependency checks."""
    cat = ctx.catalog
    if level not in {mv.level for mv in cat.metadata_versions}:  # Kafka's fromFeatureLevel fails
        return ApiError("INVALID_UPDATE_VERSION", f"Invalid metadata.version {level}. Valid versions are from "
                                                  f"{cat.minimum.level} to {cat.latest_testing.level}.")
    if level < current and cat.is_lossy(current, level):
        unsafe = upgrade_type is UpgradeType.UNSAFE_DOWNGRADE
        if not (unsafe and ctx.has_policy(KIP_778)):
            return ApiError("INVALID_UPDATE_VERSION", cat.mv_downgrade_error(current, level, unsafe))
    records.append(controller_record(cat, current, "FeatureLevelRecord", name=MV_NAME, feature_level=level))
    return NONE


def _update_kraft_version(ctx: ControllerContext, current: int, level: int, upgrade_type: UpgradeType,
                          validate_only: bool, raft: KRaftUpgrade, records: list[Payload]) -> ApiError:
    """kraft.version lives in raft: an UPGRADE asks raft and writes a NoOpRecord, never a FeatureLevelRecord."""
    if upgrade_type is UpgradeType.UPGRADE:
        try:
            raft(ctx, level, validate_only)
        except KRaftUpgradeRefused as e:
            return e.error
        except IllegalArgument as e:
            return invalid_update(KRAFT_VERSION, level, str(e))
        records.append(controller_record(ctx.catalog, ctx.finalized_level, "NoOpRecord"))
        return NONE
    if level != current:
        return invalid_update(KRAFT_VERSION, level, "Can't downgrade the version of this feature.")
    return NONE


def elr_safety_records(ctx: ControllerContext) -> list[Payload]:
    """What enabling ELR writes first: a cluster-level min.insync.replicas (the static value)
    unless one is set, and the removal of every broker-level min.insync.replicas.

    Broker resources are visited in the image's sorted order (Kafka: hash-map order).
    """
    mv = ctx.finalized_level
    out: list[Payload] = []
    configs = ctx.image.configs
    if MIN_INSYNC_REPLICAS not in configs.config(BROKER, ""):
        out.append(controller_record(ctx.catalog, mv, "ConfigRecord", resource_type=BROKER, resource_name="",
                                     name=MIN_INSYNC_REPLICAS, value=str(ctx.config.min_insync_replicas)))
    for (rtype, name), values in configs.sorted_resources():
        if rtype == BROKER and name != "" and MIN_INSYNC_REPLICAS in values:
            out.append(controller_record(ctx.catalog, mv, "ConfigRecord", resource_type=BROKER, resource_name=name,
                                         name=MIN_INSYNC_REPLICAS, value=None))
    return out
