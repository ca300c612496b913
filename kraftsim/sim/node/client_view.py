"""The client's view of a cluster: KIP-35 version ranges and KIP-584 finalized features.

KIP-35 lets a client ask every node which request versions it serves; a client that
must talk to any of them (during a rolling upgrade, nodes of different releases) can only
rely on the versions all of them serve: the intersection of the ranges. KIP-584 adds the
finalized features with an epoch that grows with the metadata log; nodes learn new
finalized levels at different times, so the client keeps the answer with the highest
epoch it has seen and never goes back to a lower one.

Responses may arrive in any order. A node's latest successful answer replaces its earlier
one (a node that restarted on new software advertises new ranges); the finalized features
follow the epoch rule whichever node answered.
"""

from __future__ import annotations

import re

import msgspec

from kraftsim.errors import UnsupportedVersionException
from kraftsim.sim.node.api_versions import ApiVersionsResponse, ApiVersionTable, Range, api_version_table
from kraftsim.sim.node.finalized import UNKNOWN_EPOCH


def api_enum_name(name: str) -> str:
    """Kafka's ApiKeys constant for a message name: "ListOffsets" → "LIST_OFFSETS"."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()


class UsableRange(msgspec.Struct, frozen=True):
    """The versions of one API every observed node serves, and which nodes bound them."""

    api_key: int
    name: str
    min_version: int | None  # highest minimum; None when no node serves the API
    max_version: int | None  # lowest maximum
    min_set_by: tuple[int, ...] = ()  # nodes whose minimum is min_version
    max_set_by: tuple[int, ...] = ()  # nodes whose maximum is max_version
    missing_on: tuple[int, ...] = ()  # nodes that do not serve the API at all

    @property
    def empty(self) -> bool:
        """No version works on every node."""
        return (bool(self.missing_on) or self.min_version is None or self.max_version is None
                or self.min_version > self.max_version)

    def describe(self) -> str:
        """One line: the range, or why it is empty."""
        if self.missing_on:
            return f"{self.name}: not served by node(s) {_ids(self.missing_on)}"
        if self.min_version is not None and self.max_version is not None and self.min_version > self.max_version:
            return (f"{self.name}: no common version: node(s) {_ids(self.min_set_by)} serve from "
                    f"v{self.min_version}, node(s) {_ids(self.max_set_by)} only up to v{self.max_version}")
        return (f"{self.name}: v{self.min_version}-v{self.max_version} "
                f"(min set by node(s) {_ids(self.min_set_by)}, max by node(s) {_ids(self.max_set_by)})")


class FinalizedView(msgspec.Struct, frozen=True):
    """The finalized features with the highest epoch seen, and the node that reported them."""

    epoch: int = UNKNOWN_EPOCH
    levels: tuple[tuple[str, int], ...] = ()  # (name, level), by name
    reported_by: int | None = None

    def level(self, name: str) -> int:
        return dict(self.levels).get(name, 0)


def _ids(nodes: tuple[int, ...]) -> str:
    return ", ".join(str(n) for n in nodes)


class ClientView:
    """What a client knows after ApiVersions answers from many nodes."""

    def __init__(self, table: ApiVersionTable | None = None):
        self._table = table if table is not None else api_version_table()
        self._apis: dict[int, dict[int, Range]] = {}  # node → api key → range
        self._features: dict[int, dict[str, Range]] = {}  # node → supported feature ranges
        self._finalized = FinalizedView()

    @property
    def nodes(self) -> tuple[int, ...]:
        """Nodes with a successful answer, by id."""
        return tuple(sorted(self._apis))

    @property
    def finalized(self) -> FinalizedView:
        return self._finalized

    def observe(self, node_id: int, response: ApiVersionsResponse) -> bool:
        """Take one node's answer; False (and nothing learnt) for an error answer."""
        if response.error_code != 0:
            return False
        self._apis[node_id] = {key: (lo, hi) for key, lo, hi in response.api_keys}
        self._features[node_id] = {name: (lo, hi) for name, lo, hi in response.supported_features}
        if response.finalized_features_epoch > self._finalized.epoch:
            self._finalized = FinalizedView(
                response.finalized_features_epoch,
                tuple(sorted((name, max_level) for name, _, max_level in response.finalized_features)),
                node_id,
            )
        return True

    def usable_range(self, api_key: int) -> UsableRange:
        """The intersection over all observed nodes of their ranges for `api_key`."""
        name = self._table.api_name(api_key)
        serving = {n: apis[api_key] for n, apis in sorted(self._apis.items()) if api_key in apis}
        missing = tuple(n for n in self.nodes if n not in serving)
        if not serving:
            return UsableRange(api_key, name, None, None, missing_on=missing)
        lo = max(r[0] for r in serving.values())
        hi = min(r[1] for r in serving.values())
        return UsableRange(
            api_key, name, lo, hi,
            min_set_by=tuple(n for n, r in serving.items() if r[0] == lo),
            max_set_by=tuple(n for n, r in serving.items() if r[1] == hi),
            missing_on=missing,
        )

    def usable_ranges(self) -> dict[int, UsableRange]:
        """usable_range of every api key any observed node serves, by key."""
        keys = sorted({k for apis in self._apis.values() for k in apis})
        return {k: self.usable_range(k) for k in keys}

    def pick_version(self, api_key: int, oldest_allowed: int, latest_allowed: int) -> int:
        """The version a client whose own range is [oldest, latest] sends to any node.

        As Kafka's NodeApiVersions.latestUsableVersion, over the cross-node range: the
        highest version in both ranges, or UnsupportedVersionException with Kafka's text.
        """
        usable = self.usable_range(api_key)
        enum = api_enum_name(usable.name)
        if usable.missing_on or usable.min_version is None or usable.max_version is None:
            nodes = usable.missing_on or self.nodes
            raise UnsupportedVersionException(f"The node does not support {enum} (node(s) {_ids(nodes)})")
        if usable.min_version > usable.max_version:
            raise UnsupportedVersionException(usable.describe())
        lo, hi = max(usable.min_version, oldest_allowed), min(usable.max_version, latest_allowed)
        if lo > hi:
            raise UnsupportedVersionException(
                f"The broker does not support {enum} with version in range [{oldest_allowed},{latest_allowed}]. "
                f"The supported range is [{usable.min_version},{usable.max_version}]."
            )
        return hi

    def supported_feature(self, name: str) -> Range | None:
        """The intersection of the feature ranges nodes support; None if empty or unknown to one.

        A node that does not list a feature supports only level 0 of it (facts §2.6), so
        a feature some node leaves out can only be at 0 cluster-wide.
        """
        if not self._features:
            return None
        ranges = [feats.get(name, (0, 0)) for feats in self._features.values()]
        lo, hi = max(r[0] for r in ranges), min(r[1] for r in ranges)
        return (lo, hi) if lo <= hi else None
