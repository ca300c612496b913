"""Running the conformance cases of one release: fetch, plan, batch Kafka's runs, judge.

Everything Kafka and kraftsim write goes into one temporary directory per release,
removed at the end; a live node's logs are copied out first when its case fails (the
case's detail says where).
"""

from __future__ import annotations

import tempfile
import traceback
from pathlib import Path
from typing import Callable, Iterator, Sequence

from kraftsim.conformance.cases import DIFFER, Outcome, Policy, ReleaseContext, judge, load_policies, select
from kraftsim.conformance.dist import KafkaRelease, fetch
from kraftsim.conformance.tools import run_batch

BATCH_SIZE = 250


def run_release(release: KafkaRelease, patterns: Sequence[str] = (), *,
                log: Callable[[str], None] = lambda line: None) -> Iterator[Outcome]:
    """Every selected case of one release, in order, as it is judged."""
    dist = fetch(release, log=log)
    policies = load_policies()
    with tempfile.TemporaryDirectory(prefix=f"kraftsim-conformance-{release.version}-") as tmp:
        ctx = ReleaseContext(dist, Path(tmp))
        try:
            yield from _run_cases(ctx, release, patterns, policies, log)
        finally:
            for cleanup in reversed(ctx.cleanups):
                cleanup()


def _run_cases(ctx: ReleaseContext, release: KafkaRelease, patterns: Sequence[str], policies: list[Policy],
               log: Callable[[str], None]) -> Iterator[Outcome]:
    dist = ctx.dist
    cases = list(select(ctx, list(patterns)))
    log(f"Kafka {release.version}: {len(cases)} cases")
    for start in range(0, len(cases), BATCH_SIZE):
        chunk = cases[start:start + BATCH_SIZE]
        commands = [cmd for case in chunk for cmd in case.kafka]
        runs = run_batch(dist, commands)
        at = 0
        for case in chunk:
            mine = runs[at:at + len(case.kafka)]
            at += len(case.kafka)
            try:
                diffs = case.check(mine)
            except Exception as e:  # noqa: BLE001 - a case that breaks is reported, the others still run
                last = traceback.format_exception(e)[-1].strip()
                yield Outcome(case.name, release.version, DIFFER, f"the case itself failed: {last}")
                continue
            yield judge(case.name, release.version, diffs, policies)
