"""How a KRaft node replicates, as events (the Engine's Fetcher part, beside raft.py): a
follower or observer fetches from the leader with its end offset and last epoch; the leader
answers with batches, a diverging epoch to truncate to, or its latest snapshot's id when the
offset is below its log start, and parks a fetch that finds nothing new; FetchSnapshot brings
a follower that far behind up to the snapshot."""

from __future__ import annotations

from functools import partial
from typing import Protocol

from kraftsim.sim.engine.events import LazyText, Message, Network, Scheduler
from kraftsim.sim.engine.invariants import Checker
from kraftsim.sim.engine.raft import Handler, Raft
from kraftsim.sim.engine.reconfig import Reconfig
from kraftsim.sim.engine.member import (
    LEADER,
    Member,
    end_offset_for_epoch,
    entry_at,
    last_entry,
)
from kraftsim.sim.types import RUNNING, SimConfig
from kraftsim.protocol.batch import RecordBatch
from kraftsim.storage.log import MetadataLog
from kraftsim.storage.names import SnapshotId, snapshot_file_name


class FetchContext(Protocol):
    """What the Fetcher uses of the Engine it is part of: the shared clock, network and
    checker, and the Raft part's public steps."""

    net: Network
    sched: Scheduler
    config: SimConfig
    checker: Checker
    voters: tuple[int, ...]
    kraft_version: int
    snapshots_taken: int
    raft: Raft
    reconfig: Reconfig

    @property
    def event_name(self) -> LazyText: ...
    def describe_event(self) -> str: ...
    def listening(self) -> bool: ...
    def emit(self, node: int | None, kind: str, details: dict[str, object]) -> None: ...
    def install_snapshot(self, m: Member, sid: SnapshotId, data: bytes) -> None: ...

#: Batches a leader sends in one fetch response at most (Kafka: by bytes, 8 MiB).
FETCH_MAX_BATCHES = 64


class Fetcher:
    """Fetching, truncation and snapshots: a part of the Engine, which owns one. It calls the
    Engine's Raft part through its public methods (become_follower, set_high_watermark, persist,
    install_snapshot, ...), and raft calls it through `fetch`, `answer_parked`, `truncate` and
    the snapshot look-ups."""

    def __init__(self, engine: FetchContext) -> None:
        self.engine = engine
        # (fixed for the engine's life, and read on every fetch: kept here)
        self.net = engine.net
        self.sched = engine.sched
        self.config = engine.config
        self.checker = engine.checker
        self.raft = engine.raft
        self.reconfig = engine.reconfig

    def handlers(self) -> dict[str, Handler]:
        """The messages of replication, by kind, as the Engine dispatches them."""
        return {"fetch": self._on_fetch, "fetch-reply": self._on_fetch_reply,
                "fetch-snapshot": self._on_fetch_snapshot, "fetch-snapshot-reply": self._on_fetch_snapshot_reply}

    # -------------------------------------------------------------- fetching

    def fetch(self, m: Member) -> None:
        """Send the next fetch: to the known leader, else (observers) to a voter in turn."""
        if m.status != RUNNING or m.node is None or m.role == LEADER or m.snapshot_in_flight:
            return  # (not m.running, inlined)
        target = m.leader
        if target is None:
            if m.voter:
                return  # a voter without a leader waits for an election
            m.fetch_rotation += 1
            target = self.engine.voters[m.fetch_rotation % len(self.engine.voters)]
        m.fetch_in_flight, m.fetch_target = True, target
        log: MetadataLog | None = m.node.log  # (m.log, without the property)
        assert log is not None
        seg = log.active_segment  # (log_end_offset and last_entry's common case, inlined)
        if seg is not None and seg.entries:
            e = seg.entries[-1]
            offset, last_epoch = e.last_offset + 1, e.epoch
        else:
            offset, last_epoch = log.log_end_offset, self.last_epoch(m)
        self.net.send(Message(m.id, target, "fetch", m.epoch, {
            "offset": offset, "last_epoch": last_epoch, "voter": m.voter, "hw_seen": m.high_watermark,
            "directory_id": m.directory_id}))
        m.fetch_seq = seq = m.fetch_seq + 1
        # (a partial, not a closure: fetch and _on_fetch run for every fetch, and a closure
        # would make every use of `m` in them go through a cell)
        sched = self.sched
        sched.push(sched.now_ms + self.config.request_timeout_ms, "fetch-retry", m.id,
                   partial(self._fetch_retry, m, seq))

    def _fetch_retry(self, m: Member, seq: int) -> None:
        """The fetch numbered `seq` timed out: fetch again (an observer looks for the leader anew)."""
        if m.fetch_seq == seq and m.fetch_in_flight and m.running:  # (most retries are stale: tested first)
            m.fetch_in_flight = False
            if not m.voter:
                m.leader = None  # find the leader again
            self.fetch(m)

    def _on_fetch(self, m: Member, msg: Message) -> None:
        d = msg.data
        ls = m.leading
        if ls is None or msg.epoch > m.epoch:
            self.net.send(Message(m.id, msg.src, "fetch-reply", m.epoch, {"error": "NOT_LEADER_OR_FOLLOWER",
                                                                            "leader": m.leader}))
            return
        if msg.epoch < m.epoch and d["voter"]:
            self.net.send(Message(m.id, msg.src, "fetch-reply", m.epoch, {"error": "FENCED_LEADER_EPOCH",
                                                                            "leader": m.id}))
            return
        # A replica with a voter's id but another directory (a wiped disk formatted again) is
        # not that voter: it is served as an observer whose fetches count for nothing.
        other_key = m.voters_record is not None and msg.src in m.voters \
            and not self.reconfig.is_voter_key(msg.src, d.get("directory_id"), m.voters_record)
        if not other_key:
            ls.last_fetch_from[msg.src] = self.sched.now_ms
        node = m.node
        assert node is not None  # (a message is handled by a running node)
        log: MetadataLog | None = node.log  # (m.log and log.active_segment, without the properties: every fetch)
        assert log is not None
        offset, fetched_epoch = d["offset"], d["last_epoch"]
        log_start = log.log_start_offset
        seg = log.active_segment
        last = seg.entries[-1] if seg is not None and seg.entries else None
        # The common case: a fetch from the leader's log end, with its last epoch; the checks
        # below would find the snapshot irrelevant and the last batch matching.
        at_end = last is not None and offset == last.last_offset + 1 and last.epoch == fetched_epoch \
            and log_start < offset
        if not at_end and (offset < log_start or offset == 0):  # (the snapshot is looked up only where it matters)
            snap = self.latest_snapshot(m)
            if offset < log_start or (snap is not None and snap.end_offset > 0 and offset < snap.end_offset
                                      and log_start > 0):
                self._reply_fetch(m, msg.src, {"snapshot": [snap.end_offset, snap.epoch]})  # type: ignore[union-attr]
                return
        if offset > 0 and not at_end:
            e = entry_at(log, offset - 1)
            if offset > log.log_end_offset or e is None or e.epoch != fetched_epoch or e.next_offset != offset:
                snap = self.latest_snapshot(m)
                snap_ok = snap is not None and offset == snap.end_offset == log_start and fetched_epoch == snap.epoch
                if not snap_ok:
                    epoch, end = end_offset_for_epoch(log, fetched_epoch, self.snapshot_pair(m))
                    self._reply_fetch(m, msg.src, {"diverging": [epoch, min(end, offset)]})
                    return
        if other_key:
            ls.other_key_fetch[msg.src] = (offset, self.sched.now_ms)
        else:
            ls.matched[msg.src] = offset
            if offset >= log.log_end_offset:
                m.caught_up_at[msg.src] = self.sched.now_ms
            if msg.src in m.voters:
                self.raft.update_high_watermark(m)
        if offset >= m.flushed_end and (m.high_watermark is None or d.get("hw_seen") == m.high_watermark):
            ls.parked[msg.src] = (m.lifecycle_gen, msg)
            sched = self.sched  # (most fetches park)
            sched.push(sched.now_ms + self.config.fetch_max_wait_ms, "fetch-wait", m.id,
                       partial(self._fetch_waited, m, msg))
            return
        self.serve_fetch(m, msg)

    def _fetch_waited(self, m: Member, msg: Message) -> None:
        """A parked fetch's wait is over: answered now if still parked at a leader."""
        ls = m.leading
        if ls is None:
            return
        parked = ls.parked.get(msg.src)
        if parked is not None and parked[1] is msg:
            del ls.parked[msg.src]
            self.serve_fetch(m, msg)

    def serve_fetch(self, m: Member, msg: Message, served: dict[int, list[RecordBatch]] | None = None) -> None:
        """Answer a fetch with the leader's flushed batches from its offset (each as the
        leader's checked parse of its bytes: the follower appends the bytes, `batch.raw`).
        `served`: the lists of batches already found for other fetches answered at this same
        moment, by offset (the leader's log and flushed end are the same for them all; a
        follower only reads the list)."""
        offset = msg.data["offset"]
        batches = served.get(offset) if served is not None else None
        if batches is None:
            batches = self._flushed_batches(m, offset)
            if served is not None:
                served[offset] = batches
        self.net.send(Message(m.id, msg.src, "fetch-reply", m.epoch, {  # (_reply_fetch, inlined)
            "batches": batches, "leader": m.id, "high_watermark": m.high_watermark}))

    def _flushed_batches(self, m: Member, offset: int) -> list[RecordBatch]:
        """The leader's flushed batches from `offset`, at most FETCH_MAX_BATCHES."""
        batches: list[RecordBatch] = []
        flushed = m.flushed_end
        if offset < flushed:
            append = batches.append
            log = m.log
            seg = log.active_segment
            if seg is not None and offset >= seg.base_offset and offset >= log.log_start_offset:
                # (log.batches' common case, inlined: every fetch that finds something passes here)
                parsed, read = seg.parsed_batches(), seg.read_batch
                for j in range(seg.find(offset), len(seg.entries)):
                    b = (parsed.get(j) or read(j)).batch
                    if b.base_offset >= flushed or len(batches) >= FETCH_MAX_BATCHES:
                        break
                    append(b)
            else:
                for fb in log.batches(offset):
                    b = fb.batch
                    if b.base_offset >= flushed or len(batches) >= FETCH_MAX_BATCHES:
                        break
                    append(b)
        return batches

    def answer_parked(self, m: Member) -> None:
        """The leader answers every fetch waiting at it (its flushed end or high watermark moved)."""
        ls = m.leading
        if ls is None:
            return
        parked, ls.parked = ls.parked, {}
        served: dict[int, list[RecordBatch]] = {}  # (most parked fetches ask from the same offset: found once)
        for replica in sorted(parked):
            self.serve_fetch(m, parked[replica][1], served)

    def _reply_fetch(self, m: Member, dst: int, data: dict[str, object]) -> None:
        data["leader"] = m.id
        data["high_watermark"] = m.high_watermark
        self.net.send(Message(m.id, dst, "fetch-reply", m.epoch, data))

    def _on_fetch_reply(self, m: Member, msg: Message) -> None:
        d = msg.data
        if msg.src != m.fetch_target:
            return  # an answer to a fetch it gave up on
        m.fetch_in_flight = False
        if "error" in d:
            leader = d.get("leader")
            if msg.epoch > m.epoch or (leader is not None and leader != m.leader and msg.epoch >= m.epoch):
                if leader is not None and leader != m.id:
                    self.raft.become_follower(m, msg.epoch, leader)
                    return
                self.raft.become_unattached(m, msg.epoch)
            if not m.voter:
                if m.leader != (leader if leader != m.id else None):
                    m.leader = leader if leader != m.id else None
                    self.raft.persist(m)
                self.sched.after(self.config.election_timeout_ms // 10 + 1, "fetch-backoff", m.id,
                                 partial(self._fetch_backoff, m))
            return
        if msg.epoch < m.epoch:
            self.fetch(m)
            return
        if msg.epoch > m.epoch or m.leader != msg.src:
            self.raft.become_follower(m, msg.epoch, msg.src) if m.voter else self._observer_leader(m, msg)
            if m.fetch_in_flight:
                return
        fs = m.following
        if fs is not None:
            fs.last_fetch_ok_ms = self.sched.now_ms
        node = m.node
        assert node is not None  # (a message is handled by a running node)
        log: MetadataLog | None = node.log  # (m.log, without the property)
        assert log is not None
        if "diverging" in d:
            epoch, end = d["diverging"]
            _, mine = end_offset_for_epoch(log, epoch, self.snapshot_pair(m))
            target = min(end, mine)
            self.truncate(m, target, f"diverging epoch {epoch} ends at {end} on leader {msg.src}")
            self.fetch(m)
            return
        if "snapshot" in d:
            end, epoch = d["snapshot"]
            m.snapshot_in_flight = True
            self.net.send(Message(m.id, msg.src, "fetch-snapshot", m.epoch, {"end_offset": end, "epoch": epoch}))
            self.sched.after(self.config.request_timeout_ms, "fetch-snapshot-retry", m.id,
                             partial(self._fetch_snapshot_retry, m, m.lifecycle_gen))
            return
        seg = log.active_segment  # (log.log_end_offset's common case, inlined)
        if seg is not None and seg.entries:
            start = end = seg.entries[-1].last_offset + 1
        else:
            start = end = log.log_end_offset
        batches = d["batches"]
        if batches:
            append, checker = log.append, self.checker
            for b in batches:
                if b.base_offset != end:
                    break
                raw = b.raw
                end = append(raw, checked=b).last_offset + 1
                if b.is_control:
                    self.reconfig.control_appended(m, b)
                if b.base_offset < checker.committed_end:  # (a cheaper half of Checker.appended's test)
                    checker.appended(self.engine.event_name, m, raw)
                if b.partition_leader_epoch > m.epoch_file_last:
                    self.raft.write_epoch_file(m)
        if end > start and self.engine.listening():
            self.engine.emit(m.id, "append", {"base_offset": start, "last_offset": end - 1, "from": msg.src})
        m.flushed_end = end  # a follower flushes before it fetches again
        hw = d["high_watermark"]
        if hw is not None:
            hw = min(hw, end)
            if m.high_watermark is None or hw > m.high_watermark:
                self.raft.set_high_watermark(m, hw)
        self.fetch(m)

    def _fetch_backoff(self, m: Member) -> None:
        if m.running and not m.fetch_in_flight:
            self.fetch(m)

    def _fetch_snapshot_retry(self, m: Member, gen: int) -> None:
        """No FetchSnapshot answer in time (in the same process `gen`): fetch again."""
        if m.running and m.lifecycle_gen == gen and m.snapshot_in_flight:
            m.snapshot_in_flight = False
            self.fetch(m)

    def _observer_leader(self, m: Member, msg: Message) -> None:
        m.epoch, m.leader = msg.epoch, msg.src
        self.raft.persist(m)  # an observer keeps quorum-state too
        self.engine.emit(m.id, "leader", {"epoch": msg.epoch, "leader": msg.src})

    def truncate(self, m: Member, offset: int, why: str) -> None:
        log = m.log
        if offset >= log.log_end_offset:
            return
        self.checker.truncating(self.engine.describe_event(), m, offset)
        self.engine.emit(m.id, "truncate", {"offset": offset, "log_end_offset": log.log_end_offset, "why": why})
        log.truncate_to(offset)
        m.disk_gen += 1
        m.flushed_end = min(m.flushed_end, log.log_end_offset)
        self.raft.write_epoch_file(m)
        self.reconfig.voters_truncated(m, offset)

    # -------------------------------------------------------------- snapshots

    def snapshot_pair(self, m: Member) -> tuple[int, int] | None:
        s = self.latest_snapshot(m)
        return None if s is None else (s.end_offset, s.epoch)

    def _snapshot_epoch(self, m: Member) -> int:
        s = self.latest_snapshot(m)
        return 0 if s is None else s.epoch

    def last_epoch(self, m: Member) -> int:
        """`last_epoch` of the node's log, looking for its snapshot only when the log is empty."""
        e = last_entry(m.log)
        return self._snapshot_epoch(m) if e is None else e.epoch

    def latest_snapshot(self, m: Member) -> SnapshotId | None:
        """The node's newest snapshot (see `snapshot_ids`)."""
        ids = [s for s in self.snapshot_ids(m) if s.end_offset > 0]
        return ids[-1] if ids else None

    def snapshot_ids(self, m: Member) -> list[SnapshotId]:
        """The node's snapshots (`MetadataLog.snapshot_ids`), kept until it writes or installs
        one, or its log start moves: listing the directory on every fetch, and for the deep
        invariants after every operation, would dominate the run. A snapshot file appears
        only through the node's own generator (its events), `take_snapshot` (counted) or an
        install (a new node object); retention removes files only as its log start moves."""
        node = m.node
        assert node is not None
        log: MetadataLog | None = node.log
        assert log is not None
        events = len(node.generator.events) if node.generator is not None else 0
        cached = m.snapshot_cache
        if cached is not None and cached[0] is node and cached[1] == (events, log.log_start_offset,
                                                                       self.engine.snapshots_taken):
            return cached[2]
        ids = log.snapshot_ids()
        m.snapshot_cache = (node, (events, log.log_start_offset, self.engine.snapshots_taken), ids)
        return ids

    def _on_fetch_snapshot(self, m: Member, msg: Message) -> None:
        if m.role != LEADER:
            return
        sid = SnapshotId(msg.data["end_offset"], msg.data["epoch"])
        path = m.log.directory / snapshot_file_name(sid)
        if not path.exists():
            self.net.send(Message(m.id, msg.src, "fetch-snapshot-reply", m.epoch, {"error": "SNAPSHOT_NOT_FOUND"}))
            return
        self.net.send(Message(m.id, msg.src, "fetch-snapshot-reply", m.epoch, {
            "end_offset": sid.end_offset, "epoch": sid.epoch, "bytes": path.read_bytes(),
            "high_watermark": m.high_watermark}))

    def _on_fetch_snapshot_reply(self, m: Member, msg: Message) -> None:
        if not m.snapshot_in_flight:
            return
        m.snapshot_in_flight = False
        d = msg.data
        if "error" in d:
            self.fetch(m)
            return
        sid = SnapshotId(d["end_offset"], d["epoch"])
        self.engine.install_snapshot(m, sid, d["bytes"])
        if self.engine.kraft_version >= 1:
            self.reconfig.read_voters(m)
        self.engine.emit(m.id, "snapshot", {"end_offset": sid.end_offset, "epoch": sid.epoch, "from": msg.src,
                                     "fetched": True})
        hw = d.get("high_watermark")
        if hw is not None and (m.high_watermark is None or min(hw, m.log.log_end_offset) > m.high_watermark):
            self.raft.set_high_watermark(m, min(hw, m.log.log_end_offset))
        self.fetch(m)

