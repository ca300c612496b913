"""Random sequences of faults (hypothesis): whatever happens, the invariants hold after every
event and, once the faults stop, the cluster settles with every node holding one image."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kraftsim.image import image_digest
from kraftsim.sim import SimError, Simulation

from tests.sim.sim_helpers import failed, scratch

NODES = [1, 2, 3, 4]  # three controllers and a broker
fault = st.one_of(
    st.tuples(st.just("crash"), st.sampled_from(NODES)),
    st.tuples(st.just("stop"), st.sampled_from(NODES)),
    st.tuples(st.just("partition"), st.sampled_from(NODES)),
    st.tuples(st.just("heal"), st.just(0)),
    st.tuples(st.just("run"), st.integers(0, 4000)),
    st.tuples(st.just("topics"), st.integers(1, 3)),
)


@settings(max_examples=int(os.environ.get("KRAFTSIM_EXAMPLES", "10")), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), faults=st.lists(fault, max_size=8))
# The broker fetches from the partitioned old leader once the partition heals, before that
# leader learns the new epoch: it holds the deposed leader's uncommitted batches at offsets
# the new leader has committed (Raft allows this above a node's own high watermark).
@example(seed=349, faults=[("partition", 2), ("run", 3525)])
def test_invariants_hold_under_any_fault_sequence(seed: int, faults: list[tuple[str, int]]) -> None:
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=3, brokers=1, release="4.1", seed=seed, durable=False)
        try:
            for kind, arg in faults:
                if kind == "crash":
                    sim.crash([arg])
                elif kind == "stop":
                    sim.stop([arg])
                elif kind == "partition":
                    sim.partition([[arg]])
                elif kind == "heal":
                    sim.heal()
                elif kind == "run":
                    sim.run(arg)
                else:
                    try:
                        sim.create_topics(arg, 1)
                    except SimError as e:  # Kafka's refusals: no live broker, or no quorum in time
                        assert "fenced" in str(e) or "Timed out" in str(e), e
            assert not failed(sim), failed(sim)
            sim.heal()
            sim.start("all")
            sim.wait(60_000)
            assert not failed(sim), failed(sim)
            assert len({image_digest(sim.image(n)) for n in NODES}) == 1
        finally:
            sim.close()
