"""The conformance cases: each runs one thing on real Kafka and the same thing on kraftsim.

A case group (one module) turns a release into named cases, cheapest groups first. A
case's name is `<group>/<what>` (e.g. `storage-format/combined/-r 3.7-IV0`), so
`--case 'storage-format/*'` picks cases before anything runs. Each case returns an
Outcome: "agree", "differ" (with the differences) or "policy" (a documented, named
difference, see data/policies.toml). The shared types live in `base`.
"""

from __future__ import annotations

import fnmatch
from typing import Callable, Iterable, Iterator

from kraftsim.conformance.cases import (
    dump_log, live_node, live_quorum, serve_acls, serve_tools, shell, storage_format, tool_text,
)
from kraftsim.conformance.cases.base import (
    AGREE, DIFFER, POLICY, Case, Outcome, Policy, ReleaseContext, judge, load_policies,
)

__all__ = ["AGREE", "DIFFER", "POLICY", "Case", "Outcome", "Policy", "ReleaseContext", "case_groups", "judge",
           "load_policies", "select"]


def case_groups() -> list[tuple[str, Callable[[ReleaseContext], Iterable[Case]]]]:
    """(group name, case generator) in running order, cheapest first."""
    return [
        ("tool-text", tool_text.cases),
        ("storage-format", storage_format.cases),
        ("dump-log", dump_log.cases),
        ("metadata-shell", shell.cases),
        ("live-node", live_node.cases),
        ("live-unstable", live_node.unstable_cases),
        ("live-quorum", live_quorum.cases),
        ("serve-tools", serve_tools.cases),
        ("serve-acls", serve_acls.cases),
    ]


def select(ctx: ReleaseContext, patterns: list[str]) -> Iterator[Case]:
    """The release's cases whose names match one of the patterns (all when none is given)."""
    for group, generate in case_groups():
        if patterns and not any(fnmatch.fnmatchcase(group, p.split("/")[0]) for p in patterns):
            continue
        for case in generate(ctx):
            if not patterns or any(fnmatch.fnmatchcase(case.name, p) for p in patterns):
                yield case
