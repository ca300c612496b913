"""kafka-acls and raw ACL requests against `kraftsim serve` and against a live combined node of
the same release, both with Kafka's StandardAuthorizer and super.users=User:ANONYMOUS: their
answers must be equal (kraftsim.conformance.cases.serve_acls says how listings are compared).
Releases: KRAFTSIM_CONFORMANCE_SERVE_RELEASES (default 3.7.2 and 4.4.0: the Scala and the Java
tool). One JVM cluster at a time."""

from __future__ import annotations

import pytest

from kraftsim.conformance.cases.serve_acls import acl_differences, live_acl_side, served_acl_side
from tests.conformance.conftest import _selected, kafka_dist

RELEASES = _selected("KRAFTSIM_CONFORMANCE_SERVE_RELEASES", ("3.7.2", "4.4.0"))


@pytest.mark.kafka
@pytest.mark.parametrize("release", RELEASES)
def test_acls_answer_as_a_live_node_with_an_authorizer(release, tmp_path):
    dist = kafka_dist(release)
    live = live_acl_side(dist, tmp_path)
    served = served_acl_side(dist)
    assert acl_differences(live, served) == []
    tools = served[0]
    assert "User:carol" in tools["acls --list (sorted)"][1]  # (what was compared is not empty)
    assert "User:alice" not in tools["acls --list --topic t (removed)"][1]
