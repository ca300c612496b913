"""kraftsim against real Kafka, release by release (`kafka` marker; see conftest.py).

Each test runs a group of conformance cases (kraftsim.conformance.cases) on one release:
Kafka's tools and kraftsim's commands on the same inputs, compared. A case passes when
the two agree or differ only by a documented policy. Differences kraftsim is known to
have are listed in known_gaps.toml (each with its reason); a listed gap fails nothing,
an unlisted difference fails the test. With KRAFTSIM_CONFORMANCE_REVIEW_GAPS=1 the
tests also warn about listed gaps that matched nothing in their run, to shrink the list.
"""

from __future__ import annotations

import fnmatch
import os
import tomllib
import warnings
from pathlib import Path

import pytest

from kraftsim.conformance.cases import DIFFER, Outcome
from kraftsim.conformance.dist import resolve_release
from kraftsim.conformance.run import run_release
from kraftsim.conformance.tools import run_batch, run_tool
from tests.conformance.conftest import kafka_dist, live_releases, releases, roll_releases, unstable_releases

pytestmark = pytest.mark.kafka

GAPS_FILE = Path(__file__).with_name("known_gaps.toml")
OFFLINE_GROUPS = ("tool-text", "storage-format", "dump-log", "metadata-shell")


def _gaps() -> list[dict]:
    return tomllib.loads(GAPS_FILE.read_text(encoding="utf-8")).get("gaps", [])


def _gap_of(outcome: Outcome, gaps: list[dict]) -> dict | None:
    for gap in gaps:
        if fnmatch.fnmatchcase(outcome.case, gap["case"]) \
                and any(fnmatch.fnmatchcase(outcome.release, r) for r in gap.get("releases", ["*"])) \
                and gap.get("match", "") in outcome.detail:
            return gap
    return None


def _check(outcomes: list[Outcome]) -> None:
    assert outcomes, "no case ran"
    gaps = _gaps()
    unexpected = [o for o in outcomes if o.result == DIFFER and _gap_of(o, gaps) is None]
    listed = {(g["case"], g.get("match", "")) for o in outcomes if o.result == DIFFER for g in [_gap_of(o, gaps)] if g}
    if os.environ.get("KRAFTSIM_CONFORMANCE_REVIEW_GAPS") != "1":
        gaps = []
    for gap in gaps:
        relevant = [o for o in outcomes if fnmatch.fnmatchcase(o.case, gap["case"])
                    and any(fnmatch.fnmatchcase(o.release, r) for r in gap.get("releases", ["*"]))]
        if relevant and (gap["case"], gap.get("match", "")) not in listed:
            warnings.warn(f"known gap no longer seen (remove it from known_gaps.toml?): {gap['case']} "
                          f"{gap.get('match', '')!r}", stacklevel=2)
    report = "\n".join(f"{o.case} [Kafka {o.release}]\n    " + o.detail.replace("\n", "\n    ")
                       for o in unexpected[:20])
    assert not unexpected, f"{len(unexpected)} of {len(outcomes)} cases differ from Kafka:\n{report}"


# Maven Central serves no metadata shell for some releases (4.4.0): no such group there.
_PAIRS = [(v, g) for v in releases() for g in OFFLINE_GROUPS if g != "metadata-shell" or resolve_release(v).shell]


@pytest.mark.parametrize(("version", "group"), _PAIRS)
def test_kraftsim_agrees_with_kafka(version: str, group: str) -> None:
    dist = kafka_dist(version)
    _check(list(run_release(dist.release, [f"{group}/*"])))


@pytest.mark.parametrize("version", live_releases())
def test_live_node_agrees_with_simulated_cluster(version: str) -> None:
    dist = kafka_dist(version)
    _check(list(run_release(dist.release, ["live-node/*"])))


@pytest.mark.parametrize("version", unstable_releases())
def test_placeholder_finalized_with_unstable_versions_as_kafka_does(version: str) -> None:
    """Issue 27 class 7's enabled path: a live node formatted and started with the release's
    unstable-versions config takes the placeholder level (--metadata --dry-run, --release-version,
    beside an unknown feature and beside another feature), as `kraftsim cluster create --config`
    does; Kafka's describe must show the placeholder finalized (the same requests without the
    config are live-node/*'s refusals)."""
    dist = kafka_dist(version)
    outcomes = list(run_release(dist.release, ["live-unstable/*"]))
    assert any(o.case == "live-unstable/features describe after the placeholder" for o in outcomes)
    _check(outcomes)


def _dynamic_quorum_releases() -> list[str]:
    """The live releases with KIP-853 dynamic quorums (3.9 on): before, the group has no case."""
    return [v for v in live_releases() if tuple(int(x) for x in v.split(".")[:2]) >= (3, 9)]


@pytest.mark.parametrize("version", _dynamic_quorum_releases())
def test_live_quorum_agrees_with_simulated_quorum(version: str) -> None:
    """KIP-853: three live controllers, a fourth added and removed, kafka-metadata-quorum at
    each step against the same on a simulated dynamic quorum (kraftsim.conformance.cases.live_quorum)."""
    dist = kafka_dist(version)
    _check(list(run_release(dist.release, ["live-quorum/*"])))


@pytest.mark.parametrize("version", releases()[:1])
def test_tool_batch_answers_as_separate_runs(version: str) -> None:
    """One JVM for many tool runs must not change what a run prints or returns, including a
    run that ends the JVM itself (an argparse usage error) in the middle of a batch."""
    dist = kafka_dist(version)
    commands = [("storage", ("random-uuid",)), ("storage", ("no-such-subcommand",)),
                ("storage", ("format", "-c", "/nonexistent/server.properties", "-t", "x")),
                ("features", ("--bootstrap-server", "127.0.0.1:9", "--help"))]
    batched = run_batch(dist, commands)
    single = [run_tool(dist, tool, list(args)) for tool, args in commands]
    assert len(batched) == len(commands)
    for b, s, (tool, args) in zip(batched, single, commands):
        if args == ("random-uuid",):
            assert b.code == s.code == 0 and len(b.stdout.strip()) == len(s.stdout.strip()) == 22
            continue
        assert (b.code, b.stdout) == (s.code, s.stdout), (tool, args)
        assert b.stderr.splitlines()[:1] == s.stderr.splitlines()[:1], (tool, args)


def test_rolling_upgrade_agrees_with_simulated_roll() -> None:
    """The CI releases in order on one directory (with the 3.7 → 3.8 rollback when both are there)."""
    from kraftsim.conformance.roll import run_roll

    versions = roll_releases()
    dists = [kafka_dist(v) for v in versions]
    _check(list(run_roll([d.release for d in dists])))
