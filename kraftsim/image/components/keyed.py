"""A generic delta for components that map keys to small read-only dicts.

Configs (resource -> {name: value}) and client quotas (entity -> {key: value}) follow the
same rules in Kafka (ConfigurationDelta, ClientQuotaDelta): a change sets or removes one
inner key; a resource whose inner dict becomes empty leaves the image; a snapshot load
removes every inner key it did not mention.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Mapping

from kraftsim.image.pmap import DELETE, PMap

REMOVE: object = DELETE


class NestedDelta:
    """Changes to a PMap[outer key, Mapping[inner key, value]]."""

    def __init__(self, base: PMap[Any, Mapping[Any, Any]]):
        self.base = base
        self.changes: dict[object, dict[object, object]] = {}  # outer -> inner -> value | REMOVE

    def set(self, outer: object, inner: object, value: object) -> None:
        self.changes.setdefault(outer, {})[inner] = value

    def delete_all(self, outer: object) -> None:
        """Remove every inner key, including ones set earlier in this delta."""
        base = self.base.get(outer) or {}
        self.changes[outer] = {k: REMOVE for k in base}

    def finish_snapshot(self) -> None:
        for outer, inner in self.base.items():
            mentioned = self.changes.setdefault(outer, {})
            for k in inner:
                mentioned.setdefault(k, REMOVE)

    def apply(self) -> PMap[Any, Mapping[Any, Any]]:
        outer_changes: dict[object, object] = {}
        for outer, inner_changes in self.changes.items():
            old: Mapping[object, object] = self.base.get(outer) or {}
            new = dict(old)
            for k, v in inner_changes.items():
                if v is REMOVE:
                    new.pop(k, None)
                else:
                    new[k] = v
            if new == old:
                continue
            outer_changes[outer] = MappingProxyType(new) if new else DELETE
        return self.base.update(outer_changes)
