"""The shipped API version table: what each release's broker and controller listeners serve.

The spot values are what real nodes answered (published kafka-broker-api-versions
outputs; see the header of kraftsim/sim/node/data/api_versions.toml), so a wrong edit of the
table fails here.
"""

from __future__ import annotations

import pytest

from kraftsim.errors import KraftsimError
from kraftsim.sim.node.api_versions import ROLES, ApiVersionTable, NoApiVersionData, api_version_table
from kraftsim.versions import default_catalog

TABLE = api_version_table()
CATALOG = default_catalog()
PRODUCE, FETCH, LIST_OFFSETS, METADATA, OFFSET_COMMIT, OFFSET_FETCH = 0, 1, 2, 3, 8, 9
CONTROLLED_SHUTDOWN, JOIN_GROUP, API_VERSIONS, UPDATE_FEATURES = 7, 11, 18, 57
BROKER_REGISTRATION, BROKER_HEARTBEAT, CONTROLLER_REGISTRATION = 62, 63, 70
TELEMETRY = (71, 72)
SHARE_GROUP_HEARTBEAT, SHARE_FETCH, STREAMS_GROUP_TOPOLOGY_UPDATE, UNREGISTER_CONTROLLER = 76, 78, 93, 94


def test_every_catalog_release_has_data_and_nothing_else():
    # The table is per release line; a line name is its newest release (4.0 is 4.0.2), and the
    # other releases of the line differ only where a patch release changed a range (4.0.1's JoinGroup).
    assert TABLE.releases == tuple(dict.fromkeys(r.line for r in CATALOG.releases))
    for r in CATALOG.releases:
        for role in ROLES:
            own, line = TABLE.ranges(r.name, role), TABLE.ranges(r.line, role)
            changed = {k for k in own.keys() | line.keys() if own.get(k) != line.get(k)}
            assert changed == ({JOIN_GROUP} if r.name == "4.0.0" and role == "broker" else set()), r.name


def test_a_patch_entry_holds_from_its_release_on_and_is_checked():
    assert TABLE.ranges("4.0.0", "broker")[JOIN_GROUP] == (2, 9)
    assert TABLE.ranges("4.0.1", "broker")[JOIN_GROUP] == TABLE.ranges("4.0.9", "broker")[JOIN_GROUP] == (0, 9)
    assert TABLE.ranges("4.0", "broker")[JOIN_GROUP] == (0, 9)  # the line's newest release, 4.0.2
    assert TABLE.ranges("4.0.2", "controller") == TABLE.ranges("4.0.0", "controller")
    base = ('[api_names]\n18 = "ApiVersions"\n11 = "JoinGroup"\n[[releases]]\nname = "3.9"\n'
            '[releases.broker]\n18 = [0, 4]\n[releases.controller]\n')
    with pytest.raises(KraftsimError, match=r"z\.toml: patch 4\.1\.1 has no release line 4\.1 before it"):
        ApiVersionTable.from_text(base + '[[patches]]\nname = "4.1.1"\n[patches.broker]\n11 = [0, 9]\n', "z.toml")
    with pytest.raises(KraftsimError, match=r"release 3\.9\.1 broker: bad range \[3, 1\] for api key 11"):
        ApiVersionTable.from_text(base + '[[patches]]\nname = "3.9.1"\n[patches.broker]\n11 = [3, 1]\n', "z.toml")


@pytest.mark.parametrize(
    "release, role, key, expected",
    [
        # a 3.3 controller listener (Confluent Platform 7.3)
        ("3.3", "controller", FETCH, (0, 13)),
        ("3.3", "controller", CONTROLLED_SHUTDOWN, (0, 3)),
        ("3.3", "controller", API_VERSIONS, (0, 3)),
        # complete outputs of 3.7, 3.9 and 4.0 brokers
        ("3.7", "broker", PRODUCE, (0, 10)),
        ("3.7", "broker", FETCH, (0, 16)),
        ("3.7", "broker", OFFSET_COMMIT, (0, 9)),
        ("3.9", "broker", LIST_OFFSETS, (0, 9)),
        ("3.9", "broker", API_VERSIONS, (0, 4)),
        ("4.0", "broker", PRODUCE, (0, 12)),  # KAFKA-18659: still advertised from 0
        ("4.0", "broker", FETCH, (4, 17)),  # KIP-896 minimums
        ("4.0", "broker", OFFSET_FETCH, (1, 9)),
        ("4.0.0", "broker", JOIN_GROUP, (2, 9)),
        ("4.0", "broker", UPDATE_FEATURES, (0, 2)),
        # 4.1 and 4.2 brokers
        ("4.1", "broker", PRODUCE, (0, 13)),
        ("4.1", "broker", FETCH, (4, 18)),
        ("4.1", "broker", JOIN_GROUP, (0, 9)),  # KAFKA-19444: v0 and v1 back
        ("4.2", "broker", LIST_OFFSETS, (1, 11)),
        ("4.2", "broker", OFFSET_COMMIT, (2, 10)),
        # live 4.0.2, 4.1.2, 4.2.1, 4.3.1 and 4.4.0 nodes (kafka-broker-api-versions)
        ("4.0.2", "broker", JOIN_GROUP, (0, 9)),  # KAFKA-19444 reached 4.0.1 too
        ("4.1.2", "broker", SHARE_FETCH, (1, 1)),  # share-group v0 (4.0's early access) gone
        ("4.2.1", "broker", SHARE_GROUP_HEARTBEAT, (1, 1)),
        ("4.3.1", "broker", SHARE_FETCH, (1, 2)),
        ("4.4.0", "broker", SHARE_GROUP_HEARTBEAT, (1, 1)),
        ("4.4.0", "broker", API_VERSIONS, (0, 5)),
        ("4.4.0", "broker", STREAMS_GROUP_TOPOLOGY_UPDATE, (0, 0)),
        ("4.4.0", "broker", UNREGISTER_CONTROLLER, (0, 0)),
        # 4.4.0's message JSON (ApiVersionsRequest, UnregisterControllerRequest)
        ("4.4.0", "controller", API_VERSIONS, (0, 5)),
        ("4.4.0", "controller", UNREGISTER_CONTROLLER, (0, 0)),
    ],
)
def test_ranges_real_nodes_advertised(release, role, key, expected):
    assert TABLE.ranges(release, role)[key] == expected


def test_apiversions_v4_arrives_with_3_9_and_v5_with_4_4():
    maxima = {r: TABLE.ranges(r, "broker")[API_VERSIONS][1] for r in TABLE.releases}
    assert {r for r, m in maxima.items() if m == 4} == {"3.9", "4.0", "4.1", "4.2", "4.3"}
    assert {r for r, m in maxima.items() if m == 5} == {"4.4"}
    assert {r for r, m in maxima.items() if m == 3} == {"3.3", "3.4", "3.5", "3.6", "3.7", "3.8"}


def test_listener_split():
    for release in TABLE.releases:
        broker, controller = TABLE.ranges(release, "broker"), TABLE.ranges(release, "controller")
        assert BROKER_REGISTRATION not in broker and BROKER_REGISTRATION in controller
        assert BROKER_HEARTBEAT not in broker and BROKER_HEARTBEAT in controller
        assert PRODUCE in broker and PRODUCE not in controller
        assert METADATA in broker and METADATA not in controller
    assert CONTROLLER_REGISTRATION not in TABLE.ranges("3.6", "controller")
    assert CONTROLLER_REGISTRATION in TABLE.ranges("3.7", "controller")  # KIP-919
    assert CONTROLLED_SHUTDOWN in TABLE.ranges("3.9", "controller")
    assert CONTROLLED_SHUTDOWN not in TABLE.ranges("4.0", "controller")  # ZooKeeper-era api gone


def test_no_maximum_ever_goes_down_from_one_release_to_the_next():
    releases = TABLE.releases
    for role in ROLES:
        for older, newer in zip(releases, releases[1:]):
            a, b = TABLE.ranges(older, role, TELEMETRY), TABLE.ranges(newer, role, TELEMETRY)
            for key in a.keys() & b.keys():
                assert b[key][1] >= a[key][1], (role, older, newer, TABLE.api_name(key))


def test_gated_keys_only_when_enabled():
    assert not set(TELEMETRY) & set(TABLE.ranges("3.7", "broker"))
    assert TABLE.ranges("3.7", "broker", enabled=TELEMETRY)[71] == (0, 0)
    assert 71 not in TABLE.ranges("3.6", "broker", enabled=TELEMETRY)  # KIP-714 is 3.7


def test_missing_release_is_named_not_guessed():
    with pytest.raises(NoApiVersionData, match=r"^no API version data for release 5\.0 "):
        TABLE.ranges("5.0", "broker")
    partial = ApiVersionTable.from_text(
        '[api_names]\n18 = "ApiVersions"\n[[releases]]\nname = "3.9"\n'
        "[releases.broker]\n18 = [0, 4]\n[releases.controller]\n18 = [0, 4]\n"
    )
    with pytest.raises(NoApiVersionData, match="no API version data for release 3.8 .*has: 3.9"):
        partial.ranges("3.8", "controller")


def test_bad_table_and_role_get_clear_errors():
    with pytest.raises(KraftsimError, match=r"x\.toml: release 3\.9 broker: bad range \[4, 0\] for api key 18"):
        ApiVersionTable.from_text(
            '[api_names]\n18 = "ApiVersions"\n[[releases]]\nname = "3.9"\n'
            "[releases.broker]\n18 = [4, 0]\n[releases.controller]\n", "x.toml")
    with pytest.raises(KraftsimError, match="malformed"):
        ApiVersionTable.from_text('[[releases]]\nname = "3.9"\n', "y.toml")
    with pytest.raises(KraftsimError, match="unknown node role 'combined'"):
        TABLE.ranges("3.9", "combined")
