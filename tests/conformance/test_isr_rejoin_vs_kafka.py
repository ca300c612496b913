"""A broker restarted in a live Kafka cluster is taken back into the ISRs it left, then given its
preferred leaderships back by the controller's balancing: the partition changes its controller
writes (kraftsim.conformance.isr_rejoin) against the simulator's, record by record and partition
by partition (`kafka` marker: three JVMs, about 40 s a release)."""

from __future__ import annotations

import pytest

from kraftsim.conformance.isr_rejoin import measure, simulated
from tests.conformance.conftest import kafka_dist, live_releases

pytestmark = pytest.mark.kafka


@pytest.mark.parametrize("release", live_releases())
def test_the_restarted_broker_leaves_and_rejoins_every_isr_as_in_kafka(release, tmp_path):
    live = measure(kafka_dist(release), tmp_path)
    # the controlled shutdown shrinks each ISR to broker 2 (moving the leaderships of broker 3),
    # then broker 2, leading every partition, adds broker 3 back: one record per partition each;
    # then the controller gives broker 3 back the partitions it is the first replica of
    assert live == {0: [((2,), None), ((2, 3), None)], 1: [((2,), 2), ((2, 3), None), (None, 3)],
                    2: [((2,), None), ((2, 3), None)], 3: [((2,), 2), ((2, 3), None), (None, 3)]}, live
    assert simulated(release) == live
