"""Software releases: advertised ranges, policies, downgrade wording (facts §2.6, §5.2, §9)."""

import pytest

from kraftsim.versions import IllegalArgument, default_catalog, range_text
from tests.versions.versions_facts import LATEST_PRODUCTION, ORACLE_ADVERTISED, POLICIES, RELEASES

CAT = default_catalog()


def test_every_release_is_there_by_kafkas_name_oldest_first():
    assert [r.name for r in CAT.releases] == RELEASES
    assert sorted({r.line for r in CAT.releases}, key=lambda x: tuple(map(int, x.split(".")))) == list(LATEST_PRODUCTION)


@pytest.mark.parametrize("name,expected", [("3.7", "3.7.2"), ("3.7.2", "3.7.2"), ("3.7.0", "3.7.0"), ("4.3", "4.3.1"),
                                           ("4.4", "4.4.0"), ("4.2", "4.2.2"), ("4.2.0", "4.2.0"),
                                           ("3.9", "3.9.2"),
                                           ("4.0", "4.0.2"), ("4.1", "4.1.2")])
def test_a_line_name_means_its_newest_patch_release(name, expected):
    assert CAT.find_release(name).name == expected
    assert CAT.at_release(name).release.name == expected


def test_patch_releases_sharing_an_entry_support_the_same():
    assert CAT.at_release("3.7.0").supported_features() == CAT.at_release("3.7.2").supported_features()
    assert CAT.at_release("4.3.0").latest_testing == CAT.at_release("4.3.1").latest_testing
    with pytest.raises(IllegalArgument):
        CAT.at_release("3.7.3")


def test_every_release_the_conformance_suite_runs_is_a_catalog_release():
    # A scenario or `--release` naming a jar the suite knows (4.0.2, 4.2.1, ...) must be
    # accepted as that release, not refused as unknown, nor read as its line's newest patch.
    from kraftsim.conformance.dist import known_releases
    from kraftsim.scenario.validate import parse_scenario

    names = {r.name for r in CAT.releases}
    for kafka in known_releases():
        assert kafka.version in names
        assert CAT.at_release(kafka.version).release.line == kafka.line
    for release in ("4.0.2", "4.1.2", "4.2.1", "3.9.2"):
        text = f'name = "x"\n[cluster]\ncontrollers = 1\nbrokers = 1\nrelease = "{release}"\n'
        assert parse_scenario(text, "x.toml").cluster.release == release


def test_share_version_2_is_production_on_4_4_only():
    # §11.6: a 4.4 node advertises share.version 0-2; 4.3 has no level 2 at all.
    assert CAT.at_release("4.4").supported_features()["share.version"] == (0, 2)
    assert CAT.at_release("4.3").supported_features(unstable=True)["share.version"] == (0, 1)
    assert CAT.at_release("4.3").feature("share.version").get(2) is None
    assert CAT.at_release("4.4").default_levels(30)["share.version"] == 1
    assert CAT.at_release("4.4").default_levels(31)["share.version"] == 2
    assert CAT.at_release("4.3").default_levels(31)["share.version"] == 1


@pytest.mark.parametrize("release", sorted(ORACLE_ADVERTISED))
def test_advertised_ranges_match_the_oracle_logs(release):
    assert CAT.at_release(release).supported_features() == ORACLE_ADVERTISED[release]


def test_3_3_advertises_metadata_version_only():
    assert CAT.at_release("3.3").supported_features() == {"metadata.version": (1, 7)}


def test_unstable_ranges():
    # 4.1 knew streams.version 1 only as a testing level.
    assert CAT.at_release("4.1").supported_features(unstable=True)["streams.version"] == (0, 1)
    assert "streams.version" not in CAT.at_release("4.1").supported_features()
    # 4.4.0 advertises up to 4.4-IV2, and its placeholder 4.5-IV0 only with unstable versions.
    assert CAT.supported_features()["metadata.version"] == (7, 33)
    assert CAT.supported_features(unstable=True) == {**CAT.supported_features(), "metadata.version": (7, 34)}


@pytest.mark.parametrize("release", sorted(POLICIES))
def test_policies(release):
    line = CAT.at_release(release)
    for name, value in POLICIES[release].items():
        assert line.policy(name) == value


def test_mv_downgrade_error_texts():
    assert CAT.mv_downgrade_error(25, 22, unsafe=False) == (
        "Unsupported metadata.version downgrade from 25 to 22. "
        "Refusing to perform the requested downgrade because it might delete metadata information."
    )
    assert CAT.mv_downgrade_error(25, 22, unsafe=True) == (
        "Unsupported metadata.version downgrade from 25 to 22. Unsafe metadata downgrade is not supported in this version."
    )
    old = CAT.at_release("4.1")
    assert old.mv_downgrade_error(25, 22, unsafe=False) == (
        "Invalid metadata.version 22. Refusing to perform the requested downgrade because it might delete metadata information."
    )
    assert old.mv_downgrade_error(25, 22, unsafe=True) == (
        "Invalid metadata.version 22. Unsafe metadata downgrade is not supported in this version."
    )
    # 3.3-3.6 still named UNSAFE_DOWNGRADE in the safe refusal (live 3.6.2, serve-tools); 3.7 dropped it
    for release, retry in (("3.3", True), ("3.6", True), ("3.7", False)):
        text = CAT.at_release(release).mv_downgrade_error(7, 4, unsafe=False)
        assert text.startswith("Invalid metadata.version 4. Refusing to perform the requested downgrade because it "
                               "might delete metadata information.")
        assert text.endswith(" Retry using UNSAFE_DOWNGRADE if you want to force the downgrade to proceed.") == retry
        assert CAT.at_release(release).mv_downgrade_error(7, 4, unsafe=True) == (
            "Invalid metadata.version 4. Unsafe metadata downgrade is not supported in this version.")


def test_unknown_release():
    with pytest.raises(IllegalArgument) as exc:
        CAT.at_release("2.8")
    assert str(exc.value).startswith("Unknown release 2.8. Known releases are: 3.3.0, 3.3.1, 3.3.2, 3.4.0")
    assert str(exc.value).endswith("4.4.0 (or a line such as 4.4 for its newest patch release)")


@pytest.mark.parametrize("lo,hi,text", [(1, 1, "1"), (0, 32767, "0+"), (7, 29, "7-29")])
def test_range_text(lo, hi, text):
    assert range_text(lo, hi) == text


def test_a_user_catalog_can_add_a_differing_patch_release():
    from kraftsim.versions import load_catalog_text

    cat = load_catalog_text('[[releases]]\nname = "4.4.1"\ninherits = "4.4"\nlatest_production = "4.4-IV1"\nlatest_testing = "4.4-IV2"\n')
    assert cat.release.name == "4.4.1" and cat.find_release("4.4").name == "4.4.1"
    assert cat.at_release("4.4.1").latest_production.level == 32
    assert cat.at_release("4.4.0").latest_production.level == 33
    # latest_testing is the release's own code: not inherited.
    bare = load_catalog_text('[[releases]]\nname = "4.4.1"\ninherits = "4.4"\n')
    assert bare.latest_testing.level == 33


def test_a_placeholder_level_adds_nothing_in_the_release_that_lists_it():
    # §11.6: 4.2.0 lists 4.3-IV0 but writes none of its records and changes no metadata there.
    old, new = CAT.at_release("4.2.0"), CAT.at_release("4.3.0")
    assert old.record_version("RegisterBrokerRecord", 30) == 3 and new.record_version("RegisterBrokerRecord", 30) == 4
    assert not old.supports("cordoned_log_dirs", 30) and new.supports("cordoned_log_dirs", 30)
    assert old.downgrade_losses(30, 29).lossless and not new.downgrade_losses(30, 29).lossless
    assert not old.is_lossy(30, 29) and new.is_lossy(30, 29)


def test_a_release_flag_that_contradicts_its_gates_is_refused():
    from kraftsim.versions import CatalogError, load_catalog_text

    with pytest.raises(CatalogError) as exc:
        load_catalog_text('[[releases]]\nname = "4.4.1"\ninherits = "4.4"\nmetadata_changed = { "4.4-IV2" = false }\n')
    assert exc.value.rule == "metadata-change-flag" and "release 4.4.1 gives it metadata_changed = false" in str(exc.value)


def test_no_shipped_release_has_open_facts():
    # The released 4.4.0 jar settled its publication and LATEST_PRODUCTION (4.4-IV2).
    assert all(not r.unconfirmed for r in CAT.releases)
    assert CAT.find_release("4.4.0").latest_production == 33


def test_every_patch_list_is_consistent_with_its_line():
    """Each name in an entry's `patches` is a later patch release of the entry's own line, no
    name is listed twice, and each one is read as the entry it shares: the same supported
    ranges, testing levels, policies and replayed configs (a patch release that differs is an
    entry of its own, as 4.2.1 and 4.2.2 are)."""
    def key(name: str) -> tuple[int, ...]:
        return tuple(map(int, name.split(".")))

    names = [r.name for r in CAT.releases]
    assert len(names) == len(set(names)) and names == sorted(names, key=key)
    for r in CAT.releases:
        entry = CAT.at_release(r.entry)
        assert r.line == ".".join(r.name.split(".")[:2]) == entry.release.line
        assert key(r.name) >= key(entry.release.name)
        here = CAT.at_release(r.name)
        assert here.supported_features() == entry.supported_features()
        assert here.supported_features(True) == entry.supported_features(True)
        assert (here.latest_production, here.latest_testing) == (entry.latest_production, entry.latest_testing)
        assert here.release.policies == entry.release.policies
        filt, theirs = here.config_replay_filter(), entry.config_replay_filter()
        assert (filt and filt.names) == (theirs and theirs.names)


@pytest.mark.parametrize("release,patches", [("3.9.0", ()), ("3.9.1", ("3.9.2",)), ("4.2.0", ()), ("4.2.1", ()),
                                             ("4.2.2", ())])
def test_patch_lists_read_from_the_jars(release, patches):
    """3.9.2's jar lists what 3.9.1's does (a patch of 3.9.1's entry, which refuses more than
    10,000 partitions in one CreateTopics where 3.9.0 does not); 4.2.1 and 4.2.2 drop removed
    configs on replay (KAFKA-19851) with their own lists, so each is an entry."""
    assert tuple(r.name for r in CAT.releases if r.entry == release and r.name != release) == patches
    assert CAT.at_release("4.2.0").config_replay_filter() is None
    f421, f422 = CAT.at_release("4.2.1").config_replay_filter(), CAT.at_release("4.2.2").config_replay_filter()
    assert f421 is not None and f422 is not None
    topics = dict(f422.names)["TOPIC"] - dict(f421.names)["TOPIC"]
    assert topics == {"max.decompressed.message.bytes"}
    assert "share.delivery.count.limit" not in dict(f421.names)["GROUP"]
    assert "share.delivery.count.limit" in dict(CAT.at_release("4.3.0").config_replay_filter().names)["GROUP"]
