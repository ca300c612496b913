"""A node's ApiVersions answer: ranges, supported features (the v3/v4 rule), finalized features."""

from __future__ import annotations

import pytest

from kraftsim.errors import KraftsimError
from kraftsim.image import MetadataImage, MetadataProvenance
from kraftsim.image import features_from
from kraftsim.sim.node.api_versions import api_version_table, api_versions_response
from kraftsim.sim.node.finalized import FinalizedFeatures, finalized_features
from kraftsim.versions import default_catalog
from tests.sim.oracle_images import image_of, needs_oracle, oracle_metadata_dirs, rel

CATALOG = default_catalog()
TABLE = api_version_table()
RELEASES = TABLE.releases
UNSUPPORTED_VERSION = 35


def _max_request_version(release: str) -> int:
    return TABLE.ranges(release, "broker")[18][1]


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("role", ["broker", "controller"])
def test_api_keys_are_the_table(release, role):
    r = api_versions_response(release, role, 3, None)
    assert r.error_code == 0
    assert {k: (lo, hi) for k, lo, hi in r.api_keys} == TABLE.ranges(release, role)
    assert [k for k, _, _ in r.api_keys] == sorted(k for k, _, _ in r.api_keys)


@pytest.mark.parametrize("release", RELEASES)
def test_supported_features_match_the_catalog(release):
    expected = CATALOG.at_release(release).supported_features()
    top = _max_request_version(release)
    r = api_versions_response(release, "broker", top, None)
    if top >= 4:
        assert {n: (lo, hi) for n, lo, hi in r.supported_features} == expected
    # v3: whatever starts at 0 is left out (KAFKA-17492); the rest is unchanged
    r3 = api_versions_response(release, "broker", 3, None)
    assert {n: (lo, hi) for n, lo, hi in r3.supported_features} == {
        n: rng for n, rng in expected.items() if rng[0] > 0}


def test_v3_and_v4_differ_exactly_on_ranges_from_zero():
    v3 = api_versions_response("4.1", "controller", 3, None).supported_features
    v4 = api_versions_response("4.1", "controller", 4, None).supported_features
    assert v3 == (("metadata.version", 7, 27),)
    assert ("kraft.version", 0, 1) in v4 and ("transaction.version", 0, 2) in v4
    assert set(v4) - set(v3) == {f for f in v4 if f[1] == 0}
    # 3.9 is the first line with a feature starting at 0, and the first with v4
    assert api_versions_response("3.9", "broker", 3, None).supported_features == (("metadata.version", 1, 21),)
    assert api_versions_response("3.9", "broker", 4, None).supported_features == (
        ("kraft.version", 0, 1), ("metadata.version", 1, 21))


def test_unstable_node_advertises_testing_levels():
    stable = dict((n, (a, b)) for n, a, b in api_versions_response("4.1", "broker", 4, None).supported_features)
    unstable = dict((n, (a, b)) for n, a, b in
                    api_versions_response("4.1", "broker", 4, None, unstable=True).supported_features)
    assert "streams.version" not in stable and unstable["streams.version"] == (0, 1)


def test_request_newer_than_the_node_gets_unsupported_version_with_its_own_range():
    r = api_versions_response("3.8", "broker", 4, None)
    assert r.error_code == UNSUPPORTED_VERSION
    assert r.api_keys == ((18, 0, 3),) and r.api_range(18) == (0, 3) and r.api_range(0) is None
    assert r.supported_features == () and r.finalized_features == () and r.finalized_features_epoch == -1


def test_versions_before_3_carry_no_features_and_v0_no_throttle():
    image = _image({"metadata.version": 21}, offset=41)
    for v in (0, 1, 2):
        r = api_versions_response("3.9", "broker", v, image, throttle_time_ms=7)
        assert (r.supported_features, r.finalized_features, r.finalized_features_epoch) == ((), (), -1)
        assert r.throttle_time_ms == (0 if v == 0 else 7)
    assert api_versions_response("3.9", "broker", 3, image).finalized_features_epoch == 41


def _image(levels: dict[str, int], offset: int) -> MetadataImage:
    return MetadataImage(provenance=MetadataProvenance(offset, 1, 0, True), features=features_from(levels))


def test_finalized_features_rules():
    image = _image({"metadata.version": 25, "group.version": 1, "transaction.version": 0}, offset=99)
    ff = finalized_features(image)
    assert ff == FinalizedFeatures(25, (("group.version", 1), ("metadata.version", 25)), 99)
    assert ff.as_dict() == {"group.version": 1, "metadata.version": 25} and ff.level("share.version") == 0
    with_kraft = finalized_features(image, kraft_version=1)
    assert with_kraft.level("kraft.version") == 1 and with_kraft.epoch == 99
    assert finalized_features(MetadataImage()) is None
    r = api_versions_response("4.0", "broker", 4, image, kraft_version=1)
    assert r.finalized_features == (("group.version", 1, 1), ("kraft.version", 1, 1), ("metadata.version", 25, 25))
    assert api_versions_response("4.0", "broker", 4, None).finalized_features_epoch == -1
    assert api_versions_response("4.0", "broker", 4, ff) == api_versions_response("4.0", "broker", 4, image)


def test_without_a_high_watermark_4_4_reports_nothing_and_older_releases_assume_their_lowest_mv():
    # kafka-facts §11.4: 4.4 (075401e2) reports no finalized features and epoch -1; before, the
    # node assumed its lowest metadata.version.
    r44 = api_versions_response("4.4.0", "broker", 4, None)
    assert (r44.finalized_features, r44.finalized_features_epoch) == ((), -1)
    r43 = api_versions_response("4.3.1", "broker", 4, None)
    assert (r43.finalized_features, r43.finalized_features_epoch) == ((("metadata.version", 7, 7),), -1)
    r39 = api_versions_response("3.9", "broker", 4, None)
    assert r39.finalized_features == (("metadata.version", 1, 1),)
    # Once the node has metadata every release reports the same.
    image = _image({"metadata.version": 30}, offset=7)
    assert api_versions_response("4.4.0", "broker", 4, image).finalized_features == \
        api_versions_response("4.3.1", "broker", 4, image).finalized_features == (("metadata.version", 30, 30),)


def test_patch_releases_use_their_lines_table():
    assert TABLE.ranges("4.3.1", "broker") == TABLE.ranges("4.3", "broker")
    assert TABLE.ranges("4.3.0", "broker")[35] == (1, 5) and TABLE.ranges("4.2.0", "broker")[35] == (1, 4)
    assert TABLE.ranges("4.3.0", "controller")[63] == (0, 2)
    assert api_versions_response("4.4.0", "broker", 4, None).supported_features == tuple(
        (n, lo, hi) for n, (lo, hi) in sorted(CATALOG.at_release("4.4.0").supported_features().items()))


def test_bad_arguments():
    with pytest.raises(KraftsimError, match="must be >= 0"):
        api_versions_response("3.9", "broker", -1, None)
    with pytest.raises(KraftsimError, match="no API version data for release 2.8"):
        api_versions_response("2.8", "broker", 3, None)


@needs_oracle
@pytest.mark.parametrize("directory", oracle_metadata_dirs(), ids=rel)
def test_finalized_features_of_real_logs(directory):
    image, levels, last_offset = image_of(directory)
    r = api_versions_response("4.2", "broker", 4, image)
    assert r.finalized_features_epoch == last_offset
    finalized = {n: hi for n, lo, hi in r.finalized_features}
    assert all(lo == hi for _, lo, hi in r.finalized_features)
    assert "metadata.version" in finalized
    # kraft.version is never taken from a FeatureLevelRecord; level 0 is never listed
    expected = {n: lvl for n, lvl in levels.items() if n != "kraft.version"}
    assert finalized == expected
    assert 0 not in finalized.values()


@needs_oracle
def test_epoch_follows_the_log_as_a_node_catches_up():
    directory = next(d for d in oracle_metadata_dirs() if rel(d).startswith("kafka-4.0_kurizma"))
    epochs = []
    for stop in (5, 50, 500, None):
        image, _, last = image_of(directory, stop_after=stop)
        epochs.append(api_versions_response("4.0", "broker", 4, image).finalized_features_epoch)
        assert epochs[-1] == last
    assert epochs == sorted(epochs) and len(set(epochs)) == 4
