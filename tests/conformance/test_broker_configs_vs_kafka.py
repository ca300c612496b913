"""Broker configs changed through a controller listener (`kafka-configs --bootstrap-controller
--alter --entity-type brokers`, the release's own tool): `kraftsim serve` answers each change as
a live Kafka cluster of the same shape does, and its controller writes the same ConfigRecords
(kraftsim.conformance.broker_configs; `kafka` marker: three JVMs and the tool's runs on each
side, about 20 s a release). The tool of 3.x sends the legacy AlterConfigs (a broker's whole set
of dynamic configs), 4.x's IncrementalAlterConfigs."""

from __future__ import annotations

import pytest

from kraftsim.conformance.broker_configs import TOOL_RELEASES, measure, served
from kraftsim.versions import release_name_key
from tests.conformance.conftest import kafka_dist

pytestmark = pytest.mark.kafka


@pytest.mark.parametrize("release", TOOL_RELEASES)
def test_broker_configs_through_a_controller_are_answered_and_written_as_by_kafka(release, tmp_path):
    dist = kafka_dist(release)
    live_runs, live_written = measure(dist, tmp_path / "live")
    # the controller checks the broker's id only: the value a broker would refuse is written,
    # and deleting a key writes a record whether it was set or not
    assert ("", "log.cleaner.threads", "many") in live_written, live_written
    if release_name_key(release) >= (4, 4, 0):  # (the tool changes what it is told)
        assert ("", "log.roll.ms", None) in live_written and ("3", "log.cleaner.threads", None) in live_written
        assert all(code == 0 for code, _ in live_runs), live_runs
    else:  # (the tool describes first: a key never set is not deleted)
        assert live_runs[2] == (1, "Invalid config(s): log.roll.ms\n"), live_runs
    if release_name_key(release) < (4, 0, 0):  # (legacy AlterConfigs: the whole set, what is left out deleted)
        assert live_written[2:4] == [("", "log.retention.ms", "60000"), ("", "log.flush.interval.ms", None)], \
            live_written
    served_runs, served_written = served(dist, tmp_path)
    assert served_runs == live_runs
    assert served_written == live_written
