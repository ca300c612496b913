"""ProducerIdsImage.write: the next producer id block, once any was handed out."""

from __future__ import annotations

from typing import Iterator

from kraftsim.image.components.producer_ids import ProducerIdsImage
from kraftsim.image.writer.target import WriteTarget
from kraftsim.protocol.entries import Payload


def write(producer_ids: ProducerIdsImage, target: WriteTarget) -> Iterator[Payload]:
    if producer_ids.next_producer_id >= 0:
        pi, piv = target.record("ProducerIdsRecord")
        yield Payload(pi, piv, pi.cls(broker_id=-1, broker_epoch=-1, next_producer_id=producer_ids.next_producer_id))
