"""The inputs the cases try, taken from both sides: what Kafka's tools list (read from
their own refusals) and what kraftsim's catalog knows at the release, so that neither
side's gaps go unnoticed. Results are kept on the release context."""

from __future__ import annotations

import re
from typing import Callable, TypeVar

from kraftsim.conformance.cases.base import ReleaseContext
from kraftsim.conformance.cases.nodes import CLUSTER_ID, Node
from kraftsim.conformance.tools import run_batch
from kraftsim.versions import default_catalog

_T = TypeVar("_T")


def _memo(ctx: ReleaseContext, key: str, make: Callable[[], _T]) -> _T:
    if key not in ctx.memo:
        ctx.memo[key] = make()
    value: _T = ctx.memo[key]
    return value


def kafka_metadata_versions(ctx: ReleaseContext) -> list[str]:
    """The metadata.versions Kafka names when it refuses an unknown one: format's list (the
    production ones) and version-mapping's (3.9 on; the unstable ones too)."""
    node = Node(ctx, "probe-versions", "combined")
    runs = run_batch(ctx.dist, [("storage", ("format", "-c", node.config, "-t", CLUSTER_ID, "-r", "0.0")),
                                ("storage", ("version-mapping", "--release-version", "0.0"))])
    names: list[str] = []
    for run in runs:
        m = re.search(r"Supported metadata\.version are: (.+)", run.text())
        names += [v.strip() for v in m.group(1).split(",")] if m else []
    return list(dict.fromkeys(names))


def kafka_features(ctx: ReleaseContext) -> list[str]:
    """The features Kafka's format knows, read from its refusal of an unknown one (none before 3.8's --feature)."""
    node = Node(ctx, "probe-features", "combined")
    run = run_batch(ctx.dist, [("storage", ("format", "-c", node.config, "-t", CLUSTER_ID,
                                            "--feature", "no.such.feature=1"))])[0]
    m = re.search(r"Supported features are: (.+)", run.text())
    return [v.strip() for v in m.group(1).split(",")] if m else []


def metadata_versions(ctx: ReleaseContext) -> list[str]:
    """Every metadata.version Kafka or kraftsim knows at this release, plus the first one beyond."""
    return _memo(ctx, "metadata_versions", lambda: _metadata_versions(ctx))


def _metadata_versions(ctx: ReleaseContext) -> list[str]:
    catalog = ctx.catalog()
    ours = [mv.version for mv in catalog.metadata_versions] if catalog else []
    if catalog:
        beyond = [mv.version for mv in catalog.all_metadata_versions if mv.level > catalog.latest_testing.level]
        ours += beyond[:1]
    names = list(dict.fromkeys(kafka_metadata_versions(ctx) + ours))
    return sorted(names, key=lambda v: tuple(int(x) for x in re.findall(r"\d+", v)))


def feature_tops(ctx: ReleaseContext) -> dict[str, int]:
    """Feature -> the highest level worth trying (one above what either side supports)."""
    return _memo(ctx, "feature_tops", lambda: _feature_tops(ctx))


def _feature_tops(ctx: ReleaseContext) -> dict[str, int]:
    catalog = ctx.catalog()
    ranges = catalog.supported_features(unstable=True) if catalog else {}
    tops = {name: hi + 1 for name, (_, hi) in ranges.items() if name != "metadata.version"}
    for name in kafka_features(ctx):
        tops.setdefault(name, 2)
    return dict(sorted(tops.items()))




def metadata_levels(ctx: ReleaseContext) -> list[int]:
    """metadata.version levels to look up: 0, every level kraftsim knows, and one beyond."""
    top = max(mv.level for mv in default_catalog().all_metadata_versions)
    return list(range(0, top + 2))
