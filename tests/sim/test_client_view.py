"""The client-side view: per-API intersection over nodes (KIP-35), highest finalized epoch (KIP-584)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftsim.errors import UnsupportedVersionException
from kraftsim.image import MetadataImage, MetadataProvenance
from kraftsim.image import features_from
from kraftsim.sim.node.api_versions import ApiVersionsResponse, api_version_table, api_versions_response
from kraftsim.sim.node.client_view import ClientView, api_enum_name

TABLE = api_version_table()
PRODUCE, FETCH, JOIN_GROUP, API_VERSIONS, CREATE_TOPICS = 0, 1, 11, 18, 19
CONSUMER_GROUP_DESCRIBE, DESCRIBE_TOPIC_PARTITIONS = 69, 75


def _image(mv: int, offset: int, **levels: int) -> MetadataImage:
    return MetadataImage(provenance=MetadataProvenance(offset, 3, 0, True),
                         features=features_from({"metadata.version": mv, **levels}))


def mixed_fleet() -> ClientView:
    """Brokers 1-2 still on 3.7, brokers 3-4 already on 4.1, mid-roll; clients speak v3."""
    view = ClientView()
    image = _image(19, 500)
    for node, release in ((1, "3.7"), (2, "3.7"), (3, "4.1"), (4, "4.1")):
        assert view.observe(node, api_versions_response(release, "broker", 3, image))
    return view


def test_mixed_3_7_and_4_1_fleet_gives_the_per_api_intersection():
    view = mixed_fleet()
    old, new = TABLE.ranges("3.7", "broker"), TABLE.ranges("4.1", "broker")
    for key in old.keys() & new.keys():
        u = view.usable_range(key)
        assert (u.min_version, u.max_version) == (max(old[key][0], new[key][0]), min(old[key][1], new[key][1]))
    produce = view.usable_range(PRODUCE)
    assert (produce.min_version, produce.max_version, produce.max_set_by) == (0, 10, (1, 2))
    fetch = view.usable_range(FETCH)  # 4.1 dropped Fetch v0-3 (KIP-896), 3.7 stops at 16
    assert (fetch.min_version, fetch.max_version) == (4, 16)
    assert fetch.min_set_by == (3, 4) and fetch.max_set_by == (1, 2) and not fetch.empty
    assert view.usable_range(CREATE_TOPICS).min_version == 2
    assert view.usable_range(API_VERSIONS).max_version == 3
    # APIs the 3.7 brokers do not have at all
    for key in (CONSUMER_GROUP_DESCRIBE, DESCRIBE_TOPIC_PARTITIONS):
        u = view.usable_range(key)
        assert u.empty and u.missing_on == (1, 2)
        assert "not served by node(s) 1, 2" in u.describe()


def test_pick_version_as_kafka_clients_do():
    view = mixed_fleet()
    assert view.pick_version(PRODUCE, 3, 13) == 10
    assert view.pick_version(FETCH, 0, 17) == 16
    with pytest.raises(UnsupportedVersionException,
                       match=r"^The broker does not support FETCH with version in range \[0,3\]\. "
                             r"The supported range is \[4,16\]\.$"):
        view.pick_version(FETCH, 0, 3)
    with pytest.raises(UnsupportedVersionException, match=r"^The node does not support CONSUMER_GROUP_DESCRIBE"):
        view.pick_version(CONSUMER_GROUP_DESCRIBE, 0, 1)


def test_disjoint_nodes_explain_who_limits():
    view = ClientView()
    view.observe(1, ApiVersionsResponse(api_keys=((PRODUCE, 0, 2),)))
    view.observe(2, ApiVersionsResponse(api_keys=((PRODUCE, 3, 12),)))
    u = view.usable_range(PRODUCE)
    assert u.empty
    assert u.describe() == "Produce: no common version: node(s) 2 serve from v3, node(s) 1 only up to v2"
    with pytest.raises(UnsupportedVersionException, match="no common version"):
        view.pick_version(PRODUCE, 0, 12)


def test_a_node_that_rolls_replaces_its_ranges_and_error_answers_teach_nothing():
    view = mixed_fleet()
    view.observe(1, api_versions_response("4.1", "broker", 3, None))
    view.observe(2, api_versions_response("4.1", "broker", 3, None))
    assert view.usable_range(PRODUCE).max_version == 13
    assert not view.observe(5, api_versions_response("3.8", "broker", 4, None))  # UNSUPPORTED_VERSION
    assert 5 not in view.nodes


def test_supported_features_intersection():
    view = ClientView()
    view.observe(1, api_versions_response("3.9", "broker", 4, None))
    view.observe(2, api_versions_response("4.1", "broker", 4, None))
    assert view.supported_feature("metadata.version") == (7, 21)
    assert view.supported_feature("kraft.version") == (0, 1)
    assert view.supported_feature("group.version") == (0, 0)  # unknown to 3.9: only level 0


def test_finalized_features_never_go_back_to_a_lower_epoch():
    view = ClientView()
    ahead = api_versions_response("4.1", "broker", 4, _image(27, 900, **{"group.version": 1}))
    behind = api_versions_response("4.1", "broker", 4, _image(25, 400))
    view.observe(7, ahead)
    view.observe(8, behind)
    assert (view.finalized.epoch, view.finalized.reported_by) == (900, 7)
    assert view.finalized.level("metadata.version") == 27 and view.finalized.level("group.version") == 1
    view.observe(8, api_versions_response("4.1", "broker", 4, None))  # epoch -1: nothing known
    assert view.finalized.epoch == 900


def test_enum_names():
    assert [api_enum_name(TABLE.api_name(k)) for k in (0, 2, 18, 22, 23)] == [
        "PRODUCE", "LIST_OFFSETS", "API_VERSIONS", "INIT_PRODUCER_ID", "OFFSET_FOR_LEADER_EPOCH"]


# --------------------------------------------------------------------------- properties

ranges = st.tuples(st.integers(0, 20), st.integers(0, 20)).map(sorted).map(tuple)
node_answers = st.dictionaries(
    st.integers(0, 30),
    st.tuples(st.dictionaries(st.integers(0, 5), ranges, max_size=6), st.integers(-1, 10_000)),
    min_size=1, max_size=6,
)


def _response(apis: dict[int, tuple[int, int]], epoch: int) -> ApiVersionsResponse:
    return ApiVersionsResponse(
        api_keys=tuple((k, lo, hi) for k, (lo, hi) in sorted(apis.items())),
        finalized_features_epoch=epoch,
        finalized_features=(("metadata.version", epoch % 30, epoch % 30),) if epoch >= 0 else (),
    )


@settings(max_examples=200, deadline=None)
@given(node_answers, st.randoms(use_true_random=False))
def test_intersection_properties_and_order_independence(answers, rnd):
    order = list(answers.items())
    rnd.shuffle(order)
    view = ClientView()
    for node, (apis, epoch) in order:
        view.observe(node, _response(apis, epoch))
    for key in range(6):
        u = view.usable_range(key)
        serving = {n: apis[key] for n, (apis, _) in answers.items() if key in apis}
        if not u.empty:
            assert all(lo <= u.min_version <= u.max_version <= hi for lo, hi in serving.values())
            assert len(serving) == len(answers)
        some_pair_disjoint = any(a[1] < b[0] or b[1] < a[0] for a, b in itertools.combinations(serving.values(), 2))
        assert u.empty == (len(serving) < len(answers) or some_pair_disjoint)
    # the same answers fed in another order give the same view
    other = ClientView()
    for node, (apis, epoch) in sorted(answers.items()):
        other.observe(node, _response(apis, epoch))
    assert view.usable_ranges() == other.usable_ranges()
    assert view.finalized.epoch == other.finalized.epoch == max(e for _, e in answers.values())


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(-1, 1000)), min_size=1, max_size=30))
def test_finalized_epoch_is_monotonic_under_any_feed(feed):
    view = ClientView()
    seen = []
    for node, epoch in feed:
        view.observe(node, _response({API_VERSIONS: (0, 4)}, epoch))
        seen.append(view.finalized.epoch)
    assert seen == sorted(seen)
    assert seen[-1] == max(-1, *(e for _, e in feed))
    best = max(feed, key=lambda ne: ne[1])
    if best[1] >= 0:
        assert view.finalized.level("metadata.version") == best[1] % 30
