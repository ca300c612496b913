"""Does the whole quorum support a feature level? Kafka's QuorumFeatures and the cluster-wide
support check that every UpdateFeatures request passes before anything else is decided.

The check is "all", never "a majority": the local controller, every registered broker
(fenced ones too) and, once metadata.version supports controller registration (3.7-IV0),
every other registered controller must advertise a range holding the new level, and
every id in the static voter list (`controller.quorum.voters`) must have registered. A
node that does not list a feature supports only level 0 (`DISABLED`, 0-0).

The answer is a reason text (Kafka's words) or None. Nodes are visited in id order;
Kafka walks hash maps whose order for small integer ids is the same.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from kraftsim.controller.context import ControllerContext, Range
from kraftsim.image import ClusterImage, FeatureRange
from kraftsim.versions import Catalog, range_text

#: The range of a feature a node does not know (Kafka's SupportedVersionRange DISABLED).
DISABLED: Range = (0, 0)


def advertised_range(features: Iterable[FeatureRange], name: str) -> Range:
    """The range a registration advertises for `name`; DISABLED when it lists none."""
    for f in features:
        if f.name == name:
            return f.min_version, f.max_version
    return DISABLED


def contains(rng: Range, level: int) -> bool:
    return rng[0] <= level <= rng[1]


def _refusal(who: str, rng: Range) -> str:
    """Kafka's wording: a node whose range tops out at 0 does not know the feature at all."""
    if rng[1] == 0:
        return f"{who} does not support this feature."
    return f"{who} only supports versions {range_text(*rng)}"


def local_reason_not_supported(node_id: int, supported: Mapping[str, Range], feature: str, level: int) -> str | None:
    """Check 4a: this controller's own software."""
    rng = supported.get(feature, DISABLED)
    return None if contains(rng, level) else _refusal(f"Local controller {node_id}", rng)


def brokers_reason_not_supported(cluster: ClusterImage, feature: str, level: int,
                                 check: str = "quorum-features") -> str | None:
    """Check 4b: every registered broker, fenced or not, as policy broker_feature_check
    `check` words it: 3.7 on (quorum-features) a broker that lists no range for the feature
    supports level 0 only; 3.3 to 3.6 (feature-control) it supports no level of it, and a
    range that misses the level is worded otherwise."""
    for broker in cluster.sorted_brokers():
        if check == "feature-control":
            listed = next(((f.min_version, f.max_version) for f in broker.supported_features if f.name == feature), None)
            if listed is None:
                return f"Broker {broker.id} does not support this feature."
            if not contains(listed, level):
                return f"Broker {broker.id} does not support the given version. It supports {listed[0]} to {listed[1]}."
            continue
        rng = advertised_range(broker.supported_features, feature)
        if not contains(rng, level):
            return _refusal(f"Broker {broker.id}", rng)
    return None


def controllers_reason_not_supported(cluster: ClusterImage, node_id: int, static_voters: Iterable[int],
                                     feature: str, level: int) -> str | None:
    """Checks 4c and 4d: every other registered controller, then every static voter's registration."""
    for controller in cluster.sorted_controllers():
        if controller.id == node_id:
            continue
        rng = advertised_range(controller.supported_features, feature)
        if not contains(rng, level):
            return _refusal(f"Controller {controller.id}", rng)
    for voter in sorted(static_voters):
        if cluster.controller(voter) is None:
            return f"controller {voter} has not registered, and may not support this feature"
    return None


def controllers_are_checked(catalog: Catalog, metadata_version: int | None) -> bool:
    """Controllers' ranges count only from the MV at which controllers register (3.7-IV0);
    below it Kafka only logs that it cannot check them (check 4e)."""
    return metadata_version is not None and catalog.supports("controller_registration", metadata_version)


def reason_not_supported(ctx: ControllerContext, feature: str, level: int) -> str | None:
    """Why the quorum cannot take `feature` to `level` (checks 4a-4d in order), or None."""
    reason = local_reason_not_supported(ctx.node_id, ctx.supported, feature, level)
    if reason is None:
        reason = brokers_reason_not_supported(ctx.image.cluster, feature, level,
                                              ctx.catalog.policy("broker_feature_check"))
    if reason is None and controllers_are_checked(ctx.catalog, ctx.metadata_version):
        reason = controllers_reason_not_supported(ctx.image.cluster, ctx.node_id, ctx.static_voters, feature, level)
    return reason
