"""`kafka-storage format` against `kraftsim storage format`: texts, exit codes and files.

Each case formats the same node (same server.properties, same paths: Kafka's output is
moved aside before kraftsim writes, see nodes.Node) with Kafka's tool and with kraftsim's
(`--release` = the release's line), then compares exit codes, both streams (the node's
path replaced by `<node>`) and every file written (compare.compare_trees). Nodes: a
combined node, a controller, a broker with two log directories, and (3.9 on) a
controller of a dynamic quorum formatted `--standalone`, and a combined node with
the release's unstable-versions config at its placeholder level. Inputs: no `--release-version`,
every metadata.version either side knows (Kafka's list is read from its own refusal of
an unknown version), `--feature` at every level of every feature either side names, and
the combinations Kafka refuses.
"""

from __future__ import annotations

import re
from typing import Iterable

from kraftsim.conformance.cases.base import Case, ReleaseContext
from kraftsim.conformance.cases.inputs import feature_tops, metadata_versions
from kraftsim.conformance.cases.nodes import CLUSTER_ID, ROLES, SCRAM, Node
from kraftsim.conformance.compare import compare_runs
from kraftsim.conformance.tools import ToolRun


def format_case(ctx: ReleaseContext, group: str, role: str, label: str, flags: list[str],
                times: int = 1, second_flags: list[str] | None = None, config_role: str | None = None) -> Case:
    """One format case: the flags given to both tools (`times` = 2 formats the node twice,
    the second time with `second_flags`, to see how each refuses or skips); `config_role`
    picks another server.properties than the role's under the same case name."""
    name = f"{group}/{role}/{label}"
    node = Node(ctx, re.sub(r"[^A-Za-z0-9.=-]+", "_", f"{role}-{label}")[:60], config_role or role)
    runs = [flags] + ([second_flags if second_flags is not None else flags] if times == 2 else [])
    kafka = tuple(("storage", ("format", "-c", node.config, "-t", CLUSTER_ID, *f)) for f in runs)

    def check(kafka_runs: list[ToolRun]) -> list[str]:
        missing = ctx.missing_line()
        if missing:
            return [f"kraftsim cannot act as Kafka {ctx.line}: {missing}"]
        node.keep("kafka")
        diffs = []
        for i, (f, k) in enumerate(zip(runs, kafka_runs)):
            s = ctx.kraftsim(["storage", "format", "--release", ctx.line, "--seed", "0", "-c", node.config,
                              "-t", CLUSTER_ID, *f])
            step = f"run {i + 1}: " if len(runs) > 1 else ""
            diffs += [step + d for d in compare_runs(k, s, replacements=node.replacements)]
        node.keep("kraftsim")
        return diffs + node.tree_diffs()

    return Case(name, kafka, check)


def cases(ctx: ReleaseContext) -> Iterable[Case]:
    group = "storage-format"
    versions = metadata_versions(ctx)
    for role in ROLES:
        yield format_case(ctx, group, role, "default", [])
        for v in versions:
            yield format_case(ctx, group, role, f"-r {v}", ["-r", v])
    for feature, top in feature_tops(ctx).items():
        for level in range(top + 1):
            yield format_case(ctx, group, "combined", f"-f {feature}={level}", ["-f", f"{feature}={level}"])
    catalog = ctx.catalog()
    latest = catalog.latest_production if catalog else None
    refusals: list[tuple[str, list[str]]] = [
        ("unknown -r", ["-r", "9.9-IV9"]),
        ("-r with release string", ["-r", ctx.version]),
        ("unknown feature", ["-f", "no.such.feature=1"]),
        ("feature without level", ["-f", "group.version"]),
        ("feature level not a short", ["-f", "group.version=x"]),
        ("ELR 1 at 3.9-IV0", ["-r", "3.9-IV0", "-f", "eligible.leader.replicas.version=1"]),
        ("kraft.version 1 on a static quorum", ["-f", "kraft.version=1"]),
        ("scram at 3.4-IV0", ["-r", "3.4-IV0", "-S", SCRAM]),
        ("scram", ["-S", SCRAM]),
        ("standalone on a static quorum", ["--standalone"]),
    ]
    if latest is not None:
        refusals += [
            ("-f metadata.version with -r", ["-r", latest.version, "-f", f"metadata.version={latest.level}"]),
            ("-f metadata.version alone", ["-f", f"metadata.version={latest.level}"]),
        ]
    for label, flags in refusals:
        yield format_case(ctx, group, "combined", label, flags)
    if catalog is not None and catalog.latest_testing.level > catalog.latest_production.level:
        # The release's placeholder (its latest testing level): refused by the plain nodes above
        # ("not yet stable" / unknown), formatted with the release's unstable-versions config
        # (policy format_unstable: 3.7 reads unstable.metadata.versions.enable).
        placeholder = catalog.latest_testing
        own = "unstable-metadata" if catalog.policy("format_unstable") == "metadata-versions" else None
        yield format_case(ctx, group, "unstable", "default", [], config_role=own)
        yield format_case(ctx, group, "unstable", "-r PLACEHOLDER", ["-r", placeholder.version], config_role=own)
        yield format_case(ctx, group, "unstable", "-f metadata.version=PLACEHOLDER",
                          ["-f", f"metadata.version={placeholder.level}"], config_role=own)
    elif catalog is not None:
        # No placeholder (3.3 to 3.6): neither config is read, the node formats as without it.
        yield format_case(ctx, group, "unstable", "default", [])
    # A config text that is not a boolean: refused where the release reads that name, else ignored.
    for which in ("feature", "metadata"):
        yield format_case(ctx, group, "unstable", f"unstable.{which}.versions.enable=maybe", [],
                          config_role=f"unstable-not-boolean-{which}")
    yield format_case(ctx, group, "combined", "formatted twice", [], times=2)
    yield format_case(ctx, group, "combined", "formatted twice, -g", [], times=2, second_flags=["-g"])
    if ctx.dist.release.line_tuple >= (3, 9):
        yield format_case(ctx, group, "standalone", "--standalone", ["--standalone"])
        yield format_case(ctx, group, "standalone", "-N", ["-N"])
        yield format_case(ctx, group, "standalone", "no quorum flag", [])
        yield format_case(ctx, group, "standalone", "--standalone -f kraft.version=0",
                          ["--standalone", "-f", "kraft.version=0"])
