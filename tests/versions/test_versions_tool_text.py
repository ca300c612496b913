"""Storage/features tool output and error texts (facts §7.1, §7.2)."""

import pytest

from kraftsim.versions import IllegalArgument, ToolFailure, default_catalog
from kraftsim.versions.tool_text import (
    feature_dependencies,
    parse_feature_arg,
    release_version_updates,
    version_mapping,
)
from tests.versions.versions_facts import FEATURES, PRODUCTION_FEATURES, VERSION, default_row

CAT = default_catalog()


@pytest.mark.parametrize("level", range(7, 30))
def test_version_mapping_for_every_mv(level):
    row = default_row(level)
    expected = [f"metadata.version={level} ({VERSION[level]})"] + [f"{f}={row[f]}" for f in PRODUCTION_FEATURES]
    assert version_mapping(CAT, VERSION[level]) == expected


def test_version_mapping_default_and_as_typed():
    assert version_mapping(CAT)[0] == "metadata.version=33 (4.4-IV2)"
    assert version_mapping(CAT.at_release("4.3.1"))[0] == "metadata.version=30 (4.3-IV0)"
    assert version_mapping(CAT.at_release("4.2"))[0] == "metadata.version=29 (4.2-IV1)"
    assert version_mapping(CAT, "3.8.1")[0] == "metadata.version=20 (3.8.1)"
    assert version_mapping(CAT, "4.0")[:3] == ["metadata.version=25 (4.0)", "kraft.version=1", "transaction.version=2"]


def test_version_mapping_unknown():
    with pytest.raises(ToolFailure) as exc:
        version_mapping(CAT, "2.8")
    assert str(exc.value) == (
        "Unknown metadata.version '2.8'. Supported metadata.version are: "
        + ", ".join(VERSION[lvl] for lvl in range(7, 35))  # up to the testing placeholder, as Kafka 4.4.0 lists them
    )


def test_version_mapping_of_the_next_lines_placeholder():
    # §11.6: 4.3 maps 4.4-IV0 to 31 (its testing placeholder) but has no share.version 2;
    # 4.4 gives share.version 2 from 4.4-IV0.
    on_43 = version_mapping(CAT.at_release("4.3"), "4.4-IV0")
    assert on_43[0] == "metadata.version=31 (4.4-IV0)" and "share.version=1" in on_43
    on_44 = version_mapping(CAT, "4.4-IV0")
    assert on_44[0] == "metadata.version=31 (4.4-IV0)" and "share.version=2" in on_44
    assert version_mapping(CAT, "4.4-IV2") == [
        "metadata.version=33 (4.4-IV2)", "kraft.version=1", "transaction.version=2", "group.version=1",
        "eligible.leader.replicas.version=1", "share.version=2", "streams.version=1",
    ]
    with pytest.raises(ToolFailure) as exc:
        version_mapping(CAT.at_release("4.2"), "4.4-IV0")
    assert str(exc.value).endswith("4.2-IV0, 4.2-IV1, 4.3-IV0")


def expected_dependency_lines(name, level):
    deps = FEATURES[name][0][level][1]
    if not deps:
        return [f"{name}={level} has no dependencies."]
    return [f"{name}={level} requires:"] + [
        f"    {d}={lv}" + (f" ({VERSION[lv]})" if d == "metadata.version" else "") for d, lv in deps.items()
    ]


@pytest.mark.parametrize("tool", ["storage", "features"])
def test_feature_dependencies_for_every_feature_level(tool):
    for name, (levels, *_rest) in FEATURES.items():
        for level in levels:
            assert feature_dependencies(CAT, [f"{name}={level}"], tool) == expected_dependency_lines(name, level)


def test_feature_dependencies_metadata_version_and_several_args():
    lines = feature_dependencies(CAT, ["metadata.version=17", "eligible.leader.replicas.version=1"])
    assert lines == [
        "metadata.version=17 (3.7-IV2) has no dependencies.",
        "eligible.leader.replicas.version=1 requires:",
        "    metadata.version=23 (4.0-IV1)",
    ]
    with pytest.raises(ToolFailure) as exc:
        feature_dependencies(CAT, ["metadata.version=35"])
    assert str(exc.value) == "Unknown metadata.version 35"
    # 4.4.0 knows its placeholder 4.5-IV0; 4.3 does not.
    assert feature_dependencies(CAT, ["metadata.version=34"]) == ["metadata.version=34 (4.5-IV0) has no dependencies."]
    with pytest.raises(ToolFailure) as exc:
        feature_dependencies(CAT.at_release("4.3"), ["metadata.version=34"])
    assert str(exc.value) == "Unknown metadata.version 34"
    assert feature_dependencies(CAT, ["metadata.version=33"]) == ["metadata.version=33 (4.4-IV2) has no dependencies."]
    with pytest.raises(ToolFailure) as exc:
        feature_dependencies(CAT.at_release("4.3"), ["share.version=2"])
    assert str(exc.value) == "Feature level 2 is not supported for feature share.version"


@pytest.mark.parametrize(
    "arg,text",
    [
        ("foo.version=1", "Unknown feature: foo.version"),
        ("group.version=7", "Feature level 7 is not supported for feature group.version"),
        ("group.version", "Invalid feature format: group.version. Expected format: 'feature=version' (e.g. 'group.version=1')"),
        ("group.version=", "Invalid feature format: group.version=. Expected format: 'feature=version' (e.g. 'group.version=1')"),
        ("a=1=2", "Invalid feature format: a=1=2. Expected format: 'feature=version' (e.g. 'group.version=1')"),
        ("group.version=one", "Invalid version format: one for feature group.version"),
        ("group.version=40000", "Invalid version format: 40000 for feature group.version"),
    ],
)
def test_storage_feature_dependencies_errors(arg, text):
    with pytest.raises(ToolFailure) as exc:
        feature_dependencies(CAT, [arg], "storage")
    assert str(exc.value) == text


def test_features_tool_variants():
    with pytest.raises(IllegalArgument) as exc:
        feature_dependencies(CAT, ["group.version=7"], "features")
    assert str(exc.value) == "No feature:group.version with feature level 7"
    with pytest.raises(ToolFailure) as exc:
        feature_dependencies(CAT, ["group.version=x"], "features")
    assert str(exc.value) == "Can't parse feature=level string group.version=x: unable to parse x as a short."
    with pytest.raises(ToolFailure) as exc:
        feature_dependencies(CAT, ["group.version"], "features")
    assert str(exc.value) == "Can't parse feature=level string group.version: equals sign not found."


@pytest.mark.parametrize(
    "arg,parsed",
    [("kraft.version=1", ("kraft.version", 1)), (" group.version = 0 ", ("group.version", 0)),
     ("x=-3", ("x", -3)), ("x=+7", ("x", 7)), ("a=b=1", None), ("x=1_0", None), ("x=32768", None)],
)
def test_parse_name_level(arg, parsed):
    if parsed is None:
        with pytest.raises(ToolFailure) as exc:
            parse_feature_arg(arg)
        assert str(exc.value).startswith(f"Can't parse feature=level string {arg}: unable to parse ")
    else:
        assert parse_feature_arg(arg) == parsed
        assert parse_feature_arg(arg, "feature-dependencies") == parsed


def test_release_version_updates():
    assert release_version_updates(CAT, "3.9-IV0", downgrade=False) == {"metadata.version": 21, "kraft.version": 1}
    down = release_version_updates(CAT, "3.9-IV0", downgrade=True)
    assert down == {"metadata.version": 21, **{f: (1 if f == "kraft.version" else 0) for f in PRODUCTION_FEATURES}}
