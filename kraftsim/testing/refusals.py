"""Kafka's quorum check for a kafka-features change, predicted from the public state.

The state machine generates changes Kafka refuses; where the reason can be told in advance
from what the active controller's image shows, the property is that kraftsim refuses with
Kafka's text (RefusedAsKafkaAndUnchanged).
"""

from __future__ import annotations

from typing import Iterable

from kraftsim.controller import brokers_reason_not_supported
from kraftsim.image import MetadataImage
from kraftsim.versions import Catalog, range_text


def unregistered_voters(line: Catalog, image: MetadataImage, voters: Iterable[int]) -> list[int]:
    """Voters without a controller registration while Kafka's check counts them. Whether the
    active controller names one ("controller N has not registered, and may not support this
    feature") depends on the voters in its own configuration, which the public state does
    not show, so the machine predicts no refusal then."""
    mv = image.metadata_version
    if mv is None or not line.supports("controller_registration", mv):
        return []
    return [v for v in sorted(voters) if image.cluster.controller(v) is None]


def support_refusal(line: Catalog, leader: int, image: MetadataImage, name: str, level: int) -> str | None:
    """Kafka's quorum check as the public state shows it: the active controller's software,
    every registered broker, then (from controller registration on) every other controller."""
    def refusal(who: str, rng: tuple[int, int] | None) -> str:
        if rng is None or rng[1] == 0:
            return f"{who} does not support this feature."
        return f"{who} only supports versions {range_text(*rng)}"

    own = line.supported_features().get(name)
    if own is None or not own[0] <= level <= own[1]:
        return refusal(f"Local controller {leader}", own)
    brokers = brokers_reason_not_supported(image.cluster, name, level, line.policy("broker_feature_check"))
    if brokers is not None:  # (the brokers' check and its wording by release: the controller's own, one home)
        return brokers
    mv = image.metadata_version
    if mv is not None and line.supports("controller_registration", mv):
        for c in image.cluster.sorted_controllers():
            if c.id == leader:
                continue
            rng = next(((f.min_version, f.max_version) for f in c.supported_features if f.name == name), None)
            if rng is None or not rng[0] <= level <= rng[1]:
                return refusal(f"Controller {c.id}", rng)
    return None
