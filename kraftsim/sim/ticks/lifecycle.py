"""The tick simulator's registrations and heartbeats (a mixin of SimCluster): each tick the
active controller takes the registrations of nodes not registered in this incarnation
(brokers always, retried every heartbeat interval while refused; controllers from 3.7
software and metadata.version 3.7-IV0, KIP-919), hears each registered broker's heartbeat,
fences expired sessions and writes the idle NoOpRecord."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Protocol

from kraftsim.controller import (
    BrokerHeartbeatReply, BrokerHeartbeatRequest, ControllerResult, broker_heartbeat, expire_sessions,
    register_broker, register_controller,
)
from kraftsim.sim.node.cordoned import cordoned_report
from kraftsim.sim.node.simnode import SimNode

if TYPE_CHECKING:
    from kraftsim.controller import BrokerHeartbeats
    from kraftsim.image import BrokerRegistration, MetadataImage
    from kraftsim.sim.ticks.state import ClusterState
    from kraftsim.versions import Catalog

TICK_MS = 500
HEARTBEAT_INTERVAL_MS = 2000
#: Ticks a controlled shutdown may take.
SHUTDOWN_TICKS = 20
#: Refusals a broker keeps retrying quietly: they resolve themselves.
TRANSIENT_REFUSALS = ("DUPLICATE_BROKER_REGISTRATION",)


class _ActiveController(Protocol):
    """What the registrations and heartbeats use of SimCluster's QuorumController."""

    @property
    def image(self) -> MetadataImage: ...
    @property
    def catalog(self) -> Catalog: ...
    def maybe_write_noop(self) -> ControllerResult | None: ...


class TickLifecycleMixin:
    """Registrations, heartbeats and the idle timer of SimCluster; `self` is the SimCluster."""

    if TYPE_CHECKING:  # what the SimCluster this is mixed into provides
        state: ClusterState
        controller: _ActiveController | None
        emit: Callable[[str], None]
        _refusals: dict[int, str]

        @property
        def heartbeats(self) -> BrokerHeartbeats | None: ...
        def now(self) -> int: ...
        def running_nodes(self) -> list[SimNode]: ...
        def execute(self, rule: Callable[..., ControllerResult]) -> ControllerResult | None: ...
        def replicate(self) -> None: ...
        def _registration(self, node: SimNode) -> BrokerRegistration | None: ...

    def tick(self) -> None:
        """One step of virtual time: registrations, heartbeats, session expiry, the idle NoOpRecord."""
        self.state.now_ms += TICK_MS
        for node in self.running_nodes():
            if self.controller is None:
                return
            self._maybe_register(node)
        for node in self.running_nodes():
            if self.controller is None:
                return
            self._maybe_heartbeat(node)
        if self.controller is None:
            return
        hb = self.heartbeats
        if hb is not None and hb.expired_sessions(self.now()):
            self.execute(lambda ctx: expire_sessions(ctx, hb))
        if self.controller is not None:
            self.controller.maybe_write_noop()
            self.replicate()

    def _controller_registration_due(self, node: SimNode) -> bool:
        """Whether the node sends ControllerRegistration (its software and the finalized
        metadata.version allow it, KIP-919) and its current incarnation is not registered yet."""
        qc = self.controller
        assert qc is not None
        mv = qc.image.metadata_version
        if not (node.registers_controller() and mv is not None and qc.catalog.supports("controller_registration", mv)):
            return False
        reg = qc.image.cluster.controller(node.id)
        return reg is None or str(reg.incarnation_id) != node.state.incarnation

    def _maybe_register(self, node: SimNode) -> None:
        if self._controller_registration_due(node):
            result = self.execute(lambda ctx: register_controller(ctx, node.controller_registration()))
            if result is not None and result.ok:
                self.emit(f"Controller {node.id} registered (Kafka {node.state.release}).")
            elif result is not None:
                self._refused(node, "controller", result)
        if node.state.is_broker and (self._registration(node) is None or node.registration_needs_refresh()):
            last = node.state.last_heartbeat_ms
            if last is not None and self.now() - last < HEARTBEAT_INTERVAL_MS:
                return
            node.state.last_heartbeat_ms = self.now()
            request = node.broker_registration(self.state.cluster_id, node.state.previous_broker_epoch)
            hb = self.heartbeats
            if hb is None:  # no active controller (execute would answer None)
                return
            result = self.execute(lambda ctx: register_broker(ctx, request, hb))
            if result is None:
                return
            if result.ok:
                node.state.note = None
                node.state.last_heartbeat_ms = None  # heartbeat at once
                self._refusals.pop(node.id, None)
                self.emit(f"Broker {node.id} registered with broker epoch {result.response.broker_epoch} "
                          f"(Kafka {node.state.release}).")
            else:
                self._refused(node, "broker", result)

    def _refused(self, node: SimNode, what: str, result: ControllerResult) -> None:
        err = result.error
        text = (f"Unable to register {what} {node.id} because the controller returned error {err.name}"
                + (f": {err.message}" if err.message else ""))
        node.state.note = text
        if self._refusals.get(node.id) != text and err.name not in TRANSIENT_REFUSALS:
            self.emit(text)
        self._refusals[node.id] = text

    def _maybe_heartbeat(self, node: SimNode, *, want_shut_down: bool = False) -> BrokerHeartbeatReply | None:
        if not node.state.is_broker:
            return None
        reg = self._registration(node)
        if reg is None:
            return None
        last = node.state.last_heartbeat_ms
        if not want_shut_down and last is not None and self.now() - last < HEARTBEAT_INTERVAL_MS:
            return None
        node.state.last_heartbeat_ms = self.now()
        request = BrokerHeartbeatRequest(broker_id=node.id, broker_epoch=reg.epoch,
                                         current_metadata_offset=node.applied_offset, want_shut_down=want_shut_down,
                                         cordoned_log_dirs=cordoned_report(node))
        hb = self.heartbeats
        if hb is None:  # no active controller (execute would answer None)
            return None
        was_fenced = reg.fenced
        result = self.execute(lambda ctx: broker_heartbeat(ctx, request, hb))
        if result is None or not result.ok:
            return None
        reply: BrokerHeartbeatReply = result.response
        if was_fenced and not reply.is_fenced:
            self.emit(f"Broker {node.id} is unfenced.")
        return reply

    def _controlled_shutdown(self, node: SimNode) -> None:
        for _ in range(SHUTDOWN_TICKS):
            if self.controller is None or self._registration(node) is None:
                return
            reply = self._maybe_heartbeat(node, want_shut_down=True)
            if reply is not None and reply.should_shut_down:
                self.emit(f"Broker {node.id} finished its controlled shutdown.")
                return
            self.tick()

