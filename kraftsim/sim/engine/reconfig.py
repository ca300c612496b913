"""Quorum reconfiguration (KIP-853) in the event simulator: the Engine's Reconfig part, beside
its Raft part (raft.py), seeing the Engine through `ReconfigContext`.

Under kraft.version 1 every replica knows the voter set its own log holds: the latest
VotersRecord it appended (committed or not, as Kafka's KRaftControlRecordStateMachine
keeps it), else the one in its newest snapshot's header (the bootstrap checkpoint
`0-0.checkpoint` of a formatted dynamic quorum counts as offset -1). That set decides
whether the replica is a voter (it may vote, campaign and lead) or an observer, and, on
the leader, which replicas count toward the high watermark and check-quorum. Under
kraft.version 0 every replica uses the static `controller.quorum.voters`.

A change goes through the leader, one at a time, as Kafka's AddVoterHandler and
RemoveVoterHandler do it: the leader refuses while it has no high watermark in its epoch,
while another change is pending or uncommitted, under kraft.version 0, for a voter already
in (or not in) the set, and for a new voter that has not caught up as an observer; else it
appends a VotersRecord with the new set, which takes effect on append. When the record
commits the change is done; a leader that removed itself then resigns.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from kraftsim.errors import KraftsimError
from kraftsim.protocol.batch import RecordBatch
from kraftsim.protocol.entries import Payload, decode_batch, encode_control_batch
from kraftsim.protocol.primitives import Uuid
from kraftsim.sim.engine.events import Message
from kraftsim.sim.engine.events import Network
from kraftsim.sim.engine.invariants import Checker
from kraftsim.sim.engine.member import LEADER, LeaderState, Member, VotersRecordView
from kraftsim.sim.engine.raft import FetchSteps, Raft
from kraftsim.sim.node.format import node_directory_id, static_voters_record
from kraftsim.sim.node.simnode import CONTROLLER_LISTENER
from kraftsim.sim.types import SimError
from kraftsim.sim.node.voters import VOTERS_RECORD, replica_key, voter_keys_text
from kraftsim.storage import read_snapshot
from kraftsim.storage.dynamic_voters import DynamicVoter, voters_record
from kraftsim.storage.snapshot import snapshot_path


#: A replica counts as caught up for an add if it fetched within this long (Kafka: an hour)
#: after having reached the leader's log end once (LeaderState.isReplicaCaughtUp).
CAUGHT_UP_WINDOW_MS = 3_600_000


class VoterChangeRefused(SimError):
    """The leader refused a voter change: `error` is Kafka's error name, the text its message."""

    def __init__(self, error: str, text: str):
        super().__init__(text)
        self.error = error


class ReconfigContext(Protocol):
    """What the Reconfig part uses of the Engine it is part of: the cluster's voter set and
    kraft.version, the newest replica keys seen, the network and checker, and the Raft and
    Fetcher parts' public steps."""

    directory: Path
    net: Network
    checker: Checker
    voters: tuple[int, ...]
    kraft_version: int
    voter_keys: dict[int, Uuid]
    voter_keys_offset: int
    members: dict[int, Member]
    raft: Raft

    @property
    def fetcher(self) -> FetchSteps: ...

    @property
    def now(self) -> int: ...
    @property
    def current_event(self) -> str: ...
    def emit(self, node: int | None, kind: str, details: dict[str, object]) -> None: ...
    def leader_member(self) -> Member | None: ...


class Reconfig:
    """Voter sets per replica and voter changes at the leader: a part of the Engine, which owns
    one. The Raft part asks it for a replica's voter set (`read_voters`), what a new leader
    writes (`start_of_epoch_membership`) and what a commit completes (`voters_committed`);
    role changes it causes go through Raft's public steps (`become_voter`, `become_observer`,
    `become_unattached`)."""

    def __init__(self, engine: ReconfigContext) -> None:
        self.engine = engine
        self.net = engine.net
        self.checker = engine.checker

    # -------------------------------------------------------------- each replica's voter set

    def read_voters(self, m: Member, *, initial: bool = False) -> None:
        """The voter set `m`'s files hold (at start, after a truncation or a snapshot install)."""
        if self.engine.kraft_version < 1:
            self._set_voters(m, self.engine.voters, None, -1, initial=initial)
            return
        m.directory_id = self.directory_id_of(m.id)
        node = m.node
        assert node is not None and node.log is not None
        log, registry = node.log, node.registry
        record: VotersRecordView | None = None
        offset = -1
        snaps = [s for s in log.snapshot_ids() if s.end_offset >= log.log_start_offset]
        if snaps:
            sid = snaps[-1]
            try:
                snap = read_snapshot(snapshot_path(log.directory, sid), registry)
            except KraftsimError:
                snap = None
            for e in snap.header_entries if snap is not None else ():
                if e.type_name == VOTERS_RECORD:
                    record, offset = e.message, sid.end_offset - 1
        for fb in log.batches(log.log_start_offset, check_crc=False):
            if fb.batch.is_control:
                for e in decode_batch(fb.batch, registry):
                    if e.type_name == VOTERS_RECORD:
                        record, offset = e.message, e.offset
        # Without a VotersRecord (a controller formatted --no-initial-controllers, a wiped disk
        # formatted again) the node knows the cluster's voters as its configuration gives them:
        # it is a voter only if among them, and not with another directory than the voter's.
        ids = self.engine.voters if record is None else tuple(sorted(v.voter_id for v in record.voters))
        self._set_voters(m, ids, record, offset, initial=initial)

    def control_appended(self, m: Member, batch: RecordBatch) -> None:
        """A replica appended a control batch: a VotersRecord in it takes effect now."""
        if self.engine.kraft_version < 1 or m.node is None:
            return
        for e in decode_batch(batch, m.node.registry):
            if e.type_name == VOTERS_RECORD:
                ids = tuple(sorted(v.voter_id for v in e.message.voters))
                self._set_voters(m, ids, e.message, e.offset)

    def voters_truncated(self, m: Member, offset: int) -> None:
        """`m`'s log was cut at `offset`: a VotersRecord cut away no longer counts."""
        if self.engine.kraft_version >= 1 and m.voters_offset >= offset:
            self.read_voters(m)

    def _set_voters(self, m: Member, ids: tuple[int, ...], record: VotersRecordView | None, offset: int, *,
                    initial: bool = False) -> None:
        if ids == self.engine.voters:
            ids = self.engine.voters  # (one tuple shared: the leader compares by identity)
        changed = ids != m.voters
        m.voters, m.voters_record, m.voters_offset = ids, record, offset
        if record is not None and offset >= self.engine.voter_keys_offset:
            self.engine.voter_keys_offset = offset
            self.engine.voter_keys = {v.voter_id: v.voter_directory_id for v in record.voters}
        was, m.voter = m.voter, m.id in ids and self.is_voter_key(m.id, m.directory_id, record)
        if changed and not initial:
            self.engine.emit(m.id, "voters", {"voters": list(ids), "offset": offset})
        if initial or was == m.voter or not m.running:
            return
        if m.voter:  # an observer finds itself in the voter set: it follows as a voter now
            self.engine.emit(m.id, "note", {"text": f"Node {m.id} is a voter now (voters {','.join(map(str, ids))})."})
            self.engine.raft.become_voter(m)
            return
        self.engine.emit(m.id, "note", {"text": f"Node {m.id} is no longer a voter (voters {','.join(map(str, ids))})."})
        self.engine.raft.become_observer(m)

    def is_voter_key(self, node_id: int, directory_id: Uuid | None, record: VotersRecordView | None = None) -> bool:
        """Whether (node_id, directory_id) is the replica key the voter set names for node_id
        (Kafka's ReplicaKey match: a voter recorded without a directory id matches any). Without
        a record, the newest voter set any replica has seen decides; none known: ids alone."""
        if directory_id is None:
            return True
        if record is None:
            known = self.engine.voter_keys.get(node_id)
        else:
            known = next((v.voter_directory_id for v in record.voters if v.voter_id == node_id), None)
        return known is None or known == Uuid.ZERO or known == directory_id

    # -------------------------------------------------------------- the leader's side

    def voters_committed(self, m: Member) -> None:
        """The leader's high watermark passed its voter set's record: the set is the cluster's;
        a pending change is done; a leader no longer in the set resigns."""
        ls = m.leading
        assert ls is not None  # (the leader's high watermark moved)
        self.engine.voters = m.voters
        self.checker.voters = m.voters
        change, ls.voter_change = ls.voter_change, None
        if change is not None:
            kind, nid, _ = change
            self.engine.emit(m.id, "note", {"text": f"Voter change committed: {kind} {nid}; voters "
                                             f"{','.join(map(str, m.voters))}."})
        if m.id not in m.voters and m.role == LEADER:
            self.engine.emit(m.id, "resign", {"epoch": m.epoch, "why": "not in the committed voter set",
                                       "voters": list(m.voters)})
            for v in m.voters:
                self.net.send(Message(m.id, v, "end-epoch", m.epoch, {}))
            self.engine.raft.become_unattached(m, m.epoch)
            self.engine.fetcher.fetch(m)

    def start_of_epoch_membership(self, m: Member) -> list[Payload]:
        """What a new leader writes beside its LeaderChangeMessage under kraft.version 1 when its
        voter set has never been in the log (it came from the bootstrap checkpoint): the
        KRaftVersionRecord and the VotersRecord (LeaderState.appendStartOfEpochControlRecords)."""
        if self.engine.kraft_version < 1 or m.voters_offset != -1 or m.voters_record is None or m.node is None:
            return []
        reg = m.node.registry
        kv = reg["KRaftVersionRecord"]
        return [Payload(kv, 0, kv.new(version=0, k_raft_version=self.engine.kraft_version)),
                Payload(reg["VotersRecord"], 0, m.voters_record)]

    def _append_voters(self, m: Member, ls: LeaderState, voters: dict[int, DynamicVoter],
                       change: tuple[str, int]) -> None:
        """The leader appends a VotersRecord for `voters`; it takes effect at once."""
        assert m.node is not None  # (the leader runs)
        payload = voters_record(voters, CONTROLLER_LISTENER[0], m.node.registry)
        before_offset = m.voters_offset
        self._append_control(m, [payload])
        offset = m.log.log_end_offset - 1
        before, committed = m.voters, m.high_watermark is not None and before_offset < m.high_watermark
        self._set_voters(m, tuple(sorted(voters)), payload.message, offset)
        self.checker.voters_appended(self.engine.current_event, m, before, m.voters, committed)
        ls.voter_change = (change[0], change[1], offset)

    def _append_control(self, m: Member, payloads: list[Payload]) -> None:
        """The leader appends a control batch of membership records (the membership invariants
        are reported from then on)."""
        self.checker.membership = True
        log = m.log
        start = log.log_end_offset
        log.append(encode_control_batch(start, payloads, epoch=m.epoch, timestamp=self.engine.now))
        self.engine.raft.write_epoch_file(m)
        self.engine.raft.appended(m, start)

    def _dynamic_voters(self, m: Member) -> dict[int, DynamicVoter]:
        """The leader's voter set as DynamicVoters (endpoints and directory ids as recorded)."""
        out = {}
        for v in m.voters_record.voters if m.voters_record is not None else ():
            ep = v.endpoints[0] if v.endpoints else None
            out[v.voter_id] = DynamicVoter(v.voter_id, ep.host if ep else f"node-{v.voter_id}",
                                           ep.port if ep else CONTROLLER_LISTENER[1], v.voter_directory_id)
        return out

    def _change_preconditions(self, m: Member, ls: LeaderState, verb: str) -> None:
        """The checks both handlers make first, in Kafka's order."""
        if ls.voter_change is not None:
            raise VoterChangeRefused("REQUEST_TIMED_OUT",
                                     "Request timed out waiting for leader to handle previous voter change request")
        hw = m.high_watermark
        if hw is None:
            raise VoterChangeRefused("REQUEST_TIMED_OUT", "Request timed out waiting for leader to establish HWM "
                                                          "and fence previous voter changes")
        if self.engine.kraft_version < 1:
            raise VoterChangeRefused("UNSUPPORTED_VERSION", f"Cluster doesn't support {verb} voter because the "
                                                            f"kraft.version feature is {self.engine.kraft_version}")
        if m.voters_record is None or m.voters_offset >= hw:
            at = "Optional.empty" if m.voters_record is None else f"Optional[{m.voters_offset}]"
            raise VoterChangeRefused("REQUEST_TIMED_OUT", f"Request timed out waiting for voters to commit the latest "
                                                          f"voter change at {at} with HWM {hw}")

    def request_add_voter(self, node_id: int, directory_id: Uuid | None) -> None:
        """AddRaftVoter at the leader (refusals as VoterChangeRefused): appends the new set."""
        m, ls = self._change_leader()
        self._change_preconditions(m, ls, "adding")
        style = self.engine.raft.policy(m, "raft_replica_key_text")
        key = replica_key(node_id, directory_id, style)
        if node_id in m.voters:
            raise VoterChangeRefused("DUPLICATE_VOTER", f"The voter id for {key} is already part of the set of "
                                                        f"voters {voter_keys_text(m.voters_record, style)}.")
        new = self.engine.members.get(node_id)
        if new is None or not new.running or new.id not in ls.last_fetch_from:
            raise VoterChangeRefused("REQUEST_TIMED_OUT", f"New voter {key} is not ready to receive requests")
        supported = new.node.catalog.supported_features().get("kraft.version", (0, 0)) if new.node else (0, 0)
        if supported[1] < self.engine.kraft_version:
            raise VoterChangeRefused("INVALID_REQUEST", f"Aborted add voter operation for {key} since the kraft.version "
                                                        f"range (min: {supported[0]}, max: {supported[1]} doesn't "
                                                        f"support the finalized version {self.engine.kraft_version}")
        caught = m.caught_up_time(node_id)
        if caught < 0 or self.engine.now - ls.last_fetch_from[node_id] > CAUGHT_UP_WINDOW_MS:
            raise VoterChangeRefused("REQUEST_TIMED_OUT",
                                     f"Aborted add voter operation for {key} since it is lagging behind")
        voters = self._dynamic_voters(m)
        voters[node_id] = DynamicVoter(node_id, f"node-{node_id}", CONTROLLER_LISTENER[1], directory_id or Uuid.ZERO)
        self._append_voters(m, ls, dict(sorted(voters.items())), ("add", node_id))

    def request_remove_voter(self, node_id: int, directory_id: Uuid | None) -> None:
        """RemoveRaftVoter at the leader (refusals as VoterChangeRefused): appends the new set."""
        m, ls = self._change_leader()
        self._change_preconditions(m, ls, "removing")
        voters = self._dynamic_voters(m)
        known = voters.get(node_id)
        if known is None or known.directory_id != directory_id or len(voters) == 1:
            style = self.engine.raft.policy(m, "raft_replica_key_text")
            raise VoterChangeRefused("VOTER_NOT_FOUND", f"Cannot remove voter {replica_key(node_id, directory_id, style)} "
                                                        f"from the set of voters {voter_keys_text(m.voters_record, style)}")
        del voters[node_id]
        self._append_voters(m, ls, voters, ("remove", node_id))

    def record_static_voters(self) -> bool:
        """A quorum at kraft.version 1 whose leader knows its voter set from no VotersRecord
        (a directory upgraded before kraftsim wrote the record with the upgrade): the leader
        appends the current set now, before a voter change. True when it appended."""
        m = self.engine.leader_member()
        if m is None or self.engine.kraft_version < 1:
            return False
        payloads = self.upgrade_voters(m)
        if not payloads:
            return False
        self._append_control(m, payloads)
        self._set_voters(m, m.voters, payloads[0].message, m.log.log_end_offset - 1)
        return True

    def upgrade_voters(self, m: Member) -> list[Payload]:
        """The VotersRecord the leader writes beside the KRaftVersionRecord of an upgrade to
        kraft.version 1 (LeaderState.maybeAppendUpgradedKRaftVersion): its static voter set
        with the directory id each voter fetches with; none when a voter set is in the log."""
        if m.voters_record is not None or m.node is None:
            return []
        return [static_voters_record(self.engine.directory, m.voters, m.node.registry)]

    def membership_appended(self, m: Member, start: int) -> None:
        """The leader's controller appended from `start` (an upgrade of kraft.version): a
        VotersRecord there takes effect at once, and the membership invariants apply."""
        for fb in m.log.batches(start, check_crc=False):
            if fb.batch.is_control:
                before = m.voters_record
                self.control_appended(m, fb.batch)
                if m.voters_record is not before:
                    self.checker.membership = True

    def _change_leader(self) -> tuple[Member, LeaderState]:
        m = self.engine.leader_member()
        ls = None if m is None else m.leading
        if m is None or ls is None:
            raise VoterChangeRefused("NOT_LEADER_OR_FOLLOWER", "There is no active controller: no leader of the quorum.")
        return m, ls

    # -------------------------------------------------------------- what describe-quorum shows

    def directory_id_of(self, node_id: int) -> Uuid | None:
        """The node's metadata directory id (meta.properties), None when it has none."""
        return node_directory_id(self.engine.directory, node_id)


__all__ = ["CAUGHT_UP_WINDOW_MS", "Reconfig", "ReconfigContext", "VoterChangeRefused"]
