"""Kafka's own tools (topics, configs, features describe/upgrade/downgrade/disable, metadata-quorum, broker-api-versions, cluster,
acls, consumer-groups, transactions, get-offsets) and raw requests against `kraftsim serve` and against a live combined node of the
same release: the masked outputs must be equal (kraftsim.conformance.cases.serve_tools says
what is masked and why). `kraftsim conformance run --case 'serve-tools/*'` runs the same
comparison on any release from 3.3 (before 3.7 each tool runs as its release's bin script runs
it, `conformance.tools.main_classes`, and what a release does not have is not asked: the
client-metrics tool, admin requests to a controller, APIs it does not advertise).

A difference that is a known kraftsim gap outside the wire package is listed in KNOWN_GAPS,
exactly, with where it is to be fixed: the test fails when it changes, so the entry goes
when the gap is fixed. Releases: KRAFTSIM_CONFORMANCE_SERVE_RELEASES (default 3.4.1, 3.7.2, 4.0.2
and 4.4.0). One JVM cluster at a time.
"""

from __future__ import annotations

import pytest

from kraftsim.conformance.cases.serve_tools import differences, live_side, mask, served_side
from tests.conformance.conftest import _selected, kafka_dist

RELEASES = _selected("KRAFTSIM_CONFORMANCE_SERVE_RELEASES", ("3.4.1", "3.7.2", "4.0.2", "4.4.0"))


def _api(name: str, key: int, kafka: str, kraftsim: str) -> str:
    return (f"broker-api-versions: {name}: Kafka '{name}({key}): {kafka}', "
            f"kraftsim '{name}({key}): {kraftsim}'")


#: None at present: the API version table now agrees with every live release checked.
KNOWN_GAPS: dict[str, set[str]] = {}


def test_replication_masking_keeps_lag_and_status_and_ignores_padding():
    """Only the columns that differ between two clusters are masked; Lag and Status still count."""
    kafka = ("NodeId\tDirectoryId           \tLogEndOffset\tLag\tLastFetchTimestamp\tLastCaughtUpTimestamp\tStatus\n"
             "1     \tq1w2e3r4t5y6u7i8o9p0aa\t1234        \t0  \t1764416400000     \t1764416400000        \tLeader\n")
    served = kafka.replace("q1w2e3r4t5y6u7i8o9p0aa", "AAAAAAAAAAAAAAAAAAAAAQ").replace("1234        ", "77 ") \
        .replace("1764416400000", "5")
    assert mask(kafka, "") == mask(served, "")
    assert mask(kafka, "").splitlines()[1] == "1 <DirectoryId> <LogEndOffset> 0 <LastFetchTimestamp> " \
        "<LastCaughtUpTimestamp> Leader"
    assert mask(kafka, "") != mask(kafka.replace("\t0  \t", "\t3  \t").replace("Leader", "Follower"), "")


@pytest.mark.kafka
@pytest.mark.parametrize("release", RELEASES)
def test_kafkas_tools_print_the_same_against_serve_and_a_live_node(release, tmp_path):
    dist = kafka_dist(release)
    live = live_side(dist, tmp_path)
    found = differences(live, served_side(dist))
    assert set(found) == KNOWN_GAPS.get(release, set()), "\n".join(found)
