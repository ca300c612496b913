"""The order a snapshot writes the finalized features and a broker's supported features in.

Kafka's FeaturesDelta.apply rebuilds finalizedVersions as `new HashMap<>(old size)`: the
old names in their iteration order, then the new ones. A feature that is disabled and
enabled again therefore comes after the names that share its bucket (a live 4.3/4.4 node
that ran `kafka-features disable/upgrade group.version` writes streams.version before
group.version). BrokerRegistration copies the record's features into a HashMap, which
4.3 and 4.4 snapshots show (the `broker_features_order` policy)."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from kraftsim.image import MetadataImage, image_digest, write_image
from kraftsim.image.components.features import default_feature_order
from kraftsim.javacompat import hash_map_order, string_hash
from kraftsim.versions import default_catalog, load_catalog
from tests.image.helpers import REGISTRY, rec, replay, uid

CAT = default_catalog()
FEATURES = {"eligible.leader.replicas.version": 1, "group.version": 1, "share.version": 2, "streams.version": 1,
            "transaction.version": 2}
MV_44_IV2 = 33


def _bootstrap() -> MetadataImage:
    return replay([rec("FeatureLevelRecord", name="metadata.version", feature_level=MV_44_IV2)]
                  + [rec("FeatureLevelRecord", name=n, feature_level=lvl) for n, lvl in FEATURES.items()])


def _written_features(img: MetadataImage, catalog=CAT) -> list[str]:
    out = write_image(img, MV_44_IV2, catalog)
    return [p.message.name for p in out if p.record_type.name == "FeatureLevelRecord"]


def test_features_that_arrived_together_come_in_hash_order() -> None:
    assert _written_features(_bootstrap()) == ["metadata.version", "group.version", "streams.version",
                                               "transaction.version", "eligible.leader.replicas.version",
                                               "share.version"]


def test_a_feature_disabled_and_enabled_again_follows_its_bucket_mates() -> None:
    """What a live Kafka 4.4.0 node wrote after `disable group.version` then `upgrade group.version=1`."""
    img = _bootstrap()
    img = replay([rec("FeatureLevelRecord", name="group.version", feature_level=0)], base=img)
    img = replay([rec("FeatureLevelRecord", name="group.version", feature_level=1)], base=img)
    assert _written_features(img) == ["metadata.version", "streams.version", "group.version",
                                      "transaction.version", "eligible.leader.replicas.version", "share.version"]
    # the order is how Kafka iterates, not state: the image is the same as the bootstrap's
    assert image_digest(img) == image_digest(_bootstrap()) and img.features == _bootstrap().features
    # a later change of another feature keeps it (the old map is copied in its order)
    img = replay([rec("FeatureLevelRecord", name="transaction.version", feature_level=1)], base=img)
    assert _written_features(img)[1:3] == ["streams.version", "group.version"]


NAMES = st.sampled_from(sorted(FEATURES) + ["a.version", "test.feature.version", "zz.version"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.tuples(NAMES, st.integers(0, 2)), min_size=1, max_size=6), min_size=1, max_size=6))
def test_order_is_a_java_hash_map_rebuilt_per_delta(deltas: list[list[tuple[str, int]]]) -> None:
    """Against a direct model of FeaturesDelta.apply: per delta, the old map's names in order
    (those still finalized), then the changes HashMap's new names, put into a map sized for
    the old one; and the order always holds exactly the finalized names."""
    img, order, levels = MetadataImage(), [], {}
    for delta in deltas:
        img = replay([rec("FeatureLevelRecord", name=n, feature_level=lvl) for n, lvl in delta], base=img)
        changes = dict(delta)
        kept = [n for n in order if changes.get(n, levels[n]) != 0]
        new = [n for n in hash_map_order(list(changes), string_hash) if changes[n] != 0 and n not in levels]
        cap = 1
        while cap < len(order):
            cap *= 2
        order = hash_map_order(kept + new, string_hash, initial=cap)
        levels = {n: changes.get(n, levels.get(n, 0)) for n in order}
        assert list(img.features.order) == order
        assert dict(img.features.finalized) == levels


def test_without_a_known_order_the_sorted_names_arrive_together() -> None:
    from kraftsim.image.components.features import features_from
    assert features_from(FEATURES).order == ()
    assert default_feature_order(FEATURES) == list(_bootstrap().features.order)


def _broker_image() -> MetadataImage:
    feat = REGISTRY["RegisterBrokerRecord"].nested["BrokerFeature"]
    # the order a 4.4.0 broker registered with (its RegisterBrokerRecord in the log)
    names = ["kraft.version", "group.version", "streams.version", "transaction.version",
             "eligible.leader.replicas.version", "metadata.version", "share.version"]
    features = [feat(name=n, min_supported_version=7 if n == "metadata.version" else 0,
                     max_supported_version=MV_44_IV2 if n == "metadata.version" else 1) for n in names]
    return replay([rec("RegisterBrokerRecord", broker_id=1, incarnation_id=uid(1), broker_epoch=11,
                       log_dirs=[uid(2)], features=features)], base=_bootstrap())


def _broker_features(line: str) -> list[str]:
    cat = load_catalog(line=line)
    out = write_image(_broker_image(), "4.3-IV0", cat)
    reg = next(p for p in out if p.record_type.name == "RegisterBrokerRecord")
    return [f.name for f in reg.message.features]


def test_a_broker_s_features_in_hash_map_order_from_4_3() -> None:
    kafka_4_4 = ["group.version", "kraft.version", "metadata.version", "share.version", "streams.version",
                 "transaction.version", "eligible.leader.replicas.version"]
    assert _broker_features("4.3") == kafka_4_4
    assert _broker_features("4.4") == kafka_4_4
    assert _broker_features("4.2")[0] == "kraft.version"  # the record's order
