"""A served cluster: the Simulation, its listeners' addresses, simulated time that follows
the wall clock, and every state-changing act recorded at its simulated time.

Everything here runs on the server's one thread (the asyncio loop's), between simulation
steps, so requests and the simulation never race. Operations that Simulation carries out by
running events (a start, a committed UpdateFeatures) move simulated time ahead of the wall
clock; the clock is then re-anchored there, so time never goes back and never jumps to catch up.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kraftsim.sim import SimError, Simulation
from kraftsim.wire.recording import Recorder

BROKER, CONTROLLER = "broker", "controller"
#: What Kafka names each listener (a served node has one of each kind it needs).
LISTENER_NAMES = {BROKER: "PLAINTEXT", CONTROLLER: "CONTROLLER"}


@dataclass(frozen=True)
class Listener:
    """One node's listener: the node and which kind ("broker" or "controller")."""

    node_id: int
    role: str


@dataclass
class ServedCluster:
    """A Simulation served over Kafka's protocol (see the module docstring)."""

    sim: Simulation
    host: str = "127.0.0.1"
    speed: float = 1.0
    recorder: Recorder | None = None
    #: The brokers' auto.create.topics.enable (Kafka's default: true).
    auto_create_topics: bool = True
    #: listener -> its port; chosen once, kept when the node restarts.
    ports: dict[Listener, int] = field(default_factory=dict)
    #: Called after an operation changed which nodes run (the server opens or closes listeners).
    on_change: Callable[[], None] | None = None
    clock: Callable[[], float] = time.monotonic
    #: The wall clock clients read (seconds since the epoch).
    epoch_clock: Callable[[], float] = time.time
    _wall0: float = 0.0
    _sim0: int = 0

    def __post_init__(self) -> None:
        self.anchor()

    # ------------------------------------------------------------------ time

    def anchor(self) -> None:
        """Simulated time from now on follows the wall clock from where it is."""
        self._wall0, self._sim0 = self.clock(), self.sim.now_ms

    def client_time_ms(self, sim_ms: int) -> int:
        """A simulated moment as a client's wall clock reads it: as long before the client's now
        as it is before the simulation's now (a simulated cluster's clock starts on a fixed date,
        so its own times would read as hundreds of days ago). Negative times (never) stay."""
        if sim_ms < 0:
            return sim_ms
        return int(self.epoch_clock() * 1000) - (self.sim.now_ms - sim_ms)

    def follow_clock(self) -> None:
        """Run the simulation up to the simulated time the wall clock says it is."""
        target = self._sim0 + int((self.clock() - self._wall0) * 1000 * self.speed)
        if target > self.sim.now_ms:
            self.sim.advance(target)
        elif target < self.sim.now_ms:
            self.anchor()  # an operation ran ahead: go on from there

    # ------------------------------------------------------------------ shape

    def listeners(self) -> list[Listener]:
        """Every listener of every node, by node id (broker first for a combined node)."""
        out = []
        for n in self.sim.nodes():
            out += [Listener(n.id, role) for role in (BROKER, CONTROLLER) if role in n.roles]
        return out

    def running(self, listener: Listener) -> bool:
        return self.sim.running_node(listener.node_id) is not None

    def process(self, listener: Listener) -> str | None:
        """The node's running process, by its incarnation id (None when it is down): a listener
        belongs to one. A process resumed when the directory is opened again (after a handed-over
        command) is the same one; a restarted one is not."""
        return self.sim.incarnation(listener.node_id)

    def listening(self, listener: Listener) -> bool:
        """Whether the listener accepts connections now, as Kafka opens it: a controller
        listener while its process runs, a broker listener only once the broker is past
        start-up (image published and first unfenced since its process started:
        Simulation.serving_clients, as BrokerServer.startup enables request processing)."""
        if listener.role == BROKER:
            return self.sim.serving_clients(listener.node_id)
        return self.running(listener)

    def address(self, listener: Listener) -> str:
        """host:port as clients take it (an IPv6 literal in brackets, as Kafka's Utils.getHost
        reads it)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.ports[listener]}"

    def port_of(self, node_id: int, role: str) -> int | None:
        return self.ports.get(Listener(node_id, role))

    def bootstrap(self, role: str) -> str:
        """host:port of every listener of that kind, by node id (what clients bootstrap from)."""
        return ",".join(self.address(x) for x in self.listeners() if x.role == role and x in self.ports)

    def ready_info(self) -> dict[str, Any]:
        """The ready file's object (contract 7)."""
        nodes = []
        for n in self.sim.nodes():
            b, c = Listener(n.id, BROKER), Listener(n.id, CONTROLLER)
            nodes.append({"id": n.id, "roles": list(n.roles), "release": n.release,
                          "broker": self.address(b) if b in self.ports else None,
                          "controller": self.address(c) if c in self.ports else None})
        return {"cluster_id": self.sim.cluster_id, "bootstrap_servers": self.bootstrap(BROKER),
                "bootstrap_controllers": self.bootstrap(CONTROLLER), "nodes": nodes}

    # ------------------------------------------------------------------ operations

    def record(self, op: str, args: dict[str, object], at_ms: int) -> None:
        if self.recorder is not None:
            self.recorder.add(op, args, at_ms, self.sim.now_ms)

    def operate(self, op: str, args: dict[str, object]) -> None:
        """A scenario op (crash, stop, start, partition, heal, run, roll) on the served cluster,
        recorded; refusals raise SimError with Kafka's text (and are recorded as expected)."""
        at = self.sim.now_ms
        error: str | None = None
        try:
            _OPS[op](self.sim, args)
        except SimError as e:
            error = str(e)
        finally:
            self.anchor()
            if self.on_change is not None:
                self.on_change()
        if self.recorder is not None:
            self.recorder.add(op, args, at, self.sim.now_ms, error)
        if error is not None:
            raise SimError(error)

    def crash(self, nodes: Sequence[int] | int) -> None:
        self.operate("crash", {"nodes": _ids(nodes)})

    def stop(self, nodes: Sequence[int] | int) -> None:
        self.operate("stop", {"nodes": _ids(nodes)})

    def start(self, nodes: Sequence[int] | int, release: str | None = None) -> None:
        self.operate("start", {"nodes": _ids(nodes), "release": release})

    def partition(self, groups: Sequence[Sequence[int]]) -> None:
        self.operate("partition", {"groups": [sorted(g) for g in groups]})

    def heal(self) -> None:
        self.operate("heal", {})

    def roll(self, release: str, nodes: Sequence[int] | str = "all") -> None:
        self.operate("roll", {"release": release, "nodes": nodes if isinstance(nodes, str) else _ids(nodes)})


def _ids(nodes: Sequence[int] | int) -> list[int]:
    return [nodes] if isinstance(nodes, int) else sorted(int(i) for i in nodes)


_OPS: dict[str, Callable[[Simulation, dict[str, Any]], None]] = {
    "crash": lambda sim, a: sim.crash(a["nodes"]),
    "stop": lambda sim, a: sim.stop(a["nodes"]),
    "start": lambda sim, a: sim.start(a["nodes"], a.get("release")),
    "partition": lambda sim, a: sim.partition(a["groups"]),
    "heal": lambda sim, a: sim.heal(),
    "run": lambda sim, a: sim.run(a["ms"]),
    "roll": lambda sim, a: sim.roll(a["release"], a["nodes"]),
}
