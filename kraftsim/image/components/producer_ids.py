"""The next producer id block start (Kafka's ProducerIdsImage); -1 means none allocated.

Deviation, chosen: a snapshot load that carries no ProducerIdsRecord resets the value to -1
(a snapshot is a full replacement). Kafka's ProducerIdsDelta.finishSnapshot does nothing,
keeping the old value; Kafka never writes such a snapshot for a cluster that allocated ids.
"""

from __future__ import annotations

from typing import Any

import msgspec


class ProducerIdsImage(msgspec.Struct, frozen=True, gc=False):
    next_producer_id: int = -1

    def is_empty(self) -> bool:
        return self.next_producer_id == -1


EMPTY_PRODUCER_IDS = ProducerIdsImage()


class ProducerIdsDelta:
    def __init__(self, image: ProducerIdsImage):
        self.image = image
        self.next_producer_id = image.next_producer_id
        self.seen = False

    def replay_producer_ids(self, r: Any) -> None:
        self.next_producer_id = r.next_producer_id
        self.seen = True

    def finish_snapshot(self) -> None:
        if not self.seen:
            self.next_producer_id = -1

    def apply(self) -> ProducerIdsImage:
        if self.next_producer_id == self.image.next_producer_id:
            return self.image
        return ProducerIdsImage(self.next_producer_id)
