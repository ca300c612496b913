"""UpdateFeatures: every check of kafka-facts 5.1 in order, 5.2 (metadata.version), kraft.version,
ELR safety configs, atomic fail-fast, validate-only, and the KIP-778 policy."""

from __future__ import annotations

import msgspec
import pytest

from kraftsim.controller import ApiError
from kraftsim.controller.context import ControllerConfig
from kraftsim.controller.features import (
    FAILED_PREFIX, FeatureUpdate, KRaftUpgradeRefused, UpdateFeaturesRequest, UpgradeType, update_features,
    upgrade_type_from_allow_downgrade, voters_support_kraft_upgrade,
)
from kraftsim.image import image_from_records
from kraftsim.versions import IllegalArgument
from tests.controller.conftest import broker, config, controller, line, make_ctx

MV = "metadata.version"
ELR = "eligible.leader.replicas.version"
GV = "group.version"
KV = "kraft.version"
UPGRADE, SAFE, UNSAFE = 1, 2, 3


def request(*updates: tuple[str, int, int] | tuple[str, int], validate_only: bool = False) -> UpdateFeaturesRequest:
    return UpdateFeaturesRequest(tuple(FeatureUpdate(*u) for u in updates), validate_only)


def refusal(result) -> str:
    """The controller's error message, after checking the code and the response's form."""
    assert not result.ok and result.records == ()
    assert result.error.name == "INVALID_UPDATE_VERSION" and result.error.code == 95
    # 4.x answers the whole request with the prefixed message; 3.x answers each feature
    # (test_failed_update_wording_by_release).
    if result.response.error_code:
        assert result.response.error_code == 95
        assert result.response.error_message.removeprefix(FAILED_PREFIX) == result.error.message
    else:
        assert result.error.message in [r.error_message for r in result.response.results]
    return result.error.message


def written(result) -> list[tuple[str, int, dict]]:
    """(record type, version, fields) of an accepted result's records."""
    assert result.ok, result.error
    return [(p.record_type.name, p.version, {k: v for k, v in msgspec.structs.asdict(p.message).items()
                                              if k != "_unknown"}) for p in result.records]


def flr(name: str, level: int) -> tuple[str, int, dict]:
    return ("FeatureLevelRecord", 0, {"name": name, "feature_level": level})


# ---------------------------------------------------------------------------- request types


def test_upgrade_type_codes():
    assert [UpgradeType.from_code(c) for c in range(5)] == [
        UpgradeType.UNKNOWN, UpgradeType.UPGRADE, UpgradeType.SAFE_DOWNGRADE, UpgradeType.UNSAFE_DOWNGRADE,
        UpgradeType.UNKNOWN]
    assert UpgradeType.from_code(-1) is UpgradeType.UNKNOWN
    assert upgrade_type_from_allow_downgrade(True) is UpgradeType.SAFE_DOWNGRADE
    assert upgrade_type_from_allow_downgrade(False) is UpgradeType.UPGRADE
    assert FeatureUpdate(GV, 1).upgrade_type == UPGRADE


# ---------------------------------------------------------------------------- the check table, in order


@pytest.mark.parametrize("code", [0, 4, 9, -3])
def test_1_unknown_upgrade_type(code):
    ctx = make_ctx(levels={MV: 27})
    assert refusal(update_features(ctx, request((GV, 1, code)))) == \
        "Invalid update version 1 for feature group.version. The controller does not support the given upgrade type."


def test_1_upgrade_type_is_checked_before_a_negative_level():
    ctx = make_ctx(levels={MV: 27})
    assert "does not support the given upgrade type" in refusal(update_features(ctx, request((GV, -1, 0))))


def test_3_negative_level():
    ctx = make_ctx(levels={MV: 27})
    assert refusal(update_features(ctx, request((GV, -1, UPGRADE)))) == \
        "Invalid update version -1 for feature group.version. A feature version cannot be less than 0."


def test_4a_local_controller():
    ctx = make_ctx(levels={MV: 27})
    assert refusal(update_features(ctx, request((GV, 2)))) == \
        "Invalid update version 2 for feature group.version. Local controller 1 only supports versions 0-1"
    assert refusal(update_features(ctx, request(("streams.version", 1)))) == \
        "Invalid update version 1 for feature streams.version. Local controller 1 does not support this feature."


def test_4b_registered_brokers_fenced_included():
    ctx = make_ctx(levels={MV: 25}, records=[broker(1, {MV: (7, 27), GV: (0, 1)}, fenced=False),
                                            broker(2, {MV: (7, 25)}, fenced=True)])
    assert refusal(update_features(ctx, request((MV, 26)))) == \
        "Invalid update version 26 for feature metadata.version. Broker 2 only supports versions 7-25"
    assert refusal(update_features(ctx, request((GV, 1)))) == \
        "Invalid update version 1 for feature group.version. Broker 2 does not support this feature."


@pytest.mark.parametrize("release", ["3.3", "3.6"])
def test_4b_before_3_7_a_broker_that_lists_no_range_supports_no_level(release):
    """3.3 to 3.6 (FeatureControlManager, in the jars; live 3.6.2: kafka-features disable and
    downgrade of an unknown feature are refused): a broker that lists no range for the feature
    does not support it at level 0 either, and a range that misses the level is worded
    "does not support the given version. It supports <min> to <max>."."""
    ctx = make_ctx(release, levels={MV: 5}, records=[broker(2, {MV: (1, 5)}, fenced=False)])
    assert refusal(update_features(ctx, request(("no.such.feature", 0, SAFE)))) == (
        "Invalid update version 0 for feature no.such.feature. Broker 2 does not support this feature.")
    assert refusal(update_features(ctx, request((MV, 6)))) == (
        "Invalid update version 6 for feature metadata.version. Broker 2 does not support the given version. "
        "It supports 1 to 5.")
    newer = make_ctx("3.7", levels={MV: 5}, records=[broker(2, {MV: (1, 5)}, fenced=False)])
    assert written(update_features(newer, request(("no.such.feature", 0, SAFE)))) == [flr("no.such.feature", 0)]


def test_4c_registered_controllers_and_4d_static_voters():
    sup = line("4.1").supported_features()
    ctx = make_ctx(levels={MV: 27}, records=[controller(1, sup), controller(2, {MV: (7, 27)})],
                   static_voters=(1, 2, 3))
    assert refusal(update_features(ctx, request((GV, 1)))) == \
        "Invalid update version 1 for feature group.version. Controller 2 does not support this feature."
    ctx = make_ctx(levels={MV: 27}, records=[controller(1, sup), controller(2, sup)], static_voters=(1, 2, 3))
    assert refusal(update_features(ctx, request((GV, 1)))) == ("Invalid update version 1 for feature group.version. "
                                                               "controller 3 has not registered, and may not "
                                                               "support this feature")


def test_4e_controllers_unchecked_below_3_7():
    ctx = make_ctx("3.7", levels={MV: 14}, records=[controller(2, {MV: (1, 14)})], static_voters=(1, 2, 3))
    assert written(update_features(ctx, request((MV, 15)))) == [flr(MV, 15)]


def test_5_lower_level_needs_a_downgrade_type():
    ctx = make_ctx(levels={MV: 27, GV: 1})
    assert refusal(update_features(ctx, request((GV, 0, UPGRADE)))) == (
        "Invalid update version 0 for feature group.version. Can't downgrade the version of this feature without "
        "setting the upgrade type to either safe or unsafe downgrade.")


@pytest.mark.parametrize("kind", [SAFE, UNSAFE])
def test_6_higher_level_with_a_downgrade_type(kind):
    ctx = make_ctx(levels={MV: 27})
    assert refusal(update_features(ctx, request((GV, 1, kind)))) == \
        "Invalid update version 1 for feature group.version. Can't downgrade to a newer version."


@pytest.mark.parametrize("kind", [UPGRADE, SAFE, UNSAFE])
def test_same_level_still_writes_a_record(kind):
    ctx = make_ctx(levels={MV: 27, GV: 1})
    assert written(update_features(ctx, request((GV, 1, kind)))) == [flr(GV, 1)]
    assert written(update_features(ctx, request((MV, 27, kind)))) == [flr(MV, 27)]


def test_7_feature_the_catalog_does_not_know():
    sup = {**line("4.1").supported_features(), "foo.version": (0, 3)}
    ctx = make_ctx(levels={MV: 27}, supported=sup)
    assert refusal(update_features(ctx, request(("foo.version", 1)))) == \
        "Invalid update version 1 for feature foo.version. Feature foo.version not found."
    # Level 0 is in everybody's range, so the name is what fails.
    assert refusal(update_features(ctx, request(("no.such", 0)))) == \
        "Invalid update version 0 for feature no.such. Feature no.such not found."


def test_7_unstable_levels_pass_once_every_node_supports_them():
    cat = line("4.1")  # streams.version 1 is a testing level on 4.1
    ctx = make_ctx(levels={MV: 27}, supported=cat.supported_features(unstable=True))
    assert written(update_features(ctx, request(("streams.version", 1)))) == [flr("streams.version", 1)]


@pytest.mark.parametrize("kind", [SAFE, UNSAFE])
def test_disable_with_level_zero(kind):
    ctx = make_ctx(levels={MV: 27, GV: 1, "transaction.version": 2})
    result = update_features(ctx, request((GV, 0, kind)))
    assert written(result) == [flr(GV, 0)]
    after = image_from_records(result.records, base=ctx.image, catalog=ctx.catalog)
    assert after.features.finalized_map() == {"transaction.version": 2}


# ---------------------------------------------------------------------------- dependencies


def test_dependency_on_a_higher_metadata_version_is_refused():
    ctx = make_ctx(levels={MV: 22})
    assert refusal(update_features(ctx, request((ELR, 1)))) == (
        "Invalid update version 1 for feature eligible.leader.replicas.version. eligible.leader.replicas.version "
        "could not be set to 1 because it depends on metadata.version level 23")


@pytest.mark.parametrize("order", [0, 1])
def test_dependency_met_by_the_same_request_in_either_order(order):
    ctx = make_ctx(levels={MV: 22})
    updates = [(ELR, 1), (MV, 23)]
    result = update_features(ctx, request(*(updates if order else updates[::-1])))
    records = written(result)
    # ELR enabled: the cluster-level min.insync.replicas comes first, then the features by name.
    assert records[1:] == [flr(ELR, 1), flr(MV, 23)]


def test_dependency_is_checked_against_the_proposed_state():
    # MV is 26 now, but the same request takes it to 23 (lossless) ... and 22 would break ELR's dependency.
    ctx = make_ctx(levels={MV: 26})
    assert written(update_features(ctx, request((ELR, 1), (MV, 23, SAFE))))[1:] == [flr(ELR, 1), flr(MV, 23)]
    ctx = make_ctx("4.2", levels={MV: 29}, unstable=True)
    msg = refusal(update_features(ctx, request((ELR, 1), (MV, 22, UNSAFE))))
    assert msg.endswith("eligible.leader.replicas.version could not be set to 1 because it depends on "
                        "metadata.version level 23")


def test_changing_metadata_version_checks_no_dependency():
    # On 4.2.0 test.feature.version 2 depends on its latest testing level, 4.3-IV0 (30), which 4.2.0's
    # code still marks as no metadata change: lowering MV to 29 is lossless and still allowed.
    cat = line("4.2")
    sup = {**cat.supported_features(unstable=True), "test.feature.version": (0, 2)}
    ctx = make_ctx("4.2", levels={MV: 30, "test.feature.version": 2}, supported=sup)
    assert written(update_features(ctx, request((MV, 29, SAFE)))) == [flr(MV, 29)]
    # ... while setting the feature itself checks its own dependency against the proposed MV.
    assert refusal(update_features(ctx, request(("test.feature.version", 2), (MV, 29, SAFE)))).endswith(
        "test.feature.version could not be set to 2 because it depends on metadata.version level 30")
    # A 4.3 controller knows 4.3-IV0 changed metadata: the same downgrade is refused there.
    ctx43 = make_ctx("4.3", levels={MV: 30}, supported=line("4.3").supported_features(unstable=True))
    assert "Refusing to perform the requested downgrade because it might delete metadata information" in \
        refusal(update_features(ctx43, request((MV, 29, SAFE))))


def test_zero_level_needs_no_dependency():
    ctx = make_ctx(levels={MV: 26, ELR: 1})
    assert written(update_features(ctx, request((ELR, 0, SAFE)))) == [flr(ELR, 0)]


# ---------------------------------------------------------------------------- metadata.version (5.2)


def test_mv_level_outside_every_range():
    ctx = make_ctx(levels={MV: 27})
    assert refusal(update_features(ctx, request((MV, 0, SAFE)))) == \
        "Invalid update version 0 for feature metadata.version. Local controller 1 only supports versions 7-27"


@pytest.mark.parametrize("release, top", [("4.1", 29), ("4.2", 30), ("4.3", 31), ("4.4", 34)])
def test_mv_level_the_catalog_does_not_know(release, top):
    # Only reachable when the advertised range is wider than the line's table (a hand-made range).
    sup = {**line(release).supported_features(), MV: (7, 40)}
    ctx = make_ctx(release, levels={MV: 27}, supported=sup)
    assert refusal(update_features(ctx, request((MV, 35)))) == \
        f"Invalid metadata.version 35. Valid versions are from 7 to {top}."


@pytest.mark.parametrize("target, kind", [(23, SAFE), (23, UNSAFE), (24, UNSAFE), (26, SAFE)])
def test_mv_lossless_downgrades_pass_for_both_types(target, kind):
    ctx = make_ctx(levels={MV: 27})
    assert written(update_features(ctx, request((MV, target, kind)))) == [flr(MV, target)]


def test_mv_upgrade():
    ctx = make_ctx("3.7", levels={MV: 15})
    assert written(update_features(ctx, request((MV, 19)))) == [flr(MV, 19)]


@pytest.mark.parametrize("release, kind, text", [
    ("4.1", SAFE, "Invalid metadata.version 22. Refusing to perform the requested downgrade because it might "
                  "delete metadata information."),
    ("4.1", UNSAFE, "Invalid metadata.version 22. Unsafe metadata downgrade is not supported in this version."),
    ("4.2", SAFE, "Unsupported metadata.version downgrade from 27 to 22. Refusing to perform the requested "
                  "downgrade because it might delete metadata information."),
    ("4.2", UNSAFE, "Unsupported metadata.version downgrade from 27 to 22. Unsafe metadata downgrade is not "
                    "supported in this version."),
])
def test_mv_lossy_downgrade_refused_in_the_lines_words(release, kind, text):
    ctx = make_ctx(release, levels={MV: 27})
    assert refusal(update_features(ctx, request((MV, 22, kind)))) == text


def test_kip778_policy_accepts_a_lossy_unsafe_downgrade_only():
    policy = ControllerConfig(policies=frozenset({"kip-778"}))
    ctx = make_ctx(levels={MV: 27}, config=policy)
    assert written(update_features(ctx, request((MV, 14, UNSAFE)))) == [flr(MV, 14)]
    assert refusal(update_features(ctx, request((MV, 14, SAFE)))) == (
        "Invalid metadata.version 14. Refusing to perform the requested downgrade because it might delete "
        "metadata information.")
    # Without the policy, Kafka's refusal.
    assert "Unsafe metadata downgrade is not supported" in refusal(
        update_features(make_ctx(levels={MV: 27}), request((MV, 14, UNSAFE))))


# ---------------------------------------------------------------------------- atomicity, validate-only, response


def test_one_bad_update_fails_the_whole_request_with_no_records():
    ctx = make_ctx(levels={MV: 25})
    result = update_features(ctx, request((GV, 1), ("transaction.version", 2), ("share.version", 1), (MV, 40)))
    assert refusal(result) == \
        "Invalid update version 40 for feature metadata.version. Local controller 1 only supports versions 7-27"


def test_first_failure_by_feature_name_is_reported():
    ctx = make_ctx(levels={MV: 27})
    result = update_features(ctx, request(("transaction.version", 9), (GV, 9)))
    assert refusal(result).startswith("Invalid update version 9 for feature group.version.")


def test_success_records_sorted_by_feature_and_results_per_feature():
    ctx = make_ctx(levels={MV: 25})
    result = update_features(ctx, request(("share.version", 1), (GV, 1), (MV, 27)))
    assert written(result) == [flr(GV, 1), flr(MV, 27), flr("share.version", 1)]
    assert result.atomic
    assert result.response.error_code == 0 and result.response.error_message is None
    assert [r.feature for r in result.response.results] == [GV, MV, "share.version"]
    assert all(r.error_code == 0 for r in result.response.results)


def test_a_feature_named_twice_keeps_its_last_entry():
    ctx = make_ctx(levels={MV: 27})
    assert written(update_features(ctx, request((GV, 7), (GV, 1)))) == [flr(GV, 1)]


def test_validate_only():
    ctx = make_ctx(levels={MV: 25})
    ok = update_features(ctx, request((GV, 1), (MV, 27), validate_only=True))
    assert ok.ok and ok.records == () and [r.feature for r in ok.response.results] == [GV, MV]
    bad = update_features(ctx, request((GV, 2), validate_only=True))
    assert refusal(bad).endswith("Local controller 1 only supports versions 0-1")


def test_records_use_the_catalog_record_versions():
    ctx = make_ctx(levels={MV: 27})
    (p,) = update_features(ctx, request((GV, 1))).records
    assert p.version == ctx.catalog.record_version("FeatureLevelRecord", 27)


def test_rule_needs_an_activated_controller():
    ctx = make_ctx(levels={})
    with pytest.raises(ValueError, match="activate the controller first"):
        update_features(ctx, request((GV, 1)))


# ---------------------------------------------------------------------------- kraft.version


def test_kraft_upgrade_writes_a_noop_only():
    sup = line("4.1").supported_features()
    ctx = make_ctx(levels={MV: 27}, records=[controller(1, sup), controller(2, sup)], static_voters=(1, 2))
    assert written(update_features(ctx, request((KV, 1)))) == [("NoOpRecord", 0, {})]
    # Raft treats an upgrade to the current level as a no-op; the controller still writes its NoOpRecord.
    ctx1 = msgspec.structs.replace(ctx, kraft_version=1)
    assert written(update_features(ctx1, request((KV, 1)))) == [("NoOpRecord", 0, {})]


def test_kraft_upgrade_refused_by_raft_when_a_voter_lacks_it():
    # Below 3.7-IV0 the controller side does not look at controllers; raft (4.x) still asks every
    # voter. Voter 2 never registered, so raft knows no range for it (0-0). Its text names Kafka's constants.
    ctx = make_ctx("4.1", levels={MV: 14}, static_voters=(1, 2))
    result = update_features(ctx, request((KV, 1)))
    assert not result.ok and result.records == ()
    assert result.error == ApiError("INVALID_UPDATE_VERSION",
                                    "Invalid upgrade of kraft.version to KRAFT_VERSION_1 because not all of the "
                                    "voters support it")
    # Once voter 2 advertises kraft.version 0-1, raft agrees.
    ok = make_ctx("4.1", levels={MV: 14}, records=[controller(2, {MV: (7, 27), KV: (0, 1)})], static_voters=(1, 2))
    assert written(update_features(ok, request((KV, 1)))) == [("NoOpRecord", 0, {})]
    # From 3.7-IV0 the controller-side check catches the same voter first, in its own words.
    at15 = make_ctx("3.9", levels={MV: 15}, records=[controller(1, {MV: (1, 21), KV: (0, 1)}),
                                                     controller(2, {MV: (1, 21)})], static_voters=(1, 2))
    assert refusal(update_features(at15, request((KV, 1)))) == \
        "Invalid update version 1 for feature kraft.version. Controller 2 does not support this feature."


def test_3_9_finalizes_kraft_version_as_a_feature_without_asking_raft():
    # Seen live on 3.9.1 (policy kraft_version_upgrade = feature-level): a FeatureLevelRecord,
    # no control record, and raft is not asked (voter 2 never registered; below 3.7-IV0 the
    # controller does not check controllers either). A downgrade to 0 writes level 0 as for any feature.
    ctx = make_ctx("3.9", levels={MV: 14}, static_voters=(1, 2))
    assert written(update_features(ctx, request((KV, 1)))) == [("FeatureLevelRecord", 0,
                                                                {"name": KV, "feature_level": 1})]
    at1 = make_ctx("3.9", levels={MV: 14, KV: 1}, static_voters=(1, 2))
    assert written(update_features(at1, request((KV, 0, UpgradeType.SAFE_DOWNGRADE)))) == \
        [("FeatureLevelRecord", 0, {"name": KV, "feature_level": 0})]


def test_kraft_upgrade_passes_validate_only_to_raft():
    calls = []

    def raft(ctx, level, validate_only):
        calls.append((level, validate_only))

    ctx = make_ctx(levels={MV: 27})
    result = update_features(ctx, request((KV, 1), validate_only=True), raft)
    assert result.ok and result.records == () and calls == [(1, True)]


def test_kraft_upgrade_raft_errors():
    def refuses(ctx, level, validate_only):
        raise KRaftUpgradeRefused(ApiError("FEATURE_UPDATE_FAILED", "raft says no"))

    def illegal(ctx, level, validate_only):
        raise IllegalArgument("bad level")

    ctx = make_ctx(levels={MV: 27})
    r = update_features(ctx, request((KV, 1)), refuses)
    assert r.error == ApiError("FEATURE_UPDATE_FAILED", "raft says no") and r.response.error_code == 96
    r = update_features(ctx, request((KV, 1)), illegal)
    assert refusal(r) == "Invalid update version 1 for feature kraft.version. bad level"


def test_default_raft_check_refuses_a_downgrade_in_rafts_words():
    # Unreachable through update_features (check 5 answers first), but raft has its own guard.
    ctx = msgspec.structs.replace(make_ctx(levels={MV: 27}), kraft_version=1)
    with pytest.raises(KRaftUpgradeRefused) as e:
        voters_support_kraft_upgrade(ctx, 0, False)
    assert e.value.error == ApiError("INVALID_UPDATE_VERSION", "Invalid upgrade of kraft.version from version "
                                     "KRAFT_VERSION_1 to KRAFT_VERSION_0 because the new version is a downgrade")
    voters_support_kraft_upgrade(ctx, 1, False)  # same level: nothing to do


@pytest.mark.parametrize("kind", [SAFE, UNSAFE])
def test_kraft_downgrades(kind):
    ctx = msgspec.structs.replace(make_ctx(levels={MV: 27}), kraft_version=1)
    assert refusal(update_features(ctx, request((KV, 0, kind)))) == \
        "Invalid update version 0 for feature kraft.version. Can't downgrade the version of this feature."
    same = update_features(ctx, request((KV, 1, kind)))
    assert same.ok and same.records == ()


def test_kraft_version_never_becomes_a_feature_level_record():
    ctx = make_ctx(levels={MV: 27})
    result = update_features(ctx, request((KV, 1), (GV, 1)))
    assert [p.record_type.name for p in result.records] == ["FeatureLevelRecord", "NoOpRecord"]  # by name


# ---------------------------------------------------------------------------- ELR safety configs


def test_enabling_elr_prepends_min_insync_configs():
    recs = [config("1", "min.insync.replicas", "3"), config("2", "min.insync.replicas", "1"),
            config("3", "log.retention.ms", "5")]
    ctx = make_ctx(levels={MV: 26}, records=recs, config=ControllerConfig(min_insync_replicas=2))
    result = update_features(ctx, request((ELR, 1)))
    assert result.atomic
    assert written(result) == [
        ("ConfigRecord", 0, {"resource_type": 4, "resource_name": "", "name": "min.insync.replicas", "value": "2"}),
        ("ConfigRecord", 0, {"resource_type": 4, "resource_name": "1", "name": "min.insync.replicas", "value": None}),
        ("ConfigRecord", 0, {"resource_type": 4, "resource_name": "2", "name": "min.insync.replicas", "value": None}),
        flr(ELR, 1),
    ]
    after = image_from_records(result.records, base=ctx.image, catalog=ctx.catalog)
    assert dict(after.configs.config(4, "")) == {"min.insync.replicas": "2"}
    assert dict(after.configs.config(4, "3")) == {"log.retention.ms": "5"}
    assert not after.configs.config(4, "1")


def test_elr_keeps_an_existing_cluster_level_value():
    ctx = make_ctx(levels={MV: 26}, records=[config("", "min.insync.replicas", "4")])
    assert written(update_features(ctx, request((ELR, 1)))) == [flr(ELR, 1)]


def test_no_elr_configs_when_not_enabling_or_not_committing():
    ctx = make_ctx(levels={MV: 26, ELR: 1}, records=[config("1", "min.insync.replicas", "3")])
    assert written(update_features(ctx, request((ELR, 0, SAFE)))) == [flr(ELR, 0)]
    assert update_features(ctx, request((ELR, 1), validate_only=True)).records == ()
    assert update_features(ctx, request((ELR, 1), (GV, 5))).records == ()


def test_failed_update_wording_by_release():
    """Kafka 3.x answers with the feature's own message; 4.0 on with FAILED_PREFIX before it
    (both seen on live nodes by `kraftsim conformance run`; policy update_features_errors)."""
    result = update_features(make_ctx("3.9", levels={MV: 14}), request(("no.such.feature", 1)))
    assert not result.ok and result.response.error_code == 0
    assert [(r.feature, r.error_code, r.error_message) for r in result.response.results] == [
        ("no.such.feature", 95, result.error.message)]
    result = update_features(make_ctx("4.0", levels={MV: 14}), request(("no.such.feature", 1)))
    assert not result.ok and result.response.results == ()
    assert result.response.error_message == FAILED_PREFIX + result.error.message


@pytest.mark.parametrize("release", ["3.7", "3.8", "3.9"])
def test_3x_applies_the_valid_updates_of_a_mixed_request(release):
    """Before 4.0 each update stands alone (seen live on 3.7.2, 3.8.1, 3.9.1): the metadata.version
    change is written although the other update is refused, and each feature has its result."""
    ctx = make_ctx(release, levels={MV: 14})
    result = update_features(ctx, request((MV, 15), ("no.such.feature", 1)))
    assert written(result) == [flr(MV, 15)]
    assert result.response.error_code == 0
    assert [(r.feature, r.error_code) for r in result.response.results] == [(MV, 0), ("no.such.feature", 95)]
    assert result.response.results[1].error_message == ("Invalid update version 1 for feature no.such.feature. "
                                                        "Local controller 1 does not support this feature.")
    dry = update_features(ctx, request((MV, 15), ("no.such.feature", 1), validate_only=True))
    assert dry.ok and dry.records == () and [r.error_code for r in dry.response.results] == [0, 95]


def test_4x_refuses_the_whole_mixed_request():
    ctx = make_ctx("4.0", levels={MV: 22})
    result = update_features(ctx, request((MV, 23), ("no.such.feature", 1)))
    assert not result.ok and result.records == ()
    assert result.response.error_message.startswith(FAILED_PREFIX)


def test_3x_disables_what_it_never_finalized_with_a_level_0_record():
    """A 3.x controller checks no Feature enum: disabling an unknown or never-finalized feature
    writes FeatureLevelRecord(f, 0) (seen live on 3.9.1); 4.x refuses a feature it does not know."""
    ctx = make_ctx("3.9", levels={MV: 21})
    assert written(update_features(ctx, request(("no.such.feature", 0, SAFE)))) == [flr("no.such.feature", 0)]
    assert written(update_features(ctx, request((GV, 0, SAFE)))) == [flr(GV, 0)]
    assert "Feature no.such.feature not found." in refusal(
        update_features(make_ctx("4.0"), request(("no.such.feature", 0, SAFE))))


def test_3x_writes_in_the_controllers_hash_map_order():
    """The records of a 3.x request follow the controller's HashMap of updates, not the names' order."""
    supported = {MV: (1, 21), "a.feature": (0, 1), "transaction.version": (0, 2), GV: (0, 1)}
    ctx = make_ctx("3.9", levels={MV: 20}, supported=supported)
    result = update_features(ctx, request(("a.feature", 1), (MV, 21), ("transaction.version", 2), (GV, 1)))
    assert [r[2]["name"] for r in written(result)] == [GV, MV, "transaction.version", "a.feature"]
