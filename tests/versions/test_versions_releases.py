"""Software releases: advertised ranges, policies, downgrade wording (facts §2.6, §5.2, §9)."""

import pytest

from kraftsim.versions import IllegalArgument, default_catalog, range_text
from tests.versions.versions_facts import LATEST_PRODUCTION, ORACLE_ADVERTISED, POLICIES

CAT = default_catalog()


def test_every_release_is_there_oldest_first():
    assert [r.name for r in CAT.releases] == sorted(LATEST_PRODUCTION, key=lambda r: tuple(map(int, r.split("."))))


@pytest.mark.parametrize("release", sorted(ORACLE_ADVERTISED))
def test_advertised_ranges_match_the_oracle_logs(release):
    assert CAT.at_release(release).supported_features() == ORACLE_ADVERTISED[release]


def test_3_3_advertises_metadata_version_only():
    assert CAT.at_release("3.3").supported_features() == {"metadata.version": (1, 7)}


def test_unstable_ranges():
    # 4.1 knew streams.version 1 only as a testing level.
    assert CAT.at_release("4.1").supported_features(unstable=True)["streams.version"] == (0, 1)
    assert "streams.version" not in CAT.at_release("4.1").supported_features()
    assert CAT.supported_features(unstable=True) == CAT.supported_features()


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


def test_unknown_release():
    with pytest.raises(IllegalArgument) as exc:
        CAT.at_release("2.8")
    assert str(exc.value).startswith("Unknown release 2.8. Known releases are: 3.3, 3.4")


@pytest.mark.parametrize("lo,hi,text", [(1, 1, "1"), (0, 32767, "0+"), (7, 29, "7-29")])
def test_range_text(lo, hi, text):
    assert range_text(lo, hi) == text
