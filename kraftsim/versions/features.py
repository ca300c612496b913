"""Feature flags other than metadata.version, as one release line sees them.

A Feature's levels, bootstrap MVs and dependencies come from the catalog data; its latest
production and latest testing levels depend on the release line, so a Feature object is
always resolved for one line. The rules here are Kafka's Feature enum methods, with
their exact error texts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from kraftsim.versions.errors import FeatureDependencyError, UnknownFeatureLevel
from kraftsim.versions.metadata_version import FEATURE_NAME as MV_NAME, MetadataVersion, level_of


@dataclass(frozen=True)
class FeatureLevel:
    """One level of a feature (Kafka's FeatureVersion constant)."""

    feature: str
    level: int
    const: str
    bootstrap: int  # the MV level from which this level is the default
    bootstrap_version: str
    dependencies: tuple[tuple[str, int], ...] = ()  # (feature name, minimum level); MV as a level
    doc: str = ""

    @property
    def deps(self) -> dict[str, int]:
        return dict(self.dependencies)

    def __str__(self) -> str:
        return self.const


@dataclass(frozen=True)
class Feature:
    """A feature with its levels, resolved for one release line."""

    name: str
    enum: str
    kind: str  # "production" or "test"
    levels: tuple[FeatureLevel, ...]
    latest_production: int
    latest_testing: int
    doc: str = ""

    @property
    def production(self) -> bool:
        """Whether it is one of Kafka's PRODUCTION_FEATURES (not test-only)."""
        return self.kind == "production"

    @property
    def minimum_production(self) -> int:
        """Kafka's minimumProduction(): the first level."""
        return self.levels[0].level

    def get(self, level: int) -> FeatureLevel | None:
        return next((fl for fl in self.levels if fl.level == level), None)

    def const_name(self, level: int) -> str:
        """The constant's name for `level`, also for a level the feature lacks (error texts)."""
        fl = self.get(level)
        return fl.const if fl else f"{self.enum}_{level}"

    def from_level(self, level: int, allow_unstable: bool = False) -> FeatureLevel:
        """Kafka's fromFeatureLevel: unstable levels only when allowed."""
        fl = self.get(level)
        ceiling = self.latest_testing if allow_unstable else self.latest_production
        if fl is None or level > ceiling:
            raise UnknownFeatureLevel(f"No feature:{self.name} with feature level {level}")
        return fl

    def is_production_ready(self, level: int) -> bool:
        return level <= self.latest_production

    def default_version(self, mv: MetadataVersion | int) -> FeatureLevel:
        """The level a new cluster gets at `mv`: the last level, in order, whose bootstrap MV is <= mv."""
        mv_level = level_of(mv)
        chosen = self.levels[0]
        for fl in self.levels:
            if fl.bootstrap > mv_level:
                break
            chosen = fl
        return chosen

    def supported_range(self, unstable: bool = False) -> tuple[int, int]:
        """The [min, max] a node of this line advertises for the feature."""
        return self.minimum_production, self.latest_testing if unstable else self.latest_production


def validate_version(fl: FeatureLevel, levels: Mapping[str, int], mv_gate: MetadataVersion) -> None:
    """Kafka's Feature.validateVersion: `levels` are the proposed finalized levels.

    Only the level's own dependencies are checked, never features that depend on it.
    """
    if fl.level >= 1:
        mv = levels.get(MV_NAME)
        if mv is None or mv < mv_gate.level:
            raise FeatureDependencyError(
                f"{fl.feature} could not be set to {fl.level} because it depends on "
                f"{MV_NAME}={mv_gate.level} ({mv_gate.version})"
            )
    for dep, dep_level in fl.dependencies:
        have = levels.get(dep)
        if have is None or have < dep_level:
            raise FeatureDependencyError(
                f"{fl.feature} could not be set to {fl.level} because it depends on {dep} level {dep_level}"
            )
