"""Release inference: a registration's advertised ranges name the one release line that
supports exactly them, or none (then the import is refused unless --release names one)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kraftsim.sim.importing.plan import infer_release
from kraftsim.versions import default_catalog

CAT = default_catalog()
# each line's newest patch release: patch releases of a line advertise the same ranges
LINES = sorted({CAT.find_release(r.line).name for r in CAT.releases}, key=lambda n: tuple(map(int, n.split("."))))


def test_every_line_is_inferred_from_its_own_ranges() -> None:
    for name in LINES:
        assert infer_release(CAT, CAT.at_release(name).supported_features()) == (name, False)


def test_a_line_with_unstable_versions_enabled_is_said_so() -> None:
    checked = 0
    for name in LINES:
        stable = CAT.at_release(name).supported_features()
        unstable = CAT.at_release(name).supported_features(unstable=True)
        if unstable != stable and all(CAT.at_release(o).supported_features() != unstable for o in LINES):
            line, flagged = infer_release(CAT, unstable)
            assert flagged and CAT.at_release(line).supported_features(unstable=True) == unstable
            checked += 1
    assert checked >= 1  # 4.1 advertises 4.2's unreleased levels with unstable versions enabled


@settings(max_examples=60, deadline=None)
@given(line=st.sampled_from(LINES), feature=st.sampled_from(["metadata.version", "group.version", "x.version"]),
       lo=st.integers(0, 40), hi=st.integers(0, 40))
def test_any_other_ranges_infer_a_line_only_when_they_match_it_exactly(line: str, feature: str, lo: int,
                                                                        hi: int) -> None:
    ranges = dict(CAT.at_release(line).supported_features())
    ranges[feature] = (lo, hi)
    found, unstable = infer_release(CAT, ranges)
    if found is None:
        assert all(CAT.at_release(n).supported_features(u) != ranges for n in LINES for u in (False, True))
    else:
        assert CAT.at_release(found).supported_features(unstable) == ranges
