"""Client quotas: entity -> {quota key: float}.

An entity is a set of (entity type, entity name or None for the default) pairs; it is kept
as a tuple sorted by entity type, so that the same entity always has the same key whatever
order a record lists its parts in. ClientQuotaRecord with Remove=true removes the key.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

import msgspec

from kraftsim.image.components.keyed import REMOVE, NestedDelta
from kraftsim.image.pmap import PMap, stable_hash

Entity = tuple[tuple[str, "str | None"], ...]


def entity_of(entity_data: Any) -> Entity:
    """The canonical key of a record's Entity list (later duplicates of a type win, as in Kafka)."""
    parts = {e.entity_type: e.entity_name for e in entity_data}
    return tuple(sorted(parts.items()))


def entity_text(entity: Entity) -> str:
    return ",".join(f"{t}={'<default>' if n is None else n}" for t, n in entity) or "<empty>"


class ClientQuotasImage(msgspec.Struct, frozen=True, gc=False):
    entities: PMap[Entity, Mapping[str, float]] = msgspec.field(default_factory=lambda: PMap(stable_hash))

    def quotas(self, entity: Entity) -> Mapping[str, float]:
        return self.entities.get(entity) or {}

    def is_empty(self) -> bool:
        return not self.entities

    def sorted_entities(self) -> Iterator[tuple[Entity, Mapping[str, float]]]:
        return iter(self.entities.sorted_items(key=lambda kv: tuple((t, n or "") for t, n in kv[0])))


EMPTY_CLIENT_QUOTAS = ClientQuotasImage()


class ClientQuotasDelta:
    def __init__(self, image: ClientQuotasImage):
        self.image = image
        self._d = NestedDelta(image.entities)

    def replay_client_quota(self, r: Any) -> None:
        self._d.set(entity_of(r.entity), r.key, REMOVE if r.remove else float(r.value))

    def finish_snapshot(self) -> None:
        self._d.finish_snapshot()

    def apply(self) -> ClientQuotasImage:
        entities = self._d.apply()
        return self.image if entities is self.image.entities else ClientQuotasImage(entities)
