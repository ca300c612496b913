"""group_losses: the grouping an operator reads first keeps every item, once."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, strategies as st

from kraftsim.image import Loss, group_losses, largest_topics, named_items, split_loss_text

KINDS = st.sampled_from(["broker log dirs", "replica directory assignment", "partition ELR"])
TOPIC = st.from_regex(r"[a-zA-Z0-9._-]{1,12}", fullmatch=True)
ENTITY = st.one_of(st.builds(lambda t, p: f"topic {t} partition {p}", TOPIC, st.integers(0, 200)),
                   st.integers(0, 9).map(lambda b: f"broker {b}"))


@given(st.lists(st.tuples(KINDS, ENTITY), max_size=60))
def test_every_item_lands_in_exactly_one_group(items: list[tuple[str, str]]) -> None:
    groups = group_losses(items)
    assert Counter((g.kind, e) for g in groups for e in g.entities) == Counter(items)
    keys = [(g.kind, g.topic) for g in groups]
    assert len(keys) == len(set(keys))  # one group per kind and topic
    assert list(dict.fromkeys(g.kind for g in groups)) == list(dict.fromkeys(k for k, _ in items))
    for g in groups:
        assert all(e.startswith(f"topic {g.topic} partition ") for e in g.entities) if g.topic else \
            not any(e.startswith("topic ") for e in g.entities)


def test_topics_and_partitions_in_natural_order() -> None:
    items = [("k", f"topic t-{t} partition {p}") for t in (10, 2) for p in (10, 1)] + [("k", "broker 3")]
    groups = group_losses(items)
    assert [(g.topic, g.entities) for g in groups] == [
        (None, ("broker 3",)),
        ("t-2", ("topic t-2 partition 1", "topic t-2 partition 10")),
        ("t-10", ("topic t-10 partition 1", "topic t-10 partition 10"))]


@given(st.lists(st.tuples(KINDS, ENTITY), max_size=60))
def test_split_loss_text_inverts_loss_text(items: list[tuple[str, str]]) -> None:
    assert [split_loss_text(Loss(k, e, "", "3.7-IV0").text) for k, e in items] == items


@given(st.lists(st.tuples(st.just("k"), ENTITY), max_size=60), st.integers(0, 12))
def test_largest_topics_keeps_the_biggest_in_their_order(items: list[tuple[str, str]], limit: int) -> None:
    topics = [g for g in group_losses(items) if g.topic is not None]
    shown = largest_topics(topics, limit)
    assert len(shown) == min(limit, len(topics))
    assert shown == [g for g in topics if g in shown]  # the given order
    left_out = [g for g in topics if g not in shown]
    assert all(s.count >= g.count for s in shown for g in left_out)


@given(st.lists(st.text(min_size=1, max_size=5), max_size=12), st.integers(0, 8))
def test_named_items_names_the_first_and_counts_the_rest(entities: list[str], limit: int) -> None:
    named = named_items(entities, limit)
    if len(entities) <= limit:
        assert named == entities
    else:
        assert named == [*entities[:limit], f"and {len(entities) - limit} more"]
