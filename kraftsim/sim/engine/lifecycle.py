"""Brokers and controllers talking to the active controller, as events (the Engine's Lifecycle part).

A broker's side follows Kafka's BrokerLifecycleManager: one request in flight at a time,
the next one scheduled when the reply (or its RPC timeout) comes. It registers
(BrokerRegistration), then heartbeats with the offset its loader has applied: every 10 ms
while it catches up (STARTING, asking to stay fenced) and once more just after (RECOVERY,
now asking to be unfenced), then every `broker.heartbeat.interval.ms`. After a failure (a
refused registration such as DUPLICATE_BROKER_REGISTRATION while the old incarnation's
session lives, an error reply, no reply) it sends again on the release's
`broker_resend_backoff` policy: Kafka 3.x backs off exponentially (100 ms doubling, capped
at the session timeout, jitter of +/-2% drawn from a generator seeded by the simulation's
seed, the node and the attempt, so the shared event generator is not disturbed); 4.0.1 and
later wait one heartbeat interval. A broker process that has not registered once within
`initial.broker.registration.timeout.ms` of its first registration request shuts itself down (Kafka: "Shutting
down because we were unable to register with the controller quorum.", then a fatal error
during start-up: the process exits), so it ends failed, not running; its last refusal is
kept beside that text. The controller's rules
(kraftsim.controller.cluster_control) decide the broker's epoch and fencing. A controller
of 3.7 or later registers itself (KIP-919) once the committed metadata.version allows it.
The active controller expires sessions and writes its idle NoOpRecord on a timer of
`metadata.max.idle.interval.ms`.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from kraftsim.controller import (
    BrokerHeartbeatReply,
    BrokerHeartbeatRequest,
    broker_heartbeat,
    expire_sessions,
    register_broker,
    register_controller,
    unregister_broker,
)
from kraftsim.sim.node.cordoned import cordoned_report
from kraftsim.sim.engine.events import Message, Network, Scheduler
from kraftsim.sim.engine.member import LEADER, Member
from kraftsim.sim.node.simnode import Unsupported
from kraftsim.sim.types import FAILED, SimConfig
from kraftsim.versions import Catalog

#: Refusals a broker keeps retrying quietly: they resolve themselves.
TRANSIENT_REFUSALS = ("DUPLICATE_BROKER_REGISTRATION", "NOT_CONTROLLER", "STALE_BROKER_EPOCH")
#: What BrokerLifecycleManager logs when initial.broker.registration.timeout.ms runs out.
REGISTRATION_TIMEOUT_TEXT = "Shutting down because we were unable to register with the controller quorum."
#: How soon a node without a known leader tries again.
NO_LEADER_RETRY_MS = 250
#: BrokerLifecycleManager's heartbeat delay while the broker catches up and just after.
CATCH_UP_HEARTBEAT_MS = 10
#: Its delay after the first reply to a controlled shutdown request that does not end it yet.
SHUTDOWN_FIRST_RETRY_MS = 50
#: Kafka 3.x's ExponentialBackoff of BrokerLifecycleManager: initial, multiplier, jitter
#: (the cap is broker.session.timeout.ms).
BACKOFF_INITIAL_MS = 100
BACKOFF_MULTIPLIER = 2
BACKOFF_JITTER = 0.02

# BrokerLifecycleManager's states as far as its schedule depends on them.
STARTING, RECOVERY, RUNNING = "STARTING", "RECOVERY", "RUNNING"


def refresh_text(broker: int) -> str:
    """The line a broker's registration sent again is narrated with."""
    return (f"Broker {broker}: the metadata.version supports log directories and its registration has none; "
            "it registers again.")


@dataclass
class BrokerComm:
    """A broker process's BrokerLifecycleManager state (soft: a new process starts afresh)."""

    gen: int  # the member's lifecycle_gen it belongs to
    state: str = STARTING
    #: Kafka's readyToUnfence: heartbeats ask to stay fenced until the broker caught up once.
    ready_to_unfence: bool = False
    failed_attempts: int = 0
    in_flight: bool = False
    sent: int = 0  # requests sent; a request timeout applies only to the one still in flight
    wake: int = 0  # the armed next communication; arming again replaces it
    shutdown_replies: int = 0
    registered_once: bool = False  # Kafka's initialRegistrationSucceeded
    #: The registration is sent again (BrokerRegistrationTracker: it lacks the directories the
    #: metadata.version now carries), though the broker holds an epoch.
    refresh: bool = False
    deadline_armed: bool = False  # initial.broker.registration.timeout.ms runs from the first registration sent


def resend_backoff_ms(policy: str, failed_attempts: int, *, heartbeat_interval_ms: int,
                      session_timeout_ms: int, jitter_rng: random.Random | None = None) -> int:
    """BrokerLifecycleManager's delay before it sends again after `failed_attempts` earlier
    failures in a row (this failure included as attempt 0). `jitter_rng` draws Kafka's
    +/-2% factor; without one the factor is its mean, 1."""
    if policy == "heartbeat-interval":
        return heartbeat_interval_ms
    if policy != "exponential":
        raise ValueError(f"unknown broker_resend_backoff policy {policy!r}")
    cap = session_timeout_ms
    initial = min(BACKOFF_INITIAL_MS, cap)
    if cap <= initial:
        return initial
    term = float(initial)
    for _ in range(failed_attempts):  # exponent capped where the term reaches the cap
        term *= BACKOFF_MULTIPLIER
        if term >= cap:
            term = float(cap)
            break
    factor = 1.0 if jitter_rng is None else jitter_rng.uniform(1 - BACKOFF_JITTER, 1 + BACKOFF_JITTER)
    return min(int(factor * term), cap)


class LifecycleContext(Protocol):
    """What the Lifecycle part uses of the Engine it is part of."""

    net: Network
    sched: Scheduler
    config: SimConfig
    seed: int
    cluster_id: str
    catalog: Catalog
    controller: Any  # (the active QuorumController, or None)
    controller_id: int | None
    raft: Any  # (the Engine's Raft part: `appended` after the active controller writes)

    @property
    def now(self) -> int: ...
    def emit(self, node: int | None, kind: str, details: dict[str, Any]) -> None: ...
    def halt(self, m: Member, detail: str | None, status: str) -> None: ...
    def execute(self, rule: Callable[[Any], Any]) -> Any: ...


class Lifecycle:
    """The broker/controller lifecycle part of the Engine (see the module docstring), which
    owns one; the Engine calls `start`, `maybe_register_controller`, `react`, `leader_tick`,
    `controller_registration_due` and `send_heartbeat`."""

    def __init__(self, engine: LifecycleContext) -> None:
        self.engine = engine
        self.net = engine.net
        self.sched = engine.sched
        self.config = engine.config
        #: Each node's current process's BrokerComm (see `_comm`).
        self._broker_comms: dict[int, BrokerComm] = {}

    def handlers(self) -> dict[str, Any]:
        """The messages of the lifecycle, by kind, as the Engine dispatches them."""
        return {"register": self._on_register, "register-reply": self._on_register_reply,
                "controller-register": self._on_controller_register,
                "controller-register-reply": self._on_controller_register_reply,
                "heartbeat": self._on_heartbeat, "heartbeat-reply": self._on_heartbeat_reply}

    # -------------------------------------------------------------- the node's side

    def start(self, m: Member) -> None:
        m.lifecycle_gen += 1
        m.fenced = None if not m.state.is_broker else m.fenced
        comm = self._comm(m)
        if m.broker_epoch is not None:  # a resumed process that had registered: it is past start-up
            comm.state, comm.ready_to_unfence, comm.registered_once = RUNNING, True, True
        self._lifecycle_arm(m, 0)

    def started(self, m: Member) -> bool:
        """Whether the broker of the member's current process is past start-up: first unfenced
        since the process started (BrokerLifecycleManager RUNNING; a resumed process that had
        registered is, see `start`). False for a node that is down or has no broker role."""
        comm = self._broker_comms.get(m.id)
        return m.running and m.state.is_broker and comm is not None and comm.gen == m.lifecycle_gen \
            and comm.state == RUNNING

    def _arm_registration_deadline(self, m: Member, comm: BrokerComm) -> None:
        """BrokerLifecycleManager's RegistrationTimeoutEvent, armed by its StartupEvent just before
        the first registration is sent: unregistered at the deadline, the broker shuts down and
        its start-up fails (measured on 3.8.1 with a 3.7.2 broker and on 4.0.2 with a 3.9.1
        broker: shut down 4976 and 4949 ms after the first refusal with a 5000 ms timeout, the
        process exiting with code 1; conformance/data/registration_timeout.toml)."""
        gen = m.lifecycle_gen
        comm.deadline_armed = True

        def expired() -> None:
            if not m.running or m.lifecycle_gen != gen or comm.registered_once:
                return
            last = f" (last refusal: {m.detail})" if m.detail else ""
            text = REGISTRATION_TIMEOUT_TEXT + last
            self.engine.emit(m.id, "failed", {"text": text})
            self.engine.halt(m, text, FAILED)

        self.sched.after(self.config.initial_broker_registration_timeout_ms, "registration-timeout", m.id, expired)

    def _comm(self, m: Member) -> BrokerComm:
        """The member's current process's BrokerComm (a new one for each new process)."""
        table = self._broker_comms
        comm = table.get(m.id)
        if comm is None or comm.gen != m.lifecycle_gen:
            comm = table[m.id] = BrokerComm(m.lifecycle_gen)
        return comm

    def _lifecycle_arm(self, m: Member, delay: int) -> None:
        """Schedule the node's next communication; one armed before is replaced (Kafka's
        scheduleDeferred of the "communication" event)."""
        gen = m.lifecycle_gen
        comm = self._comm(m)
        comm.wake += 1
        wake = comm.wake

        def tick() -> None:
            if m.running and m.lifecycle_gen == gen and comm.wake == wake:
                self._lifecycle_tick(m)

        self.sched.after(delay, "lifecycle", m.id, tick)

    def _lifecycle_tick(self, m: Member) -> None:
        leader = m.leader
        if leader is None or leader == m.id and m.role != LEADER:
            self._lifecycle_arm(m, NO_LEADER_RETRY_MS)
            return
        if m.state.is_controller:
            self.maybe_register_controller(m)
        if not m.state.is_broker:
            self._lifecycle_arm(m, self.config.broker_heartbeat_interval_ms)
            return
        comm = self._comm(m)
        if comm.in_flight:  # the reply (or its timeout) schedules the next one
            return
        if m.broker_epoch is None or comm.refresh:
            if not comm.registered_once and not comm.deadline_armed:
                self._arm_registration_deadline(m, comm)
            request = m.node.broker_registration(self.engine.cluster_id, m.state.previous_broker_epoch)  # type: ignore
            self.net.send(Message(m.id, leader, "register", m.epoch, {"request": request}))
        else:
            self.send_heartbeat(m, leader)
        comm.in_flight = True
        comm.sent += 1
        self._arm_request_timeout(m, comm)

    def _arm_request_timeout(self, m: Member, comm: BrokerComm) -> None:
        """No reply within the heartbeat channel's RPC timeout counts as a failure."""
        gen, sent = m.lifecycle_gen, comm.sent

        def timed_out() -> None:
            if m.running and m.lifecycle_gen == gen and comm.in_flight and comm.sent == sent:
                comm.in_flight = False
                self._after_failure(m, comm)

        self.sched.after(self._rpc_timeout_ms(m), "lifecycle-timeout", m.id, timed_out)

    def _resend_policy(self, m: Member) -> str:
        catalog = m.node.catalog if m.node is not None else self.engine.catalog.at_release(m.state.release)
        return catalog.policy("broker_resend_backoff")

    def _rpc_timeout_ms(self, m: Member) -> int:
        """The heartbeat channel's request timeout: half the session timeout in 3.x, one
        heartbeat interval from KAFKA-19294 on."""
        if self._resend_policy(m) == "heartbeat-interval":
            return self.config.broker_heartbeat_interval_ms
        return self.config.broker_session_timeout_ms // 2

    def _after_failure(self, m: Member, comm: BrokerComm) -> None:
        jitter = random.Random(f"kraftsim:{self.engine.seed}:resend:{m.id}:{m.state.starts}:{comm.sent}")
        delay = resend_backoff_ms(self._resend_policy(m), comm.failed_attempts,
                                  heartbeat_interval_ms=self.config.broker_heartbeat_interval_ms,
                                  session_timeout_ms=self.config.broker_session_timeout_ms, jitter_rng=jitter)
        comm.failed_attempts += 1
        self._lifecycle_arm(m, delay)

    def _reply_arrived(self, m: Member) -> BrokerComm:
        comm = self._comm(m)
        comm.in_flight = False
        return comm

    def _send_controller_registration(self, m: Member, leader: int) -> None:
        m.controller_register_sent_ms = self.engine.now
        self.net.send(Message(m.id, leader, "controller-register", m.epoch,
                              {"request": m.node.controller_registration()}))  # type: ignore[union-attr]

    def maybe_register_controller(self, m: Member) -> None:
        """Kafka's ControllerRegistrationManager is a metadata publisher: it registers as soon
        as the image it is handed allows it, not on a timer (one request in flight at a time)."""
        leader = m.leader
        if leader is None or (leader == m.id and m.role != LEADER) or \
                self.engine.now - m.controller_register_sent_ms < self.config.request_timeout_ms:
            return
        if self.controller_registration_due(m):
            self._send_controller_registration(m, leader)

    def track_registration(self, m: Member) -> None:
        """After the broker applied new metadata: when its registration lacks the log directories
        the metadata.version now carries (SimNode.registration_needs_refresh), it sends its
        registration again, with the same incarnation, so the controller records them."""
        node, comm = m.node, self._comm(m)
        if node is None or m.broker_epoch is None or comm.refresh or not node.registration_needs_refresh():
            return
        comm.refresh = True
        self.engine.emit(m.id, "note", {"text": refresh_text(m.id)})
        if not comm.in_flight:
            self._lifecycle_arm(m, 0)

    def send_heartbeat(self, m: Member, leader: int) -> None:
        request = BrokerHeartbeatRequest(broker_id=m.id, broker_epoch=m.broker_epoch or 0,
                                         current_metadata_offset=max(m.applied, 0),
                                         want_fence=not self._comm(m).ready_to_unfence,
                                         want_shut_down=m.shutdown_wanted,
                                         cordoned_log_dirs=None if m.node is None else cordoned_report(m.node))
        self.net.send(Message(m.id, leader, "heartbeat", m.epoch, {"request": request}))

    def controller_registration_due(self, m: Member) -> bool:
        node = m.node
        if node is None or not node.registers_controller() or node.image is None:
            return False
        image = node.image
        # (images are immutable, and a commit that changes neither the features nor the cluster
        # keeps those parts: the answer holds until one of them changes)
        cached = m.registration_due
        if cached is not None and cached[0] is node and cached[1] is image.features and cached[2] is image.cluster \
                and cached[3] == m.state.incarnation:
            return cached[4]
        due = self._registration_due_on(m, node, image)
        m.registration_due = (node, image.features, image.cluster, m.state.incarnation, due)
        return due

    @staticmethod
    def _registration_due_on(m: Member, node: Any, image: Any) -> bool:
        mv = image.metadata_version
        if mv is None or not node.catalog.supports("controller_registration", mv):
            return False
        reg = image.cluster.controller(m.id)
        return reg is None or str(reg.incarnation_id) != m.state.incarnation

    def _on_register_reply(self, m: Member, msg: Message) -> None:
        d = msg.data
        comm = self._reply_arrived(m)
        if d.get("error"):
            self._refused(m, "broker", d["error"], d.get("message"))
            self._after_failure(m, comm)
            return
        comm.failed_attempts = 0
        comm.registered_once = True
        refreshed, comm.refresh = comm.refresh, False
        m.broker_epoch = d["broker_epoch"]
        m.detail = None
        if refreshed:  # (an amended registration: its fencing kept, its epoch the reply's, as the release gives)
            self._lifecycle_arm(m, 0)
            return
        m.fenced = True
        self.engine.emit(m.id, "registered", {"broker_epoch": m.broker_epoch, "release": m.state.release})
        self._lifecycle_arm(m, 0)  # a heartbeat at once

    def _on_controller_register_reply(self, m: Member, msg: Message) -> None:
        d = msg.data
        if d.get("error"):
            self._refused(m, "controller", d["error"], d.get("message"))
        else:
            m.controller_registered = True
            self.engine.emit(m.id, "registered", {"controller": True, "release": m.state.release})

    def _on_heartbeat_reply(self, m: Member, msg: Message) -> None:
        d = msg.data
        comm = self._reply_arrived(m)
        if d.get("error"):
            if d["error"] in ("STALE_BROKER_EPOCH", "BROKER_ID_NOT_REGISTERED"):
                m.broker_epoch = None  # register again
            self._after_failure(m, comm)
            return
        comm.failed_attempts = 0
        reply: BrokerHeartbeatReply = d["reply"]
        m.fenced = reply.is_fenced
        if reply.should_shut_down:
            m.shutdown_done = True
            return
        self._lifecycle_arm(m, self._next_heartbeat_ms(m, comm, reply))

    def _next_heartbeat_ms(self, m: Member, comm: BrokerComm, reply: BrokerHeartbeatReply) -> int:
        """BrokerLifecycleManager's schedule after a heartbeat answered without error."""
        if m.shutdown_wanted:
            comm.shutdown_replies += 1
            return SHUTDOWN_FIRST_RETRY_MS if comm.shutdown_replies == 1 else self.config.broker_heartbeat_interval_ms
        if comm.state == STARTING:
            if reply.is_caught_up:  # start-up goes on at once here, so it is ready to be unfenced
                comm.state, comm.ready_to_unfence = RECOVERY, True
            return CATCH_UP_HEARTBEAT_MS
        if comm.state == RECOVERY and not reply.is_fenced:
            comm.state = RUNNING
        return self.config.broker_heartbeat_interval_ms

    def _refused(self, m: Member, what: str, error: str, message: str | None) -> None:
        text = (f"Unable to register {what} {m.id} because the controller returned error {error}"
                + (f": {message}" if message else ""))
        if m.detail != text and error not in TRANSIENT_REFUSALS:
            self.engine.emit(m.id, "refused", {"text": text})
        m.detail = text

    # -------------------------------------------------------------- the active controller's side

    def _leader_of(self, m: Member, msg: Message, reply_kind: str) -> bool:
        if m.role == LEADER and self.engine.controller is not None and self.engine.controller_id == m.id:
            return True
        self.net.send(Message(m.id, msg.src, reply_kind, m.epoch, {"error": "NOT_CONTROLLER", "message": None}))
        return False

    def _answer(self, m: Member, msg: Message, reply_kind: str, result: Any, data: dict[str, Any]) -> None:
        if result is None:
            data = {"error": "NOT_CONTROLLER", "message": None}
        elif not result.ok:
            data = {"error": result.error.name, "message": result.error.message}
        self.net.send(Message(m.id, msg.src, reply_kind, m.epoch, data))

    def _on_register(self, m: Member, msg: Message) -> None:
        if not self._leader_of(m, msg, "register-reply"):
            return
        request = msg.data["request"]
        result = self.engine.execute(lambda ctx: register_broker(ctx, request, self.engine.controller.heartbeats))
        data = {} if result is None or not result.ok else {"broker_epoch": result.response.broker_epoch}
        self._answer(m, msg, "register-reply", result, data)

    def _on_controller_register(self, m: Member, msg: Message) -> None:
        if not self._leader_of(m, msg, "controller-register-reply"):
            return
        request = msg.data["request"]
        result = self.engine.execute(lambda ctx: register_controller(ctx, request))
        self._answer(m, msg, "controller-register-reply", result, {})

    def _on_heartbeat(self, m: Member, msg: Message) -> None:
        if not self._leader_of(m, msg, "heartbeat-reply"):
            return
        request = msg.data["request"]
        before = self.engine.controller.image.cluster.broker(request.broker_id) if self.engine.controller else None
        result = self.engine.execute(lambda ctx: broker_heartbeat(ctx, request, self.engine.controller.heartbeats))
        after = self.engine.controller.image.cluster.broker(request.broker_id) if self.engine.controller else None
        if before is not None and after is not None and before.fenced != after.fenced:
            self.engine.emit(request.broker_id, "fence" if after.fenced else "unfence",
                      {"by": m.id, "broker_epoch": after.epoch})
        self._answer(m, msg, "heartbeat-reply", result, {} if result is None else {"reply": result.response})

    def leader_tick(self, m: Member, epoch: int) -> None:
        """The active controller's periodic work: fence expired sessions, the idle NoOpRecord."""
        if not m.running or m.role != LEADER or m.epoch != epoch or self.engine.controller_id != m.id:
            return
        qc = self.engine.controller
        if qc is not None:
            hb = qc.heartbeats
            if hb.expired_sessions(self.engine.now):
                result = self.engine.execute(lambda ctx: expire_sessions(ctx, hb))
                if result is not None and result.ok:
                    for b in result.response.fenced_brokers:
                        self.engine.emit(b, "fence", {"by": m.id, "why": "session expired"})
            start = m.log.log_end_offset
            if self.engine.controller is not None and self.engine.controller.maybe_write_noop() is not None:
                self.engine.raft.appended(m, start)
        for v in m.voters:  # BeginQuorumEpoch again to voters that do not fetch
            if v != m.id and self.engine.now - m.fetched_at(v, -10**9) > self.config.fetch_timeout_ms:
                self.net.send(Message(m.id, v, "begin-epoch", m.epoch, {}))
        self.sched.after(self.config.metadata_max_idle_interval_ms, "controller-tick", m.id,
                         lambda: self.leader_tick(m, epoch))

    # -------------------------------------------------------------- KIP-778 reactions

    def react(self, m: Member, found: Unsupported) -> None:
        """A node met a finalized level its software does not support (KIP-778): a broker
        unregisters and stops, a controller stops (the active one resigns first)."""
        what = f"Node {m.id} ({m.state.role_text}, Kafka {m.state.release}): {found.text()}"
        if m.role == LEADER:
            text = f"{what}; it resigns and stops."
        elif m.state.is_broker:
            text = f"{what}; it unregisters and stops."
        else:
            text = f"{what}; it stops."
        self.engine.emit(m.id, "unsupported", {"text": text})
        detail = f"stopped: {found.text()}"
        fatal = m.node.replay_refusal({found.feature: found.level}) if m.node is not None else None
        if fatal is not None and m.role != LEADER:
            # A controller's QuorumController replays what is committed: its FeatureControlManager
            # fails on the record, which is fatal for the process (Kafka's text).
            self.engine.emit(m.id, "failed", {"text": fatal})
            detail = fatal
        registered = m.state.is_broker and m.broker_epoch is not None
        self.engine.halt(m, detail, "failed")
        if registered and self.engine.controller is not None:
            self.engine.execute(lambda ctx: unregister_broker(ctx, m.id, self.engine.controller.heartbeats))

