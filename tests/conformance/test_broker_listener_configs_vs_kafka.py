"""Broker configs changed through a broker's own listener (`kafka-configs --bootstrap-server
--alter --entity-type brokers`, the release's own tool): `kraftsim serve` answers each change as
a live Kafka cluster of the same shape does (the broker's refusals word for word, or the change
forwarded), and its controller writes the same ConfigRecords
(kraftsim.conformance.broker_listener_configs; `kafka` marker: two node JVMs and the tool's runs
on each side, about a minute a release)."""

from __future__ import annotations

import pytest

from kraftsim.conformance.broker_listener_configs import CHANGES, RELEASES, measure, served
from tests.conformance.conftest import kafka_dist

pytestmark = pytest.mark.kafka


@pytest.mark.parametrize("release", RELEASES)
def test_broker_configs_through_a_broker_are_answered_and_written_as_by_kafka(release, tmp_path):
    dist = kafka_dist(release)
    live_runs, live_written = measure(dist, tmp_path / "live")
    refused = [change for change, (code, _) in zip(CHANGES, live_runs) if code != 0]
    # every class is there: refusals of each check, and changes forwarded and written
    assert any("log.dirs=/tmp/elsewhere" in c for c in refused) and any("num.io.threads=20" in c for c in refused)
    assert ("2", "num.io.threads", "12") in live_written and ("", "custom.team", "blue") in live_written
    assert ("", "log.retention.ms", "7200000") in live_written and any("log.roll.ms=0" in c for c in refused)
    assert ("", "message.max.bytes", "2000000") in live_written
    served_runs, served_written = served(dist, tmp_path)
    assert served_runs == live_runs
    assert served_written == live_written
