"""FreeNames (the lowest free topic numbers a create-topics request names, the scan starting
where the last one found its first free number) against the plain scan from 0."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kraftsim.image.pmap import PMap, hash_str
from kraftsim.protocol.primitives import Uuid
from kraftsim.sim.admin import FreeNames

PREFIXES = ("t-", "t-1", "u.")


def plain_lowest(by_name: PMap[str, Uuid], prefix: str, count: int) -> list[str]:
    names: list[str] = []
    i = 0
    while len(names) < count:
        if by_name.get(f"{prefix}{i}") is None:
            names.append(f"{prefix}{i}")
        i += 1
    return names


ops = st.one_of(
    st.tuples(st.just("ask"), st.sampled_from(PREFIXES), st.integers(0, 6)),  # a request: its names are created
    st.tuples(st.just("add"), st.sampled_from(PREFIXES + ("v",)), st.integers(0, 30)),
    st.tuples(st.just("remove"), st.sampled_from(PREFIXES + ("v",)), st.integers(0, 30)),
    st.tuples(st.just("fresh"), st.just(""), st.just(0)),  # the same names in a map built anew (a new controller)
)


@settings(max_examples=300, deadline=None)
@given(steps=st.lists(ops, min_size=1, max_size=25))
def test_free_names_are_those_the_plain_scan_finds(steps) -> None:
    memo = FreeNames()
    by_name: PMap[str, Uuid] = PMap(hash_str)
    n = 0
    for op, prefix, k in steps:
        if op == "ask":
            names = memo.lowest(by_name, prefix, k)
            assert names == plain_lowest(by_name, prefix, k)
            for name in names:
                n += 1
                by_name = by_name.set(name, Uuid.from_longs(n, 1))
        elif op == "add":
            n += 1
            by_name = by_name.set(f"{prefix}{k}", Uuid.from_longs(n, 1))
        elif op == "remove":
            if by_name.get(f"{prefix}{k}") is not None:
                by_name = by_name.delete(f"{prefix}{k}")
        else:
            by_name = PMap(hash_str).update(dict(by_name.items()))
    for prefix in PREFIXES:
        assert memo.lowest(by_name, prefix, 3) == plain_lowest(by_name, prefix, 3)
