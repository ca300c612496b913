"""metadata.version table, lookups, parsing and lossy/lossless judgement (facts §1)."""

import pytest
from hypothesis import given, strategies as st

from kraftsim.versions import UnknownMetadataVersion, default_catalog
from tests.versions.versions_facts import (
    CHANGED, FLOOR, LATEST_PRODUCTION, LATEST_TESTING, MV_TABLE, PLACEHOLDER_FLAGS, VERSION,
)

CAT = default_catalog()
LEVELS_44 = list(range(7, 35))  # 34 (4.5-IV0): 4.4.0's testing placeholder


def test_every_level_matches_the_fact_table():
    got = [(mv.level, mv.version, mv.metadata_changed) for mv in CAT.all_metadata_versions]
    assert got == MV_TABLE


def test_release_string_is_the_prefix():
    for mv in CAT.all_metadata_versions:
        assert mv.release == VERSION[mv.level].split("-")[0]


def test_default_line_is_4_4_0_and_every_level_7_to_33_is_production():
    assert CAT.release.name == "4.4.0"
    assert [mv.level for mv in CAT.metadata_versions] == LEVELS_44
    assert [mv.level for mv in CAT.metadata_versions if not mv.production] == [34]
    assert (CAT.minimum.level, CAT.latest_production.level, CAT.latest_testing.level) == (7, 33, 34)


@pytest.mark.parametrize("line,top", sorted(LATEST_TESTING.items()))
def test_each_line_knows_up_to_its_latest_testing_level(line, top):
    view = CAT.at_release(line)
    assert view.latest_testing.level == top
    assert [mv.level for mv in view.metadata_versions if not mv.production] == list(range(LATEST_PRODUCTION[line] + 1, top + 1))


@pytest.mark.parametrize("line", sorted(PLACEHOLDER_FLAGS))
def test_placeholder_flags_belong_to_the_release(line):
    # §11.6 and the jars: 4.2.0 lists 4.3-IV0 with didMetadataChange false (true from 4.3 on);
    # 3.7-3.9 list their placeholders as true, which their own lines later made false.
    view = CAT.at_release(line)
    for level, flag in PLACEHOLDER_FLAGS[line].items():
        assert view.metadata_version(level).metadata_changed is flag
        assert view.is_lossy(level, level - 1) is flag
    assert CAT.is_lossy(30, 29) and not CAT.is_lossy(20, 19) and not CAT.is_lossy(22, 21)


@pytest.mark.parametrize("release,latest", sorted(LATEST_PRODUCTION.items()))
def test_latest_production_per_release(release, latest):
    line = CAT.at_release(release)
    assert line.latest_production.level == latest
    lowest = 1 if release.startswith("3.") else 7
    assert line.minimum.level == lowest
    assert [mv.level for mv in line.metadata_versions if mv.production] == list(range(lowest, latest + 1))


@pytest.mark.parametrize(
    "text,level",
    [("3.8.1", 20), ("3.8", 20), ("4.0", 25), ("3.5", 11), ("3.3", 7), ("4.1", 27), ("4.2", 29), ("3.7-IV2", 17),
     ("3.7", 19), ("3.9.0", 21), ("4.2-IV0", 28), ("4.3", 30), ("4.3.1", 30), ("4.4", 33), ("4.4-IV0", 31)],
)
def test_from_version_string(text, level):
    assert CAT.mv_from_string(text).level == level


def test_parse_format_identity_for_every_string():
    for release in LATEST_PRODUCTION:
        line = CAT.at_release(release)
        for mv in line.metadata_versions:
            assert line.mv_from_string(str(mv), unstable=True) == mv
            assert str(line.mv_from_string(mv.version, unstable=True)) == mv.version
            assert line.mv_from_level(mv.level).version == mv.version


def test_unknown_version_string_error_lists_production_versions():
    listing = ", ".join(VERSION[lvl] for lvl in LEVELS_44 if lvl <= LATEST_PRODUCTION["4.4"])
    with pytest.raises(UnknownMetadataVersion) as exc:
        CAT.mv_from_string("3.2")
    assert str(exc.value) == f"Unknown metadata.version '3.2'. Supported metadata.version are: {listing}"
    with pytest.raises(UnknownMetadataVersion) as exc:
        CAT.mv_from_string("3.0-IV1")
    assert str(exc.value).startswith("Unknown metadata.version '3.0-IV1'. Supported metadata.version are: 3.3-IV3, 3.4-IV0,")


def test_older_line_does_not_know_newer_versions():
    line = CAT.at_release("4.1")  # lists 4.2-IV0 and 4.2-IV1 as placeholders, nothing later
    with pytest.raises(UnknownMetadataVersion) as exc:
        line.mv_from_string("4.3-IV0", unstable=True)
    assert str(exc.value).endswith(", 4.1-IV0, 4.1-IV1, 4.2-IV0, 4.2-IV1")
    with pytest.raises(UnknownMetadataVersion) as exc:
        line.mv_from_string("4.2-IV0")
    assert str(exc.value).endswith(", 4.1-IV0, 4.1-IV1")
    assert "3.3-IV0" in CAT.at_release("3.9").versions_string(1, 21)


def test_unstable_versions_need_the_switch():
    cat = CAT.at_release("4.3.0")  # lists 4.4-IV0 (31) as a testing level
    assert not cat.mv_from_level(31).production
    with pytest.raises(UnknownMetadataVersion) as exc:
        cat.mv_from_string("4.4-IV0")
    assert str(exc.value).endswith("4.2-IV1, 4.3-IV0")
    assert cat.mv_from_string("4.4-IV0", unstable=True).level == 31
    # A release without a production IV has no short key, even with the switch (like "4.2" in C1).
    with pytest.raises(UnknownMetadataVersion) as exc:
        cat.mv_from_string("4.4", unstable=True)
    assert str(exc.value).endswith("4.3-IV0, 4.4-IV0")


@pytest.mark.parametrize("level", [0, 6, 35, -1])
def test_unknown_feature_level(level):
    with pytest.raises(UnknownMetadataVersion) as exc:
        CAT.mv_from_level(level)
    assert str(exc.value) == f"No MetadataVersion with feature level {level}. Valid feature levels are from 7 to 34."


def test_previous_and_compare():
    assert CAT.previous(8).level == 7
    assert CAT.previous("4.0-IV0").version == "3.9-IV0"
    with pytest.raises(UnknownMetadataVersion):
        CAT.previous(7)
    assert CAT.at_release("3.3").previous(7).version == "3.3-IV2"
    a, b = CAT.metadata_version(20), CAT.metadata_version(21)
    assert a < b and CAT.compare(a, b) == -1 and CAT.compare(b, a) == 1 and CAT.compare(a, a) == 0
    assert CAT.at_release("3.8").metadata_version(20) == a  # equality by level across lines


def scan_is_lossy(a: int, b: int) -> bool:
    """Independent reading of §1.4: some level v with low < v <= high changed metadata."""
    low, high = min(a, b), max(a, b)
    return any(CHANGED[v] for v in range(low + 1, high + 1))


@given(st.sampled_from(LEVELS_44), st.sampled_from(LEVELS_44))
def test_is_lossy_symmetric_and_equal_to_flag_scan(a, b):
    assert CAT.is_lossy(a, b) == CAT.is_lossy(b, a) == scan_is_lossy(a, b)


@given(st.integers(1, 21), st.integers(1, 21))
def test_is_lossy_on_3x_line_including_removed_levels(a, b):
    assert CAT.at_release("3.9").is_lossy(a, b) == scan_is_lossy(a, b)


@pytest.mark.parametrize("level,floor", sorted(FLOOR.items()))
def test_safe_downgrade_floor_table(level, floor):
    assert CAT.safe_downgrade_floor(level).level == floor
    assert not CAT.is_lossy(level, floor)
    if floor > 7:
        assert CAT.is_lossy(level, floor - 1)


def test_floor_below_4x_minimum():
    line = CAT.at_release("3.3")
    assert [line.safe_downgrade_floor(x).level for x in range(1, 8)] == [1, 1, 3, 3, 5, 6, 7]


@pytest.mark.parametrize("release", ["3.7.2", "3.8.1", "3.9.1", "4.0.1", "4.1.1", "4.2.0", "4.3.0", "4.3.1", "4.4.0"])
def test_is_lossy_per_release_follows_that_release_flags(release):
    # §11.6: the flags are the release's own (4.2.0 lists 4.3-IV0 as a placeholder that changed nothing).
    line = CAT.at_release(release)
    flags = {**CHANGED, **PLACEHOLDER_FLAGS.get(line.release.line, {})}
    levels = [mv.level for mv in line.metadata_versions]
    for a in levels:
        for b in levels:
            low, high = min(a, b), max(a, b)
            assert line.is_lossy(a, b) == any(flags[v] for v in range(low + 1, high + 1)), (release, a, b)


def test_no_downgrade_from_4_3_or_later_to_4_2_or_earlier_is_lossless():
    for high in range(30, 34):
        for low in range(7, 30):
            assert CAT.is_lossy(high, low) and not CAT.downgrade_losses(high, low).lossless
    assert CAT.safe_downgrade_floor(31).level == 30 and not CAT.is_lossy(31, 30)


def test_entry_for_release_takes_the_last_entry_from_the_release_or_before() -> None:
    """Per-release facts hold from their `since` on: a patch between two entries takes the
    earlier, a later line the last, and a release older than all the first."""
    from dataclasses import dataclass

    from kraftsim.versions import entry_for_release

    @dataclass(frozen=True)
    class Fact:
        since: str

    entries = [Fact("3.3.0"), Fact("3.7.2"), Fact("3.10.0"), Fact("4.2.0")]
    assert entry_for_release(entries, "3.7.1").since == "3.3.0"
    assert entry_for_release(entries, "3.7.2").since == "3.7.2"
    assert entry_for_release(entries, "3.9").since == "3.7.2"  # (3.10 sorts after 3.9, not before)
    assert entry_for_release(entries, "4.4.0").since == "4.2.0"
    assert entry_for_release(entries, "3.0.0").since == "3.3.0"
