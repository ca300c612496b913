"""Kafka software releases and the named lines of behaviour they follow.

A release decides which metadata.versions and feature levels a node knows, which of them
are production ready, and the ranges it advertises when it registers. Where Kafka's
behaviour changed over time, a release names the policy value it follows; the values
and their message templates are data (policies.toml).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from kraftsim.versions.metadata_version import MetadataVersion, release_line, release_name_key

MAX_LEVEL = 32767


@dataclass(frozen=True)
class PolicyValue:
    name: str
    doc: str
    texts: tuple[tuple[str, str], ...] = ()

    def text(self, key: str) -> str:
        return dict(self.texts)[key]


@dataclass(frozen=True)
class Policy:
    """A topic on which Kafka's behaviour changed, with its possible values."""

    name: str
    doc: str
    values: tuple[PolicyValue, ...]

    def value(self, name: str) -> PolicyValue:
        return next(v for v in self.values if v.name == name)


@dataclass(frozen=True)
class Release:
    """One Kafka release as Kafka names it ("3.9.1", "4.3.0"), levels resolved to ints.

    Patch releases that support the same things share one catalog entry (`entry`);
    those that differ are entries of their own.
    """

    name: str
    latest_production: int
    latest_testing: int  # the highest metadata.version level its code lists
    minimum_metadata_version: int
    validate_version_min_mv: int
    features: tuple[tuple[str, int], ...]  # production feature -> latest production level
    testing: tuple[tuple[str, int], ...]  # production feature -> latest testing level, where higher
    dependency_overrides: tuple[tuple[str, int, tuple[tuple[str, int], ...]], ...]
    policies: tuple[tuple[str, str], ...]
    metadata_changed: tuple[tuple[int, bool], ...] = ()  # levels whose flag differs in this release's code
    entry: str = ""  # the catalog entry it comes from (its own name, or the first patch sharing it)
    unconfirmed: tuple[str, ...] = ()  # "published", "latest_production": facts a released jar must confirm
    doc: str = ""
    #: (feature, level, bootstrap MV level) where this release's code bootstraps a level at
    #: another metadata.version than features.toml says (3.9's transaction.version levels).
    bootstrap_overrides: tuple[tuple[str, int, int], ...] = ()

    @property
    def key(self) -> tuple[int, int, int]:
        return release_name_key(self.name)

    @property
    def line(self) -> str:
        """The release line, "3.7" for 3.7.2."""
        return release_line(self.name)

    def knows(self, mv: MetadataVersion) -> bool:
        """Whether a node of this release knows the level at all."""
        return self.minimum_metadata_version <= mv.level <= self.latest_testing

    def policy(self, name: str) -> str:
        """The value this release follows for policy `name`."""
        return self._policy_values[name]

    @cached_property
    def _policy_values(self) -> dict[str, str]:
        """`policies` as a dict, made once (a partition change asks several per partition)."""
        return dict(self.policies)

    def __str__(self) -> str:
        return self.name


def range_text(lo: int, hi: int) -> str:
    """Kafka's SupportedVersionRange toString: "n", "min+" or "min-max"."""
    if lo == hi:
        return str(lo)
    if hi == MAX_LEVEL:
        return f"{lo}+"
    return f"{lo}-{hi}"
