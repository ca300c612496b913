"""SimCluster: the tick simulator (`cluster create --engine ticks`), kept beside the event
simulator (`Simulation`, the default) for the property tests and clusters made with it.

The directory holds `cluster.json` (format 1: cluster id, seed, virtual clock, voters,
leader and epoch, kraft.version, policies, every node's id, roles, release, incarnation and
whether it runs) and one folder per node, `node-<id>/`, formatted as `kafka-storage format`
formats it, with the node's replica of `__cluster_metadata-0` in Kafka's bytes.

How it runs: virtual time moves in ticks of `TICK_MS`; each tick the active controller (a
QuorumController over its own node's log) takes registrations and heartbeats, fences
expired sessions and writes the idle NoOpRecord; whatever it commits is copied byte for
byte into every running node's replica at once and applied by that node's loader. The
leader is the lowest running voter id; a node meeting a finalized level its software does
not support reacts as KIP-778 says. Every record, refusal text and rule is Kafka's (the
controller package); the timing (one tick, every commit replicated at once) is not: the
event simulator models it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

import msgspec

from kraftsim.controller import (
    KIP_778, BrokerHeartbeats, ControllerConfig, ControllerContext, ControllerResult, FeatureUpdate, QuorumController,
    UpdateFeaturesRequest, UpdateFeaturesResponse, unregister_broker,
)
from kraftsim.errors import KraftsimError
from kraftsim.image import MetadataImage
from kraftsim.image import BrokerRegistration
from kraftsim.image import load_path
from kraftsim.protocol.entries import Payload, encode_control_batch
from kraftsim.sim.node.simnode import BROKER, CONTROLLER, NodeState, SimNode, Unsupported, node_directory
from kraftsim.sim.node.format import EPOCH_MS, cluster_id_for, format_node, incarnation_id, joining_node_id
from kraftsim.sim.ticks.lifecycle import TRANSIENT_REFUSALS, TickLifecycleMixin
from kraftsim.sim.ticks.state import STATE_FILE, STATE_FORMAT, ClusterError, ClusterState, dump_state, read_state
from kraftsim.sim.types import MvChangeReport, RollStopped
from kraftsim.sim.node.format import new_cluster_directory_problem, static_voters_record
from kraftsim.storage import (
    METADATA_DIR_NAME, MetadataLog, QuorumState, read_bootstrap_dir, write_leader_epoch_checkpoint,
    write_quorum_state,
)
from kraftsim.storage import dirlock
from kraftsim.storage.bootstrap_start import bootstrap_start_refusal
from kraftsim.storage.fileio import atomic_write
from kraftsim.storage.server_config import validate_node_configs
from kraftsim.storage.names import LEADER_EPOCH_CHECKPOINT_FILE
from kraftsim.storage.reaper import settle
from kraftsim.storage.safepath import new_directory
from kraftsim.versions import Catalog, load_catalog

#: Ticks `settle` waits at most for registrations and unfencing (a restarted broker may have
#: to wait out its old session, broker.session.timeout.ms = 9 s, before it can register).
SETTLE_TICKS = 40
KNOWN_POLICIES = (KIP_778,)


class SimCluster(TickLifecycleMixin):
    """A running simulated cluster (see the module docstring). Use `create` or `open`, then
    `save` (or use it as a context manager, which saves and closes)."""

    def __init__(self, directory: Path, state: ClusterState, *, emit: Callable[[str], None] = print):
        self.directory = Path(directory)
        self.state = state
        self.emit = emit
        self.catalog: Catalog = load_catalog(state.catalog)
        self.nodes: dict[int, SimNode] = {}
        self.controller: QuorumController | None = None
        #: The last registration refusal of each running node (printed once, when it changes).
        self._refusals: dict[int, str] = {n.id: n.note for n in state.nodes if n.running and n.note}
        #: This process's hold on the directory's lock (storage.dirlock), given back by close.
        self._lock: tuple[int, int] | None = None

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    def create(cls, directory: Path | str, *, controllers: int, brokers: int, release: str,
               release_version: str | None = None, features: Sequence[str] = (), seed: int = 0,
               policies: Iterable[str] = (), catalog: str | None = None,
               emit: Callable[[str], None] = print, configs: Mapping[str, object] | None = None) -> "SimCluster":
        """Format every node as `kafka-storage format` would, start them, elect a leader and
        let the cluster settle: controllers 1..N, brokers N+1..N+M. `configs`: the server
        configs every node runs with (storage.server_config.validate_node_configs)."""
        d = Path(directory)
        if controllers < 1:
            raise ClusterError("a cluster needs at least one controller (--controllers N, N >= 1)")
        if brokers < 0:
            raise ClusterError("--brokers must not be negative")
        if (problem := new_cluster_directory_problem(d)) is not None:
            raise ClusterError(problem)
        pols = tuple(sorted(set(policies)))
        for p in pols:
            if p not in KNOWN_POLICIES:
                raise ClusterError(f"unknown policy {p!r}; known policies: {', '.join(KNOWN_POLICIES)}")
        catalog = str(Path(catalog).resolve()) if catalog is not None else None  # usable from any directory
        base = load_catalog(catalog)
        base.find_release(release)  # a clear error for an unknown release
        given = validate_node_configs(configs or {})
        ids = list(range(1, controllers + brokers + 1))
        nodes = [NodeState(id=i, roles=(CONTROLLER,) if i <= controllers else (BROKER,), release=release,
                           incarnation=incarnation_id(seed, i, 1), configs=dict(given) if given else msgspec.UNSET)
                 for i in ids]
        state = ClusterState(cluster_id=cluster_id_for(seed), seed=seed, policies=pols, catalog=catalog,
                             voters=tuple(ids[:controllers]), nodes=nodes)
        with new_directory(d, locked=True):  # nothing half-made is left behind, not even when interrupted
            lock = dirlock.acquire(d)
            try:
                cluster = cls(d, state, emit=emit)
            except BaseException:
                dirlock.release(lock)
                raise
            cluster._lock = lock
            try:
                for n in nodes:
                    cluster._format(n, release_version=release_version, features=features)
                cluster.save()
                emit(f"Created cluster {state.cluster_id} in {d} with {controllers} controller(s) and {brokers} "
                     f"broker(s) on Kafka {release}" + (f" (policies: {', '.join(pols)})" if pols else "") + ".")
                for n in nodes:
                    cluster._open_node(n)
                cluster._elect()
                cluster.settle()
                cluster.save()
            except BaseException:
                cluster.close()
                raise
        return cluster

    @classmethod
    def open(cls, directory: Path | str, *, emit: Callable[[str], None] = print, passive: bool = False) -> "SimCluster":
        """Open a cluster directory: every running node replays its replica; the leader's
        QuorumController replays its log and activates (writing nothing unless a metadata
        transaction was left open); without a leader, one is elected if the voters can.

        `passive` only looks: no activation, election or replication (nothing is written;
        do not save a passive cluster)."""
        d = Path(directory)
        read_state(d)  # a directory that is not a cluster is refused as it is, no lock file made in it
        lock = dirlock.acquire(d, exclusive=not passive)  # a reader never sees an operation half done
        try:
            cluster = cls(d, read_state(d), emit=emit)
        except BaseException:
            dirlock.release(lock)
            raise
        cluster._lock = lock
        try:
            return cls._start(cluster, passive)
        except BaseException:
            cluster.close()
            raise

    @staticmethod
    def _start(cluster: "SimCluster", passive: bool) -> "SimCluster":
        """The running nodes of an opened directory, replayed (and unless passive, led)."""
        cluster._reconcile_epoch()  # only reads: a passive cluster is never saved
        for n in cluster.state.nodes:
            if n.running:
                cluster._open_node(n)
        leader = cluster.state.leader
        if leader is not None and cluster.state.node(leader).running:
            cluster._start_controller(leader, cluster.state.epoch, activate=not passive)
        elif leader is not None and not passive:
            cluster.state.leader = None
        if passive:
            return cluster
        if cluster.controller is None:
            cluster._elect()
        cluster.replicate()
        return cluster

    def _reconcile_epoch(self) -> None:
        """A command killed after the nodes' logs moved on but before cluster.json was saved
        leaves a newer epoch on disk than the file says: the quorum then elects again, above it."""
        newest = self.state.epoch
        for n in self.state.nodes:
            d = node_directory(self.directory, n.id) / METADATA_DIR_NAME
            if not d.is_dir():
                continue
            with MetadataLog.open(d, read_only=True) as log:
                newest = max([newest] + [e.epoch for e in log.leader_epochs()])
        if newest > self.state.epoch:
            self.state.epoch = newest
            self.state.leader = None

    def __enter__(self) -> "SimCluster":
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.save()
        finally:
            self.close()

    def save(self) -> None:
        """Write cluster.json and each running node's raft files (quorum-state, leader-epoch-checkpoint)."""
        for node in self.nodes.values():
            if node.state.running:
                self._write_raft_files(node)
        atomic_write(self.directory / STATE_FILE, dump_state(self.state).encode("utf-8"))

    def close(self) -> None:
        try:
            for node in self.nodes.values():
                node.close()
        finally:
            lock, self._lock = self._lock, None
            try:
                settle(self.directory)  # (no file marked for deletion is left for the next holder to see)
            finally:
                dirlock.release(lock)

    # ------------------------------------------------------------------ nodes

    @property
    def kip_778(self) -> bool:
        return KIP_778 in self.state.policies

    def now(self) -> int:
        return self.state.now_ms

    def node(self, node_id: int) -> SimNode:
        """The node's runtime (opened if it runs)."""
        state = self.state.node(node_id)
        if node_id not in self.nodes:
            self.nodes[node_id] = self._make_node(state)
        return self.nodes[node_id]

    @property
    def heartbeats(self) -> BrokerHeartbeats | None:
        """The active controller's soft state about broker sessions (None without one)."""
        return None if self.controller is None else self.controller.heartbeats

    def running_nodes(self) -> list[SimNode]:
        return [self.nodes[n.id] for n in sorted(self.state.nodes, key=lambda n: n.id) if n.running]

    def leader_node(self) -> SimNode | None:
        return None if self.state.leader is None else self.nodes.get(self.state.leader)

    def _make_node(self, state: NodeState) -> SimNode:
        return SimNode(state, node_directory(self.directory, state.id), base_catalog=self.catalog,
                       clock_ms=self.now, kip_778=self.kip_778, kraft_version=self.state.kraft_version)

    def _open_node(self, state: NodeState) -> SimNode:
        old = self.nodes.get(state.id)
        if old is not None:
            old.close()
        node = self._make_node(state)
        node.open()
        self.nodes[state.id] = node
        return node

    def _format(self, state: NodeState, *, release_version: str | None = None, features: Sequence[str] = ()) -> None:
        format_node(self.directory, self.catalog, state, voters=self.state.voters, cluster_id=self.state.cluster_id,
                    seed=self.state.seed, now_ms=self.state.now_ms, release_version=release_version,
                    features=features, emit=self.emit)

    def _write_raft_files(self, node: SimNode) -> None:
        if node.log is None:
            return
        write_quorum_state(node.metadata_dir, QuorumState(
            data_version=0, leader_id=-1 if self.state.leader is None else self.state.leader,
            leader_epoch=self.state.epoch, voted_id=-1, current_voters=tuple(sorted(self.state.voters))))
        write_leader_epoch_checkpoint(node.metadata_dir / LEADER_EPOCH_CHECKPOINT_FILE, node.log.leader_epochs())

    # ------------------------------------------------------------------ the quorum

    def _start_controller(self, node_id: int, epoch: int, *, activate: bool = True) -> QuorumController:
        node = self.nodes[node_id]
        assert node.log is not None
        config = ControllerConfig(cluster_id=self.state.cluster_id, policies=frozenset(self.state.policies))
        qc = QuorumController(node_id, node.log, clock=self.now, catalog=node.catalog, epoch=epoch, config=config,
                              supported=node.supported,
                              static_voters=self.state.voters, kraft_version=self.state.kraft_version,
                              upgrade_voters=lambda: [static_voters_record(self.directory, self.state.voters,
                                                                           node.registry)])
        if activate:
            qc.activate(read_bootstrap_dir(node.directory))
        self.controller = qc
        return qc

    def _elect(self) -> int | None:
        """Elect a leader among the running voters (see the module docstring); None without a majority."""
        voters = sorted(self.state.voters)
        running = self._running_voters()
        majority = len(voters) // 2 + 1
        self.controller = None
        if len(running) < majority:
            self.state.leader = None
            self.emit(f"No leader: {len(running)} of {len(voters)} voter(s) running, {majority} needed.")
            return None
        leader = min(running, key=lambda v: (-self.nodes[v].log_end_offset, v))
        epoch = self.state.epoch + 1
        granting = [leader] + [v for v in running if v != leader][:majority - 1]
        node = self.nodes[leader]
        assert node.log is not None
        rt = node.registry["LeaderChangeMessage"]
        voter = rt.nested["Voter"]
        message = rt.new(version=0, leader_id=leader, voters=[voter(voter_id=v) for v in voters],
                         granting_voters=[voter(voter_id=v) for v in sorted(granting)])
        node.log.append(encode_control_batch(node.log.log_end_offset, [Payload(rt, 0, message)], epoch=epoch,
                                             timestamp=self.now()))
        self.state.leader, self.state.epoch = leader, epoch
        self._start_controller(leader, epoch)
        self.emit(f"Node {leader} is the active controller in epoch {epoch}.")
        self.replicate()
        return leader

    def _running_voters(self) -> list[int]:
        return [v for v in sorted(self.state.voters) if self.state.node(v).running and v in self.nodes]

    def _check_quorum(self) -> None:
        """A leader whose running voters are no longer a majority cannot commit: it loses its role."""
        if self.state.leader is None:
            return
        majority = len(self.state.voters) // 2 + 1
        running = self._running_voters()
        if len(running) < majority:
            self.emit(f"Node {self.state.leader} loses the quorum: {len(running)} of {len(self.state.voters)} "
                      f"voter(s) running, {majority} needed.")
            self.controller = None
            self.state.leader = None

    # ------------------------------------------------------------------ committing and replicating

    def execute(self, rule: Callable[[ControllerContext], ControllerResult]) -> ControllerResult | None:
        """Run a controller rule on the active controller, then replicate. None without a leader."""
        if self.controller is None:
            return None
        result = self.controller.execute(rule)
        self.replicate()
        return result

    def replicate(self) -> None:
        """Copy what the leader committed to every running replica; make nodes that met an
        unsupported finalized level react (which may commit more, so repeat)."""
        while True:
            leader = self.leader_node()
            if self.controller is None or leader is None or leader.log is None:
                return
            self.state.kraft_version = self.controller.kraft_version
            findings: list[tuple[SimNode, Unsupported]] = []
            for node in self.running_nodes():
                node.raft_kraft_version = self.state.kraft_version
                found = node.follow(leader.log)
                if found is not None:
                    findings.append((node, found))
            if not findings:
                return
            for node, found in findings:
                self._react(node, found)

    def _react(self, node: SimNode, found: Unsupported) -> None:
        """KIP-778: a broker unregisters and stops; an inactive controller stops; the active
        controller resigns (a new leader is elected among the others), then stops."""
        if not node.state.running:
            return
        what = f"Node {node.id} ({node.state.role_text}, Kafka {node.state.release}): {found.text()}"
        if node.id == self.state.leader:
            self.emit(f"{what}; it resigns and stops.")
        elif node.state.is_broker:
            self.emit(f"{what}; it unregisters and stops.")
        else:
            self.emit(f"{what}; it stops.")
        registered = node.state.is_broker and self._registration(node) is not None
        self._stop(node, f"stopped: {found.text()}", clean=False)
        controller = self.controller
        if registered and controller is not None:
            self.execute(lambda ctx: unregister_broker(ctx, node.id, controller.heartbeats))

    def _stop(self, node: SimNode, note: str | None, *, clean: bool) -> None:
        """The node's process ends. A leader's end starts an election among the others."""
        reg = self._registration(node)
        node.state.previous_broker_epoch = reg.epoch if (clean and reg is not None) else -1
        self._write_raft_files(node)
        node.close()
        node.state.running = False
        node.state.note = note
        node.state.last_heartbeat_ms = None
        if node.id == self.state.leader:
            self.controller = None
            self.state.leader = None
            self._elect()
        else:
            self._check_quorum()

    def _registration(self, node: SimNode) -> BrokerRegistration | None:
        """The broker registration of this node's current incarnation, as the leader sees it."""
        if self.controller is None:
            return None
        reg = self.controller.image.cluster.broker(node.id)
        return reg if reg is not None and str(reg.incarnation_id) == node.state.incarnation else None

    def settle(self, max_ticks: int = SETTLE_TICKS, min_ticks: int = 2) -> None:
        """Let time pass until every running node has registered (or been refused for good)
        and every registered running broker is unfenced."""
        for i in range(max_ticks):
            self.tick()
            if i + 1 >= min_ticks and self._settled():
                return

    def _settled(self) -> bool:
        if self.controller is None:
            return True
        for node in self.running_nodes():
            if self._controller_registration_due(node):
                return False
            if node.state.is_broker:
                reg = self._registration(node)
                if reg is None:
                    refusal = self._refusals.get(node.id, "")
                    if not refusal or any(t in refusal for t in TRANSIENT_REFUSALS):
                        return False
                elif reg.fenced or node.registration_needs_refresh():
                    return False
        return True

    # ------------------------------------------------------------------ operations

    def update_features(self, updates: Mapping[str, FeatureUpdate], validate_only: bool
                        ) -> tuple[UpdateFeaturesResponse | None, list[MvChangeReport]]:
        """UpdateFeatures to the active controller (None without one), then replication.
        Under kip-778, the metadata.version changes the nodes carried out are returned with
        what they dropped, and the controller reloads from the snapshot they wrote."""
        if self.controller is None:
            return None, []
        before = {n.id: len(n.mv_changes()) for n in self.running_nodes()}
        events_before = {n.id: len(n.snapshot_events()) for n in self.running_nodes()}
        request = UpdateFeaturesRequest(tuple(updates[f] for f in sorted(updates)), validate_only)
        result = self.controller.update_features(request)
        self.replicate()
        reports: list[MvChangeReport] = []
        for node in self.running_nodes():
            new = node.mv_changes()[before.get(node.id, 0):]
            events = [e for e in node.snapshot_events()[events_before.get(node.id, 0):] if e.emitted]
            names = tuple(Path(e.result.path).name for e in events if e.result is not None)
            reports += [MvChangeReport(node.id, off, ch, names) for off, ch in new]
        if reports and any(not r.change.lossless for r in reports) and self.state.leader is not None:
            self._start_controller(self.state.leader, self.state.epoch)  # reload from the lossy snapshot
        self.settle(min_ticks=1)
        return result.response, reports

    def roll(self, release: str, node_ids: Sequence[int] | None = None) -> None:
        """Restart nodes on `release`, one at a time: controllers first (the active one last),
        then brokers. Each: controlled shutdown, stop, start on the new software, register.
        Without `node_ids`, running nodes already on `release` are left alone; named nodes
        are always restarted (a rolling restart). It stops at the first node that does not
        come back (RollStopped, with Kafka's text), as the event engine's roll does: the nodes
        after it keep their release."""
        self.catalog.find_release(release)
        wanted = sorted(node_ids) if node_ids else [n.id for n in self.state.nodes]
        for i in wanted:
            self.state.node(i)
        leader = self.state.leader
        order = sorted(wanted, key=lambda i: (not self.state.node(i).is_controller, i == leader, i))

        def already_on(i: int) -> bool:
            state = self.state.node(i)
            return not node_ids and state.release == release and state.running

        for at, i in enumerate(order):
            if already_on(i):
                self.emit(f"Node {i} already runs Kafka {release}.")
                continue
            problem = self.restart(i, release)
            self.save()  # a command killed later in the roll leaves the nodes done so far recorded
            if problem:
                left = [j for j in order[at + 1:] if not already_on(j)]
                raise RollStopped(problem, i, release, [(j, self.state.node(j).release) for j in left])

    def restart(self, node_id: int, release: str | None = None) -> str | None:
        """Stop a node cleanly (controlled shutdown for a broker) and start it, on `release`."""
        state = self.state.node(node_id)
        old = state.release
        new = release or old
        if state.running:
            node = self.nodes[node_id]
            self.emit(f"Stopping node {node_id} ({state.role_text}, Kafka {old}).")
            if state.is_broker:
                self._controlled_shutdown(node)
            self._stop(node, None, clean=True)
            self.tick()
        return self.start(node_id, new)

    def start(self, node_id: int, release: str) -> str | None:
        """Start a stopped node on `release` with a new incarnation; returns Kafka's text if it
        cannot start or register."""
        state = self.state.node(node_id)
        state.release = release
        state.starts += 1
        state.incarnation = incarnation_id(self.state.seed, node_id, state.starts)
        unknown_mv = bootstrap_start_refusal(node_directory(self.directory, node_id), self.catalog.at_release(release))
        if unknown_mv is not None:  # before the log is opened, whatever the node's roles
            state.running, state.note = False, unknown_mv
            self.emit(unknown_mv)
            return unknown_mv
        state.running = True
        state.note = None
        state.last_heartbeat_ms = None
        self._refusals.pop(node_id, None)
        node = self._open_node(state)
        leader = self.leader_node()
        if leader is not None and leader.log is not None and leader is not node:
            node.follow(leader.log)
        self.emit(f"Started node {node_id} ({state.role_text}) on Kafka {release}.")
        if state.is_controller:
            refusal = node.replay_refusal(self._finalized_levels(node))
            if refusal is not None:
                self.emit(refusal)
                self._stop(node, refusal, clean=False)
                return refusal
        if self.controller is None:
            self._elect()
        self.settle()
        return self._refusals.get(node_id) if state.running else state.note

    def _finalized_levels(self, node: SimNode) -> dict[str, int]:
        """The finalized levels the node's replica holds (read with the full catalog)."""
        if self.controller is not None:
            return self.controller.image.features.all_levels()
        return load_path(node.metadata_dir, catalog=self.catalog).image.features.all_levels()

    def add(self, role: str, release: str, node_id: int | None = None) -> str | None:
        """A new node joins: formatted (with its release's kafka-storage defaults), started and
        registered. Returns Kafka's refusal text, or None when it registered."""
        if role not in (BROKER, CONTROLLER):
            raise ClusterError(f"unknown role {role!r}")
        self.catalog.find_release(release)
        try:
            nid = joining_node_id({n.id for n in self.state.nodes}, node_id)
        except KraftsimError as e:
            raise ClusterError(str(e)) from None
        state = NodeState(id=nid, roles=(role,), release=release, incarnation=incarnation_id(self.state.seed, nid, 0),
                          starts=0, running=False)
        self._format(state)
        self.state.nodes.append(state)
        self.state.nodes.sort(key=lambda n: n.id)
        if role == CONTROLLER:
            self.state.voters = tuple(sorted(self.state.voters + (nid,)))
            if self.controller is not None:
                self.controller.static_voters = self.state.voters
            self.emit(f"Node {nid} joins the voters: controller.quorum.voters is now "
                      f"{','.join(str(v) for v in self.state.voters)}.")
        return self.start(nid, release)

    # ------------------------------------------------------------------ views

    def image(self) -> MetadataImage | None:
        """The active controller's image (None without a leader)."""
        return None if self.controller is None else self.controller.image


#: Names other modules import from here (the shared ones live in node_format, ticks_state, types).
__all__ = ["EPOCH_MS", "KNOWN_POLICIES", "STATE_FILE", "STATE_FORMAT", "ClusterError", "ClusterState",
           "MvChangeReport", "SimCluster", "cluster_id_for", "format_node", "incarnation_id", "read_state"]
