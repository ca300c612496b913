"""metadata.version values and Kafka's rules for finding, parsing and comparing them.

A MetadataVersion compares and hashes by its level alone, so values taken from
different release lines (where the production flag may differ) still compare equal.
A MetadataVersionTable is the set of levels one release line knows, with the lookups
Kafka's MetadataVersion enum offers and their exact error texts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterator, Protocol, Sequence, TypeVar

from kraftsim.versions.errors import UnknownMetadataVersion

FEATURE_NAME = "metadata.version"

VERSION_RE = re.compile(r"^(\d+)\.(\d+)-IV(\d+)$")
RELEASE_RE = re.compile(r"^(\d+)\.(\d+)$")
#: A software release as Kafka names it ("3.7.2"), or a release line ("3.7").
RELEASE_NAME_RE = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?$")


def release_key(release: str) -> tuple[int, int]:
    """Order of release strings ("3.10" after "3.9"); raises ValueError if malformed."""
    m = RELEASE_RE.match(release)
    if not m:
        raise ValueError(f"release {release!r} is not of the form <major>.<minor>")
    return int(m.group(1)), int(m.group(2))


def release_name_key(name: str) -> tuple[int, int, int]:
    """Order of software releases ("3.7.2" < "3.10.0"); a line "3.7" counts as "3.7.0"."""
    m = RELEASE_NAME_RE.match(name)
    if not m:
        raise ValueError(f"release {name!r} is not of the form <major>.<minor>.<patch>")
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


class _SinceEntry(Protocol):
    @property
    def since(self) -> str: ...


_E = TypeVar("_E", bound=_SinceEntry)


def entry_for_release(entries: Sequence[_E], release: str) -> _E:
    """Of per-release facts `entries` (each holding from release `since` on, in release order),
    the one that holds for `release`: the last from it or before, the first for an older one."""
    key = release_name_key(release)
    return next((e for e in reversed(entries) if release_name_key(e.since) <= key), entries[0])


def release_line(name: str) -> str:
    """The line ("3.7") of a release name ("3.7.2") or of a line itself."""
    major, minor, _ = release_name_key(name)
    return f"{major}.{minor}"


@dataclass(frozen=True, order=True)
class MetadataVersion:
    """One metadata.version: ordered, equal and hashed by `level` only."""

    level: int
    version: str = field(compare=False)
    metadata_changed: bool = field(compare=False)
    introduced: str = field(compare=False, default="")
    production: bool = field(compare=False, default=True)
    placeholder_before: str | None = field(compare=False, default=None)

    def is_placeholder_in(self, release: tuple[int, int, int]) -> bool:
        """Whether a release (by its key) lists this level only as the next line's placeholder:
        known, but adding nothing and changing no metadata in its code."""
        return self.placeholder_before is not None and release < release_name_key(self.placeholder_before)

    @property
    def release(self) -> str:
        """The release the level belongs to, e.g. "3.7" for 3.7-IV2."""
        return self.version.split("-", 1)[0]

    def __str__(self) -> str:
        return self.version


def level_of(mv: MetadataVersion | int) -> int:
    """The level of a metadata.version given as itself or as its level."""
    return mv.level if isinstance(mv, MetadataVersion) else mv


class MetadataVersionTable:
    """The metadata.versions a release line knows, lowest first, contiguous levels."""

    def __init__(self, versions: Sequence[MetadataVersion]):
        self._versions = tuple(versions)
        self._by_level = {mv.level: mv for mv in self._versions}
        self._by_string: dict[str, MetadataVersion] = {mv.version: mv for mv in self._versions}
        for mv in self._versions:  # short "x.y" key: the highest production IV of that release
            if mv.production:
                self._by_string[mv.release] = mv
        self.minimum = self._versions[0]
        self.latest_testing = self._versions[-1]
        self.latest_production = max(mv for mv in self._versions if mv.production)

    def __iter__(self) -> Iterator[MetadataVersion]:
        return iter(self._versions)

    def __len__(self) -> int:
        return len(self._versions)

    def __contains__(self, level: object) -> bool:
        return getattr(level, "level", level) in self._by_level

    def from_level(self, level: int) -> MetadataVersion:
        """Kafka's fromFeatureLevel."""
        mv = self._by_level.get(level)
        if mv is None:
            raise UnknownMetadataVersion(
                f"No MetadataVersion with feature level {level}. Valid feature levels are from "
                f"{self.minimum.level} to {self.latest_testing.level}."
            )
        return mv

    def from_string(self, text: str, unstable: bool = False) -> MetadataVersion:
        """Kafka's fromVersionString: "3.8.1" reads as "3.8", "4.0" as its newest production IV."""
        parts = text.split(".")
        while parts and not parts[-1]:  # Java's split drops trailing empty strings...
            parts.pop()
        key = ".".join(parts[:2]) if len(parts) > 2 else text  # ...and "3.6." stays "3.6.": unknown
        mv = self._by_string.get(key)
        if mv is None or not (mv.production or unstable):
            last = self.latest_testing if unstable else self.latest_production
            raise UnknownMetadataVersion(
                f"Unknown metadata.version '{text}'. Supported metadata.version are: "
                f"{self.versions_string(self.minimum, last)}"
            )
        return mv

    def versions_string(self, first: MetadataVersion, last: MetadataVersion) -> str:
        """Kafka's metadataVersionsToString: the inclusive range joined with ", "."""
        return ", ".join(mv.version for mv in self._versions if first.level <= mv.level <= last.level)

    def previous(self, mv: MetadataVersion | int) -> MetadataVersion:
        """The level just below; there is none below the minimum."""
        mv = self.from_level(level_of(mv))
        if mv == self.minimum:
            raise UnknownMetadataVersion(f"There is no metadata.version before {mv}.")
        return self._by_level[mv.level - 1]

    def is_lossy(self, a: MetadataVersion | int, b: MetadataVersion | int) -> bool:
        """Kafka's checkIfMetadataChanged: some level in (low, high] changed metadata."""
        a, b = self.from_level(level_of(a)), self.from_level(level_of(b))
        low, high = min(a, b), max(a, b)
        current = high
        while current != low and not current.metadata_changed:
            current = self.previous(current)
        return current != low

    def safe_downgrade_floor(self, mv: MetadataVersion | int) -> MetadataVersion:
        """The lowest level a lossless downgrade from `mv` can reach."""
        current = self.from_level(level_of(mv))
        while not current.metadata_changed and current != self.minimum:
            current = self.previous(current)
        return current
