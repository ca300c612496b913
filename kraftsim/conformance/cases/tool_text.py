"""`version-mapping` and `feature-dependencies` of kafka-storage and kafka-features, against
kraftsim's `storage` and `features` subcommands of the same name acting as the release.

Inputs: no version (the release's default), every metadata.version either side knows,
each release line ("3.9"), an unknown version; every feature at every level up to one
beyond either side's, metadata.version at every level, and malformed arguments.
Before 4.3, kafka-features needs a `--bootstrap-server` even for these offline
subcommands; it is given one (never contacted), and kraftsim none.
"""

from __future__ import annotations

import re
from typing import Iterable

from kraftsim.conformance.cases.base import Case, ReleaseContext
from kraftsim.conformance.cases.inputs import feature_tops, metadata_levels, metadata_versions
from kraftsim.conformance.compare import compare_runs
from kraftsim.conformance.tools import ToolRun

UNUSED_SERVER = "127.0.0.1:9"


def _case(ctx: ReleaseContext, name: str, kafka_tool: str, kafka_args: list[str], kraftsim_argv: list[str]) -> Case:
    def check(runs: list[ToolRun]) -> list[str]:
        missing = ctx.missing_line()
        if missing:
            return [f"kraftsim cannot act as Kafka {ctx.line}: {missing}"]
        return compare_runs(runs[0], ctx.kraftsim(kraftsim_argv))

    return Case(name, ((kafka_tool, tuple(kafka_args)),), check)


def _features_prefix(ctx: ReleaseContext) -> list[str]:
    return [] if ctx.dist.release.line_tuple >= (4, 3) else ["--bootstrap-server", UNUSED_SERVER]


def cases(ctx: ReleaseContext) -> Iterable[Case]:
    line = ctx.line
    versions = metadata_versions(ctx)
    lines = sorted({m.group(0) for v in versions if (m := re.match(r"\d+\.\d+", v))},
                   key=lambda v: tuple(map(int, v.split("."))))
    for v in [None, *versions, *lines, "9.9-IV9"]:
        label = "default" if v is None else v
        flag = [] if v is None else ["--release-version", v]
        yield _case(ctx, f"tool-text/storage version-mapping/{label}", "storage", ["version-mapping", *flag],
                    ["storage", "version-mapping", "--release", line, *flag])
        yield _case(ctx, f"tool-text/features version-mapping/{label}", "features",
                    [*_features_prefix(ctx), "version-mapping", *flag],
                    ["features", "--release", line, "version-mapping", *flag])
    args = [f"metadata.version={level}" for level in metadata_levels(ctx)]
    for feature, top in feature_tops(ctx).items():
        args += [f"{feature}={level}" for level in range(top + 1)]
    args += ["no.such.feature=1", "group.version", "group.version=x", "metadata.version=x"]
    for arg in args:
        yield _case(ctx, f"tool-text/storage feature-dependencies/{arg}", "storage",
                    ["feature-dependencies", "--feature", arg],
                    ["storage", "feature-dependencies", "--release", line, "--feature", arg])
        yield _case(ctx, f"tool-text/features feature-dependencies/{arg}", "features",
                    [*_features_prefix(ctx), "feature-dependencies", "--feature", arg],
                    ["features", "--release", line, "feature-dependencies", "--feature", arg])
