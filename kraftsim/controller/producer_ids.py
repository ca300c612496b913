"""Producer id blocks: Kafka's AllocateProducerIds on the controller (ProducerIdControlManager).

A broker asks for a block; the controller hands out the next 1000 ids and records where
the following block starts (ProducerIdsRecord). The image's next producer id is -1 until
the first block, which then starts at 0.
"""

from __future__ import annotations

import msgspec

from kraftsim.controller.api_errors import ApiError
from kraftsim.controller.context import ControllerContext, registry_of
from kraftsim.controller.replication import check_broker_epoch
from kraftsim.controller.result import ControllerResult, accepted, payload, refused

#: Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE.
PRODUCER_ID_BLOCK_SIZE = 1000
_LONG_MAX = (1 << 63) - 1


class AllocateProducerIdsRequest(msgspec.Struct, frozen=True):
    broker_id: int
    broker_epoch: int


class AllocateProducerIdsResponse(msgspec.Struct, frozen=True):
    producer_id_start: int
    producer_id_len: int


def allocate_producer_ids(ctx: ControllerContext, req: AllocateProducerIdsRequest) -> ControllerResult:
    """The next block of producer ids for a registered broker of the current epoch."""
    err = check_broker_epoch(ctx.image, req.broker_id, req.broker_epoch)
    if not err.ok:
        return refused(err)
    first = max(ctx.image.producer_ids.next_producer_id, 0)
    if first > _LONG_MAX - PRODUCER_ID_BLOCK_SIZE:
        return refused(ApiError("UNKNOWN_SERVER_ERROR", "Exhausted all producerIds as the next block's end "
                                                        "producerId has exceeded the int64 type limit"))
    record = payload(registry_of(ctx), "ProducerIdsRecord", 0, broker_id=req.broker_id,
                     broker_epoch=req.broker_epoch, next_producer_id=first + PRODUCER_ID_BLOCK_SIZE)
    return accepted([record], AllocateProducerIdsResponse(first, PRODUCER_ID_BLOCK_SIZE), atomic=False)
