"""FinalizedFeatures: the finalized feature levels a node exposes, and their epoch.

Kafka's FinalizedFeatures (facts §2.7) is what a broker's metadata cache hands to
ApiVersions: metadata.version is always in the map, kraft.version only when its level
is above 0 (its value lives in KRaft control records, never in the image), features at
level 0 are absent, and the epoch is the last offset the image contains. A client keeps
the answer with the highest epoch (KIP-584), so the epoch must grow with the log.
"""

from __future__ import annotations

import msgspec

from kraftsim.image import MetadataImage
from kraftsim.image import KRAFT_VERSION
from kraftsim.versions import FEATURE_NAME as MV_NAME

#: Kafka's FinalizedFeaturesEpoch when nothing is known yet.
UNKNOWN_EPOCH = -1


class FinalizedFeatures(msgspec.Struct, frozen=True):
    """metadata.version, every finalized level (metadata.version included), and the epoch."""

    metadata_version: int
    levels: tuple[tuple[str, int], ...]  # sorted by name; no level is 0
    epoch: int

    def level(self, name: str) -> int:
        """The finalized level of `name`; 0 (disabled) when it is not finalized."""
        return dict(self.levels).get(name, 0)

    def as_dict(self) -> dict[str, int]:
        return dict(self.levels)


def finalized_features(image: MetadataImage, kraft_version: int = 0) -> FinalizedFeatures | None:
    """What a node whose metadata is `image` exposes; None before any metadata.version is known.

    `kraft_version` is the node's current kraft.version from the KRaft layer (0 when the
    quorum is static); the image itself never holds it.
    """
    mv = image.features.metadata_version
    if mv is None:
        return None
    # The image holds kraft.version only where the release keeps it as a feature (3.9).
    levels = {name: level for name, level in image.features.finalized if level != 0}
    levels[MV_NAME] = mv
    if kraft_version > levels.get(KRAFT_VERSION, 0):
        levels[KRAFT_VERSION] = kraft_version
    return FinalizedFeatures(mv, tuple(sorted(levels.items())), image.provenance.last_contained_offset)
