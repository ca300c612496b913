"""The jobs' plain-text tables: every number in one column printed with one format."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kraftsim.pipeline.report import text_table


def test_a_column_of_small_and_large_floats_shares_one_format() -> None:
    rows = [{"mv": "3.7-IV0", "kib": 14.339}, {"mv": "4.0-IV3", "kib": 1291.25}, {"mv": "x", "kib": None}]
    lines = text_table(rows, [("mv", "MV"), ("kib", "KiB")]).splitlines()
    assert [line.split()[-1] for line in lines[2:]] == ["14.3", "1,291.2", "-"]


@given(st.lists(st.floats(min_value=0, max_value=1e9, allow_nan=False), min_size=1, max_size=8))
def test_every_float_of_a_column_has_the_same_decimals(values: list[float]) -> None:
    lines = text_table([{"v": v} for v in values], [("v", "v")]).splitlines()[2:]
    places = {len(cell.strip().partition(".")[2]) for cell in lines}
    assert len(places) == 1
