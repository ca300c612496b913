"""Simulation: the simulator's public face (docs/sim-api.md), over the event-driven Engine.

A Simulation lives in a directory: `cluster.json` (the cluster's identity, seed, clock,
voters, configuration and every node's id, roles, release, incarnation and state; written
through a temporary file, fsynced and renamed after every operation) and one formatted
folder per node, `node-<id>/`. Each operation runs events until it is done (Kafka's
texts as SimError when refused); `run` and `wait` let time pass. The in-flight messages
and timers of a run are not saved: a reopened cluster restarts every running node's
process from its disk, as after a restart of the whole cluster.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING

import msgspec

from kraftsim.controller import KIP_778, code_text
from kraftsim.errors import KraftsimError, UsageError
from kraftsim.image import MetadataImage, StandardAcl
from kraftsim.protocol.primitives import Uuid
from kraftsim.sim.admin import AdminMixin, FreeNames, answered
from kraftsim.gcpause import working
from kraftsim.sim.node.format import (
    EPOCH_MS, cluster_id_for, format_node, incarnation_id, joining_node_id, new_cluster_directory_problem,
)
from kraftsim.sim.engine.core import Engine
from kraftsim.sim.engine.lifecycle import TRANSIENT_REFUSALS
from kraftsim.sim.engine.member import Member
from kraftsim.sim.node.simnode import BROKER, CONTROLLER, NodeState, SimNode, node_directory
from kraftsim.sim.saved import (
    STATE_FILE,
    STATE_FORMAT,
    SavedNode,
    SavedState,
    read_saved,
)
from kraftsim.sim.engine.reconfig import VoterChangeRefused
from kraftsim.sim.node.voters import majority_leader
from kraftsim.sim.types import (
    FAILED,
    RUNNING,
    STOPPED,
    InvalidNodes,
    InvariantResult,
    MvChangeReport,
    NodeInfo,
    RollStopped,
    SimConfig,
    SimError,
    SimEvent,
    created_roles,
)
from kraftsim.sim.engine.invariants import DurableLog
from kraftsim.storage import METADATA_DIR_NAME, MetadataLog
from kraftsim.storage.background_writes import WRITES
from kraftsim.storage.names import BOOTSTRAP_FILE, META_PROPERTIES_FILE
from kraftsim.storage import dirlock, refuse_symlinks
from kraftsim.storage.safepath import new_directory
from kraftsim.storage.fileio import atomic_write
from kraftsim.storage.server_config import validate_node_configs
from kraftsim.storage.reaper import settle
from kraftsim.versions import FEATURE_NAME as MV_NAME
from kraftsim.versions import Catalog, load_catalog

if TYPE_CHECKING:
    from kraftsim.controller import DeleteAclsFilter
    from kraftsim.sim.engine.quorum_view import QuorumInfo

POLICIES = ("kafka", KIP_778)
#: How long (virtual) an operation waits for the cluster to settle before it gives up.
SETTLE_MS = 60_000


def _policies(policy: str) -> tuple[str, ...]:
    if policy not in POLICIES:
        raise SimError(f"unknown policy {policy!r}; known policies: {', '.join(POLICIES)}")
    return () if policy == "kafka" else (policy,)


class Simulation(AdminMixin):
    """A simulated KRaft cluster in a directory (see docs/sim-api.md and the module docstring)."""

    def __init__(self, directory: Path, saved: SavedState, catalog: Catalog, durable: bool = True):
        self.directory = Path(directory)
        #: Write cluster.json after every operation, fsynced (a killed command leaves a
        #: directory the next one continues from). Tests may turn it off: then it is
        #: written, without fsync, only by `close`.
        self.durable = durable
        self._saved = saved
        self.catalog = catalog
        self.config = saved.config
        self._subscribers: list[Callable[[SimEvent], None]] = []
        self._mv_reports: list[MvChangeReport] = []
        #: Where CreateTopics' free-name search left off per prefix (sim/admin.py).
        self.free_names = FreeNames()
        self._files: list[IO[str]] = []
        self._closed = False
        #: This process's hold on the directory's lock (storage.dirlock), given back by close.
        self._lock: tuple[int, int] | None = None
        self.engine = Engine(self.directory, cluster_id=saved.cluster_id, seed=saved.seed, now_ms=saved.now_ms,
                             voters=saved.voters, catalog=catalog, config=saved.config, policies=saved.policies,
                             kraft_version=saved.kraft_version, rng_salt=f":{saved.opens}", on_event=self._publish)
        self.engine.net.verbose = False  # until someone subscribes
        for n in saved.nodes:
            state = NodeState(id=n.id, roles=tuple(n.roles), release=n.release, incarnation=n.incarnation,
                              starts=n.starts, running=n.status == RUNNING, previous_broker_epoch=n.previous_broker_epoch,
                              configs=n.configs,
                              note=n.detail)
            m = self.engine.add_member(state, STOPPED if n.status == RUNNING else n.status)
            m.detail = n.detail
            m.broker_epoch = n.broker_epoch
        if saved.partition:
            self.engine.net.partition(saved.partition)
        checker = self.engine.checker
        checker.leaders = dict(saved.leaders)
        checker.committed_end = saved.committed_end
        checker.failures = {v.name: v for v in saved.violations}

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    def create(cls, directory: Path | str, *, controllers: int = 0, brokers: int = 0, combined: int = 0,
               release: str, release_version: str | None = None, features: Mapping[str, int] | None = None,
               seed: int = 0, policy: str = "kafka", catalog: Catalog | str | None = None,
               config: SimConfig | None = None, durable: bool = True,
               on_event: Callable[[SimEvent], None] | None = None, dynamic_quorum: bool = False,
               configs: Mapping[str, object] | None = None, start: bool = True) -> Simulation:
        """Format every node as `kafka-storage format` would, start them and let the cluster
        settle. Ids: combined nodes 1..N, then controllers, then brokers. `dynamic_quorum`:
        a KIP-853 quorum (`--standalone` for one controller, else `--initial-controllers`;
        kraft.version 1). `configs`: server configs every node runs with (those kraftsim
        simulates, storage.server_config.NODE_CONFIGS, checked by validate_node_configs).
        `start=False` formats the nodes and starts none: every check a create makes, at the
        cost of a format (a scenario run checks its clusters so before any of them runs)."""
        d = Path(directory)
        if controllers < 0 or brokers < 0 or combined < 0:
            raise SimError("the numbers of controllers, brokers and combined nodes must not be negative")
        if controllers + combined < 1:
            raise SimError("a cluster needs at least one controller or combined node")
        if (problem := new_cluster_directory_problem(d)) is not None:
            raise SimError(problem)
        pols = _policies(policy)
        cat_path = str(Path(catalog).resolve()) if isinstance(catalog, str) else None
        try:
            base = catalog if isinstance(catalog, Catalog) else load_catalog(cat_path)
            base.find_release(release)
        except UsageError:  # invalid input (a catalog over its limits) stays exit 2
            raise
        except KraftsimError as e:
            raise SimError(str(e)) from None
        try:
            node_configs = validate_node_configs(configs or {})
        except KraftsimError as e:
            raise SimError(str(e)) from None
        given: dict[str, str] | msgspec.UnsetType = node_configs if node_configs else msgspec.UNSET
        nodes = [SavedNode(id=i, roles=r, release=release, incarnation=incarnation_id(seed, i, 1), configs=given)
                 for i, r in created_roles(combined=combined, controllers=controllers, brokers=brokers).items()]
        voters = tuple(n.id for n in nodes if CONTROLLER in n.roles)
        saved = SavedState(cluster_id=cluster_id_for(seed), seed=seed, now_ms=EPOCH_MS, policies=pols,
                           catalog=cat_path, voters=voters, config=config or SimConfig(), nodes=nodes,
                           kraft_version=1 if dynamic_quorum else 0)
        dynamic = None if not dynamic_quorum else "standalone" if len(voters) == 1 else "initial"
        feats = [f"{k}={v}" for k, v in sorted((features or {}).items())]
        with new_directory(d, locked=True):  # nothing half-made is left behind, not even when interrupted
            return cls._built_and_started(
                dirlock.acquire(d), lambda: cls(d, saved, base, durable), on_event,
                lambda sim: sim._format_and_start(release, release_version, feats, dynamic, start))

    def _format_and_start(self, release: str, release_version: str | None, features: list[str],
                          dynamic: str | None, start: bool) -> None:
        """A new cluster's nodes formatted as `kafka-storage format` would, then (`start`)
        started and settled."""
        saved = self._saved
        for n in saved.nodes:
            state = NodeState(id=n.id, roles=n.roles, release=release, incarnation=n.incarnation,
                              configs=n.configs)

            def formatted(line: str, i: int = n.id) -> None:
                self.engine.emit(i, "format", {"line": line.split("] ", 1)[-1]})

            try:
                format_node(self.directory, self.catalog, state, voters=saved.voters, cluster_id=saved.cluster_id,
                            seed=saved.seed, now_ms=EPOCH_MS, release_version=release_version, features=features,
                            dynamic=dynamic, emit=formatted)
            except KraftsimError as e:
                raise SimError(str(e)) from None
        if not start:
            return
        for m in self.engine.ordered():
            self.engine.start_member(m, new_process=False)
        self.engine.run_until(self.engine.now + SETTLE_MS, self.engine.stable)
        self._finish_op("create")

    @classmethod
    def open(cls, directory: Path | str, config: SimConfig | None = None, durable: bool = True,
             on_event: Callable[[SimEvent], None] | None = None, passive: bool = False) -> Simulation:
        """Open a cluster directory: every node that ran starts again from its disk.
        `passive` only looks: each running node's replica is loaded (its whole log), no
        process runs, and nothing is saved (a describe, a status)."""
        d = Path(directory)
        read_saved(d)  # a directory that is not a cluster is refused as it is, no lock file made in it

        def build() -> Simulation:
            if not passive:  # no write through a link planted in the directory
                refuse_symlinks(d)
                if not os.access(d, os.W_OK | os.X_OK):  # (a read-only or immutable folder: the nodes' logs
                    # were written, then cluster.json was not, and the cluster was left half of one operation on)
                    raise SimError(f"{d}: cannot write in the cluster directory (permission denied or read-only); "
                                   "nothing was changed")
            saved = read_saved(d)
            if config is not None:
                saved.config = config
            saved.opens += 1
            try:
                catalog = load_catalog(saved.catalog)
            except KraftsimError as e:
                raise SimError(str(e)) from None
            return cls(d, saved, catalog, durable)

        # (a reader never sees an operation half done)
        return cls._built_and_started(dirlock.acquire(d, exclusive=not passive), build, on_event,
                                      lambda sim: sim._start_opened(passive))

    @staticmethod
    def _built_and_started(lock: tuple[int, int] | None, build: Callable[[], Simulation],
                           on_event: Callable[[SimEvent], None] | None,
                           start: Callable[[Simulation], object]) -> Simulation:
        """A simulation built while holding its directory's `lock`, then started: the lock is
        released when it cannot be built, its files closed (and the lock with them) when it
        cannot start, so a failed create or open leaves nothing held."""
        try:
            sim = build()
        except BaseException:
            dirlock.release(lock)
            raise
        sim._lock = lock
        if on_event is not None:
            sim.subscribe(on_event)
        try:
            start(sim)
        except BaseException:
            sim.close_files()
            raise
        return sim

    def _start_opened(self, passive: bool) -> None:
        """The nodes of an opened directory: loaded (passive) or started again."""
        saved, d = self._saved, self.directory
        running = [n.id for n in saved.nodes if n.status == RUNNING]
        if passive:
            self._closed = True  # never saved
            for i in running:
                m = self.engine.member(i)
                m.node = self.engine.make_node(m)
                m.node.open(read_only=True)  # what is on disk, as it is: nothing recovered or cut
                m.status, m.state.running = RUNNING, True
            return
        for n in saved.nodes:  # what the disks of nodes that are down hold, as the invariants need it
            if n.status != RUNNING and n.id in saved.voters:
                meta = node_directory(d, n.id) / METADATA_DIR_NAME
                try:
                    with MetadataLog.open(meta, read_only=True) as log:
                        self.engine.checker.down[n.id] = DurableLog.of(log)
                except KraftsimError:
                    pass  # a disk that cannot be read holds nothing the invariants can count on
        for i in running:
            self.engine.start_member(self.engine.member(i), new_process=False, resume=True)

    def save(self) -> None:
        """Write cluster.json (temporary file, fsync, rename)."""
        e = self.engine
        s = self._saved
        s.now_ms, s.kraft_version, s.voters = e.now, e.kraft_version, e.voters
        groups: dict[int, list[int]] = {}
        for node, group in sorted(e.net.groups.items()):
            groups.setdefault(group, []).append(node)
        s.partition = [groups[g] for g in sorted(groups)]
        s.leaders = dict(sorted(e.checker.leaders.items()))
        s.committed_end = e.checker.committed_end
        s.violations = [e.checker.failures[n] for n in sorted(e.checker.failures)]
        s.nodes = [SavedNode(id=m.id, roles=tuple(m.state.roles), release=m.state.release,
                             incarnation=m.state.incarnation, starts=m.state.starts,
                             status=RUNNING if m.running else m.status, detail=m.detail,
                             previous_broker_epoch=m.state.previous_broker_epoch, broker_epoch=m.broker_epoch,
                             configs=m.state.configs)
                   for m in e.ordered()]
        data = json.dumps(msgspec.to_builtins(s), indent=2, sort_keys=True) + "\n"
        atomic_write(self.directory / STATE_FILE, data.encode("utf-8"), fsync=self.durable)

    def close(self) -> None:
        """`release`, then let go of what was kept only to go faster (shadow loaders, digest
        parts: `Engine.drop_caches`) at once, rather than leaving it to the cycle collector."""
        self.release()
        self.engine.drop_caches()

    def release(self) -> None:
        """Save, close every file and give back the directory: from then on it is the
        caller's to read, copy or remove (a scenario's temporary cluster starts being removed
        while `close` frees the caches). Nothing is saved again by a later call."""
        if self._closed:
            self.close_files()
            return
        self._closed = True
        try:
            self.save()
        finally:
            for f in self._files:
                f.close()
            self.close_files()

    def close_files(self) -> None:
        """Close what is open without saving (a create that failed), and give back the lock."""
        self._closed = True
        try:
            for m in self.engine.ordered():
                if m.node is not None:
                    m.node.close()
        finally:
            lock, self._lock = self._lock, None
            try:
                settle(self.directory)  # (no file marked for deletion is left for the next holder to see)
            finally:
                dirlock.release(lock)

    def __enter__(self) -> Simulation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _finish_op(self, label: str) -> None:
        WRITES.drain()  # (every node's log file whole before anything reads it by its path)
        self.engine.check_deep(f"after {label}")
        self.engine.forget_commits_below_snapshots()
        if self.durable:
            self.save()

    # ------------------------------------------------------------------ the timeline

    def _publish(self, event: SimEvent) -> None:
        for callback in self._subscribers:
            callback(event)

    def subscribe(self, callback: Callable[[SimEvent], None]) -> None:
        self._subscribers.append(callback)
        self.engine.net.verbose = True  # events are built only while someone listens

    def timeline_jsonl(self, path: Path | str | IO[str]) -> None:
        """Stream every event from now on to `path` (appended) as JSON lines, one object each."""
        if isinstance(path, (str, Path)):
            out: IO[str] = open(path, "a", encoding="utf-8")  # noqa: SIM115 (closed by close())
            self._files.append(out)
        else:
            out = path

        def write(event: SimEvent) -> None:
            out.write(json.dumps(event.to_json(), sort_keys=True, default=str) + "\n")

        self.subscribe(write)

    # ------------------------------------------------------------------ views

    @property
    def seed(self) -> int:
        return self._saved.seed

    @property
    def cluster_id(self) -> str:
        return self._saved.cluster_id

    @property
    def policy(self) -> str:
        """"kafka", or the policy beyond Kafka's the cluster was created with."""
        return self._saved.policies[0] if self._saved.policies else "kafka"

    @property
    def now_ms(self) -> int:
        return self.engine.now

    def nodes(self) -> list[NodeInfo]:
        out = []
        qc = self.engine.controller
        for m in self.engine.ordered():
            fenced = None
            if m.state.is_broker:
                fenced = m.fenced if m.fenced is not None else True
                if qc is not None:
                    reg = qc.image.cluster.broker(m.id)
                    fenced = True if reg is None or str(reg.incarnation_id) != m.state.incarnation else reg.fenced
            out.append(NodeInfo(m.id, tuple(m.state.roles), m.state.release, RUNNING if m.running else m.status,
                                fenced, m.detail))
        return out

    def leader(self) -> int | None:
        m = self.engine.leader_member()
        return None if m is None else m.id

    def majority_leader(self) -> int | None:
        """The leader a majority of the voters knows (`cluster status`'s count) that still
        leads in that epoch: what `has_leader` means. `leader()` is the node acting as leader,
        which a stale node partitioned away, or one not yet told of a newer epoch, can be alone;
        and voters that have not yet noticed their leader fail still name it."""
        voters = self.engine.voters
        beliefs = [(m.epoch, m.leader) for m in self.engine.ordered()
                   if m.running and m.id in voters and m.leader is not None]
        known = majority_leader(voters, beliefs)
        acting = self.engine.leader_member()
        if known is None or acting is None or (acting.epoch, acting.id) != known:
            return None
        return acting.id

    def _committed_view(self) -> Member | None:
        m = self.engine.leader_member()
        if m is not None and m.node is not None and m.node.image is not None:
            return m
        up = [x for x in self.engine.ordered() if x.running and x.node is not None and x.node.image is not None]
        return max(up, key=lambda x: (x.applied, -x.id)) if up else None

    def finalized(self) -> dict[str, int]:
        m = self._committed_view()
        fin = None if m is None or m.node is None else m.node.finalized()
        return {} if fin is None else fin.as_dict()

    def metadata_version(self) -> int:
        return self.finalized().get(MV_NAME, 0)

    def image(self, node_id: int) -> MetadataImage | None:
        m = self.engine.member(node_id)
        return m.node.image if m.running and m.node is not None else None

    def node_configs(self, node_id: int) -> dict[str, str]:
        """The server configs node `node_id` runs with, as server.properties texts (those kraftsim
        simulates, storage.server_config.NODE_CONFIGS; {} when none were given)."""
        return self.engine.member(node_id).state.config_texts

    @property
    def kraft_version(self) -> int:
        """The quorum's kraft.version: 1 for a dynamic quorum (KIP-853), else 0."""
        return self.engine.kraft_version

    def running_node(self, node_id: int) -> SimNode | None:
        """The process of a running node (None when it is down): what a client connected to it talks to."""
        m = self.engine.member(node_id)
        return m.node if m.running else None

    def incarnation(self, node_id: int) -> str | None:
        """The incarnation id of the node's running process, None when it is down: a process a
        reopened directory resumes keeps its own, a restart (a start after a crash or stop, a
        roll) makes a new one, as a new Kafka process registers with a new one."""
        m = self.engine.member(node_id)
        return m.state.incarnation if m.running else None

    def serving_clients(self, node_id: int) -> bool:
        """Whether the node's broker is past Kafka's start-up gates, so its broker listener
        accepts connections: BrokerServer.startup enables request processing (and opens the
        listener's socket) only once the broker's first metadata image is published and it was
        first unfenced, both since its process started. A fenced broker stays past them; a
        controller-only node or one that is down is not (a controller listener has no gate)."""
        m = self.engine.member(node_id)
        node = m.node
        return m.running and node is not None and node.published and self.engine.lifecycle.started(m)

    def finalized_on(self, node_id: int) -> dict[str, int]:
        """The finalized levels a running node has applied (empty when it is down or has none)."""
        node = self.running_node(node_id)
        fin = None if node is None else node.finalized()
        return {} if fin is None else fin.as_dict()

    def known_leader(self, node_id: int) -> int | None:
        """The raft leader a running node knows of (None: it knows none, or it is down)."""
        m = self.engine.member(node_id)
        return m.leader if m.running else None

    def reachable(self, a: int, b: int) -> bool:
        """Whether the network lets node `a` reach node `b` now (partitions)."""
        return self.engine.net.reachable(a, b)

    def advance(self, until_ms: int) -> None:
        """Let simulated time pass up to `until_ms`, saving nothing: a driver that follows the
        wall clock calls it many times a second (`save` or `close` writes the state)."""
        if until_ms > self.engine.now:
            self.engine.run_until(until_ms)

    def log_dir(self, node_id: int) -> Path:
        self.engine.member(node_id)
        return node_directory(self.directory, node_id) / METADATA_DIR_NAME

    def mv_changes(self) -> list[MvChangeReport]:
        return list(self._mv_reports)

    def invariants(self) -> list[InvariantResult]:
        return self.engine.checker.results()

    # ------------------------------------------------------------------ helpers

    def _ids(self, nodes: str | int | Sequence[int]) -> list[int]:
        members = self.engine.ordered()
        if isinstance(nodes, int):
            nodes = [nodes]
        if nodes == "all":
            return [m.id for m in members]
        if nodes == "controllers":
            return [m.id for m in members if m.state.is_controller]
        if nodes == "brokers":
            return [m.id for m in members if m.state.is_broker]
        if isinstance(nodes, str):
            raise SimError(f"nodes: expected \"all\", \"controllers\", \"brokers\" or a list of ids, got {nodes!r}")
        for i in nodes:
            self.engine.member(i)
        return sorted(nodes)

    # ------------------------------------------------------------------ operations

    def _settle(self, what: str, watch: Member | None = None) -> None:
        e = self.engine
        ok = e.run_until(e.now + SETTLE_MS, lambda: e.stable() or (watch is not None and _refused_for_good(watch)))
        if watch is not None and _refused_for_good(watch):
            raise SimError(watch.detail or f"node {watch.id} was refused")
        if not ok:
            raise SimError(f"not stable after {SETTLE_MS} ms ({what})")
        e.forget_commits_below_snapshots()

    def roll(self, release: str, nodes: str | Sequence[int] = "all") -> None:
        """Restart nodes on `release` one at a time, as an operator does: controllers first
        (the active one last), then brokers; each waits for the cluster to settle. It stops at
        the first node that does not come back (RollStopped, with Kafka's text): that node stays
        as Kafka leaves it, and the nodes after it keep their release and process."""
        self.catalog.find_release(release)  # (an unknown release is invalid input: UnknownRelease, exit 2)
        ids = self._ids(nodes)
        leader = self.leader()
        order = sorted(ids, key=lambda i: (not self.engine.member(i).state.is_controller, i == leader, i))
        problems: list[str] = []
        for at, i in enumerate(order):
            if self._already_on(i, release, nodes):
                self.engine.emit(i, "note", {"text": f"Node {i} already runs Kafka {release}."})
                continue
            refusal = self._roll_one(self.engine.member(i), release, problems)
            if refusal is not None:
                self._finish_op("roll")
                left = [j for j in order[at + 1:] if not self._already_on(j, release, nodes)]
                raise RollStopped(refusal, i, release, [(j, self.engine.member(j).state.release) for j in left])
        self._finish_op("roll")
        failed = [m.detail for m in self.engine.ordered() if m.status == FAILED and m.detail and m.id in ids]
        if problems or failed:
            raise SimError((problems or failed)[0])

    def _already_on(self, node_id: int, release: str, nodes: str | Sequence[int]) -> bool:
        """A roll of "all" leaves a running node already on `release` alone (named nodes are
        restarted all the same: a rolling restart)."""
        m = self.engine.member(node_id)
        return nodes == "all" and m.running and m.state.release == release

    def _roll_one(self, m: Member, release: str, problems: list[str]) -> str | None:
        """Stop the node, start it on `release`, let the cluster settle: Kafka's text when the
        node does not come back (it failed to start, or it was refused for good), else None (a
        cluster that does not settle in time is noted in `problems`, and the roll goes on)."""
        self.engine.stop(m, self.config.broker_session_timeout_ms)
        text = self.engine.start_member(m, release)
        if text is not None:
            return text
        try:
            self._settle(f"roll of node {m.id}", m)
        except SimError as err:
            if _refused_for_good(m):
                return str(err)
            problems.append(str(err))
        return None

    def add_node(self, role: str, release: str, node_id: int | None = None) -> int:
        if role not in (BROKER, CONTROLLER):
            raise SimError(f"unknown role {role!r}: expected \"broker\" or \"controller\"")
        self.catalog.find_release(release)  # (an unknown release is invalid input: UnknownRelease, exit 2)
        e = self.engine
        try:
            nid = joining_node_id(e.members.keys(), node_id)
        except KraftsimError as err:
            raise SimError(str(err)) from None
        state = NodeState(id=nid, roles=(role,), release=release, incarnation=incarnation_id(self.seed, nid, 0),
                          starts=0)  # its first start makes incarnation 1
        dynamic = e.kraft_version >= 1
        voters = tuple(sorted(e.voters + (nid,))) if role == CONTROLLER and not dynamic else e.voters
        self._format_joining(state, voters, dynamic)
        if voters != e.voters:  # the cluster changes once the node is formatted: a refused format leaves it as it was
            e.static_voters(voters)
        m = e.add_member(state, STOPPED)
        e.emit(nid, "join", {"role": role, "release": release, "voters": list(e.voters)})
        text = e.start_member(m)
        if text is not None:
            self._finish_op("add-node")
            raise SimError(text)
        try:
            self._settle(f"node {nid} joining", m)
        finally:
            self._finish_op("add-node")
        return nid

    def _format_joining(self, state: NodeState, voters: tuple[int, ...], dynamic: bool) -> None:
        """`kafka-storage format` for a joining node; SimError when it refuses, with the node's
        directory, if the format made it, removed (nothing of the node is left behind)."""
        directory = node_directory(self.directory, state.id)
        existed = directory.exists()
        try:
            format_node(self.directory, self.catalog, state, voters=voters, cluster_id=self._saved.cluster_id,
                        seed=self.seed, now_ms=self.engine.now, emit=lambda line: None,
                        dynamic="none" if dynamic else None)
        except KraftsimError as err:
            if not existed:
                shutil.rmtree(directory, ignore_errors=True)
            raise SimError(str(err)) from None

    # ------------------------------------------------------------------ quorum membership (KIP-853)

    def quorum_info(self) -> QuorumInfo:
        """What DescribeQuorum answers now: the leader, its epoch and high watermark, and every
        voter and observer with its directory id, log end offset, lag and fetch times (raises
        SimError without a leader)."""
        from kraftsim.sim.engine.quorum_view import quorum_info  # DescribeQuorum's view, built when asked

        return quorum_info(self.engine, self._saved.cluster_id)

    def voters(self) -> tuple[int, ...]:
        """The committed voter set (the static voters under kraft.version 0)."""
        return self.engine.voters

    def directory_id(self, node_id: int) -> Uuid | None:
        """The node's metadata directory id (its meta.properties), None without one."""
        self.engine.member(node_id)
        return self.engine.directory_id_of(node_id)

    def add_controller(self, node_id: int | None = None, release: str | None = None) -> int:
        """`kafka-metadata-quorum add-controller`: a controller not yet in the cluster is first
        formatted with --no-initial-controllers and started (it catches up as an observer);
        then the leader adds it to the voters (AddRaftVoter) and the change commits. Returns its id."""
        e = self.engine
        if node_id is None or node_id not in e.members:
            node_id = self.add_node(CONTROLLER, release or self._newest_release(), node_id)
        m = e.member(node_id)
        if not m.state.is_controller:
            raise SimError(f"node {node_id} is not a controller")
        e.run_until(e.now + SETTLE_MS, lambda: _caught_up(e, node_id))  # the operator waits for it to catch up
        self._voter_change(lambda: e.request_add_voter(node_id, e.directory_id_of(node_id)), node_id, "add-controller")
        return node_id

    def add_voter(self, node_id: int, directory_id: Uuid) -> None:
        """AddRaftVoter as a client sends it (`kafka-metadata-quorum add-controller` against a
        served cluster): the controller `node_id` with `directory_id`, running and caught up as an
        observer, joins the voters once the change commits; Kafka's refusals as VoterChangeRefused."""
        e = self.engine
        self._voter_change(lambda: e.request_add_voter(node_id, directory_id), node_id, "add-controller")

    def remove_controller(self, node_id: int, directory_id: str | None = None) -> None:
        """`kafka-metadata-quorum remove-controller --controller-id ID --controller-directory-id DIR`
        (unless given, the directory id the voter set records for it); the leader appends the new voter set,
        or refuses with Kafka's VOTER_NOT_FOUND text, also for an id no node of the cluster has."""
        e = self.engine
        if directory_id is None:
            e.member(node_id)  # (its directory id is looked up: the node must exist)
        did = self.voter_directory_id(node_id) if directory_id is None else _uuid(directory_id)
        self._voter_change(lambda: e.request_remove_voter(node_id, did), node_id, "remove-controller")

    def voter_directory_id(self, node_id: int) -> Uuid | None:
        """The directory id the voter set records for `node_id` (what describe --replication
        shows an operator: after a wipe it is no longer the node's own), else the node's own."""
        e = self.engine
        recorded = e.voter_keys.get(node_id) if node_id in e.voters else None
        return recorded if recorded is not None and recorded != Uuid.ZERO else e.directory_id_of(node_id)

    def _voter_change(self, request: Callable[[], None], node_id: int, label: str) -> None:
        e = self.engine
        e.run_until(e.now + SETTLE_MS, lambda: _leader_has_high_watermark(e))  # the admin client finds the active controller first
        if e.record_static_voters():  # an upgraded static quorum: its voter set goes into the log first
            e.run_until(e.now + SETTLE_MS, lambda: _voters_committed(e))
        try:
            request()
        except VoterChangeRefused:
            self._finish_op(label)
            raise
        leader = e.leader_member()
        assert leader is not None  # (the request just went through it)
        done = e.run_until(e.now + SETTLE_MS, lambda: not leader.voter_change_pending())
        if done and not leader.voter_change_pending() and e.voters == leader.voters:
            e.run_until(e.now + SETTLE_MS, e.stable)
            self._finish_op(label)
            return
        self._finish_op(label)
        raise VoterChangeRefused("REQUEST_TIMED_OUT", f"The voter change of node {node_id} was not committed: the "
                                                      "leader lost its role first (the admin client times out).")

    def _newest_release(self) -> str:
        releases = [m.state.release for m in self.engine.ordered() if m.state.is_controller]
        return max(releases, key=lambda r: self.catalog.releases.index(self.catalog.find_release(r)))

    @working
    def crash(self, nodes: str | int | Sequence[int]) -> None:
        for i in self._ids(nodes):
            self.engine.crash(self.engine.member(i))
        self._finish_op("crash")

    @working
    def stop(self, nodes: str | int | Sequence[int]) -> None:
        for i in self._ids(nodes):
            self.engine.stop(self.engine.member(i), self.config.broker_session_timeout_ms)
        self._finish_op("stop")

    @working
    def start(self, nodes: str | int | Sequence[int], release: str | None = None) -> None:
        """Start the stopped ones of `nodes` (on `release` when given: checked even where every
        node already runs, so that a wrong name is never passed over in silence)."""
        if release is not None:
            self.catalog.find_release(release)  # (an unknown release is invalid input: UnknownRelease, exit 2)
        problems = []
        for i in self._ids(nodes):
            m = self.engine.member(i)
            if m.running:
                self.engine.emit(i, "note", {"text": f"Node {i} is already running (Kafka {m.state.release}): "
                                                     "not started again."})
                continue
            try:
                text = self.engine.start_member(m, release)
            except KraftsimError as err:
                raise SimError(str(err)) from None
            if text is not None:
                problems.append(text)
        self._finish_op("start")
        if problems:
            raise SimError(problems[0])

    @working
    def partition(self, groups: Sequence[Sequence[int]]) -> None:
        """Split the network into `groups` (unlisted nodes form one more). A node listed in two
        groups is refused, as the scenario op refuses it: the network would silently put it
        in the last one."""
        seen: set[int] = set()
        for g in groups:
            self._ids(list(g))
            if seen & set(g):
                raise InvalidNodes(f"node {min(seen & set(g))} is in two groups")
            seen |= set(g)
        self.engine.net.partition(groups)
        self.engine.emit(None, "partition", {"groups": [sorted(g) for g in groups]})
        self._finish_op("partition")

    @working
    def heal(self) -> None:
        self.engine.net.heal()
        self.engine.emit(None, "heal", {})
        self._finish_op("heal")

    def disk_fault(self, nodes: str | int | Sequence[int], kind: str) -> None:
        if kind not in ("torn-tail", "wipe"):
            raise SimError(f"unknown disk fault {kind!r}: expected \"torn-tail\" or \"wipe\"")
        for i in self._ids(nodes):
            m = self.engine.member(i)
            if m.running:
                raise SimError(f"node {i} is running: a disk fault needs it stopped or crashed")
            if kind == "wipe":
                self.engine.wipe(m)
                if self.engine.kraft_version >= 1 and m.state.is_controller:
                    self._format_again(m)
            else:
                self.engine.torn_tail(m)
        self._finish_op("disk-fault")

    def _format_again(self, m: Member) -> None:
        """A wiped controller of a dynamic quorum is formatted again before it can start, as an
        operator must (`kafka-storage format --no-initial-controllers`): a new directory id, so
        the node is no longer the voter the VotersRecord names (KIP-853) and starts as an
        observer until it is removed and added again. (A static quorum's voters are ids alone:
        its wiped node keeps meta.properties.)"""
        e = self.engine
        d = node_directory(self.directory, m.id)
        before = e.directory_id_of(m.id)
        for name in (META_PROPERTIES_FILE, BOOTSTRAP_FILE):
            (d / name).unlink(missing_ok=True)
        try:
            format_node(self.directory, self.catalog, m.state, voters=e.voters, cluster_id=self._saved.cluster_id,
                        seed=self.seed, now_ms=e.now, emit=lambda line: None, dynamic="none", again=m.disk_gen)
        except KraftsimError as err:
            raise SimError(str(err)) from None
        e.emit(m.id, "note", {"text": f"Node {m.id} is formatted again (--no-initial-controllers): directory id "
                                      f"{before} -> {e.directory_id_of(m.id)}."})

    def snapshot(self, nodes: Sequence[int] | None = None) -> list[Path]:
        ids = self._ids(list(nodes)) if nodes is not None else [m.id for m in self.engine.ordered() if m.running]
        out = []
        for i in ids:
            m = self.engine.member(i)
            if not m.running:
                raise SimError(f"node {i} is not running")
            path = self.engine.take_snapshot(m)
            if path is not None:
                out.append(path)
        self.engine.share.snapshots.writes.clear()  # (every node wrote: the images the copies held go)
        self._finish_op("snapshot")
        return out

    def inject(self, after_ms: int, kind: str, nodes: str | Sequence[int] = "leader") -> None:
        """Schedule a fault for `after_ms` from now, so that it lands in the middle of whatever
        operation runs then (a roll, an upgrade): kind "crash", "start", "partition" (the nodes
        against the rest) or "heal"; nodes "leader" means the active controller at that moment."""
        if kind not in ("crash", "start", "partition", "heal"):
            raise SimError(f"unknown fault {kind!r}: expected crash, start, partition or heal")
        e = self.engine

        def fire() -> None:
            ids = ([m.id for m in [e.leader_member()] if m is not None] if nodes == "leader"
                   else self._ids(nodes))
            e.emit(None, "inject", {"kind": kind, "nodes": ids})
            if kind == "crash":
                for i in ids:
                    e.crash(e.member(i))
            elif kind == "start":
                for i in ids:
                    e.start_member(e.member(i))
            elif kind == "partition":
                e.net.partition([ids])
            else:
                e.net.heal()

        e.sched.after(max(0, after_ms), f"inject {kind}", None, fire)

    @working
    def run(self, ms: int) -> None:
        self.engine.run_until(self.engine.now + max(0, ms))
        self._finish_op("run")

    @working
    def wait(self, timeout_ms: int) -> None:
        ok = self.until_stable(timeout_ms)
        self._finish_op("wait")
        if not ok:
            raise SimError(f"not stable after {timeout_ms} ms")

    def until_stable(self, timeout_ms: int) -> bool:
        """Let simulated time pass until the cluster is stable, for at most `timeout_ms`, as an
        op of its own would not (nothing checked or recorded): whether it became stable."""
        e = self.engine
        return e.run_until(e.now + max(0, timeout_ms), e.stable)

    # ------------------------------------------------------------------ selections and controller operations
    # What a scenario op needs of the simulator beyond the operations above (kraftsim.scenario.apply).
    # The controller's rules are imported where used, so that opening a simulation stays cheap.

    def select(self, nodes: str | int | Sequence[int]) -> list[int]:
        """The node ids a selection names: ids (sorted; each must exist), "all", "controllers",
        "brokers", or "leader": the active controller at this moment."""
        if nodes == "leader":
            leader = self.leader()
            if leader is None:
                raise SimError("no active controller: \"leader\" names no node")
            return [leader]
        return self._ids(nodes)

    def alter_broker_config(self, broker: int | None, set_configs: Mapping[str, str],
                            delete_configs: Sequence[str] = ()) -> list[str]:
        """`kafka-configs --alter --entity-type brokers [--entity-name N | --entity-default]`
        (IncrementalAlterConfigs): set and delete dynamic broker configs, None: the cluster-wide
        default; `cordoned.log.dirs` cordons log directories (KIP-1066). Lines as the tool prints."""
        from kraftsim.image import BROKER as BROKER_RESOURCE

        self._alter_configs(BROKER_RESOURCE, "" if broker is None else str(broker), set_configs, delete_configs)
        return [f"Completed updating config for {'default broker' if broker is None else f'broker {broker}'}."]

    def alter_topic_config(self, topic: str, set_configs: Mapping[str, str], delete_configs: Sequence[str] = ()) -> list[str]:
        """`kafka-configs --alter --entity-type topics --entity-name T` (IncrementalAlterConfigs):
        the values are judged as the controller's release judges a topic's configs."""
        from kraftsim.image import TOPIC as TOPIC_RESOURCE

        self._alter_configs(TOPIC_RESOURCE, topic, set_configs, delete_configs)
        return [f"Completed updating config for topic {topic}."]

    def alter_client_metrics(self, name: str, set_configs: Mapping[str, str],
                             delete_configs: Sequence[str] = ()) -> list[str]:
        """`kafka-client-metrics --alter --name NAME` (IncrementalAlterConfigs of a client-metrics
        subscription, KIP-714): the subscription's resulting configs are judged as the
        controller's release judges them. Lines as the tool prints (--delete's when nothing is set)."""
        from kraftsim.image import CLIENT_METRICS as CLIENT_METRICS_RESOURCE

        self._alter_configs(CLIENT_METRICS_RESOURCE, name, set_configs, delete_configs)
        done = "Altered" if set_configs or not delete_configs else "Deleted"
        return [f"{done} client metrics config for {name}."]

    def alter_group_config(self, group: str, set_configs: Mapping[str, str],
                           delete_configs: Sequence[str] = ()) -> list[str]:
        """`kafka-configs --alter --entity-type groups --entity-name G` (IncrementalAlterConfigs of
        a group, KIP-848, 4.0 on): the group's resulting configs are judged as the controller's
        release judges them; a change whose verdict kraftsim cannot reproduce is refused as
        such rather than judged wrongly. Lines as the tool prints."""
        from kraftsim.controller import configs_after, group_config_check, has_group_configs
        from kraftsim.image import GROUP as GROUP_RESOURCE

        leader = self.leader()
        node = self.running_node(leader) if leader is not None else None
        image = self.image(leader) if leader is not None else None
        if node is not None and image is not None and has_group_configs(node.state.release):
            held = image.configs.config(GROUP_RESOURCE, group)
            after = configs_after(held, [*set_configs.items(), *((k, None) for k in delete_configs)])
            why = group_config_check(node.state.release, after).unmodelled
            if why is not None:
                raise SimError(f"kraftsim does not model the controller's verdict on group {group!r}: {why}")
        self._alter_configs(GROUP_RESOURCE, group, set_configs, delete_configs)
        return [f"Completed updating config for group {group}."]

    def _alter_configs(self, resource_type: int, name: str, set_configs: Mapping[str, str],
                       delete_configs: Sequence[str]) -> None:
        from kraftsim.controller import OP_DELETE, OP_SET, AlterableConfig, AlterConfigsResource

        ops = [AlterableConfig(k, OP_SET, v) for k, v in sorted(set_configs.items())]
        ops += [AlterableConfig(k, OP_DELETE) for k in sorted(delete_configs)]
        result = answered(self.send_incremental_alter_configs([AlterConfigsResource(resource_type, name, tuple(ops))]))
        answer = result.response.responses[0]
        if answer.error_code != 0:
            raise SimError(code_text(answer.error_code, answer.error_message))

    def unregister_controller(self, controller_id: int) -> list[str]:
        """Controller unregistration (KIP-1312, 4.4): refused below 4.4-IV2 and for an unknown id."""
        from kraftsim.controller import unregister_controller

        self._controller_call(lambda ctx: unregister_controller(ctx, controller_id))
        self._finish_op("unregister-controller")
        return [f"Unregistered controller {controller_id}."]

    def unregister_broker(self, broker_id: int) -> list[str]:
        """`kafka-cluster unregister --id N`: the broker's registration is removed (it registers
        again if it still runs); refused with the controller's text for an unknown id."""
        answered(self.send_unregister_broker(broker_id))
        return [f"Broker {broker_id} is no longer registered."]

    def create_acl(self, *, principal: str, host: str, operation: str, resource_type: str, resource_name: str,
                   pattern_type: str = "literal", permission: str = "allow", parse_principal: bool = True) -> list[str]:
        """`kafka-acls --add`: one ACL binding (CreateAcls; a CIDR `host` from 4.4-IV1, KIP-1276),
        refused with the controller's text. Without `parse_principal`, the principal goes as an
        Admin client sends it, unparsed."""
        from kraftsim.controller import AclCreation

        if parse_principal:
            principal = kafka_principal(principal)
        creation = AclCreation(resource_type=_acl_code("resource_type", resource_type, "resource type"),
                               resource_name=resource_name,
                               resource_pattern_type=_acl_code("pattern_type", pattern_type, "pattern type"),
                               principal=principal, host=host, operation=_acl_code("operation", operation, "operation"),
                               permission_type=_acl_code("permission_type", permission, "permission type"))
        answer = answered(self.send_create_acls([creation])).response.results[0]
        if answer.error_code != 0:
            raise SimError(code_text(answer.error_code, answer.error_message))
        return ["Added ACL: " + acl_line(StandardAcl(creation.resource_type, resource_name,
                                                     creation.resource_pattern_type, principal, host,
                                                     creation.operation, creation.permission_type))]

    def delete_acls(self, *, resource_type: str = "any", resource_name: str | None = None,
                    pattern_type: str = "any", principal: str | None = None, host: str | None = None,
                    operation: str = "any", permission: str = "any") -> list[str]:
        """`kafka-acls --remove` (DeleteAcls) of one filter: every binding it matches goes, one
        line each; None and "any" match anything, pattern type "match" as Kafka matches it."""
        wanted = _acls_filter(resource_type, resource_name, pattern_type, principal, host, operation, permission)
        answer = answered(self.send_delete_acls([wanted])).response.filter_results[0]
        if answer.error_code != 0:
            raise SimError(code_text(answer.error_code, answer.error_message))
        return ["Removed ACL: " + acl_line(a) for a in answer.matching_acls]

    def list_acls(self, *, resource_type: str = "any", resource_name: str | None = None,
                  pattern_type: str = "any", principal: str | None = None, host: str | None = None,
                  operation: str = "any", permission: str = "any") -> list[str]:
        """`kafka-acls --list`: the bindings of the active controller's image that a filter
        matches (as DeleteAcls and DescribeAcls match them), one line each, by resource (as
        kafka-acls groups them), then principal, host, operation and permission."""
        from kraftsim.controller import acl_matches

        wanted = _acls_filter(resource_type, resource_name, pattern_type, principal, host, operation, permission)
        leader = self.leader()
        if leader is None:
            raise SimError("no active controller: the ACLs cannot be listed")
        image = self.image(leader)
        acls = [] if image is None else [a for _, a in image.acls.sorted_acls() if acl_matches(wanted, a)]
        acls.sort(key=lambda a: (a.resource_type, a.resource_name, a.pattern_type, a.principal, a.host, a.operation,
                                 a.permission_type))
        return [acl_line(a) for a in acls]


def acl_line(acl: StandardAcl) -> str:
    """One binding as `kraftsim acls` prints it: "ALLOW User:alice from host * READ on TOPIC:LITERAL:t"."""
    from kraftsim.controller import code_name

    return (f"{code_name('permission_type', acl.permission_type)} {acl.principal} from host {acl.host} "
            f"{code_name('operation', acl.operation)} on {code_name('resource_type', acl.resource_type)}:"
            f"{code_name('pattern_type', acl.pattern_type)}:{acl.resource_name}")


def _acls_filter(resource_type: str, resource_name: str | None, pattern_type: str, principal: str | None,
                 host: str | None, operation: str, permission: str) -> DeleteAclsFilter:
    """An ACL binding filter from names (any case; "any" and None match anything)."""
    from kraftsim.controller import DeleteAclsFilter

    return DeleteAclsFilter(
        resource_type_filter=_acl_code("resource_type", resource_type, "resource type"),
        resource_name_filter=resource_name, pattern_type_filter=_acl_code("pattern_type", pattern_type, "pattern type"),
        principal_filter=principal, host_filter=host, operation=_acl_code("operation", operation, "operation"),
        permission_type=_acl_code("permission_type", permission, "permission type"))


def _acl_code(table: str, name: str, what: str) -> int:
    """The code of enum value `name` (any case, - or _) of ACL table `table`; SimError names the choices."""
    from kraftsim.controller import acl_codes

    codes = {v: k for k, v in acl_codes()[table].items()}
    key = name.upper().replace("-", "_")
    if key not in codes:
        raise SimError(f"unknown {what} {name!r}; one of {', '.join(sorted(codes))}")
    return codes[key]


def kafka_principal(text: str) -> str:
    """The principal as kafka-acls parses it: the controller itself takes any string, so without
    this check a binding kafka-acls cannot add ("alice") was written."""
    from kraftsim.controller import tool_principal
    from kraftsim.javacompat import java_trim

    principal = tool_principal(text)
    if principal is None:
        raise SimError("expected a string in format principalType:principalName but got " + java_trim(text))
    return principal


def _leader_has_high_watermark(e: Engine) -> bool:
    leader = e.leader_member()
    return leader is not None and leader.high_watermark is not None


def _voters_committed(e: Engine) -> bool:
    leader = e.leader_member()
    return leader is not None and leader.high_watermark is not None and leader.voters_offset < leader.high_watermark


def _caught_up(e: Engine, node_id: int) -> bool:
    leader = e.leader_member()
    return leader is not None and leader.caught_up_time(node_id) >= 0


def _uuid(text: str) -> Uuid:
    try:
        return Uuid.from_string(text)
    except ValueError as e:
        raise SimError(f"Failed to parse --controller-directory-id: {e}") from None


def _refused_for_good(m: Member) -> bool:
    if m.status == FAILED:
        return True
    detail = m.detail
    if not detail:
        return False
    return m.broker_epoch is None and not any(t in detail for t in TRANSIENT_REFUSALS) \
        and detail.startswith("Unable to register")


__all__ = ["STATE_FILE", "STATE_FORMAT", "SavedState", "Simulation", "read_saved"]
