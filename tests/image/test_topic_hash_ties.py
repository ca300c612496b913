"""Topics whose ids share a Java hash code are written in the order Kafka's persistent
topics map holds them: newest first (the writer takes name order for arrival order)."""

from __future__ import annotations

from kraftsim.image import LossReport, image_from_records, iter_image_records
from kraftsim.javacompat import uuid_hash
from kraftsim.protocol.primitives import Uuid
from kraftsim.versions import default_catalog
from tests.image.strategies import mv_record, rec

CAT = default_catalog()


def bench_topic_id(t: int) -> Uuid:
    """benchmarks/bench_image.py's ids, where topics 8432 and 47547 of the 1M image collide."""
    return Uuid.from_longs(0x5EED0000_00000000 | t, (t * 0x9E3779B97F4A7C15) & 0x7FFFFFFFFFFFFFFF)


def test_topics_with_colliding_hash_codes_come_newest_first() -> None:
    a, b, c = bench_topic_id(8432), bench_topic_id(47547), bench_topic_id(3)
    assert uuid_hash(a) == uuid_hash(b) != uuid_hash(c)
    records = [mv_record(29)] + [rec("TopicRecord", name=f"topic-{t:06d}", topic_id=bench_topic_id(t))
                                 for t in (3, 8432, 47547)]
    img = image_from_records(records, catalog=CAT)
    written = [p.message.name for p in iter_image_records(img, "4.0-IV3", CAT, loss_handler=LossReport())
               if p.record_type.name == "TopicRecord"]
    # Kafka 4.2, having created topic-008432 and then topic-047547, holds 047547 first
    assert written.index("topic-047547") == written.index("topic-008432") - 1
