"""Client quotas: entity -> {quota key: float}.

An entity is a set of (entity type, entity name or None for the default) pairs; it is kept
as a tuple sorted by entity type, so that the same entity always has the same key whatever
order a record lists its parts in. ClientQuotaRecord with Remove=true removes the key.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Mapping

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

#: DescribeClientQuotas' match types: a name, the type's default entity, any name of the type.
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2
_DESCRIBED_TYPES = ("user", "client-id", "ip")


class QuotaFilterError(Exception):
    """A DescribeClientQuotas filter Kafka refuses: `error` is the error's name."""

    def __init__(self, error: str, message: str) -> None:
        super().__init__(message)
        self.error = error


def describe_quotas(image: ClientQuotasImage, components: Iterable[tuple[str, int, str | None]],
                    strict: bool) -> list[tuple[Entity, Mapping[str, float]]]:
    """The entities a DescribeClientQuotas filter matches, with their quotas, as a broker answers
    it from its image (Kafka's ClientQuotasImage.describe): each component is (entity type,
    match type, match); `strict` leaves out entities with a type the filter does not name.
    Raises QuotaFilterError with Kafka's texts. Entities come in kraftsim's entity order."""
    exact: dict[str, str | None] = {}
    specified: set[str] = set()
    for etype, match_type, match in components:
        if not etype:
            raise QuotaFilterError("INVALID_REQUEST", "Invalid empty entity type.")
        if etype in exact or etype in specified:
            raise QuotaFilterError("INVALID_REQUEST", f"Entity type {etype} cannot appear more than once in the filter.")
        if etype not in _DESCRIBED_TYPES:
            raise QuotaFilterError("UNSUPPORTED_VERSION", f"Unsupported entity type {etype}")
        if match_type == MATCH_EXACT:
            if match is None:
                raise QuotaFilterError("INVALID_REQUEST", "Request specified MATCH_TYPE_EXACT, but set match string to "
                                                          "null.")
            exact[etype] = match
        elif match_type == MATCH_DEFAULT:
            if match is not None:
                raise QuotaFilterError("INVALID_REQUEST", "Request specified MATCH_TYPE_DEFAULT, but also specified a "
                                                          "match string.")
            exact[etype] = None
        elif match_type == MATCH_SPECIFIED:
            if match is not None:
                raise QuotaFilterError("INVALID_REQUEST", "Request specified MATCH_TYPE_SPECIFIED, but also specified "
                                                          "a match string.")
            specified.add(etype)
        else:
            raise QuotaFilterError("INVALID_REQUEST", f"Unknown match type {match_type}")
    named = exact.keys() | specified
    if "ip" in named and ("user" in named or "client-id" in named):
        raise QuotaFilterError("INVALID_REQUEST", "Invalid entity filter component combination. IP filter component "
                                                  "should not be used with user or clientId filter component.")
    found = []
    for entity, quotas in image.sorted_entities():
        parts = dict(entity)
        if strict and len(parts) != len(named):
            continue
        if all(t in parts and parts[t] == n for t, n in exact.items()) and all(t in parts for t in specified):
            found.append((entity, quotas))
    return found


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
