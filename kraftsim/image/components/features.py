"""Finalized features: metadata.version and every other feature at a non-zero level.

Mirrors Kafka's FeaturesImage/FeaturesDelta: the MV is kept apart from the other levels,
kraft.version never enters the image (its value lives in KRaft control records,
KAFKA-18979), and a level of 0 removes a feature. Kafka keeps the other levels in a
java.util.HashMap that each delta rebuilds (the old entries in their order, then the new
names in the order of the delta's own HashMap), so its iteration order, which a snapshot
writes, depends on when each feature arrived; `order` follows it.
"""

from __future__ import annotations

from typing import Iterable, Mapping

import msgspec

from kraftsim.image.errors import UnsupportedMetadataVersionError
from kraftsim.javacompat import hash_map_order, sized_capacity, string_hash
from kraftsim.versions import FEATURE_NAME as MV_NAME, Catalog, VersionsError

KRAFT_VERSION = "kraft.version"
ELR_FEATURE = "eligible.leader.replicas.version"


class FeaturesImage(msgspec.Struct, frozen=True, gc=False):
    """metadata.version level (None until one is finalized) and the other finalized levels."""

    metadata_version: int | None = None
    finalized: tuple[tuple[str, int], ...] = ()  # sorted by name; no MV, no kraft.version
    #: The iteration order of Kafka's finalizedVersions HashMap when the image came from
    #: deltas; empty when the image was built from levels alone (order unknown).
    order: tuple[str, ...] = ()

    def level(self, name: str) -> int:
        """The finalized level of `name` (0 when not finalized), MV included."""
        if name == MV_NAME:
            return self.metadata_version or 0
        for n, lvl in self.finalized:
            if n == name:
                return lvl
        return 0

    def finalized_map(self) -> dict[str, int]:
        """Finalized levels without metadata.version, as Kafka's finalizedVersions()."""
        return dict(self.finalized)

    def all_levels(self) -> dict[str, int]:
        """Finalized levels with metadata.version (FinalizedFeatures' view)."""
        out = {MV_NAME: self.metadata_version} if self.metadata_version is not None else {}
        out.update(self.finalized)
        return out

    def is_elr_enabled(self) -> bool:
        """Kafka's FeaturesImage.isElrEnabled(): eligible.leader.replicas.version >= 1."""
        return self.level(ELR_FEATURE) >= 1

    def is_empty(self) -> bool:
        return self.metadata_version is None and not self.finalized

    # Kafka's FeaturesImage.equals compares the map, not its iteration order.
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FeaturesImage):
            return NotImplemented
        return self.metadata_version == other.metadata_version and self.finalized == other.finalized

    def __hash__(self) -> int:
        return hash((self.metadata_version, self.finalized))


EMPTY_FEATURES = FeaturesImage()

_REMOVED = 0


class FeaturesDelta:
    """Changes to the finalized features since `image`."""

    def __init__(self, image: FeaturesImage, catalog: Catalog):
        self.image = image
        self.catalog = catalog
        self.changes: dict[str, int] = {}  # name -> level; 0 = removed
        self.metadata_version_change: int | None = None

    def replay_feature_level(self, name: str, level: int) -> None:
        if name == MV_NAME:
            try:
                mv = self.catalog.mv_from_level(level)
            except VersionsError:
                raise UnsupportedMetadataVersionError(
                    "Unsupported metadata version - if you are currently upgrading your cluster, please "
                    f"ensure the metadata version is set to {self.catalog.minimum.version} (or higher) before "
                    "updating the software version. The metadata version can be updated via the "
                    "kafka-features command-line tool."
                ) from None
            self.metadata_version_change = mv.level
        elif name == KRAFT_VERSION and not self.catalog.keeps_kraft_version_feature():
            return  # KAFKA-18979: kraft.version lives in control records, never in the image
        else:
            self.changes[name] = level

    def finish_snapshot(self) -> None:
        """Features the snapshot did not mention are gone; the MV stays unless replaced."""
        for name, _ in self.image.finalized:
            self.changes.setdefault(name, _REMOVED)

    def apply(self) -> FeaturesImage:
        levels = dict(self.image.finalized)
        for name, level in self.changes.items():
            if level == _REMOVED:
                levels.pop(name, None)
            else:
                levels[name] = level
        mv = self.image.metadata_version if self.metadata_version_change is None else self.metadata_version_change
        finalized = tuple(sorted(levels.items()))
        order = self._rebuilt_order(levels)
        if mv == self.image.metadata_version and finalized == self.image.finalized and order == self.image.order:
            return self.image
        return FeaturesImage(mv, finalized, order)

    def _rebuilt_order(self, levels: Mapping[str, int]) -> tuple[str, ...]:
        """FeaturesDelta.apply's `new HashMap<>(old size)`: the old names still finalized in
        their order, then the new ones in the order of the changes HashMap (16 buckets)."""
        old = self.image.order or tuple(default_feature_order(n for n, _ in self.image.finalized))
        kept = [n for n in old if n in levels]
        held = set(old)
        added = [n for n in hash_map_order(list(self.changes), string_hash) if n in levels and n not in held]
        return tuple(hash_map_order(kept + added, string_hash, initial=sized_capacity(len(old))))


def default_feature_order(names: Iterable[str]) -> list[str]:
    """The order of finalized features that arrived together, sorted by name (one delta's
    changes HashMap put into `new HashMap<>(0)`), for an image whose own order is unknown."""
    return hash_map_order(hash_map_order(sorted(names), string_hash), string_hash, initial=sized_capacity(0))


def features_from(levels: Mapping[str, int]) -> FeaturesImage:
    """A FeaturesImage from a {name: level} map (MV included); zero levels are dropped."""
    mv = levels.get(MV_NAME)
    rest = tuple(sorted((n, l) for n, l in levels.items() if n not in (MV_NAME, KRAFT_VERSION) and l != 0))
    return FeaturesImage(mv, rest)
