"""The catalog file format: one typed Struct per TOML table.

Shipped data files and users' catalog files share this one format (a *fragment*); the
loader merges fragments. Typing the format with msgspec means a typo or a wrong type in
a user's file is refused with the path of the bad value instead of surfacing later.
"""

from __future__ import annotations

from typing import Literal

import msgspec

# A reference to a metadata.version: its level, its version string, or (feature data
# only) "latest-testing".
MVRef = int | str


class _Entry(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Base: unknown keys are an error, every field is named."""


class MetadataVersionEntry(_Entry):
    level: int
    version: str
    metadata_changed: bool
    introduced: str = ""
    placeholder_before: str | None = None  # releases before this one list the level but it adds nothing


class Step(_Entry):
    since: MVRef
    version: int


class RecordEntry(_Entry):
    since: MVRef | None = None
    versions: list[Step] = []
    unsupported: str | None = None
    doc: str = ""


class RequestEntry(_Entry):
    versions: list[Step]
    doc: str = ""


class CapabilityEntry(_Entry):
    since: MVRef
    kind: Literal["metadata", "behaviour"] = "metadata"
    doc: str = ""


class LevelEntry(_Entry):
    level: int
    bootstrap: MVRef
    const: str | None = None
    since_release: str | None = None  # first release whose code has the level (default: any)
    dependencies: dict[str, MVRef] = {}
    doc: str = ""


class FeatureLevelAddition(LevelEntry, kw_only=True):
    """A new level for a feature defined elsewhere (user catalogs)."""

    feature: str


class FeatureEntry(_Entry):
    name: str
    levels: list[LevelEntry]
    enum: str | None = None
    kind: Literal["production", "test"] = "production"
    doc: str = ""


class DependencyOverride(_Entry):
    feature: str
    level: int
    dependencies: dict[str, MVRef]


class ReleaseEntry(_Entry):
    name: str
    patches: list[str] = []
    inherits: str | None = None
    latest_production: MVRef | None = None
    latest_testing: MVRef | None = None
    metadata_changed: dict[str, bool] = {}
    minimum_metadata_version: MVRef | None = None
    validate_version_min_mv: MVRef | None = None
    features: dict[str, int] | None = None
    testing: dict[str, int] | None = None
    dependency_overrides: list[DependencyOverride] | None = None
    bootstrap_overrides: dict[str, dict[str, MVRef]] | None = None  # feature -> {level: bootstrap MV}
    policies: dict[str, str] | None = None
    unconfirmed: list[Literal["published", "latest_production"]] = []  # facts a released jar must still confirm
    doc: str = ""


class PolicyValue(_Entry):
    doc: str = ""
    texts: dict[str, str] = {}


class PolicyEntry(_Entry):
    values: dict[str, PolicyValue]
    doc: str = ""


ResourceTypeName = Literal["TOPIC", "BROKER", "BROKER_LOGGER", "CLIENT_METRICS", "GROUP"]


class ReplayConfigsRule(_Entry):
    """Kafka's replay filter of ConfigRecords by resource type (replay_configs.toml)."""

    keep_all: list[ResourceTypeName] = []  # every config of these types is kept
    listed: list[ResourceTypeName] = []  # only the names a release defines (replay_config_names)


class ConfigNamesEntry(_Entry):
    since: str  # the first release whose code defines exactly these names
    resource_type: ResourceTypeName
    names: list[str]
    doc: str = ""


class Fragment(_Entry):
    """One catalog file. Every table is optional."""

    line: str | None = None
    record_schema_dirs: list[str] = []
    metadata_versions: list[MetadataVersionEntry] = []
    records: dict[str, RecordEntry] = {}
    capabilities: dict[str, CapabilityEntry] = {}
    requests: dict[str, RequestEntry] = {}
    features: list[FeatureEntry] = []
    feature_levels: list[FeatureLevelAddition] = []
    releases: list[ReleaseEntry] = []
    policies: dict[str, PolicyEntry] = {}
    replay_configs: ReplayConfigsRule | None = None
    replay_config_names: list[ConfigNamesEntry] = []
    limits: dict[str, int] = {}  # kraftsim's addition: raises the entry counts loader.CATALOG_LIMITS allows
    doc: str = ""
