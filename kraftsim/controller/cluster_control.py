"""Cluster control: broker and controller registration, heartbeats, fencing, controlled
shutdown, unregistration and session expiry (Kafka's ClusterControlManager, the broker
side of ReplicationControlManager and BrokerHeartbeatManager), as pure decisions.

What Kafka keeps outside the log lives in `BrokerHeartbeats`: per broker the heartbeat
state (fenced, last reported metadata offset, controlled-shutdown offset), the offset of
its RegisterBrokerRecord, and the time of the last heartbeat of each (broker, epoch).
Kafka updates that state while it handles a request, before the records commit; so do
the functions here:

- `register_broker` forgets the old session of a new incarnation and registers the broker
  (fenced as the record says), noting the offset its RegisterBrokerRecord will get;
- `broker_heartbeat` records the contact time first (even for a stale epoch, as Kafka's
  lock-free tracker does), then the broker's next state and metadata offset, and the
  controlled-shutdown offset when the broker enters controlled shutdown;
- `unregister_broker` forgets the broker;
- `expire_sessions` drops expired sessions and marks the brokers it fences.

Offsets are computed on the assumption that the result's records are appended from
`ctx.next_write_offset` on, in order, which is what the QuorumController does.
"""

from __future__ import annotations

import copy
import enum
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

import msgspec

from kraftsim.controller import cordon
from kraftsim.controller.api_errors import ApiError
from kraftsim.controller.context import ControllerContext, metadata_version_of, registry_of
from kraftsim.controller.replication import (
    check_broker_epoch,
    elect_for_unfenced,
    leader_and_isr_updates,
    leads_partitions,
    partitions_in_directories,
    remove_from_isrs,
    shutdown_cleanup,
)
from kraftsim.controller.result import NO_METADATA_VERSION, ControllerResult, accepted, payload, refused
from kraftsim.image import BrokerRegistration, MetadataDelta, MetadataImage
from kraftsim.image import KRAFT_VERSION
from kraftsim.protocol.entries import Payload
from kraftsim.protocol.primitives import Uuid
from kraftsim.protocol.registry import RecordType
from kraftsim.versions import FEATURE_NAME as MV_NAME, Catalog, MetadataVersion

# --------------------------------------------------------------------------- heartbeat state


class BrokerControlState(enum.Enum):
    """Kafka's BrokerControlState: where a broker stands as seen by its heartbeats."""

    FENCED = "FENCED"
    UNFENCED = "UNFENCED"
    CONTROLLED_SHUTDOWN = "CONTROLLED_SHUTDOWN"
    SHUTDOWN_NOW = "SHUTDOWN_NOW"

    @property
    def fenced(self) -> bool:
        return self in (BrokerControlState.FENCED, BrokerControlState.SHUTDOWN_NOW)

    @property
    def in_controlled_shutdown(self) -> bool:
        return self is BrokerControlState.CONTROLLED_SHUTDOWN

    @property
    def should_shut_down(self) -> bool:
        return self is BrokerControlState.SHUTDOWN_NOW


@dataclass
class BrokerSession:
    """One broker's soft state (Kafka's BrokerHeartbeatState plus its registration offset)."""

    broker_id: int
    fenced: bool = True
    metadata_offset: int = -1
    controlled_shutdown_offset: int = -1  # -1: not in controlled shutdown
    register_offset: int | None = None  # offset of its RegisterBrokerRecord

    @property
    def state(self) -> BrokerControlState:
        if self.controlled_shutdown_offset >= 0:
            return BrokerControlState.CONTROLLED_SHUTDOWN
        return BrokerControlState.FENCED if self.fenced else BrokerControlState.UNFENCED

    @property
    def active(self) -> bool:
        """Unfenced and not shutting down (Kafka's `active` set)."""
        return not self.fenced and self.controlled_shutdown_offset < 0


@dataclass
class BrokerHeartbeats:
    """The active controller's soft state about brokers; deterministic and copyable.

    `contacts` maps (broker id, broker epoch) to the virtual time of the last heartbeat,
    as Kafka's BrokerHeartbeatTracker; a session is valid while that time plus the
    session timeout is not in the past.
    """

    session_timeout_ms: int = 9000
    brokers: dict[int, BrokerSession] = field(default_factory=dict)
    contacts: dict[tuple[int, int], int] = field(default_factory=dict)

    @classmethod
    def from_image(cls, image: MetadataImage, now_ms: int, session_timeout_ms: int = 9000, *,
                   fenced_too: bool = False) -> "BrokerHeartbeats":
        """What a controller knows when it becomes active (Kafka's activate()): every broker
        registered with its fencing state, unfenced ones with a fresh session, and fenced
        ones too with `fenced_too` (Kafka 4.0: policy `activation_sessions`). The offset of
        each RegisterBrokerRecord is taken as the image's last offset: Kafka only needs a
        value that is not smaller than the real one."""
        hb = cls(session_timeout_ms)
        offset = image.provenance.last_contained_offset
        for reg in image.cluster.sorted_brokers():
            hb.register(reg.id, reg.fenced)
            hb.brokers[reg.id].register_offset = offset
            if fenced_too or not reg.fenced:
                hb.contacts[(reg.id, reg.epoch)] = now_ms
        return hb

    def copy(self) -> "BrokerHeartbeats":
        return copy.deepcopy(self)

    def state(self, broker_id: int) -> BrokerControlState | None:
        s = self.brokers.get(broker_id)
        return None if s is None else s.state

    def register_offset(self, broker_id: int) -> int | None:
        s = self.brokers.get(broker_id)
        return None if s is None else s.register_offset

    # --- sessions

    def _expired(self, contact_ms: int, now_ms: int) -> bool:
        return now_ms > contact_ms and contact_ms + self.session_timeout_ms < now_ms

    def has_valid_session(self, broker_id: int, broker_epoch: int, now_ms: int) -> bool:
        t = self.contacts.get((broker_id, broker_epoch))
        return t is not None and not self._expired(t, now_ms)

    def record_contact(self, broker_id: int, broker_epoch: int, now_ms: int) -> None:
        self.contacts[(broker_id, broker_epoch)] = now_ms

    def expired_sessions(self, now_ms: int) -> list[tuple[int, int]]:
        """Expired (broker id, epoch) sessions, oldest contact first."""
        found = [(t, k) for k, t in self.contacts.items() if self._expired(t, now_ms)]
        return [k for _, k in sorted(found)]

    # --- heartbeat state (Kafka's BrokerHeartbeatManager)

    def register(self, broker_id: int, fenced: bool) -> None:
        s = self.brokers.get(broker_id)
        if s is None:
            self.brokers[broker_id] = BrokerSession(broker_id, fenced)
        elif s.fenced != fenced:
            self.touch(broker_id, fenced, s.metadata_offset)
        else:
            self.touch(broker_id, fenced, -1)

    def touch(self, broker_id: int, fenced: bool, metadata_offset: int) -> None:
        s = self.brokers[broker_id]
        s.fenced = fenced
        s.metadata_offset = metadata_offset
        if fenced:  # a fenced broker leaves controlled shutdown
            s.controlled_shutdown_offset = -1

    def fence(self, broker_id: int) -> None:
        s = self.brokers.get(broker_id)
        if s is not None:
            s.fenced = True

    def remove(self, broker_id: int) -> None:
        self.brokers.pop(broker_id, None)

    def lowest_active_offset(self) -> int | None:
        """The lowest metadata offset an active broker reported; None when none is active."""
        offsets = [s.metadata_offset for s in self.brokers.values() if s.active]
        return min(offsets) if offsets else None

    def enter_controlled_shutdown(self, broker_id: int, offset: int) -> None:
        """Kafka's maybeUpdateControlledShutdownOffset: the first offset sticks."""
        s = self.brokers[broker_id]
        if s.controlled_shutdown_offset < 0:
            s.controlled_shutdown_offset = offset

    def next_state(self, broker_id: int, req: "BrokerHeartbeatRequest", register_offset: int,
                   leads_partitions: Callable[[], bool]) -> tuple[BrokerControlState, BrokerControlState]:
        """Kafka's calculateNextBrokerState: (current, next). `leads_partitions` is called
        only when the answer matters."""
        s = self.brokers[broker_id]
        current = s.state
        fenced, unfenced = BrokerControlState.FENCED, BrokerControlState.UNFENCED
        cs, now = BrokerControlState.CONTROLLED_SHUTDOWN, BrokerControlState.SHUTDOWN_NOW
        if current is fenced:
            if req.want_shut_down:
                return current, now
            if not req.want_fence and req.current_metadata_offset >= register_offset:
                return current, unfenced
            return current, fenced
        if current is unfenced:
            if req.want_fence:
                return current, now if req.want_shut_down else fenced
            if req.want_shut_down:
                return current, cs if leads_partitions() else now
            return current, unfenced
        if leads_partitions():
            return current, cs
        lowest = self.lowest_active_offset()
        if lowest is None or s.controlled_shutdown_offset <= lowest:
            return current, now
        return current, cs


# --------------------------------------------------------------------------- requests and replies


class Listener(msgspec.Struct, frozen=True):
    name: str
    host: str
    port: int
    security_protocol: int = 0  # PLAINTEXT


class SupportedFeature(msgspec.Struct, frozen=True):
    name: str
    min_supported_version: int
    max_supported_version: int


def supported_features(ranges: Mapping[str, tuple[int, int]]) -> tuple[SupportedFeature, ...]:
    """Request features from {name: (min, max)}, e.g. `catalog.supported_features()`."""
    return tuple(SupportedFeature(n, lo, hi) for n, (lo, hi) in ranges.items())


class BrokerRegistrationRequest(msgspec.Struct, frozen=True):
    """Kafka's BrokerRegistrationRequest. `previous_broker_epoch` None stands for a request
    older than v3, which carries none (clean-shutdown detection is then off)."""

    broker_id: int
    cluster_id: str
    incarnation_id: Uuid
    listeners: tuple[Listener, ...] = ()
    features: tuple[SupportedFeature, ...] = ()
    rack: str | None = None
    is_migrating_zk_broker: bool = False
    log_dirs: tuple[Uuid, ...] = ()
    previous_broker_epoch: int | None = -1
    cordoned_log_dirs: tuple[Uuid, ...] | None = None  # KIP-1066 (4.3); None: not reported


class BrokerRegistrationReply(msgspec.Struct, frozen=True):
    broker_epoch: int


class ControllerRegistrationRequest(msgspec.Struct, frozen=True):
    controller_id: int
    incarnation_id: Uuid
    zk_migration_ready: bool = False
    listeners: tuple[Listener, ...] = ()
    features: tuple[SupportedFeature, ...] = ()


class BrokerHeartbeatRequest(msgspec.Struct, frozen=True):
    broker_id: int
    broker_epoch: int
    current_metadata_offset: int = 0
    want_fence: bool = False
    want_shut_down: bool = False
    offline_log_dirs: tuple[Uuid, ...] = ()
    cordoned_log_dirs: tuple[Uuid, ...] | None = None  # BrokerHeartbeat v2 (KIP-1066); None: not reported


class BrokerHeartbeatReply(msgspec.Struct, frozen=True):
    is_caught_up: bool
    is_fenced: bool
    in_controlled_shutdown: bool
    should_shut_down: bool


class ExpiredSessions(msgspec.Struct, frozen=True):
    """The brokers `expire_sessions` fenced, in the order it fenced them."""

    fenced_brokers: tuple[int, ...] = ()


# --------------------------------------------------------------------------- registration


def _directory_reserved(u: Uuid) -> bool:
    """Kafka's DirectoryId.reserved: MSB 0 and LSB below 100 (MIGRATING, UNASSIGNED, LOST...)."""
    return u.msb == 0 and u.lsb < 100


def _directory_error(image: MetadataImage, req: BrokerRegistrationRequest) -> ApiError | None:
    if not req.log_dirs:
        return ApiError("INVALID_REGISTRATION", "No directories specified in request")
    if any(_directory_reserved(d) for d in req.log_dirs):
        return ApiError("INVALID_REGISTRATION", "Reserved directory ID in request")
    if len(set(req.log_dirs)) != len(req.log_dirs):
        return ApiError("INVALID_REGISTRATION", "Duplicate directory ID in request")
    owners = {d: b.id for b in image.cluster.sorted_brokers() for d in b.directories}
    for d in req.log_dirs:
        owner = owners.get(d)
        if owner is not None and owner != req.broker_id:
            return ApiError("INVALID_REGISTRATION", f"Broker {owner} is already registered with directory {d}")
    return None


def _feature_error(catalog: Catalog, name: str, finalized: int, lo: int, hi: int) -> ApiError | None:
    """A registered feature range without the finalized level, refused in the controller release's
    words (policy registration_feature_text)."""
    if lo <= finalized <= hi:
        return None
    text = catalog.policy_text("registration_feature_text", "refused")
    return ApiError("UNSUPPORTED_VERSION", text.format(finalized=finalized, feature=name, min=lo, max=hi))


def _endpoints_and_features(rt: RecordType, kind: str, listeners: Iterable[Listener],
                            features: Iterable[SupportedFeature]) -> dict[str, list[object]]:
    """The EndPoints and Features fields of a Register{kind}Record (kind: Broker or Controller)."""
    endpoint, feature = rt.nested[f"{kind}Endpoint"], rt.nested[f"{kind}Feature"]
    return {
        "end_points": [endpoint(name=l.name, host=l.host, port=l.port, security_protocol=l.security_protocol)
                       for l in listeners],
        "features": [feature(name=f.name, min_supported_version=f.min_supported_version,
                             max_supported_version=f.max_supported_version) for f in features],
    }


def _fence_record(ctx: ControllerContext, mv: MetadataVersion, broker_id: int, epoch: int, fenced: bool) -> Payload:
    reg = registry_of(ctx)
    if "BrokerRegistrationChangeRecord" not in ctx.catalog.record_types(mv):
        name = "FenceBrokerRecord" if fenced else "UnfenceBrokerRecord"  # before 3.3-IV2
        return payload(reg, name, 0, id=broker_id, epoch=epoch)
    return payload(reg, "BrokerRegistrationChangeRecord", 0, broker_id=broker_id, broker_epoch=epoch,
                   fenced=1 if fenced else -1)


def _fenced_brokers_hold_no_session(ctx: ControllerContext, heartbeats: BrokerHeartbeats, broker_id: int) -> bool:
    """True when this release gives the broker no session because it is fenced (policy
    `broker_session`: 3.x counts only unfenced brokers, 4.x every epoch with a contact)."""
    if ctx.catalog.policy("broker_session") != "unfenced":
        return False
    state = heartbeats.state(broker_id)
    return state is None or state.fenced


def _holds_live_session(ctx: ControllerContext, heartbeats: BrokerHeartbeats, existing: BrokerRegistration) -> bool:
    """Whether the registered incarnation still counts as alive, so that another one is a
    duplicate: in 4.x while its epoch's session lasts; in 3.x only while it is also
    unfenced, so a broker that finished a controlled shutdown may come back at once."""
    if _fenced_brokers_hold_no_session(ctx, heartbeats, existing.id):
        return False
    return heartbeats.has_valid_session(existing.id, existing.epoch, ctx.now_ms)


def register_broker(ctx: ControllerContext, req: BrokerRegistrationRequest,
                    heartbeats: BrokerHeartbeats) -> ControllerResult:
    """Kafka's registerBroker. Checks, in order: cluster id; another live incarnation;
    ZooKeeper brokers; log directories (3.7-IV2+); every advertised feature against its
    finalized level; the presence of metadata.version; every finalized feature the broker
    omits (as if it advertised 0-0). A new incarnation gets broker epoch
    `ctx.next_write_offset` and starts fenced, after records that clean up the previous
    incarnation (non-atomic, as in Kafka); the same incarnation registers again as the
    release does (policy same_incarnation_registration: 3.9 on keep its epoch, fencing and
    controlled-shutdown state). Reply: the broker epoch."""
    mv = metadata_version_of(ctx)
    if mv is None:
        return refused(NO_METADATA_VERSION)
    image = ctx.image
    if req.cluster_id != ctx.config.cluster_id:
        return refused(ApiError("INCONSISTENT_CLUSTER_ID", f"Expected cluster ID {ctx.config.cluster_id}, but got "
                                                           f"cluster ID {req.cluster_id}"))
    existing = image.cluster.broker(req.broker_id)
    same_incarnation = existing is not None and existing.incarnation_id == req.incarnation_id
    if existing is not None and not same_incarnation and _holds_live_session(ctx, heartbeats, existing):
        return refused(ApiError("DUPLICATE_BROKER_REGISTRATION",
                                ctx.catalog.policy_text("duplicate_registration_text", "refused")))
    if req.is_migrating_zk_broker:
        return refused(ApiError("BROKER_ID_NOT_REGISTERED", "Controller does not support registering ZK brokers."))
    dirs = ctx.catalog.supports("directory_assignment", mv)
    if dirs:
        err = _directory_error(image, req)
        if err is not None:
            return refused(err)
    finalized = image.features.all_levels()
    finalized[KRAFT_VERSION] = max(ctx.kraft_version, finalized.get(KRAFT_VERSION, 0))  # 3.9: also a feature
    for f in req.features:
        err = _feature_error(ctx.catalog, f.name, finalized.get(f.name, 0), f.min_supported_version, f.max_supported_version)
        if err is not None:
            return refused(err)
    advertised = {f.name for f in req.features}
    if MV_NAME not in advertised:
        return refused(ApiError("INVALID_REGISTRATION", f"Request features do not contain '{MV_NAME}'"))
    for name in sorted(finalized):
        if finalized[name] != 0 and name not in advertised:
            err = _feature_error(ctx.catalog, name, finalized[name], 0, 0)
            if err is not None:
                return refused(err)

    records: list[Payload] = []
    if same_incarnation:
        assert existing is not None
        amend = ctx.catalog.policy("same_incarnation_registration")
        epoch = existing.epoch if amend == "amend" else ctx.next_write_offset
        fenced, in_cs = (True, False) if amend == "renew" else (existing.fenced, existing.in_controlled_shutdown)
    else:
        stored_epoch = existing.epoch if existing is not None else -2
        clean = req.previous_broker_epoch is not None and stored_epoch == req.previous_broker_epoch
        records += shutdown_cleanup(ctx, mv, req.broker_id, clean)
        epoch, fenced, in_cs = ctx.next_write_offset, True, False
    version = ctx.catalog.record_version("RegisterBrokerRecord", mv)
    rt = registry_of(ctx)["RegisterBrokerRecord"]
    message = rt.new(
        broker_id=req.broker_id,
        is_migrating_zk_broker=req.is_migrating_zk_broker,
        incarnation_id=req.incarnation_id,
        broker_epoch=epoch,
        **_endpoints_and_features(rt, "Broker", req.listeners, req.features),
        rack=req.rack,
        fenced=fenced,
        in_controlled_shutdown=in_cs,
        log_dirs=list(req.log_dirs) if dirs else [],
        cordoned_log_dirs=cordon.registration_cordoned(ctx, mv, req.cordoned_log_dirs),
    )
    records.append(Payload(rt, version, message))

    if not same_incarnation:
        heartbeats.remove(req.broker_id)
    heartbeats.register(req.broker_id, fenced)
    heartbeats.brokers[req.broker_id].register_offset = ctx.next_write_offset + len(records) - 1
    return accepted(records, BrokerRegistrationReply(epoch), atomic=False)


def _needs_capability(ctx: ControllerContext, capability: str, what: str) -> ControllerResult | None:
    """The refusal when the finalized metadata.version lacks `capability` (Kafka's "too old to
    support <what>" text), or None when it has it."""
    mv = metadata_version_of(ctx)
    if mv is None:
        return refused(NO_METADATA_VERSION)
    if not ctx.catalog.supports(capability, mv):
        return refused(ApiError("UNSUPPORTED_VERSION", f"The current MetadataVersion is too old to support {what}."))
    return None


def register_controller(ctx: ControllerContext, req: ControllerRegistrationRequest) -> ControllerResult:
    """Kafka's registerController (KIP-919): RegisterControllerRecord v0, atomically, from
    3.7-IV0 on."""
    too_old = _needs_capability(ctx, "controller_registration", "controller registrations")
    if too_old is not None:
        return too_old
    rt = registry_of(ctx)["RegisterControllerRecord"]
    message = rt.new(
        controller_id=req.controller_id,
        incarnation_id=req.incarnation_id,
        zk_migration_ready=False,
        **_endpoints_and_features(rt, "Controller", req.listeners, req.features),
    )
    return accepted([Payload(rt, 0, message)], None)


# --------------------------------------------------------------------------- heartbeats


def fence_records(ctx: ControllerContext, mv: MetadataVersion, broker_id: int) -> list[Payload]:
    """Kafka's handleBrokerFenced: the broker leaves every ISR, then the fence record."""
    reg = ctx.image.cluster.broker(broker_id)
    assert reg is not None
    return remove_from_isrs(ctx, mv, broker_id) + [_fence_record(ctx, mv, broker_id, reg.epoch, True)]


def _controlled_shutdown_records(ctx: ControllerContext, mv: MetadataVersion, broker_id: int,
                                 epoch: int) -> list[Payload]:
    """Kafka's handleBrokerInControlledShutdown: InControlledShutdown=1 (v1) unless already
    set, then the broker leaves every ISR, which moves its leaderships."""
    out = []
    reg = ctx.image.cluster.broker(broker_id)
    if reg is not None and not reg.in_controlled_shutdown and ctx.catalog.supports("in_controlled_shutdown", mv):
        out.append(payload(registry_of(ctx), "BrokerRegistrationChangeRecord", 1, broker_id=broker_id,
                           broker_epoch=epoch, in_controlled_shutdown=1))
    return out + remove_from_isrs(ctx, mv, broker_id)


def _offline_directory_records(ctx: ControllerContext, mv: MetadataVersion, broker_id: int, epoch: int,
                               offline: Iterable[Uuid]) -> list[Payload]:
    """Kafka's handleDirectoriesOffline: partitions in newly offline directories lose the
    broker from their ISR, then BrokerRegistrationChangeRecord v2 lists the dirs left."""
    reg = ctx.image.cluster.broker(broker_id)
    offline = set(offline)
    if reg is None:
        return []
    newly_offline = [d for d in reg.directories if d in offline]
    if not newly_offline:
        return []
    out: list[Payload] = []
    for d in newly_offline:
        out += leader_and_isr_updates(ctx, mv, partitions_in_directories(ctx.image, broker_id, [d]),
                                      broker_to_remove=broker_id)
    online = [d for d in reg.directories if d not in offline]
    out.append(payload(registry_of(ctx), "BrokerRegistrationChangeRecord", 2, broker_id=broker_id,
                       broker_epoch=epoch, log_dirs=online))
    return out


def broker_heartbeat(ctx: ControllerContext, req: BrokerHeartbeatRequest,
                     heartbeats: BrokerHeartbeats) -> ControllerResult:
    """Kafka's processBrokerHeartbeat. The broker's next state follows BrokerHeartbeatManager's
    table: a fenced broker is unfenced once it has caught up to its RegisterBrokerRecord
    (BrokerRegistrationChangeRecord v0 Fenced=-1, then leaders for leaderless partitions);
    asking to be fenced, or a shutdown without leaderships, fences it (ISR removals, then
    v0 Fenced=1); a shutdown while it leads starts a controlled shutdown (v1
    InControlledShutdown=1, then ISR removals), which ends once it leads nothing and the
    active brokers have caught up. Offline log directories (3.7-IV2+) add partition
    changes and a v2 record with the directories left. Non-atomic, as in Kafka."""
    mv = metadata_version_of(ctx)
    if mv is None:
        return refused(NO_METADATA_VERSION)
    image = ctx.image
    heartbeats.record_contact(req.broker_id, req.broker_epoch, ctx.now_ms)
    register_offset = heartbeats.register_offset(req.broker_id)
    if register_offset is None:
        return refused(ApiError("STALE_BROKER_EPOCH", f"Receive a heartbeat from broker {req.broker_id} before "
                                                      "registration"))
    err = check_broker_epoch(image, req.broker_id, req.broker_epoch)
    if not err.ok:
        return refused(err)
    current, nxt = heartbeats.next_state(req.broker_id, req, register_offset,
                                         lambda: leads_partitions(ctx, req.broker_id))
    records: list[Payload] = []
    if current is not nxt:
        if nxt.fenced:
            records += fence_records(ctx, mv, req.broker_id)
        elif nxt is BrokerControlState.UNFENCED:
            records.append(_fence_record(ctx, mv, req.broker_id, req.broker_epoch, False))
            records += elect_for_unfenced(ctx, mv, req.broker_id)
        else:
            records += _controlled_shutdown_records(ctx, mv, req.broker_id, req.broker_epoch)
    heartbeats.touch(req.broker_id, nxt.fenced, req.current_metadata_offset)
    if ctx.catalog.supports("directory_assignment", mv):
        records += _offline_directory_records(ctx, mv, req.broker_id, req.broker_epoch, req.offline_log_dirs)
    records += cordon.heartbeat_cordon_records(ctx, mv, req.broker_id, req.broker_epoch, req.cordoned_log_dirs)
    if nxt.in_controlled_shutdown:
        heartbeats.enter_controlled_shutdown(req.broker_id, ctx.next_write_offset + len(records) - 1)
    reply = BrokerHeartbeatReply(
        is_caught_up=req.current_metadata_offset >= register_offset,
        is_fenced=nxt.fenced,
        in_controlled_shutdown=nxt.in_controlled_shutdown,
        should_shut_down=nxt.should_shut_down,
    )
    return accepted(records, reply, atomic=False)


# --------------------------------------------------------------------------- unregistration, expiry


def unregister_broker(ctx: ControllerContext, broker_id: int, heartbeats: BrokerHeartbeats) -> ControllerResult:
    """Kafka's unregisterBroker: the broker leaves every ISR (and the partitions whose ELR
    holds it are re-examined), then UnregisterBrokerRecord. Non-atomic, as in Kafka."""
    mv = metadata_version_of(ctx)
    if mv is None:
        return refused(NO_METADATA_VERSION)
    reg = ctx.image.cluster.broker(broker_id)
    if reg is None:
        return refused(ApiError("BROKER_ID_NOT_REGISTERED", f"Broker ID {broker_id} is not currently registered"))
    records = remove_from_isrs(ctx, mv, broker_id, include_elr=True)
    records.append(payload(registry_of(ctx), "UnregisterBrokerRecord", 0, broker_id=broker_id, broker_epoch=reg.epoch))
    heartbeats.remove(broker_id)
    return accepted(records, None, atomic=False)


def unregister_controller(ctx: ControllerContext, controller_id: int) -> ControllerResult:
    """Kafka 4.4's controller unregistration (KIP-1312): UnregisterControllerRecord v0 from
    4.4-IV2, for a registered controller (texts: kafka-facts §11.4)."""
    too_old = _needs_capability(ctx, "controller_unregistration", "controller unregistration")
    if too_old is not None:
        return too_old
    if ctx.image.cluster.controller(controller_id) is None:
        return refused(ApiError("CONTROLLER_ID_NOT_REGISTERED", f"Controller ID {controller_id} is not currently "
                                                                "registered."))
    return accepted([payload(registry_of(ctx), "UnregisterControllerRecord", 0, controller_id=controller_id)], None)


def expire_sessions(ctx: ControllerContext, heartbeats: BrokerHeartbeats) -> ControllerResult:
    """Fence every broker whose session timed out at `ctx.now_ms` (Kafka's
    maybeFenceOneStaleBroker, repeated): oldest contact first, each fencing decided on the
    image the previous ones left. Sessions of an older epoch or of an unregistered broker
    are dropped without records, and so, in 3.x (policy `broker_session`), are those of a
    broker already fenced: 3.x only looks for stale brokers among unfenced ones.
    Non-atomic; the reply lists the fenced brokers."""
    mv = metadata_version_of(ctx)
    if mv is None:
        return refused(NO_METADATA_VERSION)
    records: list[Payload] = []
    fenced: list[int] = []
    work = ctx
    for broker_id, epoch in heartbeats.expired_sessions(ctx.now_ms):
        del heartbeats.contacts[(broker_id, epoch)]
        reg = work.image.cluster.broker(broker_id)
        if reg is None:
            heartbeats.remove(broker_id)
            continue
        if reg.epoch != epoch or _fenced_brokers_hold_no_session(ctx, heartbeats, broker_id):
            continue
        batch = fence_records(work, mv, broker_id)
        heartbeats.fence(broker_id)
        records += batch
        fenced.append(broker_id)
        delta = MetadataDelta(work.image, work.catalog)
        delta.replay_all(batch)
        work = msgspec.structs.replace(work, image=delta.apply(), next_write_offset=work.next_write_offset + len(batch),
                                       replicas=None)  # (the index describes the committed image only)
    return accepted(records, ExpiredSessions(tuple(fenced)), atomic=False)
