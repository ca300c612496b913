"""FeaturesImage.write: the metadata.version first (at version 0), the other finalized
features in the order the image kept, and on the 3.x line a ZkMigrationStateRecord."""

from __future__ import annotations

from typing import Iterator

from kraftsim.image.components.features import FeaturesImage
from kraftsim.image.writer.kafka_order import feature_order
from kraftsim.image.writer.loss import FEATURE_LEVELS, feature_levels_summary
from kraftsim.image.writer.target import WriteTarget
from kraftsim.protocol.entries import Payload
from kraftsim.versions import FEATURE_NAME as FEATURE_NAME_MV


def write(features: FeaturesImage, target: WriteTarget) -> Iterator[Payload]:
    fl, flv = target.record("FeatureLevelRecord")
    levels = dict(features.finalized)
    finalized = [(name, levels[name]) for name in feature_order(list(levels), features.order)]
    if target.holds(FEATURE_LEVELS):
        yield Payload(fl, 0, fl.cls(name=FEATURE_NAME_MV, feature_level=target.mv.level))
        for name, level in finalized:
            yield Payload(fl, flv, fl.cls(name=name, feature_level=level))
    elif finalized:
        summary = feature_levels_summary(n for n, _ in finalized)
        for name, _ in finalized:
            target.lose(FEATURE_LEVELS, f"feature {name}", ("features", name), summary)
    if target.line.zk_migration_state_record and target.supports("migration"):
        zk, zkv = target.record("ZkMigrationStateRecord")
        yield Payload(zk, zkv, zk.cls(zk_migration_state=0))
