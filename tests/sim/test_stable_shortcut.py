"""`Engine.stable` asks first the node that failed its last call; the answer must be the plain
walk's (`stable_full`) at every instant of random runs with faults, settles and rolls."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftsim.sim import SimError, Simulation

from tests.sim.sim_helpers import scratch

NODES = [1, 2, 3, 4, 5]  # three controllers and two brokers
step = st.one_of(
    st.tuples(st.just("crash"), st.sampled_from(NODES)),
    st.tuples(st.just("stop"), st.sampled_from(NODES)),
    st.tuples(st.just("start"), st.sampled_from(NODES)),
    st.tuples(st.just("partition"), st.sampled_from(NODES)),
    st.tuples(st.just("heal"), st.just(0)),
    st.tuples(st.just("run"), st.integers(0, 3000)),
    st.tuples(st.just("topics"), st.integers(1, 3)),
    st.tuples(st.just("roll"), st.sampled_from(NODES)),
    st.tuples(st.just("wait"), st.just(0)),
)


@settings(max_examples=int(os.environ.get("KRAFTSIM_EXAMPLES", "10")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), steps=st.lists(step, max_size=8))
def test_stable_answers_as_the_full_walk(seed: int, steps: list[tuple[str, int]]) -> None:
    answers: list[bool] = []
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=3, brokers=2, release="4.0", seed=seed, durable=False)
        e = sim.engine
        fast = e.stable

        def checked() -> bool:
            got = fast()
            assert got == e.stable_full(), f"stable() said {got} at {e.current_event}"
            answers.append(got)
            return got

        e.stable = checked  # type: ignore[method-assign]  (every settle asks through it)
        try:
            for kind, arg in steps:
                try:
                    if kind == "crash":
                        sim.crash([arg])
                    elif kind == "stop":
                        sim.stop([arg])
                    elif kind == "start":
                        sim.start([arg])
                    elif kind == "partition":
                        sim.partition([[arg]])
                    elif kind == "heal":
                        sim.heal()
                    elif kind == "run":
                        e.run_until(e.now + arg, lambda: checked() and False)
                    elif kind == "topics":
                        sim.create_topics(arg, 1)
                    elif kind == "roll":
                        sim.roll("4.1", [arg])
                    else:
                        sim.wait(10_000)
                except SimError:
                    pass  # refusals and timeouts: what matters is every answer on the way
            sim.heal()
            try:
                sim.start("all")
                sim.wait(60_000)
            except SimError:
                pass
            checked()
        finally:
            sim.close()
    assert answers
