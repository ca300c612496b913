"""DescribeClientQuotas and DescribeUserScramCredentials as a node answers them from its image
(Kafka's ClientQuotasImage.describe and ScramImage.describe): which entities a filter matches,
strict or not, the filters Kafka refuses with its texts, and the users a SCRAM describe lists."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftsim.image.components.quotas import (
    MATCH_DEFAULT, MATCH_EXACT, MATCH_SPECIFIED, ClientQuotasImage, Entity, QuotaFilterError, describe_quotas,
)
from kraftsim.image.components.scram import ScramCredential, ScramImage, describe_scram_users
from kraftsim.image.pmap import PMap, stable_hash
from kraftsim.javacompat import string_hash_order

ENTITIES: list[Entity] = [(("client-id", "c1"),), (("client-id", None),), (("client-id", "c1"), ("user", "alice")),
                          (("user", "alice"),), (("user", None),), (("ip", "10.0.0.1"),), (("ip", None),)]


def image() -> ClientQuotasImage:
    return ClientQuotasImage(PMap(stable_hash).update({e: {"k": float(i + 1)} for i, e in enumerate(ENTITIES)}))


def matched(components, strict: bool) -> list[Entity]:
    return [e for e, _ in describe_quotas(image(), components, strict)]


def test_exact_default_and_any_name_match_as_kafka_matches():
    assert set(matched([("client-id", MATCH_EXACT, "c1")], True)) == {(("client-id", "c1"),)}
    assert set(matched([("client-id", MATCH_EXACT, "c1")], False)) == {(("client-id", "c1"),),
                                                                        (("client-id", "c1"), ("user", "alice"))}
    assert set(matched([("user", MATCH_DEFAULT, None)], True)) == {(("user", None),)}
    assert set(matched([("user", MATCH_SPECIFIED, None)], True)) == {(("user", "alice"),), (("user", None),)}
    assert set(matched([("user", MATCH_SPECIFIED, None), ("client-id", MATCH_EXACT, "c1")], True)) == {
        (("client-id", "c1"), ("user", "alice"))}
    assert set(matched([], False)) == set(ENTITIES) and matched([], True) == []


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["user", "client-id"]), st.sampled_from([MATCH_EXACT, MATCH_DEFAULT,
                                                                                    MATCH_SPECIFIED]),
                          st.sampled_from(["c1", "alice", "x"])), max_size=2, unique_by=lambda c: c[0]),
       st.booleans())
def test_every_match_holds_each_component_and_strict_only_adds_the_type_count(components, strict):
    filt = [(t, m, n if m == MATCH_EXACT else None) for t, m, n in components]
    loose = set(matched(filt, False))
    for entity in loose:
        parts = dict(entity)
        for t, m, n in filt:
            assert t in parts and (m == MATCH_SPECIFIED or parts[t] == n)
    assert set(matched(filt, strict)) == ({e for e in loose if len(e) == len(filt)} if strict else loose)


@pytest.mark.parametrize("components, error, text", [
    ([("", MATCH_EXACT, "x")], "INVALID_REQUEST", "Invalid empty entity type."),
    ([("user", MATCH_EXACT, "a"), ("user", MATCH_DEFAULT, None)], "INVALID_REQUEST",
     "Entity type user cannot appear more than once in the filter."),
    ([("group", MATCH_EXACT, "a")], "UNSUPPORTED_VERSION", "Unsupported entity type group"),
    ([("user", MATCH_EXACT, None)], "INVALID_REQUEST", "Request specified MATCH_TYPE_EXACT, but set match string to "
                                                       "null."),
    ([("user", MATCH_DEFAULT, "a")], "INVALID_REQUEST", "Request specified MATCH_TYPE_DEFAULT, but also specified a "
                                                        "match string."),
    ([("user", MATCH_SPECIFIED, "a")], "INVALID_REQUEST", "Request specified MATCH_TYPE_SPECIFIED, but also "
                                                          "specified a match string."),
    ([("user", 7, None)], "INVALID_REQUEST", "Unknown match type 7"),
    ([("ip", MATCH_SPECIFIED, None), ("user", MATCH_DEFAULT, None)], "INVALID_REQUEST",
     "Invalid entity filter component combination. IP filter component should not be used with user or clientId "
     "filter component."),
])
def test_filters_kafka_refuses_are_refused_with_its_texts(components, error, text):
    with pytest.raises(QuotaFilterError) as refused:
        describe_quotas(image(), components, False)
    assert (refused.value.error, str(refused.value)) == (error, text)


def test_scram_users_are_described_with_their_mechanisms_or_refused():
    cred = ScramCredential(b"s", b"k", b"v", 4096)
    scram = ScramImage(PMap(stable_hash).update({(1, "alice"): cred, (2, "alice"): ScramCredential(b"s", b"k", b"v", 8192),
                                                 (2, "bob"): cred}))
    assert describe_scram_users(scram, ["alice"]) == [("alice", [(1, 4096), (2, 8192)])]
    assert describe_scram_users(scram, ["carol", "alice", "carol"]) == [
        (u, {"alice": [(1, 4096), (2, 8192)],
             "carol": ("DUPLICATE_RESOURCE", "Cannot describe SCRAM credentials for the same user twice in a single "
                                             "request: carol")}[u]) for u in string_hash_order(["carol", "alice"])]
    assert describe_scram_users(scram, ["dave"]) == [
        ("dave", ("RESOURCE_NOT_FOUND", "Attempt to describe a user credential that does not exist: dave"))]
    assert [u for u, _ in describe_scram_users(scram, None)] == string_hash_order(["alice", "bob"])
