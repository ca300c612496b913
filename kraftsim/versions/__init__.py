"""kraftsim.versions: metadata.version, feature flags and Kafka releases, as data plus rules.

Everything kraftsim knows about versions lives in the TOML files under `data/`; the
code holds only Kafka's rules. Start from `default_catalog()` (the shipped catalog seen
from the newest release) or `load_catalog(path)` (the same, extended by a user's file
with hypothetical levels, features, releases and record types):

    >>> cat = default_catalog()
    >>> cat.mv_from_string("3.8.1").level
    20
    >>> cat.is_lossy(25, 22), cat.safe_downgrade_floor(25).version
    (True, '4.0-IV1')
    >>> cat.default_levels("4.0-IV3", production_only=True)["transaction.version"]
    2
    >>> cat.at_release("3.9").supported_features()
    {'metadata.version': (1, 21), 'kraft.version': (0, 1)}
    >>> cat.find_release("3.9").name, cat.release.name   # a line means its newest patch release
    ('3.9.1', '4.4.0')
"""

from kraftsim.versions.catalog import Catalog, MVLike, default_catalog, load_catalog, load_catalog_text
from kraftsim.versions.config_replay import ConfigReplayFilter
from kraftsim.versions.errors import (
    CatalogError,
    FeatureDependencyError,
    IllegalArgument,
    ToolFailure,
    UnknownFeature,
    UnknownFeatureLevel,
    UnknownMetadataVersion,
    VersionsError,
)
from kraftsim.versions.features import Feature, FeatureLevel
from kraftsim.versions.gates import DowngradeLosses
from kraftsim.versions.metadata_version import (
    FEATURE_NAME, RELEASE_NAME_RE, MetadataVersion, entry_for_release, release_key, release_line, release_name_key,
)
from kraftsim.versions.releases import Release, range_text
from kraftsim.versions.tool_text import (
    feature_dependencies, parse_feature_arg, release_version_updates, version_mapping,
)

__all__ = [
    "Catalog",
    "CatalogError",
    "ConfigReplayFilter",
    "DowngradeLosses",
    "FEATURE_NAME",
    "Feature",
    "FeatureDependencyError",
    "FeatureLevel",
    "IllegalArgument",
    "MVLike",
    "MetadataVersion",
    "RELEASE_NAME_RE",
    "Release",
    "ToolFailure",
    "UnknownFeature",
    "UnknownFeatureLevel",
    "UnknownMetadataVersion",
    "VersionsError",
    "default_catalog",
    "entry_for_release",
    "feature_dependencies",
    "load_catalog",
    "load_catalog_text",
    "parse_feature_arg",
    "range_text",
    "release_key",
    "release_line",
    "release_name_key",
    "release_version_updates",
    "version_mapping",
]
