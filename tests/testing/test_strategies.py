"""The cluster-level strategies produce what the catalog and the simulator accept."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from kraftsim.testing import strategies as ks
from kraftsim.versions import default_catalog


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(ks.releases().flatmap(lambda r: ks.feature_levels(r).map(lambda lv: (r, lv))))
def test_feature_levels_are_valid_for_their_release(r_levels):
    release, levels = r_levels
    default_catalog().at_release(release).validate_levels(levels)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ks.hypothetical_catalogs())
def test_hypothetical_catalogs_load(tmp_path_factory, proposal):
    catalog = proposal.load(tmp_path_factory.mktemp("catalog"))
    assert catalog.release.name == proposal.release
    levels = [mv.level for mv in catalog.metadata_versions][-len(proposal.metadata_versions):]
    assert levels == [proposal.level(i) for i in range(len(proposal.metadata_versions))]
    for i, mv in enumerate(proposal.metadata_versions):
        assert catalog.mv_from_level(proposal.level(i)).metadata_changed == mv.metadata_changed
