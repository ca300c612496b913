"""The topics' values kept from one write for the next (topics.TopicValues) against writing
afresh: through any sequence of images (partitions changed, equal images in new objects,
topics created, grown and deleted, another metadata.version), the values, and the losses
reported, are those of encoding `iter_image_records` from nothing."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from kraftsim.image import MetadataImage
from kraftsim.image.delta import MetadataDelta
from kraftsim.image.synthetic import ClusterShape, cluster_image
from kraftsim.image.writer.image_writer import TopicValues, iter_image_records, iter_image_values, write_image
from kraftsim.image.writer.loss import LossReport
from kraftsim.protocol.batch_io import encode_values
from kraftsim.protocol.entries import Payload
from kraftsim.versions import default_catalog

from tests.image.helpers import uid

CAT = default_catalog()
REG = CAT.record_registry()
#: Topics of three ChunkMap chunks (a change copies only the chunks it touches).
BASE = cluster_image(ClusterShape(brokers=5, topics=6, partitions=20), CAT, "3.9-IV0")
#: A metadata.version that writes every partition, and one that cannot hold their directories (losses).
MVS = ("3.9-IV0", "3.6-IV2")

step = st.one_of(
    st.tuples(st.just("change"), st.integers(0, 2**16)),
    st.tuples(st.just("reload"), st.just(0)),
    st.tuples(st.just("create"), st.integers(1, 9)),
    st.tuples(st.just("delete"), st.integers(0, 2**16)),
    st.tuples(st.just("grow"), st.integers(0, 2**16)),
    st.tuples(st.just("mv"), st.integers(0, 1)),
)


def payload(_type: str, **fields: object) -> Payload:
    rt = REG[_type]
    return Payload(rt, 0, rt.new(**fields))


def apply(image: MetadataImage, records: list[Payload]) -> MetadataImage:
    d = MetadataDelta(image)
    for r in records:
        d.replay(r)
    return d.apply()


def changed(image: MetadataImage, seed: int) -> MetadataImage:
    """Some partitions' leader and ISR changed (a broker event, in small)."""
    records = []
    for n, t in enumerate(image.topics.sorted_topics()):
        for pid, p in t.sorted_partitions():
            if (seed >> ((n + pid) % 16)) & 1 and len(p.isr) > 1:
                records.append(payload("PartitionChangeRecord", topic_id=t.id, partition_id=pid, leader=p.isr[-1],
                                       isr=list(p.isr[1:])))
    return apply(image, records)


def step_image(image: MetadataImage, kind: str, arg: int) -> MetadataImage:
    if kind == "change":
        return changed(image, arg)
    if kind == "reload":  # an equal image in new objects (another node loaded a snapshot)
        return apply(MetadataImage(), write_image(image, "3.9-IV0", CAT))
    if kind == "create":
        tid = uid(1000 + arg + len(image.topics))
        return apply(image, [payload("TopicRecord", name=f"new-{len(image.topics)}", topic_id=tid),
                             *(payload("PartitionRecord", partition_id=i, topic_id=tid, replicas=[1, 2],
                                       isr=[1, 2], leader=1) for i in range(arg))])
    topics = list(image.topics.sorted_topics())
    if kind == "delete" and topics:
        return apply(image, [payload("RemoveTopicRecord", topic_id=topics[arg % len(topics)].id)])
    if kind == "grow" and topics:  # a partition added (the topic's partition ids change)
        t = topics[arg % len(topics)]
        return apply(image, [payload("PartitionRecord", partition_id=len(t.partitions), topic_id=t.id,
                                     replicas=[2, 3], isr=[3], leader=3)])
    return image


@settings(max_examples=30, deadline=None)
@given(steps=st.lists(step, min_size=1, max_size=8))
def test_kept_values_are_a_fresh_encoding(steps: list[tuple[str, int]]) -> None:
    cache = TopicValues()
    image, mv = BASE, MVS[0]
    for kind, arg in [("mv", 0), *steps]:
        if kind == "mv":
            mv = MVS[arg]
        else:
            image = step_image(image, kind, arg)
        plain_losses, kept_losses = LossReport(), LossReport()
        plain = encode_values(list(iter_image_records(image, mv, CAT, loss_handler=plain_losses, read_only=True)))
        kept = [v for run in iter_image_values(image, mv, CAT, loss_handler=kept_losses, topic_values=cache) for v in run]
        assert kept == plain
        assert kept_losses.items == plain_losses.items


def test_unchanged_and_equal_partitions_are_not_encoded_again() -> None:
    cache = TopicValues()
    partitions = BASE.topics.partition_count()
    list(iter_image_values(BASE, "3.9-IV0", CAT, topic_values=cache))
    assert (cache.encoded, cache.reused) == (partitions, 0)
    after = changed(BASE, 0b1)
    list(iter_image_values(after, "3.9-IV0", CAT, topic_values=cache))
    moved = sum(1 for t in after.topics.by_id.values() for pid, p in t.sorted_partitions()
                if p is not BASE.topics.get_topic(t.id).partitions[pid])  # type: ignore[union-attr]
    assert 0 < moved < partitions and (cache.encoded, cache.reused) == (partitions + moved, partitions - moved)
    reloaded = step_image(after, "reload", 0)  # every partition another object, all equal: nothing encoded
    list(iter_image_values(reloaded, "3.9-IV0", CAT, topic_values=cache))
    assert cache.encoded == partitions + moved
    list(iter_image_values(reloaded, "3.6-IV2", CAT, topic_values=cache,
                           loss_handler=LossReport()))  # another record version: all encoded again
    assert cache.encoded == 2 * partitions + moved


@given(st.lists(st.tuples(st.sampled_from(["same", "twin", "equal", "changed"]), st.integers(0, 3)), max_size=40),
       st.booleans())
def test_changed_positions_in_c_and_in_python_agree(kinds: list[tuple[str, int]], fast: bool) -> None:
    from kraftsim.image.writer.components import topics as topics_writer
    from kraftsim.protocol import fastpath

    old = [[n] for _, n in kinds]  # (lists: equal by value, told apart by identity)
    twins = [[n] for _, n in kinds]
    new = [o if k == "same" else t if k == "twin" else [n] if k == "equal" else [n + 10]
           for (k, n), o, t in zip(kinds, old, twins)]
    enabled = fastpath.ENABLED
    try:
        fastpath.ENABLED = fast
        todo, out = topics_writer.changed_positions(new, old, twins)
    finally:
        fastpath.ENABLED = enabled
    assert todo == [i for i, (k, _) in enumerate(kinds) if k == "changed"]
    assert out == new and all(o is (twins[i] if k == "same" else new[i] if k == "changed" else old[i])
                              for i, ((k, _), o) in enumerate(zip(kinds, out)))
