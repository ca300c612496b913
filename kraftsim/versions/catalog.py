"""The version catalog: the one place kraftsim asks about versions and features.

A Catalog is the shipped data (optionally extended by a user's file) seen from one
software release: by default the newest release, where every known metadata.version up
to its LATEST_PRODUCTION is production ready. `at_release("3.9.1")` gives the same
catalog seen by a node running 3.9.1 (`at_release("3.9")`: the 3.9 line's newest patch). Every catalog is fully checked when loaded (structure plus
Kafka's six feature rules on every line), so users of a Catalog can trust it.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Mapping

from kraftsim.protocol.registry import Registry, load_registry
from kraftsim.versions import loader, model, validation
from kraftsim.versions.config_replay import ConfigReplayFilter
from kraftsim.versions.errors import IllegalArgument, UnknownFeature, UnknownRelease
from kraftsim.versions.features import Feature, FeatureLevel, validate_version
from kraftsim.versions.gates import DowngradeLosses
from kraftsim.versions.metadata_version import FEATURE_NAME as MV_NAME, MetadataVersion, level_of, release_name_key
from kraftsim.versions.releases import Release

MVLike = MetadataVersion | int | str


class Catalog:
    """Metadata versions, features and releases as one release line sees them."""

    def __init__(self, data: model.CatalogData, lines: Mapping[str, model.Line], line: str):
        self._data = data
        self._lines = lines
        self._line = lines[line]
        self._features = {f.name: f for f in self._line.features}
        # levels this release lists only as the next line's placeholders: their gates do not exist here
        self._hidden = frozenset(mv.level for mv in data.versions if mv.is_placeholder_in(self._line.release.key))

    def __repr__(self) -> str:
        return f"<Catalog {self._data.where} at release {self.release.name}>"

    # --- release lines -------------------------------------------------------------

    @property
    def release(self) -> Release:
        """The release line this view follows."""
        return self._line.release

    @property
    def releases(self) -> tuple[Release, ...]:
        """Every release of the catalog, oldest first."""
        return self._data.releases

    def find_release(self, name: str) -> Release:
        """The release named `name` as Kafka names it ("3.9.1"); a line ("3.9") means its newest patch."""
        found = self._data.find_release(str(name))
        if found is None:
            raise UnknownRelease(
                f"Unknown release {name}. Known releases are: {', '.join(r.name for r in self._data.releases)} "
                f"(or a line such as {self._data.releases[-1].line} for its newest patch release)"
            )
        return found

    def at_release(self, name: str) -> "Catalog":
        """The same catalog as a node running release `name` sees it."""
        return Catalog(self._data, self._lines, self.find_release(name).name)

    # --- which release wrote it: one inference for every reader of a real log --------------

    def release_advertising(self, ranges: Mapping[str, tuple[int, int]]) -> tuple[Release | None, bool]:
        """The release whose nodes advertise exactly `ranges` (a registration's supported
        features, max 0 left out), and whether only with unstable versions enabled; (None,
        False) when none does. Releases that advertise the same cannot be told apart: the
        newest of them is named, as a line name means its newest patch (a 4.2 node is 4.2.2)."""
        want = dict(ranges)
        for unstable in (False, True):
            for r in reversed(self.releases):
                if self.at_release(r.name).supported_features(unstable) == want:
                    return r, unstable
        return None, False

    def release_for_level(self, level: int) -> Release:
        """The release whose nodes advertise metadata.version `level` as their maximum: the one
        whose LATEST_PRODUCTION it is, else the oldest that knows it (a node with unstable
        versions enabled), else the newest release; of the releases of that line advertising
        the same, the newest (release_advertising's rule)."""
        releases = self.releases
        found = next((r for r in releases if r.latest_production == level), None)
        if found is None:
            found = next((r for r in releases if r.latest_testing >= level), releases[-1])
        same = self.at_release(found.name).supported_features()
        return [r for r in releases if r.line == found.line
                and (r.entry == found.entry or self.at_release(r.name).supported_features() == same)][-1]

    def policy(self, name: str) -> str:
        """The value this line follows for a behaviour policy (see policies.toml)."""
        return self.release.policy(name)

    @property
    def record_schema_dirs(self) -> tuple[Path, ...]:
        """Extra record schema folders a user catalog brings, for the protocol layer."""
        return self._data.record_schema_dirs

    def record_registry(self) -> Registry:
        """The record types of this catalog: the shipped ones plus its record schema folders
        (one cached registry per set of folders, so messages share their classes)."""
        return load_registry(self.record_schema_dirs)

    # --- metadata.version ----------------------------------------------------------

    @property
    def metadata_versions(self) -> tuple[MetadataVersion, ...]:
        """Every level this line knows, lowest first."""
        return tuple(self._line.table)

    @property
    def all_metadata_versions(self) -> tuple[MetadataVersion, ...]:
        """Every level the catalog defines, including those this line no longer knows
        (levels 1-6 on 4.x lines); their production flag is meaningless."""
        return self._data.versions

    @property
    def minimum(self) -> MetadataVersion:
        return self._line.table.minimum

    @property
    def latest_production(self) -> MetadataVersion:
        return self._line.table.latest_production

    @property
    def latest_testing(self) -> MetadataVersion:
        return self._line.table.latest_testing

    def metadata_version(self, x: MVLike) -> MetadataVersion:
        """Look up by level (int), by version string (unstable allowed) or normalise an MV."""
        if isinstance(x, str):
            return self._line.table.from_string(x, unstable=True)
        return self._line.table.from_level(level_of(x))

    def mv_from_level(self, level: int) -> MetadataVersion:
        """Kafka's fromFeatureLevel, with its error text."""
        return self._line.table.from_level(level)

    def mv_from_string(self, text: str, unstable: bool = False) -> MetadataVersion:
        """Kafka's fromVersionString: "3.8.1" → 3.8-IV0, "4.0" → its newest production IV."""
        return self._line.table.from_string(text, unstable)

    def versions_string(self, first: MVLike, last: MVLike) -> str:
        """The inclusive range of version strings, joined with ", "."""
        return self._line.table.versions_string(self.metadata_version(first), self.metadata_version(last))

    @staticmethod
    def compare(a: MetadataVersion, b: MetadataVersion) -> int:
        """-1, 0 or 1, by level."""
        return (a.level > b.level) - (a.level < b.level)

    def previous(self, mv: MVLike) -> MetadataVersion:
        return self._line.table.previous(self.metadata_version(mv))

    def is_lossy(self, a: MVLike, b: MVLike) -> bool:
        """Whether moving between a and b (either order) crosses a metadata change."""
        return self._line.table.is_lossy(self.metadata_version(a), self.metadata_version(b))

    def safe_downgrade_floor(self, mv: MVLike) -> MetadataVersion:
        """The lowest level a lossless downgrade from `mv` can reach."""
        return self._line.table.safe_downgrade_floor(self.metadata_version(mv))

    def downgrade_losses(self, source: MVLike, target: MVLike) -> DowngradeLosses:
        """What a downgrade from `source` to `target` could no longer represent."""
        return self._data.gates.downgrade_losses(self.metadata_version(source), self.metadata_version(target),
                                               self._hidden)

    # --- gates -----------------------------------------------------------------------

    def supports(self, capability: str, mv: MVLike) -> bool:
        """Whether a capability (records.toml [capabilities]) exists at `mv`."""
        return self._data.gates.supports(capability, self.metadata_version(mv), self._hidden)

    def record_types(self, mv: MVLike) -> tuple[str, ...]:
        """Record types that may be written at `mv`."""
        return self._data.gates.record_types_at(self.metadata_version(mv), self._hidden)

    def record_version(self, record: str, mv: MVLike) -> int:
        """Highest version of `record` writable at `mv` (Kafka's ...RecordVersion methods)."""
        return self._data.gates.record_version(record, self.metadata_version(mv), self._hidden)

    def request_version(self, api: str, mv: MVLike) -> int:
        """Version of request `api` ("Fetch", "ListOffsets") a node sends at `mv`."""
        return self._data.gates.request_version(api, self.metadata_version(mv))

    # --- features --------------------------------------------------------------------

    @property
    def features(self) -> tuple[Feature, ...]:
        """Features this line knows (production and test), in declaration order."""
        return self._line.features

    @property
    def production_features(self) -> tuple[Feature, ...]:
        """Kafka's PRODUCTION_FEATURES for this line."""
        return tuple(f for f in self._line.features if f.production)

    def feature(self, name: str) -> Feature:
        """Kafka's featureFromName."""
        f = self._features.get(name)
        if f is None:
            raise UnknownFeature(f"Feature {name} not found.")
        return f

    def feature_level(self, name: str, level: int, unstable: bool = False) -> FeatureLevel:
        """Kafka's featureFromName(name).fromFeatureLevel(level, unstable)."""
        return self.feature(name).from_level(level, unstable)

    def _defined_level(self, name: str, level: int) -> FeatureLevel:
        """A level feature `name` defines on this line, production ready or not."""
        fl = self.feature(name).get(level)
        if fl is None:
            raise IllegalArgument(f"No feature:{name} with feature level {level}")
        return fl

    def dependencies(self, name: str, level: int) -> dict[str, int]:
        """The dependencies of one feature level on this line (metadata.version as a level)."""
        return self._defined_level(name, level).deps

    def default_level(self, name: str, mv: MVLike) -> int:
        """The level a new cluster at `mv` gets for feature `name`."""
        return self.feature(name).default_version(self.metadata_version(mv)).level

    def default_levels(self, mv: MVLike, production_only: bool = False) -> dict[str, int]:
        """Default level of every feature at `mv`, in declaration order."""
        mv = self.metadata_version(mv)
        return {f.name: f.default_version(mv).level for f in self._line.features if f.production or not production_only}

    def validate_version(self, name: str, level: int, levels: Mapping[str, int]) -> None:
        """Kafka's validateVersion: can `name` be at `level` given the proposed `levels`?"""
        fl = self._defined_level(name, level)
        gate = next(mv for mv in self._data.versions if mv.level == self.release.validate_version_min_mv)
        validate_version(fl, levels, gate)

    def validate_levels(self, levels: Mapping[str, int], unstable: bool = False) -> None:
        """Check a whole set of finalized levels (as `format` does); raise the first problem."""
        for name, level in levels.items():
            if name == MV_NAME:
                mv = self.mv_from_level(level)
                if not (mv.production or unstable):
                    raise IllegalArgument(f"metadata.version {mv} is not yet stable.")
                continue
            self.feature_level(name, level, unstable)
            self.validate_version(name, level, levels)

    def supported_features(self, unstable: bool = False) -> dict[str, tuple[int, int]]:
        """The ranges a node of this line advertises: metadata.version, then features with max > 0."""
        top = self.latest_testing if unstable else self.latest_production
        out = {MV_NAME: (self.minimum.level, top.level)}
        for f in self.production_features:
            lo, hi = f.supported_range(unstable)
            if hi > 0:
                out[f.name] = (lo, hi)
        return out

    def config_replay_filter(self) -> ConfigReplayFilter | None:
        """Which replayed ConfigRecords this release keeps (KAFKA-19851, from 4.3): every
        config of a BROKER, and for TOPIC, CLIENT_METRICS and GROUP only the names its code
        defines (replay_configs.toml); any other resource type is dropped. None: the release
        keeps every record (before 4.3, the policy `config_replay`)."""
        return self._config_replay

    def replaying_configs_as(self, name: str) -> "Catalog":
        """This catalog, except that replay keeps the ConfigRecords (and the kraft.version
        FeatureLevelRecord) release `name` keeps: how a node of that release rebuilt the
        image it wrote a snapshot of, read with this catalog."""
        other = Catalog(self._data, self._lines, self._line.release.name)
        theirs = self.at_release(name)
        other.__dict__["_config_replay"] = theirs.config_replay_filter()
        other.__dict__["_kraft_version_feature"] = theirs.keeps_kraft_version_feature()
        return other

    def keeping_kraft_version_feature(self) -> "Catalog":
        """This catalog, except that replay keeps a kraft.version FeatureLevelRecord (as 3.x
        does): a first load that finds whether a log holds one, before the rules of the
        release that reads it decide whether it stays."""
        other = Catalog(self._data, self._lines, self._line.release.name)
        other.__dict__["_config_replay"] = self.config_replay_filter()
        other.__dict__["_kraft_version_feature"] = True
        return other

    def keeps_kraft_version_feature(self) -> bool:
        """Whether replay keeps a FeatureLevelRecord for kraft.version among the finalized
        features (Kafka 3.x, policy kraft_version_upgrade = feature-level); from 4.0
        kraft.version lives in the raft layer's control records alone (KAFKA-18979)."""
        return self._kraft_version_feature

    @functools.cached_property
    def _kraft_version_feature(self) -> bool:
        return self.policy("kraft_version_upgrade") == "feature-level"

    @functools.cached_property
    def _config_replay(self) -> ConfigReplayFilter | None:
        if self.policy("config_replay") != "drop-removed":
            return None
        here = self.release.key
        known: dict[str, frozenset[str]] = {rtype: frozenset() for rtype in self._data.replay_listed}
        for since, rtype, names in sorted(self._data.replay_config_names, key=lambda e: release_name_key(e[0])):
            if release_name_key(since) <= here:
                known[rtype] = names
        return ConfigReplayFilter(self.release.name, self._data.replay_keep_all, tuple(sorted(known.items())))

    def policy_text(self, name: str, key: str) -> str:
        """A message template of the value this line follows for policy `name` (policies.toml)."""
        policy = next(p for p in self._data.policies if p.name == name)
        return policy.value(self.policy(name)).text(key)

    def mv_downgrade_error(self, current: MVLike, new: MVLike, unsafe: bool) -> str:
        """The text refusing a lossy metadata.version downgrade, worded as this line words it."""
        policy = next(p for p in self._data.policies if p.name == "mv_downgrade_error")
        template = policy.value(self.policy("mv_downgrade_error")).text("unsafe" if unsafe else "safe")
        return template.format(current=self.metadata_version(current).level, new=self.metadata_version(new).level)


def _load(fragments: loader.Fragments, where: str) -> Catalog:
    data = model.build(loader.merge(fragments), where)
    lines: dict[str, model.Line] = {}
    by_entry: dict[str, model.Line] = {}
    for release in data.releases:  # patch releases of one entry share its resolved line
        shared = by_entry.get(release.entry)
        if shared is None:
            shared = by_entry[release.entry] = model.resolve_line(data, release)
            validation.check_line(data, shared)
        lines[release.name] = dataclasses.replace(shared, release=release)
    return Catalog(data, lines, data.line)


@functools.cache
def default_catalog() -> Catalog:
    """The shipped catalog at its newest release line (cached)."""
    return _load(loader.shipped_fragments(), "the shipped catalog")


def load_catalog(path: str | Path | None = None, *, line: str | None = None) -> Catalog:
    """The shipped catalog, or the shipped catalog extended by the user's TOML file at `path`.

    `line` picks the release line to view it from (default: the file's `line`, else the
    newest release). A broken catalog raises CatalogError naming the rule it breaks.
    """
    if path is None:
        cat = default_catalog()
    else:
        p = Path(path)
        cat = _load([*loader.shipped_fragments(), loader.read_fragment_file(p)], f"catalog {p}")
    return cat if line is None else cat.at_release(line)


def load_catalog_text(text: str, source: str = "<text>") -> Catalog:
    """Like load_catalog, for a user catalog given as TOML text (tests, notebooks)."""
    return _load([*loader.shipped_fragments(), (source, loader.parse_fragment(text, source), None)], f"catalog {source}")
