"""ClientQuotasImage.write: one ClientQuotaRecord per entity and key, in Kafka's map order."""

from __future__ import annotations

from typing import Iterator

from kraftsim.image.components.quotas import ClientQuotasImage
from kraftsim.image.writer.kafka_order import config_key_order, quota_entity_data_order, quota_entity_order
from kraftsim.image.writer.target import WriteTarget
from kraftsim.protocol.entries import Payload


def write(quotas: ClientQuotasImage, target: WriteTarget) -> Iterator[Payload]:
    if not quotas.entities:
        return
    cq, cqv = target.record("ClientQuotaRecord")
    ed = cq.nested["EntityData"]
    entities = dict(quotas.sorted_entities())
    for entity in quota_entity_order(list(entities)):
        data = entities[entity]
        names = dict(entity)
        entity_data = [ed(entity_type=t, entity_name=names[t]) for t in quota_entity_data_order(list(names))]
        for key in config_key_order(list(data)):
            yield Payload(cq, cqv, cq.cls(entity=list(entity_data), key=key, value=data[key], remove=False))
