"""Quorum-wide support of a feature level (kafka-facts 5.1 checks 4a-4e, 5.4, 2.6)."""

from __future__ import annotations

import pytest

from kraftsim.controller.quorum_features import (
    DISABLED, advertised_range, controllers_are_checked, local_reason_not_supported, reason_not_supported,
)
from kraftsim.image import FeatureRange
from tests.controller.conftest import broker, controller, line, make_ctx

MV = "metadata.version"
NEW = {MV: (7, 27), "kraft.version": (0, 1), "group.version": (0, 1)}


def test_local_controller_range_texts():
    supported = line("4.1").supported_features()
    assert local_reason_not_supported(1, supported, MV, 27) is None
    assert local_reason_not_supported(1, supported, MV, 28) == "Local controller 1 only supports versions 7-27"
    # streams.version tops out at 0 on 4.1: it is not advertised at all, so DISABLED.
    assert "streams.version" not in supported
    assert local_reason_not_supported(1, supported, "streams.version", 1) == \
        "Local controller 1 does not support this feature."
    assert local_reason_not_supported(1, supported, "streams.version", 0) is None
    assert local_reason_not_supported(3, supported, "no.such.feature", 1) == \
        "Local controller 3 does not support this feature."


@pytest.mark.parametrize("rng, text", [
    ((3, 3), "Broker 2 only supports versions 3"),
    ((1, 32767), "Broker 2 only supports versions 1+"),
    ((1, 2), "Broker 2 only supports versions 1-2"),
    ((0, 0), "Broker 2 does not support this feature."),
])
def test_broker_range_text_forms(rng, text):
    ctx = make_ctx(records=[broker(2, {**NEW, "x.version": rng})], supported={**NEW, "x.version": (0, 32767)})
    assert reason_not_supported(ctx, "x.version", 5 if rng != (1, 32767) else 0) == text


def test_every_broker_counts_fenced_too_and_missing_feature_is_disabled():
    ctx = make_ctx(records=[broker(1, NEW, fenced=False), broker(2, {MV: (7, 25)}, fenced=True)])
    assert reason_not_supported(ctx, MV, 27) == "Broker 2 only supports versions 7-25"
    assert reason_not_supported(ctx, "group.version", 1) == "Broker 2 does not support this feature."
    assert reason_not_supported(ctx, "group.version", 0) is None
    assert advertised_range((FeatureRange("a", 1, 2),), "b") == DISABLED


def test_brokers_are_visited_in_id_order():
    ctx = make_ctx(records=[broker(9, {MV: (7, 20)}), broker(4, {MV: (7, 21)})])
    assert reason_not_supported(ctx, MV, 27) == "Broker 4 only supports versions 7-21"


def test_local_check_comes_before_brokers():
    ctx = make_ctx(records=[broker(2, {MV: (7, 20)})])
    assert reason_not_supported(ctx, MV, 28) == "Local controller 1 only supports versions 7-27"


def test_registered_controllers_other_than_local_are_checked_from_3_7():
    recs = [controller(1, {MV: (7, 7)}), controller(2, {MV: (7, 27), "kraft.version": (0, 0)})]
    ctx = make_ctx(records=recs)  # MV 27
    # The local controller's own registration is not consulted (its software is ctx.supported).
    assert reason_not_supported(ctx, MV, 27) is None
    assert reason_not_supported(ctx, "kraft.version", 1) == "Controller 2 does not support this feature."
    ctx = make_ctx(records=[controller(3, {MV: (7, 26)})])
    assert reason_not_supported(ctx, MV, 27) == "Controller 3 only supports versions 7-26"


def test_controllers_are_not_checked_below_3_7_iv0():
    cat = line("3.7")
    assert not controllers_are_checked(cat, 14) and controllers_are_checked(cat, 15)
    recs = [controller(2, {MV: (1, 14)})]
    below = make_ctx("3.7", levels={MV: 14}, records=recs, static_voters=(1, 2, 3))
    assert reason_not_supported(below, MV, 19) is None  # controller 2 and unregistered voter 3 ignored
    at = make_ctx("3.7", levels={MV: 15}, records=recs, static_voters=(1, 2, 3))
    assert reason_not_supported(at, MV, 19) == "Controller 2 only supports versions 1-14"


def test_static_voters_that_never_registered():
    recs = [controller(1, NEW), controller(2, NEW)]
    ctx = make_ctx(records=recs, static_voters=(3, 1, 2))
    assert reason_not_supported(ctx, "group.version", 1) == \
        "controller 3 has not registered, and may not support this feature"
    # The local controller is a voter too: it must have registered like the others.
    ctx = make_ctx(records=[controller(2, NEW)], static_voters=(1, 2))
    assert reason_not_supported(ctx, "group.version", 1) == \
        "controller 1 has not registered, and may not support this feature"
    # A dynamic quorum has no static voters: only registrations count.
    assert reason_not_supported(make_ctx(records=[controller(2, NEW)]), "group.version", 1) is None


def test_registered_controller_refusal_comes_before_missing_voter():
    ctx = make_ctx(records=[controller(2, {MV: (7, 26)})], static_voters=(1, 2, 3))
    assert reason_not_supported(ctx, MV, 27) == "Controller 2 only supports versions 7-26"
