"""Structural diff of two images, naming each changed entity and field.

`diff_images(a, b)` returns Change objects in a deterministic order (component order, then
entity key); `str(change)` is one line such as

    topic foo partition 3: isr [1, 2, 3] → [1, 2]
    broker 2: fenced false → true
    feature metadata.version: 21 → 25
    config TOPIC foo: retention.ms '1000' → null

Persistent maps are diffed structurally (shared subtrees skipped by identity), so diffing
an image with its successor costs in proportion to the change, not to the image.
Registration listener and feature lists are compared as sets (their order is not metadata).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, TypeVar

import msgspec

from kraftsim.image.components.cluster import SET_FIELDS, BrokerRegistration, ControllerRegistration
from kraftsim.image.components.configs import resource_type_name
from kraftsim.image.image import MetadataImage
from kraftsim.image.components.opaque import key_text
from kraftsim.image.components.partition import LEADER_RECOVERY_NAMES, PartitionRegistration
from kraftsim.image.pmap import MISSING, PMap
from kraftsim.image.components.quotas import entity_text
from kraftsim.image.components.scram import mechanism_name
from kraftsim.protocol.primitives import Uuid

ABSENT: object = MISSING


@dataclass(frozen=True)
class Change:
    """One difference: `field` of `entity` in `component` went from `old` to `new`.

    `field` is None when the whole entity appeared (old is ABSENT) or disappeared (new is
    ABSENT).
    """

    component: str
    entity: str
    field: str | None
    old: object
    new: object

    @property
    def kind(self) -> str:
        if self.field is not None:
            return "changed"
        return "added" if self.old is ABSENT else "removed"

    @property
    def text(self) -> str:
        if self.field is None:
            if self.old is ABSENT:
                return f"{self.entity}: added {self.new if isinstance(self.new, str) else show(self.new)}"
            return f"{self.entity}: removed"
        if not self.field:
            return f"{self.entity}: {show(self.old)} → {show(self.new)}"
        return f"{self.entity}: {self.field} {show(self.old)} → {show(self.new)}"

    def __str__(self) -> str:
        return self.text


class Symbol(str):
    """An enum-like name, printed without quotes (RECOVERED, RECOVERING)."""


def show(v: object) -> str:
    """Values as the diff prints them: lists in brackets, null, quoted strings, lower-case bools."""
    if v is ABSENT or v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, Uuid):
        return str(v)
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, Symbol):
        return str(v)
    if isinstance(v, str):
        return repr(v)
    if isinstance(v, tuple):
        return "[" + ", ".join(show(x) if not isinstance(x, int) else str(x) for x in v) + "]"
    if isinstance(v, float):
        return repr(v)
    return str(v)


# ------------------------------------------------------------------- field comparisons

_PARTITION_FIELDS = ("replicas", "directories", "isr", "removing_replicas", "adding_replicas", "leader",
                     "leader_recovery_state", "leader_epoch", "partition_epoch", "elr", "last_known_elr")


def _partition_changes(entity: str, a: PartitionRegistration, b: PartitionRegistration) -> Iterator[Change]:
    for f in _PARTITION_FIELDS:
        x, y = getattr(a, f), getattr(b, f)
        if x != y:
            if f == "leader_recovery_state":
                x, y = Symbol(LEADER_RECOVERY_NAMES.get(x, x)), Symbol(LEADER_RECOVERY_NAMES.get(y, y))
            yield Change("topics", entity, f, x, y)


def _listeners(reg: BrokerRegistration | ControllerRegistration) -> dict[str, str]:
    return {e.name: f"{e.host}:{e.port} (security protocol {e.security_protocol})" for e in reg.listeners}


def _feature_ranges(reg: BrokerRegistration | ControllerRegistration) -> dict[str, str]:
    return {f.name: f"{f.min_version}-{f.max_version}" for f in reg.supported_features}


def _registration_changes(
    component: str, entity: str, a: BrokerRegistration | ControllerRegistration, b: BrokerRegistration | ControllerRegistration
) -> Iterator[Change]:
    fields = [f for f in a.__struct_fields__ if f not in SET_FIELDS]
    for f in fields:
        x, y = getattr(a, f), getattr(b, f)
        if x != y:
            yield Change(component, entity, f, x, y)
    for label, fn in (("listener", _listeners), ("supported feature", _feature_ranges)):
        xa, xb = fn(a), fn(b)
        for name in sorted(set(xa) | set(xb)):
            if xa.get(name) != xb.get(name):
                yield Change(component, entity, f"{label} {name}", xa.get(name, ABSENT), xb.get(name, ABSENT))


K = TypeVar("K")
V = TypeVar("V")
S = TypeVar("S", bound=msgspec.Struct)

def _pmap_diff(a: PMap[Any, Any], b: PMap[Any, Any]) -> list[tuple[Any, Any, Any]]:
    return sorted(a.diff(b), key=lambda t: _sort_key(t[0]))


def _sort_key(k: Any) -> Any:
    if isinstance(k, tuple):
        return tuple(_sort_key(x) for x in k)
    if k is None:
        return ""
    return k


# ------------------------------------------------------------------- per component


def _features(a: MetadataImage, b: MetadataImage) -> Iterator[Change]:
    if a.features is b.features:
        return
    if a.features.metadata_version != b.features.metadata_version:
        yield Change("features", "feature metadata.version", "", a.features.metadata_version,
                     b.features.metadata_version)
    fa, fb = dict(a.features.finalized), dict(b.features.finalized)
    for name in sorted(set(fa) | set(fb)):
        if fa.get(name) != fb.get(name):
            yield Change("features", f"feature {name}", "", fa.get(name, 0), fb.get(name, 0))


def _cluster(a: MetadataImage, b: MetadataImage) -> Iterator[Change]:
    if a.cluster is b.cluster:
        return
    for label, pa, pb in (("broker", a.cluster.brokers, b.cluster.brokers),
                          ("controller", a.cluster.controllers, b.cluster.controllers)):
        for key, old, new in _pmap_diff(pa, pb):
            entity = f"{label} {key}"
            if old is MISSING or new is MISSING:
                yield Change("cluster", entity, None, old, _describe(new))
            else:
                yield from _registration_changes("cluster", entity, old, new)


def _describe(v: object) -> object:
    if isinstance(v, (BrokerRegistration, ControllerRegistration)):
        return f"(epoch {getattr(v, 'epoch', '-')}, incarnation {v.incarnation_id})"
    return v


def _topics(a: MetadataImage, b: MetadataImage) -> Iterator[Change]:
    if a.topics is b.topics:
        return
    changes = []
    for tid, old, new in a.topics.by_id.diff(b.topics.by_id):
        t = new if old is MISSING else old
        changes.append((t.name, bytes(tid), old, new))
    changes.sort(key=lambda c: (c[0], c[1]))
    for name, _, old, new in changes:
        entity = f"topic {name}"
        if old is MISSING:
            yield Change("topics", entity, None, ABSENT, f"(id {new.id}, {len(new.partitions)} partitions)")
            continue
        if new is MISSING:
            yield Change("topics", entity, None, old, ABSENT)
            continue
        if old.name != new.name:
            yield Change("topics", f"topic {old.id}", "name", old.name, new.name)
        for pid in sorted(set(old.partitions) | set(new.partitions)):
            p, q = old.partitions.get(pid), new.partitions.get(pid)
            pentity = f"{entity} partition {pid}"
            if p is None:
                yield Change("topics", pentity, None, ABSENT, f"(replicas {show(q.replicas)})")
            elif q is None:
                yield Change("topics", pentity, None, p, ABSENT)
            elif p is not q and p != q:
                yield from _partition_changes(pentity, p, q)


def _nested(component: str, a: PMap[K, Mapping[str, V]], b: PMap[K, Mapping[str, V]],
            entity_of: Callable[[K], str]) -> Iterator[Change]:
    for key, old, new in _pmap_diff(a, b):
        entity = entity_of(key)
        da = {} if old is MISSING else old
        db = {} if new is MISSING else new
        for k in sorted(set(da) | set(db)):
            if da.get(k, ABSENT) != db.get(k, ABSENT):
                yield Change(component, entity, k, da.get(k, ABSENT), db.get(k, ABSENT))


def _configs(a: MetadataImage, b: MetadataImage) -> Iterator[Change]:
    if a.configs is b.configs:
        return
    yield from _nested("configs", a.configs.resources, b.configs.resources,
                       lambda k: f"config {resource_type_name(k[0])} {k[1]}")


def _quotas(a: MetadataImage, b: MetadataImage) -> Iterator[Change]:
    if a.client_quotas is b.client_quotas:
        return
    yield from _nested("client_quotas", a.client_quotas.entities, b.client_quotas.entities,
                       lambda k: f"client quota {entity_text(k)}")


def _producer_ids(a: MetadataImage, b: MetadataImage) -> Iterator[Change]:
    x, y = a.producer_ids.next_producer_id, b.producer_ids.next_producer_id
    if x != y:
        yield Change("producer_ids", "producer ids", "next producer id", x, y)


def _simple(component: str, label: Callable[[K, S], str], a: PMap[K, S], b: PMap[K, S]) -> Iterator[Change]:
    for key, old, new in _pmap_diff(a, b):
        entity = label(key, new if old is MISSING else old)
        if old is MISSING or new is MISSING:
            yield Change(component, entity, None, old, new)
        else:
            for f in old.__struct_fields__:
                if getattr(old, f) != getattr(new, f):
                    yield Change(component, entity, f, getattr(old, f), getattr(new, f))


def _acls(a: MetadataImage, b: MetadataImage) -> Iterator[Change]:
    if a.acls is not b.acls:
        yield from _simple("acls", lambda k, v: f"acl {k}", a.acls.acls, b.acls.acls)


def _scram(a: MetadataImage, b: MetadataImage) -> Iterator[Change]:
    if a.scram is not b.scram:
        yield from _simple("scram", lambda k, v: f"scram {mechanism_name(k[0])} user {k[1]}",
                           a.scram.credentials, b.scram.credentials)


def _tokens(a: MetadataImage, b: MetadataImage) -> Iterator[Change]:
    if a.delegation_tokens is not b.delegation_tokens:
        yield from _simple("delegation_tokens", lambda k, v: f"delegation token {k}",
                           a.delegation_tokens.tokens, b.delegation_tokens.tokens)


def _opaque(a: MetadataImage, b: MetadataImage) -> Iterator[Change]:
    if a.opaque is b.opaque:
        return
    for key, old, new in _pmap_diff(a.opaque.records, b.opaque.records):
        rec = new if old is MISSING else old
        entity = f"record {key_text(key, rec)}"
        if old is MISSING or new is MISSING:
            yield Change("opaque", entity, None, old, new if new is MISSING else str(new.message))
        else:
            yield Change("opaque", entity, "value", str(old.message), str(new.message))


_DIFFS = (_features, _cluster, _topics, _configs, _quotas, _producer_ids, _acls, _scram, _tokens, _opaque)


def diff_images(a: MetadataImage, b: MetadataImage) -> list[Change]:
    """Every difference from `a` to `b` (provenance ignored), deterministic order."""
    out: list[Change] = []
    for fn in _DIFFS:
        out.extend(fn(a, b))
    return out


def diff_text(a: MetadataImage, b: MetadataImage) -> str:
    """The diff as lines of text (empty string when the images hold the same metadata)."""
    return "\n".join(c.text for c in diff_images(a, b))
