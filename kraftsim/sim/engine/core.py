"""The Engine: nodes, the event loop, faults, and the active controller of the event-driven
simulation. Raft is in `raft`, the broker/controller lifecycle in `lifecycle`, the
invariants in `invariants`; `Simulation` (the public API) drives an Engine.

Every node runs its own process: its log replica in Kafka's bytes under
`node-<id>/__cluster_metadata-0`, its loader (fed only committed batches), and its raft
state in `quorum-state`. The leader's QuorumController (kraftsim.controller) writes every
metadata record. Everything happens as an event on the virtual clock; the invariants are
checked as the events change things (see `invariants`).

Faults: `crash` loses what the node has not flushed (its log file is cut back to its last
flush); `stop` is clean; `start` may change the release; on a stopped node `torn_tail`
leaves half of the last batch on disk (start-up recovery cuts it, as Kafka's does) and
`wipe` empties the metadata log directory (the node catches up from the leader, by
snapshot when the leader's log no longer starts at 0).
"""

from __future__ import annotations

import random
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

from kraftsim.protocol.batch import BatchSlice, split_batches
from kraftsim.protocol.primitives import Uuid
from kraftsim.controller import (
    ActivationError, ControllerConfig, ControllerContext, ControllerResult, QuorumController, ReplayState,
)
from kraftsim.errors import KraftsimError
from kraftsim.image import EmitResult, MetadataImage, RetentionSettings, registry_for
from kraftsim.sim.node.format import clock_text, incarnation_id
from kraftsim.gcpause import fewer_collections
from kraftsim.sim.node.commit_share import CommitShare
from kraftsim.sim.node.controller_commits import ControllerCommits
from kraftsim.sim.engine.events import Event, LazyText, Message, Network, Scheduler
from kraftsim.sim.engine.fetching import Fetcher
from kraftsim.sim.engine.invariants import Checker
from kraftsim.sim.engine.isr import IsrExpansion
from kraftsim.sim.engine.balance import LeaderBalance
from kraftsim.sim.engine.lifecycle import TRANSIENT_REFUSALS, Lifecycle
from kraftsim.sim.engine.member import LEADER, UNATTACHED, Member, batch_key, entry_at
from kraftsim.sim.node.simnode import NodeState, SimNode, node_directory
from kraftsim.sim.engine.raft import Raft
from kraftsim.sim.engine.reconfig import Reconfig
from kraftsim.sim.engine.unclean import UncleanElection
from kraftsim.sim.engine.written import describing, written
from kraftsim.sim.node.start_scan import FeatureLevelScan
from kraftsim.sim.node.voters import controller_static_voters
from kraftsim.sim.types import (
    CRASHED,
    FAILED,
    RUNNING,
    STOPPED,
    InvalidNodes,
    InvariantResult,
    SimConfig,
    SimError,
    SimEvent,
)
from kraftsim.storage import METADATA_DIR_NAME, MetadataLog, read_bootstrap_dir, read_quorum_state
from kraftsim.storage.bootstrap_start import bootstrap_start_refusal
from kraftsim.storage.meta_properties import kraft_start_refusal
from kraftsim.storage.recovery import RecoveryKind
from kraftsim.storage.fileio import atomic_write
from kraftsim.storage.names import SnapshotId, segment_file_name, snapshot_file_name
from kraftsim.storage.segment import forget_shared_entries
from kraftsim.storage.reaper import settle
from kraftsim.versions import Catalog

DOWN = (STOPPED, CRASHED, FAILED)


class Engine:
    """See the module docstring. `emit_event` receives every timeline event."""

    def __init__(self, directory: Path, *, cluster_id: str, seed: int, now_ms: int, voters: Sequence[int],
                 catalog: Catalog, config: SimConfig, policies: Sequence[str], kraft_version: int = 0,
                 rng_salt: str = "", fsync: bool = False, on_event: Callable[[SimEvent], None] | None = None):
        self.directory = Path(directory)
        self.cluster_id = cluster_id
        self.seed = seed
        self.catalog = catalog
        self.config = config
        self.policies = tuple(policies)
        self.voters = tuple(sorted(voters))
        self.kraft_version = kraft_version
        self.config_fsync = fsync
        self.rng = random.Random(f"kraftsim:{seed}:events{rng_salt}")
        self.sched = Scheduler(now_ms)
        self.net = Network(self.sched, self.rng, delay_ms=(config.network_delay_min_ms, config.network_delay_max_ms),
                           loss=config.message_loss, deliver=self._deliver, emit=self.emit,
                           deliver_drops_partitioned=True)
        self.members: dict[int, Member] = {}
        self.controller: QuorumController | None = None
        self.controller_id: int | None = None
        self.on_event = on_event
        self.checker = Checker(self._violation)
        self.checker.members = self.members
        self.checker.voters = self.voters
        self.checker.membership = kraft_version >= 1
        #: The parts the Engine is composed of, each holding a reference to it.
        #: The replica keys (id -> directory id) of the newest VotersRecord any replica has seen,
        #: and its offset: what a replica without a record of its own is checked against.
        self.voter_keys: dict[int, Uuid] = {}
        self.voter_keys_offset = -2
        self.raft = Raft(self)
        self.reconfig = Reconfig(self)
        self.fetcher = Fetcher(self)
        self.lifecycle = Lifecycle(self)
        self.isr = IsrExpansion(self)
        self.balance = LeaderBalance(self)
        self.unclean = UncleanElection(self)
        self.checker.snapshot_ids = self.fetcher.snapshot_ids
        #: The handler of each message kind, bound (the network delivers to `_deliver`).
        self.handlers: dict[str, Callable[[Member, Message], None]] = self.raft.handlers()
        self.handlers.update(self.fetcher.handlers())
        self.handlers.update(self.lifecycle.handlers())
        self.handlers.update(self.isr.handlers())
        #: The event running (its heap entry: time, sequence number, label, node, action) and its number.
        self._event: Event | None = None
        self._event_n = 0
        self._event_text = "start"
        self._event_name = LazyText(lambda: self.current_event)
        self.deep_every_event = False
        self.events_run = 0
        self.registry = registry_for(catalog)
        #: Committed batches replayed once across the nodes (kraftsim.sim.node.commit_share).
        self.share = CommitShare()
        #: (release, end offset, its last batch's index entry, the controller's ReplayState there).
        self._checkpoint: tuple[str, int, tuple[int, ...], ReplayState] | None = None
        #: Snapshots written by `take_snapshot` (a node's cached snapshot list is stale after one).
        self.snapshots_taken = 0
        self._snapshots_seen: dict[int, int] = {}
        self.level_scan = FeatureLevelScan(self.registry)
        #: The log the read-only open before a start found nothing to recover in
        #: (`_refuse_start`), handed to the node's start instead of opening it again.
        self._scanned_log: MetadataLog | None = None
        #: The node that failed the last `stable` call (asked first by the next).
        self._unstable_witness: int | None = None

    # -------------------------------------------------------------- basics

    def drop_caches(self) -> None:
        """Forget what is kept only to go faster (commits shared between nodes, the start-up
        scan's levels, the invariants' caches), as the simulation closes: the images and
        parses they hold are freed at once, not left to the cyclic collector."""
        self.share.clear()
        self.level_scan.clear()
        self.checker.drop_caches()
        forget_shared_entries()

    def forget_commits_below_snapshots(self) -> int:
        """Let the shared commits go that no node can replay again: a node (re)starts from its
        newest snapshot, so batches ending below every node's newest snapshot are only memory
        (at a million partitions each kept commit holds its share of the run's history). A node
        with no snapshot keeps everything. Only speed depends on the share (a commit not found
        is replayed), never the result. While a node is down nothing goes (its newest snapshot
        is only on its disk). How many went."""
        low: int | None = None
        for m in self.members.values():
            if m.node is None or m.node.log is None:
                return 0
            snap = self.fetcher.latest_snapshot(m)
            end = 0 if snap is None else snap.end_offset
            low = end if low is None else min(low, end)
        return self.share.drop_below(low) if low else 0

    @property
    def now(self) -> int:
        return self.sched.now_ms

    @property
    def kip_778(self) -> bool:
        return "kip-778" in self.policies

    def listening(self) -> bool:
        """Whether timeline events are wanted (building them costs when nobody subscribes)."""
        return self.on_event is not None and self.net.verbose

    def emit(self, node: int | None, kind: str, details: dict[str, object]) -> None:
        if self.on_event is not None and self.net.verbose:
            self.on_event(SimEvent(self.now, node, kind, details))

    def _violation(self, result: InvariantResult) -> None:
        self.emit(None, "invariant", {"name": result.name, "detail": result.detail})

    @property
    def current_event(self) -> str:
        """The event running (or the last run), as invariant findings name it; the text is made
        only when asked for."""
        if self._event is None:
            return self._event_text
        time_ms, _, label, node, _ = self._event
        return f"event #{self._event_n} ({label} on node {node} at {clock_text(time_ms)})"

    @current_event.setter
    def current_event(self, text: str) -> None:
        self._event, self._event_text = None, text

    def describe_event(self) -> str:
        return self.current_event

    @property
    def event_name(self) -> LazyText:
        """`current_event`, made into text only if a finding is formatted (the cheap
        invariants are asked after every event and almost never fail)."""
        return self._event_name

    def member(self, node_id: int) -> Member:
        m = self.members.get(node_id)
        if m is None:
            raise InvalidNodes(f"the cluster has no node {node_id}")
        return m

    def ordered(self) -> list[Member]:
        return [self.members[i] for i in sorted(self.members)]

    def leader_member(self) -> Member | None:
        if self.controller_id is None:
            return None
        m = self.members.get(self.controller_id)
        return m if m is not None and m.running and m.role == LEADER else None

    # -------------------------------------------------------------- the loop

    def run_until(self, end_ms: int, stop: Callable[[], bool] | None = None) -> bool:
        """Run events up to virtual time `end_ms` (or until `stop()` holds); True if it held."""
        with fewer_collections():  # (kraftsim.gcpause)
            return self._run_until(end_ms, stop)

    def _run_until(self, end_ms: int, stop: Callable[[], bool] | None) -> bool:
        """The event loop, the per-event path: `stop` is asked once per instant, after every
        event of that millisecond ran."""
        sched = self.sched
        n = self.events_run  # the number of the event running; events_run catches up as the loop ends
        try:
            if stop is not None and sched.next_time() != sched.now_ms and stop():
                return True  # (nothing left to run at this instant, and it already holds)
            for entry in sched.due(end_ms):
                n += 1
                self._event, self._event_n = entry, n
                entry[4]()
                if self.deep_every_event:
                    self.checker.deep(self.current_event, self.ordered())
                if stop is not None:  # asked once per instant, after every event of it ran
                    nxt = sched.next_time()
                    if (nxt is None or nxt > entry[0]) and stop():
                        return True
            sched.advance(end_ms)
            return stop is not None and stop()
        finally:
            self.events_run = n

    def check_deep(self, label: str) -> None:
        with fewer_collections():
            self.checker.deep(f"{label} at {clock_text(self.now)}", self.ordered())

    # -------------------------------------------------------------- nodes

    def static_voters(self, voters: Sequence[int]) -> None:
        """controller.quorum.voters lists `voters` now (kraft.version 0): every replica uses them."""
        self.voters = self.checker.voters = tuple(sorted(voters))
        for m in self.members.values():
            m.voters = self.voters

    def add_member(self, state: NodeState, status: str) -> Member:
        m = Member(state=state, voter=state.id in self.voters, status=status)
        self.members[state.id] = m
        return m

    def make_node(self, m: Member) -> SimNode:
        sched = self.sched  # (the clock, read on every publish: `self.now` without the property)
        return SimNode(m.state, node_directory(self.directory, m.id), base_catalog=self.catalog,
                       clock_ms=lambda: sched.now_ms, kip_778=self.kip_778, kraft_version=self.kraft_version,
                       share=self.share)

    def start_member(self, m: Member, release: str | None = None, *, new_process: bool = True,
                     resume: bool = False) -> str | None:
        """Start the node's process (on `release`); returns Kafka's text when it cannot start.
        A new process has a new incarnation id (`new_process=False`: its first start, or a
        process a reopened simulation `resume`s, leading on if it led)."""
        with fewer_collections():  # (kraftsim.gcpause)
            return self._start_member(m, release, new_process=new_process, resume=resume)

    def _start_member(self, m: Member, release: str | None, *, new_process: bool, resume: bool) -> str | None:
        if m.running:
            return None
        if release is not None:
            self.catalog.find_release(release)
            m.state.release = release
        if new_process:
            m.state.starts += 1
            m.state.incarnation = incarnation_id(self.seed, m.id, m.state.starts)
            m.broker_epoch = None
        refusal = self._refuse_start(m)
        scanned, self._scanned_log = self._scanned_log, None
        if refusal is not None:
            self._fail_start(m, refusal)
            return refusal
        node = self.make_node(m)
        m.node = node
        m.disk_gen_at_start = m.disk_gen
        self._snapshots_seen[m.id] = 0
        m.status = RUNNING
        m.state.running = True
        if not resume:
            m.detail = None  # a reopened simulation's process keeps its refusal
        m.voter = m.id in self.voters
        try:
            # (the read-only open of `_refuse_start` just checked every CRC the recovery checks:
            # when it found nothing to recover, its log is the node's: MetadataLog.to_writable)
            node.open(apply_log=False, high_watermark=lambda: m.high_watermark or 0,
                      retention=RetentionSettings(self.config.retention_bytes, -1),
                      segment_bytes=self.config.segment_bytes, scanned=scanned)
        except KraftsimError as e:
            self._fail_start(m, str(e))
            return m.detail
        for action in node.log.recovery if node.log is not None else ():
            self.emit(m.id, "recovery", {"action": action.describe()})
        if m.state.is_controller:
            try:
                levels = self._finalized_on_disk(node)
            except KraftsimError as e:
                self._fail_start(m, str(e))
                return m.detail
            refusal = node.replay_refusal(levels)
            if refusal is not None:
                self._fail_start(m, refusal)
                return refusal
            if node.faults:
                # A process with the controller role treats a metadata loading fault as fatal
                # (Kafka's SharedServer): it cannot load its snapshot, so it does not start.
                self._fail_start(m, node.faults[0])
                return m.detail
        qs_path = node.metadata_dir / "quorum-state"
        if qs_path.exists():
            qs = read_quorum_state(qs_path)
            m.epoch = qs.leader_epoch
            m.leader = None if qs.leader_id < 0 else qs.leader_id
            m.voted = None if qs.voted_id < 0 else qs.voted_id
        else:
            m.epoch, m.leader, m.voted = 0, None, None
        self.checker.restarted(m.id)
        m.shutdown_wanted = m.shutdown_done = False
        m.controller_registered = False
        m.controller_register_sent_ms = -(10**12)
        self.emit(m.id, "start", {"release": m.state.release, "roles": list(m.state.roles), "resumed": resume,
                                  "log_end_offset": node.log.log_end_offset if node.log else 0})
        self.raft.start(m, resume=resume)
        self.lifecycle.start(m)
        return None

    def _refuse_start(self, m: Member) -> str | None:
        """What stops a node before its log is opened, with Kafka's text: a meta.properties it
        cannot start on (KafkaRaftServer's checks of its only log directory: kraft_start_refusal),
        a bootstrap metadata.version its release does not list (bootstrap_start_refusal),
        or a batch that fails its CRC below the committed offset (recovery would cut data the
        quorum committed: the node refuses to start rather than lose it silently)."""
        directory = node_directory(self.directory, m.id)
        refused = kraft_start_refusal(directory, m.id)
        if refused is not None:
            if refused.logged is not None:
                self.emit(m.id, "note", {"text": refused.logged})
            return refused.text
        unknown_mv = bootstrap_start_refusal(directory, self.catalog.at_release(m.state.release))
        if unknown_mv is not None:
            return unknown_mv
        meta = directory / METADATA_DIR_NAME
        if not meta.is_dir():
            return None
        try:
            log = MetadataLog.open(meta, read_only=True)
        except KraftsimError:
            return None  # opening it for real reports this with its own text
        cuts = [a for a in log.recovery if a.kind is RecoveryKind.TRUNCATE and not a.torn_tail
                and a.base_offset is not None and 0 <= a.base_offset < self.checker.committed_end]
        if not log.recovery and not log.warnings:
            self._scanned_log = log  # (nothing to recover: the node starts on this log)
        else:
            log.close()
        if not cuts:
            return None
        a = cuts[0]
        return f"{a.path}: the batch at offset {a.base_offset} (position {a.position}), below the committed " \
               f"offset {self.checker.committed_end}: {a.reason}"

    def _finalized_on_disk(self, node: SimNode) -> dict[str, int]:
        """The finalized levels the node's snapshot and log hold (what its controller would
        replay at start-up), read with the full catalog's records (kraftsim.sim.node.start_scan)."""
        return self.level_scan.finalized(node)

    def _fail_start(self, m: Member, text: str) -> None:
        self.emit(m.id, "failed", {"text": text})
        m.end_process(FAILED, text)

    def halt(self, m: Member, detail: str | None, status: str) -> None:
        """The process ends (whatever flushed stays on disk; see `crash` for what does not)."""
        if m.role == LEADER:
            self.raft.lose_leadership(m)
        if m.node is not None:
            if m.node.log is not None:
                self.raft.persist(m)
            self.checker.halted(m)
        m.end_process(status, detail)
        m.set_role(UNATTACHED)  # (what it knew as leader, candidate or follower goes with the process)
        m.timer_gen += 1
        m.lifecycle_gen += 1
        m.fetch_in_flight = m.snapshot_in_flight = False
        m.high_watermark = None
        if m.voter:
            running = sum(1 for v in m.voters if v in self.members and self.members[v].running)
            if running < self.raft.majority(m):
                self.emit(None, "note", {"text": f"No leader: {running} of {len(m.voters)} voter(s) running, "
                                                 f"{self.raft.majority(m)} needed."})

    def crash(self, m: Member) -> None:
        if not m.running:
            return
        lost = m.log.log_end_offset - m.flushed_end
        if lost > 0:
            self.checker.truncating(self.current_event, m, m.flushed_end)
            m.log.truncate_to(m.flushed_end)
            m.disk_gen += 1
            self.raft.write_epoch_file(m)
        self.emit(m.id, "crash", {"unflushed_offsets_lost": lost, "log_end_offset": m.flushed_end})
        self.halt(m, None, CRASHED)

    def stop(self, m: Member, timeout_ms: int) -> None:
        """A clean shutdown; a registered broker first finishes its controlled shutdown."""
        if not m.running:
            return
        self.emit(m.id, "stopping", {"roles": m.state.role_text, "release": m.state.release})
        if m.state.is_broker and m.broker_epoch is not None and m.leader is not None:
            m.shutdown_wanted = True
            if m.leader is not None:
                self.lifecycle.send_heartbeat(m, m.leader)
            self.run_until(self.now + timeout_ms, lambda: m.shutdown_done or not m.running)
            if m.shutdown_done:
                self.emit(m.id, "controlled-shutdown", {"broker_epoch": m.broker_epoch})
        if not m.running:
            return
        if m.role == LEADER:
            for v in m.voters:
                if v != m.id:
                    self.net.send(Message(m.id, v, "end-epoch", m.epoch, {}))
        m.state.previous_broker_epoch = m.broker_epoch if m.broker_epoch is not None else -1
        self.emit(m.id, "stop", {"log_end_offset": m.log.log_end_offset})
        self.halt(m, None, STOPPED)

    # -------------------------------------------------------------- disk faults (node down)

    def torn_tail(self, m: Member) -> None:
        m.disk_gen += 1
        d = node_directory(self.directory, m.id) / METADATA_DIR_NAME
        segments = sorted(p for p in d.glob("*.log") if p.stat().st_size > 0)
        if not segments:
            raise SimError(f"node {m.id}: its metadata log is empty; there is no tail to tear")
        path = segments[-1]
        data = path.read_bytes()
        last = 0  # where the last batch starts (whole, or already torn but with its length field)
        for piece in split_batches(data):
            if isinstance(piece, BatchSlice) or piece.needed is not None:
                last = piece.position
        size = len(data) - last
        with open(path, "r+b") as f:
            f.truncate(last + max(1, size // 2))
        self.checker.disk_lost(m.id, torn_tail=True)
        self.emit(m.id, "disk-fault", {"kind": "torn-tail", "file": path.name, "position": last,
                                       "bytes_left": max(1, size // 2), "batch_bytes": size})

    def wipe(self, m: Member) -> None:
        m.disk_gen += 1
        d = node_directory(self.directory, m.id) / METADATA_DIR_NAME
        settle(d)  # (what it reports removed never names a file already marked for deletion)
        removed = sorted(p.name for p in d.iterdir()) if d.is_dir() else []
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True, exist_ok=True)
        self.checker.disk_lost(m.id, torn_tail=False)
        m.epoch, m.leader, m.voted = 0, None, None
        self.emit(m.id, "disk-fault", {"kind": "wipe", "files": removed})

    # -------------------------------------------------------------- snapshots

    def install_snapshot(self, m: Member, sid: SnapshotId, data: bytes) -> None:
        """A fetched snapshot replaces the node's log: the log starts again after it (Kafka's
        truncateFullyAndStartAt), and the loader reloads from it."""
        node = m.node
        assert node is not None and node.log is not None
        m.disk_gen += 1
        self.checker.truncating(self.current_event, m, min(sid.end_offset, node.log.log_end_offset), reloads=True)
        d = node.metadata_dir
        atomic_write(d / snapshot_file_name(sid), data, fsync=self.config_fsync)
        node.retire()
        for p in sorted(d.glob("*.log")):
            p.unlink()
        (d / segment_file_name(sid.end_offset)).write_bytes(b"")
        fresh = self.make_node(m)
        fresh.open(apply_log=False, high_watermark=lambda: m.high_watermark or 0,
                   retention=RetentionSettings(self.config.retention_bytes, -1), segment_bytes=self.config.segment_bytes)
        m.node = fresh
        m.disk_gen_at_start = m.disk_gen  # its loader starts again from the files as they are now
        self._snapshots_seen[m.id] = 0
        m.flushed_end = fresh.log.log_end_offset if fresh.log is not None else 0
        self.raft.write_epoch_file(m)
        if m.high_watermark is not None and m.high_watermark < sid.end_offset:
            m.high_watermark = sid.end_offset

    def take_snapshot(self, m: Member) -> Path | None:
        node = m.node
        if node is None or node.generator is None or node.image is None or node.applied_offset < 0:
            return None
        result = node.generator.emitter.maybe_emit(node.image)
        self.snapshots_taken += 1
        if not isinstance(result, EmitResult):  # None: the snapshot exists already
            return None
        self.emit(m.id, "snapshot", {"end_offset": result.snapshot_id.end_offset, "epoch": result.snapshot_id.epoch,
                                     "records": result.records})
        return Path(result.path)

    # -------------------------------------------------------------- committed data to loaders

    def apply_committed(self, m: Member) -> None:
        node = m.node
        hw = m.high_watermark
        if node is None or hw is None:
            return
        loader = node.loader
        if loader is None:
            return
        before = loader.last_offset
        found = node.apply_committed(hw)
        if loader.last_offset != before:
            self.checker.applied(self._event_name, m)
            self._after_apply(m, before)
            if m.state.is_controller:
                self.lifecycle.maybe_register_controller(m)
            if m.state.is_broker:
                self.isr.applied(m)
                self.lifecycle.track_registration(m)
        if found is not None:
            if m.state.is_broker and m.broker_epoch is None:
                # Still starting (not registered): it applies nothing more; its registration
                # is refused by the controller with Kafka's text, and it stays fenced.
                self.emit(m.id, "blocked", {"text": found.text(), "offset": node.applied_offset + 1})
            else:
                self.lifecycle.react(m, found)

    def _after_apply(self, m: Member, before: int) -> None:
        node = m.node
        assert node is not None
        events = node.generator.events if node.generator is not None else ()  # (not copied: it grows per publish)
        seen = self._snapshots_seen.get(m.id, 0)
        if seen == len(events):
            return
        self._snapshots_seen[m.id] = len(events)
        for e in list(events)[seen:]:
            if isinstance(e.result, EmitResult):
                self.emit(m.id, "snapshot", {"end_offset": e.result.snapshot_id.end_offset,
                                             "epoch": e.result.snapshot_id.epoch, "reason": e.reason})

    # -------------------------------------------------------------- the active controller

    def activate_controller(self, m: Member) -> None:
        node = m.node
        assert node is not None and node.log is not None
        config = ControllerConfig(cluster_id=self.cluster_id, policies=frozenset(self.policies),
                                  broker_session_timeout_ms=self.config.broker_session_timeout_ms,
                                  max_idle_interval_ms=self.config.metadata_max_idle_interval_ms)
        start = node.log.log_end_offset
        try:
            qc = QuorumController(m.id, node.log, clock=lambda: self.now, catalog=node.catalog, epoch=m.epoch,
                                  config=config, kraft_version=self.kraft_version, supported=node.supported,
                                  static_voters=controller_static_voters(self.kraft_version, self.voters),
                                  upgrade_voters=lambda: self.reconfig.upgrade_voters(m),
                                  resume=self._controller_checkpoint(m))
            qc.observer = ControllerCommits(node)  # (its loaders adopt what it replays: controller_commits)
            qc.activate(read_bootstrap_dir(node.directory))
        except (ActivationError, KraftsimError) as e:
            self.emit(m.id, "failed", {"text": str(e)})
            self.halt(m, str(e), FAILED)
            return
        self.controller, self.controller_id = qc, m.id
        index = describing(qc.state.replicas, qc.image)
        index.take_changes()  # (what it replayed to get here: the parts look at the whole image)
        self.isr.reset(qc.image, index)
        self.balance.activated(m, index)
        self.unclean.activated(m, qc.image)
        self.raft.appended(m, start)
        epoch = m.epoch
        self.sched.after(self.config.metadata_max_idle_interval_ms, "controller-tick", m.id,
                         lambda: self.lifecycle.leader_tick(m, epoch))

    def keep_controller_state(self, m: Member) -> None:
        """The active controller's state when all its log is committed, kept so that the next
        leader (of the same release, whose log holds that prefix: raft's leader completeness)
        replays only what came after it instead of its whole log."""
        qc = self.controller
        if qc is None or self.controller_id != m.id or qc.state.transaction_start_offset is not None:
            return
        end = m.log.log_end_offset
        last = entry_at(m.log, end - 1)
        if last is None or (self._checkpoint is not None and self._checkpoint[1] == end):
            return
        self._checkpoint = (m.state.release, end, batch_key(last), qc.state.copy())

    def _controller_checkpoint(self, m: Member) -> tuple[ReplayState, int] | None:
        cp = self._checkpoint
        if cp is None or cp[0] != m.state.release or cp[1] > m.log.log_end_offset or cp[1] <= m.log.log_start_offset:
            return None
        last = entry_at(m.log, cp[1] - 1)
        if last is None or batch_key(last) != cp[2]:
            return None
        return cp[3], cp[1]

    def drop_controller(self, m: Member) -> None:
        if self.controller_id == m.id:
            self.controller, self.controller_id = None, None

    def execute(self, rule: Callable[[ControllerContext], ControllerResult]) -> ControllerResult | None:
        m = self.leader_member()
        if self.controller is None or m is None:
            return None
        start = m.log.log_end_offset
        result = self.controller.execute(rule)
        if m.log.log_end_offset > start:
            self.kraft_version = self.controller.kraft_version
            self.raft.appended(m, start)
            image = self.controller.image
            change = written(result, image, describing(self.controller.state.replicas, image))
            self.isr.written(change)
            self.balance.written(change)
            self.unclean.written(result)
        return result

    def controller_image(self) -> MetadataImage | None:
        """The active controller's image (what it has written, committed or not)."""
        return self.controller.image if self.controller is not None else None

    def reachable(self, a: int, b: int) -> bool:
        return self.net.reachable(a, b)

    # -------------------------------------------------------------- dispatch

    def _deliver(self, msg: Message) -> None:
        """A message lands: dropped if its ends are partitioned now (Network._arrive's test,
        done here: the network hands messages over directly) or its node is down, else handled."""
        groups = self.net.groups
        if groups and groups.get(msg.src, -1) != groups.get(msg.dst, -1):
            self.net.drop(msg, "partitioned")
            return
        m = self.members.get(msg.dst)
        if m is None or m.status != RUNNING or m.node is None:  # (not m.running, inlined)
            self.emit(msg.src, "drop", {"to": msg.dst, "message": msg.kind, "epoch": msg.epoch, "why": "down"})
            return
        handler = self.handlers.get(msg.kind)
        if handler is not None:
            handler(m, msg)

    # -------------------------------------------------------------- quorum membership (the Reconfig part's, for Simulation)

    def directory_id_of(self, node_id: int) -> Uuid | None:
        return self.reconfig.directory_id_of(node_id)

    def request_add_voter(self, node_id: int, directory_id: Uuid | None) -> None:
        self.reconfig.request_add_voter(node_id, directory_id)

    def request_remove_voter(self, node_id: int, directory_id: Uuid | None) -> None:
        self.reconfig.request_remove_voter(node_id, directory_id)

    def record_static_voters(self) -> bool:
        return self.reconfig.record_static_voters()

    # -------------------------------------------------------------- stability

    def stable(self) -> bool:
        """A leader with an active controller; every running node follows it and has applied
        all it committed; every live broker registered (or refused for good) and unfenced;
        every controller registered where its software and metadata.version call for it; no
        partition leader about to add a follower back to an ISR.

        Asked once per instant while a settle runs (thousands of times): the node that failed
        the last call is asked first, as it usually still fails (a conjunction of side-effect
        free conditions, so the order changes nothing but the cost); `stable_full` is the
        plain walk over every node."""
        quorum = self._committed_quorum()
        if quorum is None:
            return False
        leader_id, hw, image = quorum
        witness = self.members.get(self._unstable_witness) if self._unstable_witness is not None else None
        if witness is not None and not self._member_stable(witness, leader_id, hw, image):
            return False
        for m in self.members.values():
            if m is not witness and not self._member_stable(m, leader_id, hw, image):
                self._unstable_witness = m.id
                return False
        self._unstable_witness = None
        return not self.isr.settling()

    def stable_full(self) -> bool:
        """`stable` without its shortcut: every node asked in order (what tests compare it with)."""
        quorum = self._committed_quorum()
        if quorum is None:
            return False
        leader_id, hw, image = quorum
        return all(self._member_stable(m, leader_id, hw, image) for m in self.members.values()) and not self.isr.settling()

    def _committed_quorum(self) -> tuple[int, int, MetadataImage] | None:
        """(leader id, high watermark, the controller's image) when a leader with an active
        controller has committed all it appended; else None (not stable)."""
        leader = self.leader_member()
        if leader is None or self.controller is None or leader.high_watermark is None:
            return None
        hw = leader.high_watermark
        if hw < leader.log.log_end_offset:
            return None  # something appended is not committed yet
        return leader.id, hw, self.controller.image

    def _member_stable(self, m: Member, leader_id: int, hw: int, image: MetadataImage) -> bool:
        """One node's part of `stable` (True for a node that is down)."""
        if m.status != RUNNING or m.node is None:  # (not m.running, inlined)
            return True
        node = m.node
        state = m.state
        if state.is_broker and m.broker_epoch is None and m.detail \
                and not any(t in m.detail for t in TRANSIENT_REFUSALS):
            return True  # refused for good: it waits, fenced, for software that can join
        if m.leader != leader_id or node.applied_offset < hw - 1:
            return False
        if node.blocked is not None:
            return False
        if state.is_broker:
            reg = image.cluster.broker(m.id)
            if reg is None or reg.fenced or str(reg.incarnation_id) != state.incarnation:
                return False
        if state.is_controller and self.lifecycle.controller_registration_due(m):
            creg = image.cluster.controller(m.id)
            if creg is None or str(creg.incarnation_id) != state.incarnation:
                return False
        return True

__all__ = ["DOWN", "Engine", "Message"]
