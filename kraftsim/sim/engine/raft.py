"""KRaft's replication and elections, per node, as events (the Engine's Raft part).

What each node does, in kraftsim's words (Kafka's KafkaRaftClient is the reference):

- Followers and observers (brokers) fetch from the leader with their log end offset and
  the epoch of their last batch. The leader answers with batches, or with a diverging
  epoch (the follower truncates to where that epoch ends on the leader, then fetches
  again), or with the id of its latest snapshot when the offset is below its log start
  (the follower fetches the snapshot and starts its log after it). A fetch that finds
  nothing new waits at the leader up to `fetch_max_wait_ms`.
- A follower flushes what it appended before its next fetch, so the offset it fetches
  from is durable; the leader flushes its own appends after `append_linger_ms` and only
  serves and counts what it has flushed. The high watermark is the largest offset a
  majority of voters holds, and only once that offset lies in the leader's own epoch.
  Records below it are committed and handed to the node's loader.
- A voter that hears nothing from a leader (no successful fetch for
  `fetch_timeout_ms`, or no leader and `election_timeout_ms` plus a random part) starts
  an election: from 4.0 first a pre-vote (KIP-996) that changes no epoch, then a real
  one: epoch + 1, a vote for itself in `quorum-state`, VoteRequests. A voter grants at
  most one vote per epoch, and only to a log at least as up to date as its own (last
  epoch, then end offset). A majority makes a leader, which writes a LeaderChangeMessage
  in its epoch and tells the voters (BeginQuorumEpoch).
- From 3.7 a leader that has not been fetched from by a majority of voters within 1.5
  times the fetch timeout resigns (check-quorum).
- Which release does check-quorum and pre-vote is catalog data (policies raft_check_quorum
  and raft_pre_vote in policies.toml / releases.toml), so a hypothetical release can differ.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Protocol

from kraftsim.protocol.entries import Payload, encode_control_batch
from kraftsim.sim.engine.events import LazyText, Message, Network, Scheduler
from kraftsim.sim.engine.invariants import Checker
from kraftsim.sim.engine.member import (
    CANDIDATE,
    FOLLOWER,
    LEADER,
    OBSERVER,
    PROSPECTIVE,
    RESIGNED,
    UNATTACHED,
    LeaderState,
    Member,
)
from kraftsim.sim.node.state_files import write_if_changed
from kraftsim.sim.node.voters import quorum_state_bytes
from kraftsim.storage import leader_epoch_text
from kraftsim.storage.names import LEADER_EPOCH_CHECKPOINT_FILE, QUORUM_STATE_FILE
from kraftsim.sim.types import SimConfig, SimEvent
from kraftsim.versions import Catalog

class FetchSteps(Protocol):
    """What Raft and Reconfig ask of the Fetcher part (fetching.py, which imports both)."""

    def fetch(self, m: Member) -> None: ...
    def last_epoch(self, m: Member) -> int: ...
    def answer_parked(self, m: Member) -> None: ...


class MembershipSteps(Protocol):
    """What Raft asks of the Reconfig part (reconfig.py, which imports this module)."""

    def read_voters(self, m: Member, *, initial: bool = False) -> None: ...
    def start_of_epoch_membership(self, m: Member) -> list[Payload]: ...
    def voters_committed(self, m: Member) -> None: ...


class RaftContext(Protocol):
    """What the Raft part uses of the Engine it is part of: the shared clock, network, checker
    and random generator, the cluster's voters and kraft.version, its other parts (Fetcher,
    Reconfig), and the active controller's steps."""

    net: Network
    sched: Scheduler
    config: SimConfig
    checker: Checker
    rng: random.Random
    catalog: Catalog
    voters: tuple[int, ...]
    kraft_version: int
    config_fsync: bool
    on_event: Callable[[SimEvent], None] | None

    @property
    def fetcher(self) -> FetchSteps: ...
    @property
    def reconfig(self) -> MembershipSteps: ...
    @property
    def now(self) -> int: ...
    @property
    def event_name(self) -> LazyText: ...
    def describe_event(self) -> str: ...
    def listening(self) -> bool: ...
    def emit(self, node: int | None, kind: str, details: dict[str, object]) -> None: ...
    def activate_controller(self, m: Member) -> None: ...
    def drop_controller(self, m: Member) -> None: ...
    def apply_committed(self, m: Member) -> None: ...
    def keep_controller_state(self, m: Member) -> None: ...


#: A raft message's handler, as the Engine dispatches it.
Handler = Callable[[Member, Message], None]


class Raft:
    """The raft part of the Engine (see the module docstring), which owns one; the Engine's
    Fetcher part (fetching.py) replicates, calling its public steps, and its Reconfig part
    (reconfig.py) keeps each replica's voter set, changing roles through `become_voter`,
    `become_observer` and `become_unattached`."""

    def __init__(self, engine: RaftContext) -> None:
        self.engine = engine  # (the Engine: raft reads its shared state, voters and kraft.version)
        # (fixed for the engine's life, and read on every event: kept here)
        self.net = engine.net
        self.sched = engine.sched
        self.config = engine.config
        self.checker = engine.checker
        self.rng = engine.rng

    def handlers(self) -> dict[str, Handler]:
        """The messages of elections, by kind, as the Engine dispatches them."""
        return {"vote": self._on_vote, "vote-reply": self._on_vote_reply,
                "begin-epoch": self._on_begin_epoch, "end-epoch": self._on_end_epoch}

    # -------------------------------------------------------------- quorum-state

    def persist(self, m: Member) -> None:
        """quorum-state, written when its bytes change (kraftsim.sim.node.state_files)."""
        if m.node is None:  # its storage is closed (crashed): the file on disk stays as last written
            return
        log = m.node.log
        path = (log.directory if log is not None else m.node.metadata_dir) / QUORUM_STATE_FILE
        write_if_changed(path, quorum_state_bytes(self.engine.kraft_version, m.leader, m.epoch, m.voted,
                                                  m.voters or self.engine.voters),
                         fsync=self.engine.config_fsync)

    def write_epoch_file(self, m: Member) -> None:
        """leader-epoch-checkpoint, as Kafka's leader epoch cache writes it: when a batch of a
        new epoch is appended, and when the log is truncated or replaced (its bytes written
        when they change: kraftsim.sim.node.state_files)."""
        entries = m.log.leader_epochs()
        path = m.log.directory / LEADER_EPOCH_CHECKPOINT_FILE
        # (write_leader_epoch_checkpoint's bytes)
        write_if_changed(path, leader_epoch_text(entries).encode("ascii"), fsync=self.engine.config_fsync)
        m.epoch_file_last = entries[-1].epoch if entries else -1

    def policy(self, m: Member, name: str) -> str:
        """What the node's release does for a raft behaviour (catalog policies raft_check_quorum,
        raft_pre_vote: check-quorum from 3.7, KIP-996 pre-vote from 4.0)."""
        catalog = m.node.catalog if m.node is not None else self.engine.catalog.at_release(m.state.release)
        return catalog.policy(name)

    def majority(self, m: Member | None = None) -> int:
        """A majority of `m`'s voter set (of the cluster's, without `m`)."""
        return len(self.engine.voters if m is None else m.voters) // 2 + 1

    # -------------------------------------------------------------- timers

    def _arm(self, m: Member, delay_ms: int, label: str, fire: Callable[[Member], None]) -> None:
        """(Re)arm the node's one raft timer; an older timer of the node becomes stale."""
        m.timer_gen += 1
        gen = m.timer_gen

        def run() -> None:
            if m.running and m.timer_gen == gen:
                fire(m)

        self.sched.after(delay_ms, label, m.id, run)

    def _election_delay(self) -> int:
        t = self.config.election_timeout_ms
        return t + self.rng.randint(0, t)

    def start(self, m: Member, *, resume: bool = False) -> None:
        """A node's raft layer starts from its quorum-state: a voter that led becomes resigned
        (it cannot lead the same epoch twice), a voter that followed fetches from that leader.
        `resume` (a reopened simulation, whose processes never stopped): a leader leads on."""
        m.high_watermark = None
        m.set_role(UNATTACHED)  # (no role's state survives a restart; its role is set below)
        m.fetch_in_flight = m.snapshot_in_flight = False
        m.flushed_end = m.log.log_end_offset
        self.write_epoch_file(m)
        self.engine.reconfig.read_voters(m, initial=True)
        if not m.voter:
            m.set_role(OBSERVER)
            self.engine.fetcher.fetch(m)
            return
        if resume and m.leader == m.id:
            starts = [e.start_offset for e in m.log.leader_epochs() if e.epoch == m.epoch]
            m.lead(LeaderState(starts[0] if starts else m.log.log_end_offset, {m.id: m.flushed_end},
                               {v: self.engine.now for v in m.voters}))
            self._arm(m, self.config.fetch_timeout_ms * 3 // 2, "check-quorum", self._on_check_quorum)
            self.engine.activate_controller(m)
            return
        if m.leader == m.id:
            m.leader = None
            self.persist(m)
        if m.leader is not None:
            m.follow(self.engine.now)
        else:
            m.set_role(UNATTACHED)
        if m.role == FOLLOWER:
            self.engine.fetcher.fetch(m)
            self._arm(m, self.config.fetch_timeout_ms, "fetch-timeout", self._on_fetch_timeout)
        else:
            self._arm(m, self._election_delay(), "election-timeout", self._on_election_timeout)

    # -------------------------------------------------------------- state changes

    def become_follower(self, m: Member, epoch: int, leader: int) -> None:
        was_leader = m.role == LEADER
        changed = (m.epoch, m.leader) != (epoch, leader)
        if epoch > m.epoch:
            m.voted = None
        m.epoch, m.leader = epoch, leader
        if m.voter:
            m.follow(self.engine.now)
            if changed:
                self.persist(m)
            self._arm(m, self.config.fetch_timeout_ms, "fetch-timeout", self._on_fetch_timeout)
        elif changed:
            self.persist(m)  # an observer keeps quorum-state too
        if was_leader:
            self.lose_leadership(m)
        if changed:
            self.engine.emit(m.id, "leader", {"epoch": epoch, "leader": leader})
        if not m.fetch_in_flight:
            self.engine.fetcher.fetch(m)

    def become_unattached(self, m: Member, epoch: int) -> None:
        was_leader = m.role == LEADER
        if epoch > m.epoch:
            m.voted = None
        m.epoch, m.leader = epoch, None
        m.set_role(UNATTACHED if m.voter else OBSERVER)
        if m.voter:
            self.persist(m)
            self._arm(m, self._election_delay(), "election-timeout", self._on_election_timeout)
        if was_leader:
            self.lose_leadership(m)

    def become_voter(self, m: Member) -> None:
        """An observer found itself in its voter set: it follows its known leader as a voter,
        or waits for an election."""
        if m.role != OBSERVER:
            return
        if m.leader is not None:
            m.follow(self.engine.now)
            self._arm(m, self.config.fetch_timeout_ms, "fetch-timeout", self._on_fetch_timeout)
        else:
            m.set_role(UNATTACHED)
            self._arm(m, self._election_delay(), "election-timeout", self._on_election_timeout)

    def become_observer(self, m: Member) -> None:
        """A voter left its voter set: it fetches as an observer, without election timers (a
        leader leads on until the change commits, then resigns)."""
        if m.role == LEADER:
            return
        m.set_role(OBSERVER)
        m.timer_gen += 1  # no election timer any more
        if not m.fetch_in_flight:
            self.engine.fetcher.fetch(m)

    # -------------------------------------------------------------- elections

    def _on_election_timeout(self, m: Member) -> None:
        if m.role in (LEADER, FOLLOWER) or not m.voter:
            return
        if m.role in (PROSPECTIVE, CANDIDATE):
            backoff = self.rng.randint(0, self.config.election_backoff_max_ms)
            m.set_role(UNATTACHED)
            self._arm(m, backoff, "election-backoff", self._start_election)
            return
        self._start_election(m)

    def _on_fetch_timeout(self, m: Member) -> None:
        fs = m.following
        if fs is None:
            return
        if self.engine.now - fs.last_fetch_ok_ms >= self.config.fetch_timeout_ms:
            self.engine.emit(m.id, "fetch-timeout", {"epoch": m.epoch, "leader": m.leader})
            self._start_election(m)
        else:
            self._arm(m, self.config.fetch_timeout_ms - (self.engine.now - fs.last_fetch_ok_ms), "fetch-timeout",
                      self._on_fetch_timeout)

    def _start_election(self, m: Member) -> None:
        if not m.running or not m.voter or m.role == LEADER:
            return
        if m.id not in m.voters:
            return
        if self.policy(m, "raft_pre_vote") == "kip-996":
            m.campaign(PROSPECTIVE, {m.id})
            m.leader = None
            self.engine.emit(m.id, "election", {"epoch": m.epoch + 1, "phase": "pre-vote"})
            self._ask_votes(m, m.epoch + 1, pre_vote=True)
        else:
            self._become_candidate(m)
        if m.role in (PROSPECTIVE, CANDIDATE):
            self._arm(m, self._election_delay(), "election-timeout", self._on_election_timeout)

    def _become_candidate(self, m: Member) -> None:
        was_leader_known = m.leader
        m.epoch += 1
        m.campaign(CANDIDATE, {m.id})
        m.voted, m.leader = m.id, None
        self.checker.acts_as_voter(self.engine.event_name, m, "campaigns")
        self.persist(m)
        self.engine.emit(m.id, "election", {"epoch": m.epoch, "phase": "vote", "previous_leader": was_leader_known})
        self._ask_votes(m, m.epoch, pre_vote=False)
        self._maybe_won(m)

    def _ask_votes(self, m: Member, epoch: int, *, pre_vote: bool) -> None:
        last = self.engine.fetcher.last_epoch(m)
        for v in m.voters:
            if v != m.id:
                self.net.send(Message(m.id, v, "vote", epoch, {"pre_vote": pre_vote, "last_epoch": last,
                                                                "end_offset": m.log.log_end_offset}))
        if pre_vote and m.election is not None and len(m.election.granted) >= self.majority(m):
            self._become_candidate(m)

    def _log_up_to_date(self, m: Member, last_epoch_: int, end_offset: int) -> bool:
        mine = (self.engine.fetcher.last_epoch(m), m.log.log_end_offset)
        return (last_epoch_, end_offset) >= mine

    def _on_vote(self, m: Member, msg: Message) -> None:
        d = msg.data
        if not m.voter:
            return
        if d["pre_vote"]:
            if self.policy(m, "raft_pre_vote") != "kip-996":
                granted = True  # KIP-996: a voter without PreVote answers UNSUPPORTED_VERSION, counted as granted
            else:
                fs = m.following
                leader_alive = m.role == LEADER or (fs is not None and
                                                    self.engine.now - fs.last_fetch_ok_ms < self.config.fetch_timeout_ms)
                granted = (msg.epoch > m.epoch or (msg.epoch == m.epoch and m.leader is None)) and not leader_alive \
                    and self._log_up_to_date(m, d["last_epoch"], d["end_offset"])
            self.net.send(Message(m.id, msg.src, "vote-reply", m.epoch, {"pre_vote": True, "granted": granted,
                                                                           "for_epoch": msg.epoch, "leader": m.leader}))
            return
        if msg.epoch < m.epoch:
            self.net.send(Message(m.id, msg.src, "vote-reply", m.epoch, {"pre_vote": False, "granted": False,
                                                                           "for_epoch": msg.epoch}))
            return
        if msg.epoch > m.epoch:
            self.become_unattached(m, msg.epoch)
        granted = (m.voted in (None, msg.src) and m.leader is None and m.role != LEADER
                   and self._log_up_to_date(m, d["last_epoch"], d["end_offset"]))
        if granted and m.voted is None:
            self.checker.acts_as_voter(self.engine.event_name, m, "votes")
            m.voted = msg.src
            self.persist(m)
            self._arm(m, self._election_delay(), "election-timeout", self._on_election_timeout)
        self.net.send(Message(m.id, msg.src, "vote-reply", m.epoch, {"pre_vote": False, "granted": granted,
                                                                       "for_epoch": msg.epoch, "leader": m.leader}))

    def _on_vote_reply(self, m: Member, msg: Message) -> None:
        d = msg.data
        leader = d.get("leader")
        if leader is not None and leader != m.id and msg.epoch >= m.epoch and m.role != LEADER \
                and (msg.epoch > m.epoch or (m.leader is None and m.role not in (PROSPECTIVE, CANDIDATE))):
            self.become_follower(m, msg.epoch, leader)  # the voter knows a leader: follow it
            self.engine.fetcher.fetch(m)
            return
        if d["pre_vote"]:
            election = m.election
            if m.role == PROSPECTIVE and election is not None and d["for_epoch"] == m.epoch + 1 and d["granted"]:
                election.granted.add(msg.src)
                if len(election.granted) >= self.majority(m):
                    self._become_candidate(m)
            elif msg.epoch > m.epoch:
                self.become_unattached(m, msg.epoch)
            return
        if msg.epoch > m.epoch:
            self.become_unattached(m, msg.epoch)
            return
        election = m.election
        if m.role == CANDIDATE and election is not None and d["for_epoch"] == m.epoch and d["granted"]:
            election.granted.add(msg.src)
            self._maybe_won(m)

    def _maybe_won(self, m: Member) -> None:
        election = m.election
        if m.role == CANDIDATE and election is not None and len(election.granted) >= self.majority(m):
            self._become_leader(m, sorted(election.granted))

    def _become_leader(self, m: Member, granted: list[int]) -> None:
        log = m.log
        ls = LeaderState(log.log_end_offset, {m.id: m.flushed_end})
        m.lead(ls)
        m.leader = m.id
        self.checker.acts_as_voter(self.engine.event_name, m, "leads")
        self.persist(m)
        rt = m.node.registry["LeaderChangeMessage"]  # type: ignore[union-attr]
        voter = rt.nested["Voter"]
        message = rt.new(version=0, leader_id=m.id, voters=[voter(voter_id=v) for v in m.voters],
                         granting_voters=[voter(voter_id=v) for v in granted])
        payloads = [Payload(rt, 0, message)] + self.engine.reconfig.start_of_epoch_membership(m)
        log.append(encode_control_batch(log.log_end_offset, payloads, epoch=m.epoch, timestamp=self.engine.now))
        if len(payloads) > 1:
            m.voters_offset = log.log_end_offset - 1  # the voter set, now in the log
        self.write_epoch_file(m)
        self.checker.leader_elected(self.engine.describe_event(), m.id, m.epoch)
        self.engine.emit(m.id, "election", {"epoch": m.epoch, "phase": "won", "votes": granted})
        self.engine.emit(m.id, "leader", {"epoch": m.epoch, "leader": m.id})
        self.appended(m, ls.epoch_start_offset)
        for v in m.voters:
            if v != m.id:
                self.net.send(Message(m.id, v, "begin-epoch", m.epoch, {}))
        self._arm(m, self.config.fetch_timeout_ms * 3 // 2, "check-quorum", self._on_check_quorum)
        self.engine.activate_controller(m)

    def _on_check_quorum(self, m: Member) -> None:
        ls = m.leading
        if ls is None:
            return
        window = self.config.fetch_timeout_ms * 3 // 2
        heard = {r for r, t in ls.last_fetch_from.items() if r in m.voters and self.engine.now - t < window}
        if m.id in m.voters:
            heard.add(m.id)
        if self.policy(m, "raft_check_quorum") == "resign" and len(heard) < self.majority(m):
            self.engine.emit(m.id, "resign", {"epoch": m.epoch, "heard_from": sorted(heard)})
            self.become_unattached(m, m.epoch)
            m.set_role(RESIGNED)
            return
        self._arm(m, window, "check-quorum", self._on_check_quorum)

    def lose_leadership(self, m: Member) -> None:
        """`m` no longer leads (its role changed, or it halts): its controller goes. (A leader
        that is no voter any more keeps its role until its change commits: it only loses what
        waits at it, and its change in flight.)"""
        ls = m.leading
        if ls is not None:
            ls.parked = {}
            ls.voter_change = None  # a change in flight is the next leader's to commit, or to lose
        self.engine.drop_controller(m)

    def _on_end_epoch(self, m: Member, msg: Message) -> None:
        """The leader shuts down cleanly (EndQuorumEpoch): its followers elect a successor
        after a short random backoff instead of waiting out the fetch timeout."""
        if m.voter and m.role == FOLLOWER and m.epoch == msg.epoch and m.leader == msg.src:
            self._arm(m, self.rng.randint(0, self.config.election_backoff_max_ms // 2), "end-epoch",
                      self._start_election)

    def _on_begin_epoch(self, m: Member, msg: Message) -> None:
        if msg.epoch >= m.epoch and m.role != LEADER or msg.epoch > m.epoch:
            self.become_follower(m, msg.epoch, msg.src)

    # -------------------------------------------------------------- appending and committing

    def appended(self, m: Member, from_offset: int) -> None:
        """The leader appended batches from `from_offset`: flush them after the linger."""
        for fb in m.log.batches(from_offset) if self.engine.listening() else ():
            b = fb.batch
            self.engine.emit(m.id, "append", {"base_offset": b.base_offset, "last_offset": b.last_offset,
                                       "epoch": b.partition_leader_epoch})
        if not m.flush_pending:
            m.flush_pending = True
            epoch = m.epoch

            def flush() -> None:
                m.flush_pending = False
                ls = m.leading
                if m.running and ls is not None and m.epoch == epoch:
                    m.log.flush() if self.engine.config_fsync else None
                    m.flushed_end = m.log.log_end_offset
                    ls.matched[m.id] = m.flushed_end
                    self.update_high_watermark(m)
                    self.engine.fetcher.answer_parked(m)

            self.sched.after(self.config.append_linger_ms, "flush", m.id, flush)

    def update_high_watermark(self, m: Member) -> None:
        """The leader's high watermark after a replica's progress: the largest offset a majority
        of its voters holds, once that lies in its own epoch."""
        ls = m.leading
        assert ls is not None  # (asked by the leader only)
        matched = ls.matched
        voters = m.voters
        offsets = sorted([matched.get(v, -1) for v in voters], reverse=True)
        candidate = offsets[len(voters) // 2]  # (the majority's lowest: self.majority() - 1)
        if candidate <= ls.epoch_start_offset:
            return  # nothing of its own epoch is on a majority yet
        if m.high_watermark is None or candidate > m.high_watermark:
            self.set_high_watermark(m, candidate)

    def set_high_watermark(self, m: Member, hw: int) -> None:
        old = m.high_watermark
        m.high_watermark = hw
        if self.engine.on_event is not None and self.net.verbose:  # (self.engine.listening(), inlined)
            self.engine.emit(m.id, "commit", {"high_watermark": hw, "previous": old, "epoch": m.epoch})
        self.checker.high_watermark(self.engine.event_name, m, hw)
        self.engine.apply_committed(m)
        if m.role == LEADER:
            if m.voters is not self.engine.voters and hw > m.voters_offset:
                self.engine.reconfig.voters_committed(m)
                if m.role != LEADER:
                    return
            self.engine.fetcher.answer_parked(m)  # followers waiting at the leader learn the new high watermark
            if hw == m.log.log_end_offset:
                self.engine.keep_controller_state(m)


__all__ = ["Raft"]
