"""User catalogs: the shipped KIP-778 example, and broken catalogs being refused (facts §2.5)."""

import os
import pickle
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kraftsim.versions import CatalogError, UnknownFeature, default_catalog, load_catalog, load_catalog_text

EXAMPLE = Path(str(resources.files("kraftsim.versions") / "data" / "examples" / "kip778.toml"))


@pytest.fixture(scope="module")
def kip778():
    return load_catalog(EXAMPLE)


def test_default_catalog_is_cached_and_equals_load_catalog_none():
    assert default_catalog() is load_catalog() is default_catalog()
    assert load_catalog(line="3.9").release.name == "3.9.2"
    assert load_catalog(line="3.9.0").release.name == "3.9.0"


def test_kip778_versions(kip778):
    assert kip778.release.name == "4.9.0"
    assert [mv.version for mv in kip778.metadata_versions[-5:]] == ["4.9-IV0", "4.9-IV1", "4.9-IV2", "4.9-IV3", "4.9-IV4"]
    # The hypothetical levels come after every real one and reuse no real name.
    real = {mv.version: mv.level for mv in default_catalog().all_metadata_versions}
    assert min(mv.level for mv in kip778.metadata_versions[-5:]) == max(real.values()) + 1
    assert not {mv.version for mv in kip778.metadata_versions[-5:]} & set(real)
    assert kip778.latest_production.version == "4.9-IV3" and kip778.latest_testing.version == "4.9-IV4"
    assert kip778.mv_from_string("4.9").version == "4.9-IV3"
    assert kip778.mv_from_string("4.9-IV4", unstable=True).level == 39
    assert kip778.at_release("4.4").latest_testing.level == 34  # the real releases are unchanged
    assert kip778.at_release("4.2").latest_testing.level == 30


def test_kip778_bar_record_and_lossiness(kip778):
    v1, v2, v3, v4, v5 = range(35, 40)
    assert "BarRecord" not in kip778.record_types(v3)
    assert "BarRecord" in kip778.record_types(v4)
    assert kip778.supports("bar", v4) and not kip778.supports("bar", v3)
    assert not kip778.is_lossy(v5, v4)
    assert kip778.is_lossy(v5, v3) and kip778.is_lossy(v4, v3)
    assert not kip778.is_lossy(v3, v1)
    assert not kip778.is_lossy(v3, 34)  # V1..V3 only change the protocol
    assert kip778.is_lossy(v1, 32)  # the real 4.4-IV2 below them did change metadata
    assert kip778.safe_downgrade_floor(v5).level == v4
    losses = kip778.downgrade_losses(v5, v3)
    assert losses.record_types == ("BarRecord",) and losses.capabilities == ("bar",)
    assert kip778.request_version("Fetch", v1) == 19 and kip778.request_version("Fetch", 33) == 18


def test_kip778_record_schema_folder(kip778):
    (folder,) = kip778.record_schema_dirs
    assert (folder / "BarRecord.toml").is_file()
    schema = pytest.importorskip("kraftsim.protocol.schema")
    assert schema.load_schema_file(folder / "BarRecord.toml").name == "BarRecord"


def test_kip778_features(kip778):
    assert kip778.default_level("bar.version", 38) == 0
    assert kip778.default_level("bar.version", 39) == 1
    assert kip778.default_level("group.version", 39) == 2
    assert kip778.dependencies("bar.version", 1) == {"metadata.version": 38}
    assert kip778.feature("test.feature.version").latest_production == 1  # LATEST_PRODUCTION != latestTesting
    assert kip778.supported_features()["group.version"] == (0, 1)
    assert kip778.supported_features(unstable=True)["group.version"] == (0, 2)
    with pytest.raises(UnknownFeature):  # the real 4.4 line does not know the hypothetical feature
        kip778.at_release("4.4").feature("bar.version")
    assert kip778.at_release("4.4").feature("group.version").get(2) is None


def refused(text: str) -> CatalogError:
    with pytest.raises(CatalogError) as exc:
        load_catalog_text(text, "broken.toml")
    return exc.value


RELEASE_NEXT = """
[[releases]]
name = "4.9.0"
inherits = "4.4"
latest_production = "4.4-IV2"
"""
MV_NEXT = """
[[metadata_versions]]
level = 35
version = "4.9-IV0"
metadata_changed = false
"""


def test_rule_1_latest_production_not_a_level():
    err = refused(RELEASE_NEXT + 'features = { "kraft.version" = 5 }\n')
    assert err.rule == "kafka-2.5.1"
    assert err.text == "Feature KRAFT_VERSION has latest production version KRAFT_VERSION_5 which is not one of its feature versions."
    assert "at release 4.9.0" in str(err)


def test_rule_2_latest_production_below_default():
    err = refused(RELEASE_NEXT + 'features = { "transaction.version" = 1 }\n')
    assert err.rule == "kafka-2.5.2"
    assert err.text == "Feature TRANSACTION_VERSION has latest production value TV_1 smaller than its default version TV_2 with latest production MV."


def test_rule_3_dependency_not_production_ready():
    err = refused(MV_NEXT + """
[[feature_levels]]
feature = "group.version"
level = 2
const = "GV_2"
bootstrap = "4.9-IV0"

[[features]]
name = "foo.version"
enum = "FOO_VERSION"
levels = [
  { level = 0, const = "FOO_0", bootstrap = "3.3-IV3" },
  { level = 1, const = "FOO_1", bootstrap = "4.9-IV0", dependencies = { "group.version" = 2 } },
]
""" + RELEASE_NEXT + """features = { "foo.version" = 1 }
testing = { "group.version" = 2 }
""")
    assert err.rule == "kafka-2.5.3"
    assert err.text == (
        "Feature FOO_VERSION has latest production FeatureVersion FOO_1 with dependency GV_2 that is not "
        "production ready. (GROUP_VERSION latest production: GV_1)"
    )


FOO = """
[[features]]
name = "foo.version"
enum = "FOO_VERSION"
levels = [
  {{ level = 0, const = "FOO_0", bootstrap = "3.3-IV3" }},
  {{ level = 1, const = "FOO_1", bootstrap = {boot}, dependencies = {{ {deps} }} }},
]
"""


def test_rule_4_mv_dependency_not_production_ready():
    err = refused(MV_NEXT + FOO.format(boot='"4.9-IV0"', deps='"metadata.version" = "4.9-IV0"') + RELEASE_NEXT + 'features = { "foo.version" = 1 }\n')
    assert err.rule == "kafka-2.5.4"
    assert err.text == (
        "Feature FOO_VERSION has latest production FeatureVersion FOO_1 with MV dependency 4.9-IV0 that is not "
        "production ready. (MV latest production: 4.4-IV2)"
    )


def test_rule_5_default_dependency_behind():
    err = refused(FOO.format(boot='"4.2-IV0"', deps='"streams.version" = 1') + RELEASE_NEXT + 'features = { "foo.version" = 1 }\n')
    assert err.rule == "kafka-2.5.5"
    assert err.text == (
        "Feature FOO_VERSION has default FeatureVersion FOO_1 when MV=4.2-IV0 with dependency SV_1 that is "
        "behind its default version SV_0."
    )


def test_rule_6_default_mv_dependency_behind_bootstrap():
    err = refused(FOO.format(boot='"4.2-IV0"', deps='"metadata.version" = 29') + RELEASE_NEXT + 'features = { "foo.version" = 1 }\n')
    assert err.rule == "kafka-2.5.6"
    assert err.text == (
        "Feature FOO_VERSION has default FeatureVersion FOO_1 when MV=4.2-IV0 with MV dependency 4.2-IV1 that is "
        "behind its bootstrap MV 4.2-IV0."
    )


@pytest.mark.parametrize(
    "text,rule",
    [
        ("[[metadata_versions]]\nlevel = 35\nversion = \"4.9-IV0\"\nmetadata_changed = false\n[records.Bar]\nsince = 35\n", "metadata-change-flag"),
        ("[[metadata_versions]]\nlevel = 36\nversion = \"4.9-IV0\"\nmetadata_changed = true\n", "mv-table"),
        ("[[metadata_versions]]\nlevel = 35\nversion = \"4.9\"\nmetadata_changed = true\n", "mv-table"),
        ("[[metadata_versions]]\nlevel = 35\nversion = \"4.1-IV9\"\nmetadata_changed = true\n", "mv-table"),
        ("[[metadata_versions]]\nlevel = 35\nversion = \"4.3-IV0\"\nmetadata_changed = true\n", "mv-table"),
        ("[[metadata_versions]]\nlevel = 35\nversion = \"4.9-IV0\"\nmetadata_changd = true\n", "schema"),
        ("[[features]]\nname = \"group.version\"\nlevels = [{ level = 0, bootstrap = 7 }]\n", "duplicate"),
        ("[capabilities.scram]\nsince = 11\n", "duplicate"),
        ("[records.TopicRecord]\nsince = 8\n", "duplicate"),
        ("[records.PartitionRecord]\nversions = [{ since = 29, version = 2 }]\n", "steps"),
        ("[[features]]\nname = \"x.version\"\nlevels = [{ level = 0, bootstrap = \"9.9-IV0\" }]\n", "unknown-reference"),
        ("[[features]]\nname = \"x.version\"\nlevels = [{ level = 1, bootstrap = 7 }, { level = 0, bootstrap = 7 }]\n", "feature-levels"),
        ("[[features]]\nname = \"x.version\"\nlevels = [{ level = 0, bootstrap = 7, dependencies = { \"y.version\" = 1 } }]\n", "unknown-reference"),
        (RELEASE_NEXT + "policies = { mv_downgrade_error = \"C2\" }\n", "unknown-reference"),
        ("[[releases]]\nname = \"4.2\"\ninherits = \"4.1\"\n", "duplicate"),
        ("[[releases]]\nname = \"3.7.2\"\ninherits = \"3.7.0\"\n", "duplicate"),
        ("[[releases]]\nname = \"5.0.0\"\npatches = [\"4.9.1\"]\ninherits = \"4.4\"\n", "release"),
        ("[[releases]]\nname = \"5.0.x\"\ninherits = \"4.4\"\n", "release"),
        ("[[releases]]\nname = \"5.0\"\ninherits = \"9.9\"\n", "unknown-reference"),
        ("line = \"9.9\"\n", "unknown-reference"),
        ("this is not toml", "schema"),
    ],
)
def test_structural_rules(text, rule):
    err = refused(text)
    assert err.rule == rule, str(err)
    assert "broken.toml" in str(err) or rule == "schema" and "broken.toml" in err.where


def test_missing_user_file(tmp_path):
    """A missing file breaks no rule of the catalog: it was called `rule schema broken`."""
    with pytest.raises(CatalogError) as exc:
        load_catalog(tmp_path / "nope.toml")
    assert exc.value.rule == "file"
    assert str(exc.value) == f"catalog file {tmp_path / 'nope.toml'}: does not exist"


def test_a_user_file_that_is_not_a_regular_file_is_refused_before_it_is_opened(tmp_path):
    """Opening a FIFO waits for a writer: loading one used to hang."""
    fifo = tmp_path / "cat.toml"
    os.mkfifo(fifo)
    for path in (fifo, tmp_path):
        with pytest.raises(CatalogError) as exc:
            load_catalog(path)
        assert str(exc.value) == f"catalog file {path}: cannot read it: not a regular file"
        assert pickle.loads(pickle.dumps(exc.value)).args == exc.value.args


def test_user_file_relative_schema_dir(tmp_path):
    (tmp_path / "cat.toml").write_text('record_schema_dirs = ["more"]\n')
    assert load_catalog(tmp_path / "cat.toml").record_schema_dirs == ((tmp_path / "more").resolve(),)


HYPOTHETICAL = st.fixed_dictionaries(
    {
        "boot": st.integers(7, 29),
        "mv_dep": st.one_of(st.none(), st.integers(7, 29)),
        "dep": st.one_of(st.none(), st.sampled_from([("group.version", 1), ("streams.version", 1), ("kraft.version", 1)])),
        "lp": st.integers(0, 1),
    }
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(HYPOTHETICAL)
def test_any_accepted_catalog_has_consistent_defaults(h):
    """Whatever hypothetical feature a user adds, a catalog that loads has defaults that
    validate at every metadata.version; one that does not load names a rule."""
    deps = []
    if h["mv_dep"] is not None:
        deps.append(f'"metadata.version" = {h["mv_dep"]}')
    if h["dep"] is not None:
        deps.append(f'"{h["dep"][0]}" = {h["dep"][1]}')
    text = FOO.format(boot=h["boot"], deps=", ".join(deps))
    text += RELEASE_NEXT + f'features = {{ "foo.version" = {h["lp"]} }}\n'
    try:
        cat = load_catalog_text(text, "hypothetical.toml")
    except CatalogError as err:
        assert err.rule.startswith("kafka-2.5.")
        return
    for mv in cat.metadata_versions:
        cat.validate_levels({"metadata.version": mv.level, **cat.default_levels(mv)}, unstable=True)
