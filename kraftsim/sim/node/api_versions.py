"""What a node answers to ApiVersions: KIP-35 ranges, KIP-584 features, KIP-1022's v4.

A node of some Kafka release and role ("broker" or "controller" listener) advertises:

- the [min, max] version of every API its listener serves, from the shipped table
  `data/api_versions.toml` (its header says where the numbers come from);
- from request version 3 on, the feature ranges it supports (the catalog's
  `supported_features()` of its release), the finalized levels it knows and their epoch.

KIP-1022 detail. Before ApiVersions v4 a client could not read a supported range whose
minimum is 0 (the Java client's SupportedVersionRange required min >= 1), so a node
answering a request of version 3 or lower leaves those features out entirely. The first
fix (KAFKA-17011, apache/kafka PR #16421, which added v4) raised such minimums to 1; it was
replaced before release by omission (KAFKA-17492, apache/kafka PR #17128: "when preparing
ApiVersionResponse at versions less than 4, we must omit these features"). kraftsim
follows the released rule: omit.

A request whose version the node does not know gets UNSUPPORTED_VERSION with only the
node's own ApiVersions range in it (KIP-511), so the client can retry at a version both
sides know; the feature fields are then absent (the answer is written at version 0).
"""

from __future__ import annotations

import tomllib
from functools import cache
from importlib import resources
from typing import Any, Iterable, Mapping

import msgspec

from kraftsim.controller import error_codes
from kraftsim.errors import KraftsimError
from kraftsim.image import MetadataImage
from kraftsim.sim.node.finalized import UNKNOWN_EPOCH, FinalizedFeatures, finalized_features
from kraftsim.versions import FEATURE_NAME as MV_NAME, Catalog, default_catalog
from kraftsim.versions import RELEASE_NAME_RE, release_line, release_name_key

ROLES = ("broker", "controller")
API_VERSIONS_KEY = 18
#: First ApiVersions version with SupportedFeatures, FinalizedFeatures and their epoch.
FEATURES_MIN_VERSION = 3
#: First ApiVersions version that may carry a supported range starting at 0.
ZERO_MIN_FEATURE_VERSION = 4
#: First ApiVersions version with ThrottleTimeMs.
THROTTLE_MIN_VERSION = 1

Range = tuple[int, int]


class NoApiVersionData(KraftsimError):
    """The table has no ranges for a release: kraftsim does not guess them."""


class ApiVersionTable:
    """Per release and role, the ranges each API key is advertised with."""

    def __init__(self, data: Mapping[str, Any], where: str) -> None:
        try:
            self.names: dict[int, str] = {int(k): str(v) for k, v in data["api_names"].items()}
            self.gated: dict[int, str] = {int(k): str(v) for k, v in data.get("gated", {}).items()}
            self._ranges: dict[tuple[str, str], dict[int, Range]] = {}
            for rel in data["releases"]:
                name = str(rel["name"])
                for role in ROLES:
                    table = {}
                    for key, pair in rel[role].items():
                        table[int(key)] = _range(where, name, role, key, pair, self.names)
                    self._ranges[(name, role)] = dict(sorted(table.items()))
            #: line -> [(first patch release, role -> the keys it changes)], oldest first
            self._patches: dict[str, list[tuple[tuple[int, int, int], dict[str, dict[int, Range]]]]] = {}
            for patch in data.get("patches", []):
                name = str(patch["name"])
                line = release_line(name)
                if (line, "broker") not in self._ranges:
                    raise KraftsimError(f"{where}: patch {name} has no release line {line} before it")
                changed = {role: {int(k): _range(where, name, role, k, pair, self.names)
                                  for k, pair in patch.get(role, {}).items()} for role in ROLES}
                self._patches.setdefault(line, []).append((release_name_key(name), changed))
            for entries in self._patches.values():
                entries.sort(key=lambda e: e[0])
        except (KeyError, TypeError, ValueError) as exc:
            raise KraftsimError(f"{where}: malformed API version table ({type(exc).__name__}: {exc})") from None
        self.where = where

    @classmethod
    def from_text(cls, text: str, where: str = "<text>") -> "ApiVersionTable":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise KraftsimError(f"{where}: {exc}") from None
        return cls(data, where)

    @property
    def releases(self) -> tuple[str, ...]:
        """Release lines the table has data for, in file order."""
        return tuple(dict.fromkeys(rel for rel, _ in self._ranges))

    def ranges(self, release: str, role: str, enabled: Iterable[int] = ()) -> dict[int, Range]:
        """api key → (min, max) a `role` listener of `release` advertises, by key.

        Gated keys (see the data file) are left out unless their key is in `enabled`.
        """
        if role not in ROLES:
            raise KraftsimError(f"unknown node role {role!r}: expected 'broker' or 'controller'")
        table = self._ranges.get((release, role))
        if RELEASE_NAME_RE.match(release):  # "4.3.1": the table is per line
            line = release_line(release)
            table = self._ranges.get((line, role))
            # a line name stands for its newest release (as the catalog reads it): every patch holds
            at = None if release == line else release_name_key(release)
            changes = [c[role] for first, c in self._patches.get(line, []) if (at is None or first <= at) and c[role]]
            if table is not None and changes:  # a patch release that changed some ranges
                table = dict(sorted({k: r for c in [table, *changes] for k, r in c.items()}.items()))
        if table is None:
            raise NoApiVersionData(
                f"no API version data for release {release} "
                f"(the table has: {', '.join(self.releases)})"
            )
        wanted = set(enabled)
        return {k: r for k, r in table.items() if k not in self.gated or k in wanted}

    def api_name(self, key: int) -> str:
        """Kafka's message name of an api key ("Produce"), or "Unknown(<key>)"."""
        return self.names.get(key, f"Unknown({key})")


def _range(where: str, release: str, role: str, key: object, pair: Iterable[object],
           names: Mapping[int, str]) -> Range:
    lo, hi = (int(x) for x in pair)  # type: ignore[call-overload]
    if not 0 <= lo <= hi or int(key) not in names:  # type: ignore[call-overload]
        raise KraftsimError(f"{where}: release {release} {role}: bad range {pair} for api key {key}")
    return lo, hi


@cache
def api_version_table() -> ApiVersionTable:
    """The shipped table (cached)."""
    text = resources.files("kraftsim.sim.node").joinpath("data/api_versions.toml").read_text("utf-8")
    return ApiVersionTable.from_text(text, "kraftsim/sim/node/data/api_versions.toml")


def broker_serves(release: str, api_key: int) -> bool:
    """Whether a broker of `release` serves the API (shipped table; a release the table does not
    know, a hypothetical one, is taken to be as new as the newest)."""
    try:
        return api_key in api_version_table().ranges(release, "broker")
    except NoApiVersionData:
        return True


def max_api_versions_version(release: str, role: str) -> int:
    """The highest ApiVersions request version a `role` listener of `release` knows (shipped table)."""
    return api_version_table().ranges(release, role)[API_VERSIONS_KEY][1]


class ApiVersionsResponse(msgspec.Struct, frozen=True):
    """ApiVersionsResponse's fields, in Kafka's order; absent fields keep their defaults."""

    error_code: int = 0
    api_keys: tuple[tuple[int, int, int], ...] = ()  # (api key, min, max), by key
    throttle_time_ms: int = 0
    supported_features: tuple[tuple[str, int, int], ...] = ()  # (name, min, max), by name
    finalized_features_epoch: int = UNKNOWN_EPOCH
    finalized_features: tuple[tuple[str, int, int], ...] = ()  # (name, min level, max level), by name
    zk_migration_ready: bool = False

    def api_range(self, api_key: int) -> Range | None:
        for key, lo, hi in self.api_keys:
            if key == api_key:
                return lo, hi
        return None


def advertised_features(supported: Mapping[str, Range], request_version: int) -> tuple[tuple[str, int, int], ...]:
    """SupportedFeatures as written at `request_version`: ranges starting at 0 only from v4."""
    if request_version < FEATURES_MIN_VERSION:
        return ()
    return tuple(
        (name, lo, hi) for name, (lo, hi) in sorted(supported.items())
        if lo > 0 or request_version >= ZERO_MIN_FEATURE_VERSION
    )


def _finalized_of(source: MetadataImage | FinalizedFeatures | None, kraft_version: int,
                  node: Catalog) -> FinalizedFeatures | None:
    finalized = finalized_features(source, kraft_version) if isinstance(source, MetadataImage) else source
    if finalized is None and node.policy("api_versions_unknown_hw") == "minimum":
        # Before 4.4 a node that does not know the high watermark yet assumes its lowest MV.
        lowest = node.minimum.level
        return FinalizedFeatures(lowest, ((MV_NAME, lowest),), UNKNOWN_EPOCH)
    return finalized


def api_versions_response(
    release: str,
    role: str,
    request_version: int,
    image_or_finalized: MetadataImage | FinalizedFeatures | None,
    *,
    catalog: Catalog | None = None,
    unstable: bool = False,
    enabled: Iterable[int] = (),
    kraft_version: int = 0,
    throttle_time_ms: int = 0,
    table: ApiVersionTable | None = None,
) -> ApiVersionsResponse:
    """The answer a `role` node of `release` gives to an ApiVersions request of `request_version`.

    `image_or_finalized` is the node's metadata (an image, its FinalizedFeatures, or None
    before it has any); `kraft_version` is the node's kraft.version when an image is given. Without metadata
    (the high watermark not known yet) a node reports what its release does: its lowest
    metadata.version at epoch -1 up to 4.3, nothing and epoch -1 from 4.4 (kafka-facts §11.4).
    `unstable` is the node's unstable.feature.versions.enable; `enabled` names gated api
    keys the node is configured to serve.
    """
    if request_version < 0:
        raise KraftsimError(f"ApiVersions request version must be >= 0, got {request_version}")
    table = table if table is not None else api_version_table()
    ranges = table.ranges(release, role, enabled)
    lo, hi = ranges[API_VERSIONS_KEY]
    if not lo <= request_version <= hi:
        return ApiVersionsResponse(error_code=error_codes()["UNSUPPORTED_VERSION"],
                                   api_keys=((API_VERSIONS_KEY, lo, hi),))
    api_keys = tuple((key, a, b) for key, (a, b) in ranges.items())
    throttle = throttle_time_ms if request_version >= THROTTLE_MIN_VERSION else 0
    if request_version < FEATURES_MIN_VERSION:
        return ApiVersionsResponse(api_keys=api_keys, throttle_time_ms=throttle)
    node = (catalog if catalog is not None else default_catalog()).at_release(release)
    supported = node.supported_features(unstable)
    finalized = _finalized_of(image_or_finalized, kraft_version, node)
    return ApiVersionsResponse(
        api_keys=api_keys,
        throttle_time_ms=throttle,
        supported_features=advertised_features(supported, request_version),
        finalized_features_epoch=finalized.epoch if finalized is not None else UNKNOWN_EPOCH,
        # Since KIP-778 a finalized feature has one level: Kafka writes it as both min and max.
        finalized_features=tuple((n, lvl, lvl) for n, lvl in finalized.levels) if finalized is not None else (),
    )
