"""The listeners of a served cluster on one asyncio event loop, and the driver of its clock.

Every running node listens on its own port (brokers and combined nodes a broker listener,
controllers and combined nodes a controller listener). A node that is down has no listener:
its port is kept, its clients' connections are cut (the process died), and it listens on the
same port when it starts again. As in Kafka, a controller listener opens when its process
starts, a broker listener only once the broker is past start-up (its first image published
and first unfenced since the process started: BrokerServer.startup enables request
processing, and opens the socket, only then); until then its port refuses connections. Once
open it stays open until the process stops (a broker fenced later keeps listening). Each
connection reads one request, answers it and then reads the next, so answers go out in order
with their correlation ids. Requests are handled on the loop's thread between simulation
steps; the clock task advances the simulation to the wall clock's simulated time every few
milliseconds.

Hostile input never ends the server: a frame that cannot be read closes that connection (as
Kafka does), an unexpected failure in a handler is one line on stderr and a closed
connection, and the number of open connections is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import socket
import sys
import time
from collections.abc import Callable
from typing import Any

from kraftsim.wire.admin_handlers import HANDLERS as ADMIN_HANDLERS
from kraftsim.wire.client_metrics_handlers import HANDLERS as CLIENT_METRICS_HANDLERS
from kraftsim.wire.config_handlers import HANDLERS as CONFIG_HANDLERS
from kraftsim.wire.delete_records_handlers import HANDLERS as DELETE_RECORDS_HANDLERS
from kraftsim.wire.codec import UnsupportedRequest, encode_response, parse_request
from kraftsim.wire.fit import fit_response
from kraftsim.wire.framing import DEFAULT_MAX_FRAME, FrameError, read_frame
from kraftsim.wire.handlers import (
    API_VERSIONS_KEY,
    DESCRIBE_CLUSTER_KEY,
    DESCRIBE_CONFIGS_KEY,
    METADATA_KEY,
    Handler,
    NotCarriedOut,
    UnparsableRequest,
    api_versions,
    describe_cluster,
    describe_configs,
    metadata,
    serves,
    unsupported_api_versions,
)
from kraftsim.sim import api_version_table
from kraftsim.wire.acl_handlers import HANDLERS as ACL_HANDLERS
from kraftsim.wire.coordinator_handlers import HANDLERS as COORDINATOR_HANDLERS
from kraftsim.wire.quota_handlers import HANDLERS as QUOTA_HANDLERS
from kraftsim.wire.scram_handlers import HANDLERS as SCRAM_HANDLERS
from kraftsim.wire.quorum import HANDLERS as QUORUM_HANDLERS
from kraftsim.wire.served import Listener, ServedCluster
from kraftsim.wire.log_dir_handlers import HANDLERS as LOG_DIR_HANDLERS
from kraftsim.wire.offset_handlers import HANDLERS as OFFSET_HANDLERS
from kraftsim.wire.producer_handlers import HANDLERS as PRODUCER_HANDLERS
from kraftsim.wire.reassignment_handlers import HANDLERS as REASSIGNMENT_HANDLERS
from kraftsim.wire.topic_handlers import HANDLERS as TOPIC_HANDLERS

#: Every request kraftsim answers beyond ApiVersions, by api key.
HANDLERS: dict[int, Handler] = {METADATA_KEY: metadata, DESCRIBE_CLUSTER_KEY: describe_cluster,
                                DESCRIBE_CONFIGS_KEY: describe_configs, **ACL_HANDLERS,
                                **QUORUM_HANDLERS, **ADMIN_HANDLERS, **TOPIC_HANDLERS,
                                **CONFIG_HANDLERS, **QUOTA_HANDLERS, **SCRAM_HANDLERS,
                                **REASSIGNMENT_HANDLERS, **LOG_DIR_HANDLERS, **COORDINATOR_HANDLERS,
                                **OFFSET_HANDLERS, **DELETE_RECORDS_HANDLERS, **PRODUCER_HANDLERS,
                                **CLIENT_METRICS_HANDLERS}
#: How often (wall seconds) the clock task moves simulated time on.
TICK_S = 0.005
#: Open connections at most (all listeners together); more are closed at once.
MAX_CONNECTIONS = 1000
#: How long (wall seconds) serving waits at most for every listener before it says it is ready
#: anyway, whatever the simulated bound (`WireServer.start_up_bound_ms`) and the speed.
START_UP_WALL_S = 30.0


def free_port(host: str) -> int:
    """A port nothing listens on now (for a node that is down when serving starts)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def say(text: str) -> None:
    """One line on stderr (the server never prints a traceback)."""
    print(f"kraftsim serve: {text}", file=sys.stderr, flush=True)


class WireServer:
    """The listeners and the clock of one ServedCluster (see the module docstring)."""

    def __init__(self, served: ServedCluster, *, max_frame: int = DEFAULT_MAX_FRAME,
                 max_connections: int = MAX_CONNECTIONS, log: Callable[[str], None] = say):
        self.served = served
        self.max_frame = max_frame
        self.max_connections = max_connections
        self.log = log
        self.servers: dict[Listener, asyncio.Server] = {}
        self.connections: dict[Listener, set[asyncio.StreamWriter]] = {}
        self.stopping = asyncio.Event()
        #: Cleared while the cluster is closed (a handed-over command has its directory).
        self._serving = asyncio.Event()
        self._serving.set()
        self.answered = 0
        served.on_change = self._changed
        self._dirty = False
        #: (listener, api key, version) -> (the image and process it was built from, the frame);
        #: the first two are compared by identity only
        self._answers: dict[tuple[Listener, int, int, object], tuple[object, object, bytes]] = {}
        #: The advertised APIs kraftsim does not carry out that a client asked for (said once each).
        self._unserved_said: set[str] = set()
        #: Each open listener's process, by incarnation id (a listener belongs to one: it closes
        #: when that one stops or another takes its place).
        self._process: dict[Listener, str] = {}
        #: Listeners of running nodes that do not listen yet (a broker still starting up).
        self._gated: set[Listener] = set()

    # ------------------------------------------------------------------ listeners

    def _changed(self) -> None:
        self._dirty = True

    async def open_listeners(self) -> None:
        """Open every listener that accepts connections now (`ServedCluster.listening`) and has
        none; close those whose process stopped (cutting their connections: it died). A listener
        not open keeps its port for when it opens."""
        self._dirty = False
        for listener in self.served.listeners():
            process = self.served.process(listener)
            if listener in self.servers and self._process.get(listener) != process:
                self._close(listener)  # its process stopped (crashed, stopped, restarted)
            if listener in self.servers:
                continue
            if process is None or not self.served.listening(listener):
                if process is None:
                    self._gated.discard(listener)
                else:
                    self._gated.add(listener)
                if listener not in self.served.ports:
                    self.served.ports[listener] = free_port(self.served.host)
                continue
            self._gated.discard(listener)
            port = self.served.ports.get(listener, 0)
            try:
                server = await asyncio.start_server(functools.partial(self._connection, listener),
                                                    self.served.host, port, reuse_address=True)
            except OSError as e:
                if not port:
                    raise  # no port at all on this host: serving cannot start
                self.log(f"node {listener.node_id} cannot listen on {self.served.host}:{port} again: "
                         f"{e.strerror or e}")
                continue  # (tried again on the next change)
            self.servers[listener] = server
            self._process[listener] = process
            self.served.ports[listener] = server.sockets[0].getsockname()[1]

    def _close(self, listener: Listener) -> None:
        self.servers.pop(listener).close()
        self._process.pop(listener, None)
        for w in self.connections.pop(listener, set()):
            w.transport.abort()

    def _listeners_due(self) -> bool:
        """Whether `open_listeners` has something to do (asked on every tick, so cheap): an
        operation changed which nodes run, a starting broker got past start-up, or a process
        with an open listener stopped by itself."""
        if self._dirty:
            return True
        if any(self.served.listening(x) for x in self._gated):
            return True
        return any(self.served.process(x) != p for x, p in self._process.items())

    def start_up_bound_ms(self) -> int:
        """Simulated time serving waits at most for every listener to open: twice the broker
        session timeout (a restarted broker stays fenced until its old session expires, about
        10 s on 4.x, 13 s for a crashed 3.9 broker with its back-off)."""
        return 2 * self.served.sim.config.broker_session_timeout_ms

    async def until_listening(self) -> list[Listener]:
        """Run the clock until every running node's listeners accept connections, for at most
        `start_up_bound_ms` simulated (and START_UP_WALL_S wall seconds): those still closed."""
        start, deadline = self.served.sim.now_ms, time.monotonic() + START_UP_WALL_S
        bound = self.start_up_bound_ms()
        while not self.stopping.is_set() and time.monotonic() < deadline:
            if self._serving.is_set():
                if not self._step():
                    break
                if self._listeners_due():
                    await self.open_listeners()
                if not self._gated or self.served.sim.now_ms - start >= bound:
                    break
            await asyncio.sleep(TICK_S)
        return sorted(self._gated, key=lambda x: (x.node_id, x.role))

    async def _until_started(self, listener: Listener) -> None:
        """Hold a request on an open listener whose process has not published its image yet
        (one resumed when a handed-over command gave the directory back), for at most
        `start_up_bound_ms` simulated (and START_UP_WALL_S wall seconds)."""
        start, deadline = self.served.sim.now_ms, time.monotonic() + START_UP_WALL_S
        bound = self.start_up_bound_ms()
        while not self.stopping.is_set() and time.monotonic() < deadline \
                and self.served.sim.now_ms - start < bound and self.served.running(listener) \
                and not self.served.listening(listener):
            await asyncio.sleep(TICK_S)
            await self.resumed()

    def pause(self) -> None:
        """Hold every request and the clock (the Simulation is closed until `resume`)."""
        self._serving.clear()

    def resume(self) -> None:
        self._serving.set()

    async def resumed(self) -> None:
        """Return once the cluster is served again (at once when it is)."""
        if not self._serving.is_set():
            await self._serving.wait()

    async def close(self) -> None:
        for server in self.servers.values():
            server.close()
        for writers in self.connections.values():
            for w in writers:
                w.transport.abort()
        self.servers.clear()
        self.connections.clear()
        self._process.clear()

    # ------------------------------------------------------------------ the clock

    async def run_clock(self, for_ms: int | None = None) -> None:
        """Move simulated time with the wall clock until stopped (or `for_ms` simulated ms passed)."""
        start = self.served.sim.now_ms
        while not self.stopping.is_set():
            if not self._serving.is_set():  # the cluster is closed: its time waits too
                await asyncio.sleep(TICK_S)
                continue
            if not self._step():
                break
            if self._listeners_due():
                await self.open_listeners()
            if for_ms is not None and self.served.sim.now_ms - start >= for_ms:
                self.stopping.set()
                break
            await asyncio.sleep(TICK_S)

    def _step(self) -> bool:
        """Simulated time follows the wall clock; False when the simulation failed (reported,
        serving stops)."""
        try:
            self.served.follow_clock()
        except Exception as e:
            self.log(f"the simulation failed: {type(e).__name__}: {e}")
            self.stopping.set()
            return False
        return True

    # ------------------------------------------------------------------ connections

    async def _connection(self, listener: Listener, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        open_now = sum(len(x) for x in self.connections.values())
        if open_now >= self.max_connections or listener not in self.servers:
            writer.transport.abort()
            return
        self.connections.setdefault(listener, set()).add(writer)
        try:
            while not self.stopping.is_set():
                try:
                    payload = await read_frame(reader, self.max_frame)
                except FrameError:
                    break  # Kafka closes the connection of a bad size
                if payload is None:
                    break
                answer = None if self._serving.is_set() else self.answer_from_cache(listener, payload)
                if answer is None:
                    await self.resumed()
                    if not self.served.listening(listener):
                        await self._until_started(listener)
                    answer = self.answer(listener, payload)
                if answer is None:
                    break
                writer.write(answer)
                await writer.drain()
                self.answered += 1
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass  # the client went away mid-request
        except Exception as e:  # never a traceback: the connection ends, the server goes on
            self.log(f"closing a connection to node {listener.node_id}: {type(e).__name__}: {e}")
        finally:
            self.connections.get(listener, set()).discard(writer)
            writer.transport.abort()

    def answer(self, listener: Listener, payload: bytes) -> bytes | None:
        """The response frame to one request frame; None closes the connection."""
        if not self.served.running(listener):
            return None
        try:
            req = parse_request(payload)
        except UnsupportedRequest as e:
            if e.api_key == API_VERSIONS_KEY:
                return encode_response(API_VERSIONS_KEY, 0, e.correlation_id,
                                       unsupported_api_versions(self.served, listener))
            if serves(self.served, listener, e.api_key, e.api_version):
                self._say_unserved(e.api_key, e.api_version if e.api_key in HANDLERS else None)
            return None
        except FrameError:
            return None
        if req.api_key == API_VERSIONS_KEY:
            return self._cached(listener, req.api_key, req.api_version, req.correlation_id, self._api_versions)
        handler = HANDLERS.get(req.api_key)
        advertised = serves(self.served, listener, req.api_key, req.api_version)
        if handler is None and advertised:
            self._say_unserved(req.api_key)
        if handler is None or not advertised:
            return None  # not enabled on this listener: Kafka closes the connection
        if req.api_key == METADATA_KEY and req.body.get("Topics") is None:
            asked = (bool(req.body.get("IncludeClusterAuthorizedOperations")),
                     bool(req.body.get("IncludeTopicAuthorizedOperations")))
            return self._cached(listener, req.api_key, req.api_version, req.correlation_id,
                                lambda x, v: (v, metadata(self.served, x, v, req.body)), variant=asked)
        try:
            body = handler(self.served, listener, req.api_version, req.body)
        except NotCarriedOut as e:
            self._say_once(str(e))
            return None
        except UnparsableRequest:
            return None
        return encode_response(req.api_key, req.api_version, req.correlation_id,
                               fit_response(req.api_key, req.api_version, body))

    def _say_unserved(self, api_key: int, version: int | None = None) -> None:
        """Once each: a request the node advertises (as its release does) that kraftsim does not
        carry out (`version`: only that version of an API it serves). Its connection is closed,
        which a client takes for a broken connection and retries until its own timeout: the
        operator should know why."""
        name = api_version_table().names.get(api_key, "an API")
        self._say_once(f"{name} (API key {api_key})" if version is None else f"{name} v{version} (API key {api_key})")

    def _say_once(self, what: str) -> None:
        if what in self._unserved_said:
            return
        self._unserved_said.add(what)
        self.log(f"{what} is not carried out by kraftsim serve: the connection that asked was closed, and the "
                 "client will retry until its timeout")

    def answer_from_cache(self, listener: Listener, payload: bytes) -> bytes | None:
        """While a handed-over command has the cluster: an ApiVersions request answered as the
        node last answered it (clients check a connection with it), None for anything else
        (it waits until the cluster is served again)."""
        try:
            req = parse_request(payload)
        except (UnsupportedRequest, FrameError):
            return None
        hit = self._answers.get((listener, req.api_key, req.api_version, None)) if req.api_key == API_VERSIONS_KEY else None
        if hit is None:
            return None
        return _with_correlation_id(hit[2], req.correlation_id)

    def _api_versions(self, listener: Listener, version: int) -> tuple[int, dict[str, object]]:
        return api_versions(self.served, listener, version)

    def _cached(self, listener: Listener, api_key: int, version: int, correlation_id: int,
                build: Callable[[Listener, int], tuple[int, dict[str, object]]], variant: object = None) -> bytes:
        """The answer that depends only on the node's image and release (ApiVersions, Metadata
        of all topics, by `variant`: what else of the request it depends on): built once per
        image the node applied, then only the correlation id changes. Clients poll these; the
        cache is what keeps a poll cheap."""
        node = self.served.sim.running_node(listener.node_id)
        assert node is not None
        key = (listener, api_key, version, variant)
        hit = self._answers.get(key)
        if hit is None or hit[0] is not node.image or hit[1] is not node:
            write_version, body = build(listener, version)
            frame = encode_response(api_key, write_version, 0, fit_response(api_key, write_version, body))
            hit = (node.image, node, frame)
            self._answers[key] = hit
        return _with_correlation_id(hit[2], correlation_id)


def _with_correlation_id(frame: bytes, correlation_id: int) -> bytes:
    """A cached response frame answering the request with this correlation id."""
    return frame[:4] + correlation_id.to_bytes(4, "big", signed=True) + frame[8:]


def quiet_loop_errors(loop: asyncio.AbstractEventLoop, log: Callable[[str], None] = say) -> None:
    """Whatever asyncio would print with a traceback becomes one line."""

    def handler(_loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, (ConnectionError, asyncio.CancelledError)):
            return
        log(context.get("message", "error") + (f": {type(exc).__name__}: {exc}" if exc else ""))

    loop.set_exception_handler(handler)


async def serve_until_stopped(server: WireServer, for_ms: int | None = None,
                              ready: Callable[[], None] | None = None) -> None:
    """Open the listeners, run the clock until every one accepts connections (bounded: then
    one line on stderr names those that do not yet), call `ready`, run the clock until
    stopped, close the listeners."""
    quiet_loop_errors(asyncio.get_running_loop(), server.log)
    await server.open_listeners()
    closed = await server.until_listening()
    if closed and not server.stopping.is_set():
        names = ", ".join(f"node {x.node_id}'s {x.role} listener" for x in closed)
        server.log(f"ready before every listener accepts connections: {names} will once "
                   "the broker has started (caught up and unfenced)")
    if ready is not None:
        ready()
    try:
        await server.run_clock(for_ms)
    finally:
        with contextlib.suppress(Exception):
            await server.close()
