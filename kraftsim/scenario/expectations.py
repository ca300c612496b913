"""`[expect]`: the final state held against the file's expectations, key by key."""

from __future__ import annotations

from kraftsim.scenario.language import Expect
from kraftsim.scenario.results import ExpectResult, FinalState
from kraftsim.scenario.validate import Scenario, mv_level, resolve_release
from kraftsim.sim import Simulation


def check_expect(scenario: Scenario, sim: Simulation, final: FinalState, expect: Expect | None = None,
                 step: int | None = None) -> list[ExpectResult]:
    """`[expect]` (or a step's `expect`), key by key, in the order of contract 4 then kraftsim's additions."""
    e = scenario.expect if expect is None else expect
    out: list[ExpectResult] = []
    running = sorted(n.id for n in final.nodes if n.state == "running")
    if e.metadata_version is not None:
        level = final.metadata_version.level
        if isinstance(e.metadata_version, int):
            out.append(ExpectResult("metadata_version", e.metadata_version, level, e.metadata_version == level))
        else:
            out.append(ExpectResult("metadata_version", e.metadata_version, final.metadata_version.name,
                                    mv_level(scenario.catalog, e.metadata_version) == level))
    if e.finalized is not None:
        actual = {k: final.finalized.get(k, 0) for k in sorted(e.finalized)}
        out.append(ExpectResult("finalized", {k: e.finalized[k] for k in sorted(e.finalized)}, actual,
                                actual == {k: e.finalized[k] for k in sorted(e.finalized)}))
    if e.running is not None:
        out.append(ExpectResult("running", sorted(e.running), running, sorted(e.running) == running))
    if e.has_leader is not None:
        has = final.leader is not None
        out.append(ExpectResult("has_leader", e.has_leader, has, e.has_leader == has))
    if e.leader is not None:
        out.append(ExpectResult("leader", e.leader, final.leader, e.leader == final.leader))
    if e.failed is not None:
        failed = sorted(n.id for n in final.nodes if n.state == "failed")
        out.append(ExpectResult("failed", sorted(e.failed), failed, sorted(e.failed) == failed))
    if e.stopped is not None:
        stopped = sorted(n.id for n in final.nodes if n.state != "running")
        out.append(ExpectResult("stopped", sorted(e.stopped), stopped, sorted(e.stopped) == stopped))
    if e.fenced is not None:
        fenced = sorted(n.id for n in final.nodes if n.fenced)
        out.append(ExpectResult("fenced", sorted(e.fenced), fenced, sorted(e.fenced) == fenced))
    if e.releases is not None:
        by_id = {str(n.id): n.release for n in final.nodes}
        keys = sorted(e.releases, key=int)
        want = {k: resolve_release(scenario.catalog, e.releases[k]) for k in keys}
        running_releases = {k: by_id.get(k) for k in keys}
        out.append(ExpectResult("releases", {k: e.releases[k] for k in keys}, running_releases,
                                want == running_releases))
    if e.topics is not None:
        leader = final.leader
        image = sim.image(leader) if leader is not None else None
        count = len(image.topics) if image is not None else None
        out.append(ExpectResult("topics", e.topics, count, e.topics == count))
    if e.voters is not None:
        voters = sorted(sim.voters())
        out.append(ExpectResult("voters", sorted(e.voters), voters, sorted(e.voters) == voters))
    for r in out:
        r.step = step
    return out
