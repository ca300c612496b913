"""Feature catalog, default levels and validateVersion (facts §2.2-§2.4)."""

import pytest
from hypothesis import given, strategies as st

from kraftsim.versions import (
    FeatureDependencyError,
    UnknownFeature,
    UnknownFeatureLevel,
    default_catalog,
)
from tests.versions.versions_facts import DEFAULT_FEATURE_ORDER, FEATURES, PRODUCTION_FEATURES, VERSION, default_row

CAT = default_catalog()


def test_feature_order_and_production_list():
    assert [f.name for f in CAT.features] == DEFAULT_FEATURE_ORDER
    assert [f.name for f in CAT.production_features] == PRODUCTION_FEATURES


@pytest.mark.parametrize("name", sorted(FEATURES))
def test_feature_definition(name):
    levels, lp, lt, minimum = FEATURES[name]
    f = CAT.feature(name)
    assert (f.latest_production, f.latest_testing, f.minimum_production) == (lp, lt, minimum)
    assert [fl.level for fl in f.levels] == sorted(levels)
    for fl in f.levels:
        bootstrap, deps = levels[fl.level]
        assert fl.bootstrap_version == bootstrap
        assert fl.bootstrap == next(lvl for lvl, v in VERSION.items() if v == bootstrap)
        assert CAT.dependencies(name, fl.level) == deps


@pytest.mark.parametrize("level", range(7, 30))
def test_default_levels_table(level):
    assert CAT.default_levels(level) == default_row(level)
    for name, expected in default_row(level).items():
        assert CAT.default_level(name, level) == expected


def test_production_only_defaults_leave_out_test_feature():
    assert list(CAT.default_levels(29, production_only=True)) == PRODUCTION_FEATURES


@given(st.sampled_from(list(range(7, 30))))
def test_defaults_satisfy_every_dependency(level):
    levels = {"metadata.version": level, **CAT.default_levels(level)}
    for name, lvl in CAT.default_levels(level).items():
        for dep, dep_level in CAT.dependencies(name, lvl).items():
            assert levels[dep] >= dep_level
    CAT.validate_levels(levels)  # raises on any broken dependency


@given(st.sampled_from(["3.3", "3.5", "3.7", "3.9", "4.0", "4.1"]), st.data())
def test_defaults_validate_on_every_line(release, data):
    line = CAT.at_release(release)
    mv = data.draw(st.sampled_from([mv for mv in line.metadata_versions if mv.level >= 4]))
    line.validate_levels({"metadata.version": mv.level, **line.default_levels(mv)}, unstable=True)


def test_feature_not_found():
    with pytest.raises(UnknownFeature) as exc:
        CAT.feature("foo.version")
    assert str(exc.value) == "Feature foo.version not found."
    with pytest.raises(UnknownFeature) as exc:
        CAT.feature("metadata.version")
    assert str(exc.value) == "Feature metadata.version not found."


def test_from_feature_level():
    assert CAT.feature_level("transaction.version", 2).const == "TV_2"
    with pytest.raises(UnknownFeatureLevel) as exc:
        CAT.feature_level("group.version", 2, unstable=True)
    assert str(exc.value) == "No feature:group.version with feature level 2"
    line = CAT.at_release("4.1")  # streams.version 1 was not yet production in 4.1
    assert line.feature_level("streams.version", 1, unstable=True).level == 1
    with pytest.raises(UnknownFeatureLevel) as exc:
        line.feature_level("streams.version", 1)
    assert str(exc.value) == "No feature:streams.version with feature level 1"


def test_validate_version_texts():
    with pytest.raises(FeatureDependencyError) as exc:
        CAT.validate_version("eligible.leader.replicas.version", 1, {"metadata.version": 21})
    assert str(exc.value) == "eligible.leader.replicas.version could not be set to 1 because it depends on metadata.version level 23"
    CAT.validate_version("eligible.leader.replicas.version", 1, {"metadata.version": 23})
    with pytest.raises(FeatureDependencyError) as exc:
        CAT.validate_version("group.version", 1, {})
    assert str(exc.value) == "group.version could not be set to 1 because it depends on metadata.version=7 (3.3-IV3)"
    CAT.validate_version("group.version", 0, {})  # level 0 needs nothing


def test_validate_version_on_3_9_line():
    line = CAT.at_release("3.9")
    with pytest.raises(FeatureDependencyError) as exc:
        line.validate_version("kraft.version", 1, {"metadata.version": 3})
    assert str(exc.value) == "kraft.version could not be set to 1 because it depends on metadata.version=4 (3.3-IV0)"
    with pytest.raises(FeatureDependencyError) as exc:
        line.validate_version("kraft.version", 1, {"metadata.version": 20})
    assert str(exc.value) == "kraft.version could not be set to 1 because it depends on metadata.version level 21"
    CAT.validate_version("kraft.version", 1, {"metadata.version": 20})  # no such dependency from 4.0 on


def test_validate_levels_errors():
    with pytest.raises(UnknownFeature):
        CAT.validate_levels({"metadata.version": 29, "foo.version": 1})
    with pytest.raises(UnknownFeatureLevel):
        CAT.validate_levels({"metadata.version": 29, "kraft.version": 2})
    with pytest.raises(FeatureDependencyError):
        CAT.validate_levels({"metadata.version": 22, "eligible.leader.replicas.version": 1})


def test_only_own_dependencies_are_checked():
    # Lowering metadata.version below what ELR needs is not checked from the MV side (§2.4.3).
    CAT.validate_version("group.version", 1, {"metadata.version": 8, "eligible.leader.replicas.version": 1})
