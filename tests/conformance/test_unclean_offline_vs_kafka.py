"""A partition whose only in-sync replica is gone, in a live Kafka cluster, after its topic is
given unclean.leader.election.enable=true: the controller's changes of the partition
(kraftsim.conformance.unclean_offline) against the simulator's. From 3.9 the controller elects
the live replica uncleanly at its next look (the partition stays RECOVERING while no follower
can be added back); before, the partition stays offline (`kafka` marker: three JVMs, about 50 s a release)."""

from __future__ import annotations

import pytest

from kraftsim.conformance.unclean_offline import measure, simulated
from kraftsim.versions import default_catalog
from tests.conformance.conftest import kafka_dist, live_releases

pytestmark = pytest.mark.kafka

OFFLINE = [((2,), None, None), (None, -1, None)]  # broker 3 leaves the ISR; broker 2's session expires
ELECTED = [((3,), 3, 1)]  # elected uncleanly, RECOVERING: alone, the new leader asks nothing more


@pytest.mark.parametrize("release", live_releases())
def test_the_controller_elects_uncleanly_by_itself_from_3_9_as_kafka_does(release, tmp_path):
    live = measure(kafka_dist(release), tmp_path)
    reads_config = default_catalog().at_release(release).policy("unclean_election_config") == "honoured"
    assert live == OFFLINE + (ELECTED if reads_config else []), live
    assert simulated(release) == live
