"""`kraftsim.serve(...)`: a simulated cluster served over Kafka's protocol for the length of a
`with` block, for users' own tests of code that talks to Kafka.

    with kraftsim.serve(combined=1, release="4.4.0") as kafka:
        admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
        ...
        kafka.crash(1); kafka.start(1)

The cluster is a new one (shape and release as `kraftsim cluster create` takes them), or a
cluster directory or scenario file (`target`). The server runs on a background thread; the
fault controls run on its thread too and return once listeners follow (a crashed node's port
refuses connections when `crash` returns). A started broker listens as Kafka's does, only once
it is past start-up (caught up and unfenced: a restarted 4.x broker about 10 s simulated
later), so a client retries its connection meanwhile, as it would against Kafka.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, TypeVar

from kraftsim.sim import Simulation, SimConfig
from kraftsim.storage.server_config import validate_node_configs
from kraftsim.testing import ClusterShape
from kraftsim.wire.recording import Recorder
from kraftsim.wire.served import Listener, ServedCluster
from kraftsim.wire.session import Commands, Session
from kraftsim.wire.target import Opened, open_target

T = TypeVar("T")


class ServedKafka:
    """What `serve` yields: the addresses to bootstrap from and the fault controls."""

    def __init__(self, session: Session):
        self._session = session
        info = session.call(lambda s: s.ready_info())
        #: The ready file's object (contract 7).
        self.info: dict[str, Any] = info
        self.bootstrap_servers: str = info["bootstrap_servers"]
        self.bootstrap_controllers: str = info["bootstrap_controllers"]
        self.cluster_id: str = info["cluster_id"]
        self.directory: Path = session.opened.directory

    def address(self, node_id: int, role: str = "broker") -> str:
        """host:port of one node's listener ("broker" or "controller")."""
        node = next(n for n in self.info["nodes"] if n["id"] == node_id)
        return str(node[role])

    def call(self, fn: Callable[[ServedCluster], T]) -> T:
        """Run `fn(served_cluster)` on the server's thread (to read the Simulation safely)."""
        return self._session.call(fn)

    def answer(self, node_id: int, role: str, payload: bytes) -> bytes | None:
        """The response frame a node's listener gives to one request frame (size prefix
        removed); None when it would close the connection instead."""
        server = self._session.server
        return self.call(lambda s: server.answer(Listener(node_id, role), payload))

    def crash(self, nodes: int | Sequence[int]) -> None:
        self.call(lambda s: s.crash(nodes))

    def stop(self, nodes: int | Sequence[int]) -> None:
        self.call(lambda s: s.stop(nodes))

    def start(self, nodes: int | Sequence[int], release: str | None = None) -> None:
        self.call(lambda s: s.start(nodes, release))

    def partition(self, groups: Sequence[Sequence[int]]) -> None:
        self.call(lambda s: s.partition(groups))

    def heal(self) -> None:
        self.call(lambda s: s.heal())

    def roll(self, release: str, nodes: Sequence[int] | str = "all") -> None:
        self.call(lambda s: s.roll(release, nodes))

    def finalized(self) -> dict[str, int]:
        return self.call(lambda s: s.sim.finalized())

    def leader(self) -> int | None:
        return self.call(lambda s: s.sim.leader())


@contextmanager
def serve(target: str | Path | None = None, *, controllers: int = 0, brokers: int = 0, combined: int = 0,
          release: str | None = None, release_version: str | None = None, features: Mapping[str, int] | None = None,
          seed: int = 0, policy: str = "kafka", directory: str | Path | None = None, speed: float = 1.0,
          record: str | Path | None = None, host: str = "127.0.0.1",
          config: SimConfig | None = None, commands: Commands | None = None,
          auto_create_topics: bool = True, configs: Mapping[str, object] | None = None) -> Iterator[ServedKafka]:
    """Serve a cluster for the `with` block (see the module docstring). Without `target`, a new
    cluster (one combined node on the newest release unless told otherwise) in `directory` or a
    temporary directory; `record` writes the session as a scenario file when the block ends;
    `commands` carries out the cluster commands sent to the directory while it is served
    (`kraftsim.serve` passes the CLI's own); `auto_create_topics` is the brokers'
    auto.create.topics.enable; `configs` the nodes' server configs of a new cluster
    (`cluster create --config`: `{"unstable.feature.versions.enable": True}`)."""
    temporary = None
    if target is not None:
        opened = open_target(target, directory)
    else:
        if release is None:
            from kraftsim.versions import default_catalog
            release = default_catalog().releases[-1].name
        if controllers + combined == 0:
            combined = 1
        if directory is None:
            temporary = tempfile.TemporaryDirectory(prefix="kraftsim-serve-")
            directory = Path(temporary.name) / "cluster"
        sim = Simulation.create(directory, controllers=controllers, brokers=brokers, combined=combined,
                                release=release, release_version=release_version, features=features, seed=seed,
                                policy=policy, config=config, durable=False, configs=configs)
        shape = ClusterShape(controllers=controllers, brokers=brokers, release=release,
                             release_version=release_version, features=dict(features or {}), combined=combined,
                             configs=validate_node_configs(configs or {}))
        if commands is not None:
            sim.save()  # a cluster directory from the start: the commands sent to it open it
        rec = Recorder(name="served cluster", seed=seed, policy=policy, shape=shape, origin_ms=sim.now_ms)
        opened = Opened(sim, Path(directory), rec, temporary)
    session = Session(opened, host=host, speed=speed, record=None if record is None else Path(record),
                      commands=commands, auto_create_topics=auto_create_topics)
    session.start_thread()
    try:
        yield ServedKafka(session)
    finally:
        session.close_thread()
