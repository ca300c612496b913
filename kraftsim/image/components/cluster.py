"""Broker and controller registrations (Kafka's ClusterImage / ClusterDelta).

Listeners and supported features keep the order of the record they came from. Kafka keeps
them in Java hash maps, and the writer emits them in the order those maps iterate in, from
the record's order (image/writer/kafka_order.py). The order is not metadata: registration
equality, hashing, digests and diffs treat both lists as sets.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator

import msgspec

from kraftsim.image import intern
from kraftsim.image.errors import MetadataReplayError
from kraftsim.image.pmap import DELETE, PMap, hash_int
from kraftsim.protocol.primitives import Uuid


class Endpoint(msgspec.Struct, frozen=True, gc=False):
    """One named listener."""

    name: str
    host: str
    port: int
    security_protocol: int


class FeatureRange(msgspec.Struct, frozen=True, gc=False):
    """A supported feature range a node advertises."""

    name: str
    min_version: int
    max_version: int


def uuid_order(u: Uuid) -> tuple[int, int]:
    """Kafka's Uuid.compareTo: signed most significant, then signed least significant bits."""
    return u.msb, u.lsb


def sorted_dirs(dirs: Iterable[bytes] | None) -> tuple[Uuid, ...]:
    """Log directories as BrokerRegistration keeps them: sorted by Uuid.compareTo, interned."""
    if not dirs:
        return intern.EMPTY
    ordered = sorted((intern.uuid(d) for d in dirs), key=uuid_order)
    return intern.uuids(ordered)


#: Registration fields that hold lists compared as sets (see canonical_lists).
SET_FIELDS = ("listeners", "supported_features")


def canonical_lists(
    reg: BrokerRegistration | ControllerRegistration,
) -> tuple[tuple[tuple[str, str, int, int], ...], tuple[tuple[str, int, int], ...]]:
    """Listener and feature lists as sets: their order is Java hash-map order, not metadata."""
    return (tuple(sorted((e.name, e.host, e.port, e.security_protocol) for e in reg.listeners)),
            tuple(sorted((f.name, f.min_version, f.max_version) for f in reg.supported_features)))


def _registration_eq(a: BrokerRegistration | ControllerRegistration, b: object) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return NotImplemented  # type: ignore[no-any-return]  # __eq__'s answer for another type
    for f in a.__struct_fields__:
        if f not in SET_FIELDS and getattr(a, f) != getattr(b, f):
            return False
    return canonical_lists(a) == canonical_lists(b)


def _registration_hash(a: BrokerRegistration | ControllerRegistration) -> int:
    return hash(tuple(getattr(a, f) for f in a.__struct_fields__ if f not in SET_FIELDS)
                + canonical_lists(a))


def _cordoned(dirs: Iterable[bytes] | None) -> tuple[Uuid, ...] | None:
    """CordonedLogDirs as the record holds them (order kept); None stays None."""
    return None if dirs is None else intern.uuids(tuple(intern.uuid(d) for d in dirs))


def _endpoints(eps: Any) -> tuple[Endpoint, ...]:
    return tuple(Endpoint(e.name, e.host, e.port, e.security_protocol) for e in eps)


def _features(fs: Any) -> tuple[FeatureRange, ...]:
    return tuple(FeatureRange(f.name, f.min_supported_version, f.max_supported_version) for f in fs)


class BrokerRegistration(msgspec.Struct, frozen=True, gc=False):
    """One registered broker, as RegisterBrokerRecord and later change records left it."""

    id: int
    epoch: int
    incarnation_id: Uuid
    listeners: tuple[Endpoint, ...] = ()
    supported_features: tuple[FeatureRange, ...] = ()
    rack: str | None = None
    fenced: bool = True
    in_controlled_shutdown: bool = False
    is_migrating_zk_broker: bool = False
    directories: tuple[Uuid, ...] = ()
    # Cordoned log directories (KIP-1066, RegisterBrokerRecord v4 / change record v3). None:
    # never reported (the record's null); kept apart from () so records read back byte for byte.
    cordoned_directories: tuple[Uuid, ...] | None = None

    __eq__ = _registration_eq
    __hash__ = _registration_hash

    @classmethod
    def from_record(cls, r: Any) -> "BrokerRegistration":
        return cls(
            id=r.broker_id,
            epoch=r.broker_epoch,
            incarnation_id=intern.uuid(r.incarnation_id),
            listeners=_endpoints(r.end_points),
            supported_features=_features(r.features),
            rack=r.rack,
            fenced=r.fenced,
            in_controlled_shutdown=r.in_controlled_shutdown,
            is_migrating_zk_broker=r.is_migrating_zk_broker,
            directories=sorted_dirs(r.log_dirs),
            cordoned_directories=_cordoned(getattr(r, "cordoned_log_dirs", None)),
        )

    @property
    def all_directories_cordoned(self) -> bool:
        """KIP-1066: a broker whose every log directory is cordoned gets no new replicas."""
        cordoned = self.cordoned_directories
        return bool(cordoned) and set(self.directories or ()) <= set(cordoned or ())

    def clone_with(self, fenced: bool | None, in_controlled_shutdown: bool | None,
                   directories: tuple[Uuid, ...] | None,
                   cordoned: tuple[Uuid, ...] | None = None) -> "BrokerRegistration":
        """Kafka's cloneWith: the same object when nothing changes (None: unchanged)."""
        nf = self.fenced if fenced is None else fenced
        ns = self.in_controlled_shutdown if in_controlled_shutdown is None else in_controlled_shutdown
        nd = self.directories if directories is None else directories
        nc = self.cordoned_directories if cordoned is None else cordoned
        if nf == self.fenced and ns == self.in_controlled_shutdown and nd == self.directories \
                and nc == self.cordoned_directories:
            return self
        return msgspec.structs.replace(self, fenced=nf, in_controlled_shutdown=ns, directories=nd,
                                       cordoned_directories=nc)


class ControllerRegistration(msgspec.Struct, frozen=True, gc=False):
    """One registered controller (RegisterControllerRecord, KIP-919)."""

    id: int
    incarnation_id: Uuid
    zk_migration_ready: bool = False
    listeners: tuple[Endpoint, ...] = ()
    supported_features: tuple[FeatureRange, ...] = ()

    __eq__ = _registration_eq
    __hash__ = _registration_hash

    @classmethod
    def from_record(cls, r: Any) -> "ControllerRegistration":
        return cls(
            id=r.controller_id,
            incarnation_id=intern.uuid(r.incarnation_id),
            zk_migration_ready=r.zk_migration_ready,
            listeners=_endpoints(r.end_points),
            supported_features=_features(r.features),
        )


class ClusterImage(msgspec.Struct, frozen=True, gc=False):
    """Brokers and controllers by id. Empty when there are no brokers (as in Kafka)."""

    brokers: PMap[int, BrokerRegistration] = msgspec.field(default_factory=lambda: PMap(hash_int))
    controllers: PMap[int, ControllerRegistration] = msgspec.field(default_factory=lambda: PMap(hash_int))

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        return self.brokers.get(broker_id)

    def controller(self, controller_id: int) -> ControllerRegistration | None:
        return self.controllers.get(controller_id)

    def is_empty(self) -> bool:
        return not self.brokers

    def sorted_brokers(self) -> Iterator[BrokerRegistration]:
        return (b for _, b in self.brokers.sorted_items())

    def sorted_controllers(self) -> Iterator[ControllerRegistration]:
        return (c for _, c in self.controllers.sorted_items())


EMPTY_CLUSTER = ClusterImage()

_FENCING = {-1: False, 0: None, 1: True}
_SHUTDOWN = {0: None, 1: True}


class ClusterDelta:
    """Changes to registrations since `image`."""

    def __init__(self, image: ClusterImage):
        self.image = image
        self.changed_brokers: dict[int, BrokerRegistration] = {}  # or DELETE
        self.changed_controllers: dict[int, ControllerRegistration] = {}  # or DELETE

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        b = self.changed_brokers.get(broker_id)
        if b is None:
            return self.image.brokers.get(broker_id)
        return None if b is DELETE else b

    def _broker_or_throw(self, broker_id: int, epoch: int, action: str) -> BrokerRegistration:
        b = self.broker(broker_id)
        if b is None:
            raise MetadataReplayError(f"Tried to {action} broker {broker_id}, but that broker was not registered.")
        if b.epoch != epoch:
            raise MetadataReplayError(
                f"Tried to {action} broker {broker_id}, but the given epoch, {epoch}, did not match the "
                f"current broker epoch, {b.epoch}"
            )
        return b

    def replay_register_broker(self, r: Any) -> None:
        self.changed_brokers[r.broker_id] = BrokerRegistration.from_record(r)

    def replay_unregister_broker(self, r: Any) -> None:
        self.changed_brokers[r.broker_id] = DELETE

    def replay_fence(self, r: Any, fenced: bool) -> None:
        b = self._broker_or_throw(r.id, r.epoch, "fence" if fenced else "unfence")
        self.changed_brokers[r.id] = b.clone_with(fenced, None, None)

    def replay_registration_change(self, r: Any) -> None:
        b = self._broker_or_throw(r.broker_id, r.broker_epoch, "change")
        if r.fenced not in _FENCING:
            raise MetadataReplayError(f"Unable to replay {r}: unknown value for fenced field: {r.fenced}")
        if r.in_controlled_shutdown not in _SHUTDOWN:
            raise MetadataReplayError(
                f"Unable to replay {r}: unknown value for inControlledShutdown field: {r.in_controlled_shutdown}")
        dirs = sorted_dirs(r.log_dirs) if r.log_dirs else None  # empty LogDirs = no change
        cordoned = _cordoned(getattr(r, "cordoned_log_dirs", None))  # null = no change
        nb = b.clone_with(_FENCING[r.fenced], _SHUTDOWN[r.in_controlled_shutdown], dirs, cordoned)
        if nb is not b:
            self.changed_brokers[r.broker_id] = nb

    def replay_register_controller(self, r: Any) -> None:
        self.changed_controllers[r.controller_id] = ControllerRegistration.from_record(r)

    def replay_unregister_controller(self, r: Any) -> None:
        """UnregisterControllerRecord (KIP-1312): the controller's registration goes away."""
        self.changed_controllers[r.controller_id] = DELETE

    def finish_snapshot(self) -> None:
        for broker_id in self.image.brokers:
            self.changed_brokers.setdefault(broker_id, DELETE)
        for controller_id in self.image.controllers:
            self.changed_controllers.setdefault(controller_id, DELETE)

    def apply(self) -> ClusterImage:
        brokers = self.image.brokers.update(self.changed_brokers)
        controllers = self.image.controllers.update(self.changed_controllers)
        if brokers is self.image.brokers and controllers is self.image.controllers:
            return self.image
        return ClusterImage(brokers, controllers)
