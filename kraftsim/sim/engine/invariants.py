"""The invariants, checked as the simulation runs; each failure names the event, node and offsets.

Cheap ones are checked on every change that could break them (which is after every event
that changes anything):

- OneLeaderPerEpoch: no two nodes win the same epoch.
- ConsistentCommittedData: when a leader moves its high watermark, a majority of voters
  hold every batch below it on disk, as the leader does (a voter that is down counts with
  what its disk kept: all of a clean stop, the flushed part after a crash, less after a
  disk fault); a batch once committed is never truncated away on a node that holds it,
  and every node's log below its own high watermark is the committed log (above it, a
  follower may hold a deposed leader's uncommitted batches until it learns the new epoch).
- MonotonicHighWatermark: a node's high watermark never goes back while it runs.
- BrokersApplyOnlyCommitted: no node's loader gets past the highest committed offset.

Deep ones replay files and run at the end of every operation (and after every event with
`deep=True`):

- ImageMatchesLog: every running node's image equals a replay of its own snapshot and log
  up to the offset it applied.
- SnapshotMatchesLog: every snapshot a node holds equals a replay of that node's log up to
  the snapshot's offset (where the log still reaches back that far).
"""

from __future__ import annotations

import bisect
import hashlib
import struct
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from kraftsim.errors import KraftsimError
from kraftsim.image import CommittedBatch, DigestCache, LoaderFault, MetadataImage, MetadataLoader, MvChangeHandling
from kraftsim.image import image_digest
from kraftsim.image import load_snapshot
from kraftsim.sim.engine.checked_snapshots import CheckedSnapshots
from kraftsim.sim.engine.file_memo import FileIdentity, FileMemo, file_identity
from kraftsim.sim.engine.member import Member, entry_at
from kraftsim.sim.engine.range_share import RangeShare
from kraftsim.sim.node.snapshot_share import SnapshotShare
from kraftsim.sim.types import INVARIANTS, MEMBERSHIP_INVARIANTS, InvariantResult
from kraftsim.storage import SnapshotFile, decode_file_batch, read_snapshot
from kraftsim.storage.batchfile import FileBatch
from kraftsim.storage.names import SnapshotId
from kraftsim.storage.snapshot import snapshot_path

if TYPE_CHECKING:
    from kraftsim.storage import MetadataLog

#: Shadow commits kept for sharing (a shadow that starts again replays its node's log from
#: its start or a snapshot; older commits are replayed again).
SHADOW_KEEP = 1 << 12
#: Batch CRC-32s kept (`Checker._crc`; emptied past it).
CRC_KEEP = 1 << 12
#: Digests of log replays kept (`Checker._log_digest`; each is small; emptied past it).
LOG_DIGESTS_KEEP = 1 << 8
#: What names one checked batch of a log (`_log_key`): base offset, last offset delta,
#: leader epoch, size and the CRC-32C of the rest (checked against the bytes when read).
_BATCH_KEY = struct.Struct(">qiiiI")


def disjoint_majorities(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """Whether a majority of voter set `a` and a majority of `b` can share no voter."""
    sa, sb = set(a), set(b)
    if not sa or not sb:
        return False
    need_a = max(0, len(sa) // 2 + 1 - len(sa - sb))  # shared voters a majority of `a` needs at least
    need_b = max(0, len(sb) // 2 + 1 - len(sb - sa))
    return need_a + need_b <= len(sa & sb)


class DurableLog(NamedTuple):
    """What a node that is down keeps on disk: its log's offsets and batch boundaries
    (base offset, last offset, epoch), as the invariants need them."""

    start_offset: int
    end_offset: int
    batches: tuple[tuple[int, int, int], ...]

    @classmethod
    def of(cls, log: MetadataLog) -> DurableLog:
        entries = tuple((e.base_offset, e.last_offset, e.epoch)
                        for key in sorted(log.segments) for e in log.segments[key].entries)
        return cls(log.log_start_offset, log.log_end_offset, entries)

    def batch_at(self, offset: int) -> tuple[int, int, int] | None:
        if offset < self.start_offset or offset >= self.end_offset:
            return None
        i = bisect.bisect_right(self.batches, offset, key=lambda b: b[0]) - 1
        if i < 0 or self.batches[i][1] < offset:
            return None
        return self.batches[i]

    def cut_to(self, end_offset: int) -> DurableLog:
        """The log after a disk fault left it only the offsets below `end_offset`."""
        kept = tuple(b for b in self.batches if b[1] < end_offset)
        end = kept[-1][1] + 1 if kept else min(self.start_offset, end_offset)
        return DurableLog(min(self.start_offset, end), end, kept)


class Checker:
    """Keeps what the invariants need (committed batches, leaders per epoch, high watermarks)."""

    def __init__(self, report: Callable[[InvariantResult], None]):
        self.report = report
        self.failures: dict[str, InvariantResult] = {}
        self.leaders: dict[int, int] = {}
        self.committed: dict[int, tuple[int, int, int]] = {}  # base offset -> (last offset, epoch, crc of bytes)
        self.committed_end = 0
        self.hw: dict[int, int] = {}
        #: Per node, the offset below which its log was found equal to the committed log. It
        #: outlives a restart (the disk keeps what was checked); a cut or a disk fault lowers it.
        self.verified: dict[int, int] = {}
        self.voters: tuple[int, ...] = ()
        #: The quorum is dynamic (kraft.version 1): the membership invariants are reported too.
        self.membership = False
        self.members: dict[int, Member] = {}
        self._shadows: dict[int, tuple[tuple[int, str], int, MetadataLoader]] = {}
        #: Bumped when a node's files lose data its shadow replayed (`truncating`, `disk_lost`).
        self._shadow_gen: dict[int, int] = {}
        #: Commits the shadow loaders replayed, shared among shadows only (never with the
        #: nodes' own loaders, whose result the shadows check): see `replay_into`.
        self.shadow_share = RangeShare(keep=SHADOW_KEEP)
        #: Digest parts of images compared before (images are immutable: see DigestCache).
        self.digests = DigestCache()
        #: A node's snapshot ids (the Engine's kept listing; by default the directory's).
        self.snapshot_ids: Callable[[Member], list[SnapshotId]] = lambda m: m.log.snapshot_ids()
        #: Per (node, snapshot end offset, epoch): the identity of the file last checked.
        self._snapshots_checked: dict[tuple[int, int, int], FileIdentity | None] = {}
        #: Digests of what snapshot files load to, by file identity and by content.
        self.snapshot_digests: FileMemo[str] = FileMemo()
        #: The snapshot files read back, checked whole or matched with one (a restamped copy).
        self.checked_snapshots = CheckedSnapshots()
        #: Digests of replays of a log up to a snapshot's offset, by (software, offset, the
        #: log's batches below it: `_log_key`); replays made and taken (`_log_digest`).
        self._log_digests: dict[tuple[object, int, bytes], str | None] = {}
        self.log_replays = 0
        self.log_replays_taken = 0
        #: CRC-32s of batch bytes compared before, by the bytes object (`_crc`).
        self._crcs: dict[int, tuple[bytes, int]] = {}
        #: Voters that are down (stopped, crashed, failed): what their disks hold. A fetch they
        #: sent before going down may still reach the leader and move its high watermark.
        self.down: dict[int, DurableLog] = {}

    def drop_caches(self) -> None:
        """Forget what is kept only to go faster (shadow loaders, shared shadow replays, digest
        parts, CRCs): a closed simulation frees it at once rather than leaving it to the
        cyclic collector. A deep check after this starts its shadows again from the files."""
        self._shadows.clear()
        self.shadow_share.clear()
        self.digests = DigestCache()
        self._crcs.clear()
        self._log_digests.clear()
        self.checked_snapshots.clear()

    def fail(self, name: str, detail: str) -> None:
        result = InvariantResult(name, False, detail)
        if name not in self.failures:
            self.failures[name] = result
        self.report(result)

    def results(self) -> list[InvariantResult]:
        names = INVARIANTS + MEMBERSHIP_INVARIANTS if self.membership else INVARIANTS
        return [self.failures.get(n, InvariantResult(n, True, None)) for n in names]

    # -------------------------------------------------------------- quorum membership

    def acts_as_voter(self, event: object, m: Member, what: str) -> None:
        """VoterOfSeenSet: a node votes, campaigns or leads only as a member of the voter set its
        own log (or static configuration) holds."""
        if m.id not in m.voters:
            self.fail("VoterOfSeenSet", f"{event}: node {m.id} {what} in epoch {m.epoch} but the voter set it "
                                        f"holds is {list(m.voters)}")

    def voters_appended(self, event: object, m: Member, before: tuple[int, ...], after: tuple[int, ...],
                        previous_committed: bool) -> None:
        """NoDisjointMajorities: a leader changes the voter set only once its previous change is
        committed, and so that no majority of the old set and majority of the new one can be
        disjoint (Kafka changes one voter at a time)."""
        if not previous_committed:
            self.fail("NoDisjointMajorities", f"{event}: leader {m.id} changed the voters from {list(before)} to "
                                              f"{list(after)} before its previous change was committed")
        if disjoint_majorities(before, after):
            self.fail("NoDisjointMajorities", f"{event}: leader {m.id} changed the voters from {list(before)} to "
                                              f"{list(after)}: a majority of each can be disjoint")

    # -------------------------------------------------------------- leaders and high watermarks

    def leader_elected(self, event: str, node: int, epoch: int) -> None:
        other = self.leaders.setdefault(epoch, node)
        if other != node:
            self.fail("OneLeaderPerEpoch", f"{event}: node {node} became leader of epoch {epoch}, "
                                           f"which node {other} already leads")

    def restarted(self, node: int) -> None:
        self.hw.pop(node, None)
        self.down.pop(node, None)

    def halted(self, m: Member) -> None:
        """`m`'s process ends; its log as it is now (after a crash lost the unflushed tail) stays on disk."""
        if m.node is not None and m.node.log is not None:
            self.down[m.id] = DurableLog.of(m.node.log)

    def disk_lost(self, node: int, *, torn_tail: bool) -> None:
        """A disk fault on a node that is down: a torn tail loses its last batch, a wipe all."""
        self._shadow_gen[node] = self._shadow_gen.get(node, 0) + 1
        self.verified.pop(node, None)
        kept = self.down.get(node)
        if kept is not None:
            end = kept.batches[-1][0] if torn_tail and kept.batches else 0
            self.down[node] = kept.cut_to(end)

    def high_watermark(self, event: object, m: Member, hw: int) -> None:
        prev = self.hw.get(m.id)
        if prev is not None and hw < prev:
            self.fail("MonotonicHighWatermark", f"{event}: node {m.id}'s high watermark went back from {prev} to {hw}")
        self.hw[m.id] = hw
        node = m.node
        assert node is not None and node.log is not None
        log = node.log  # (m.log, without the property: after every commit on every node)
        if m.role != "leader" and hw <= self.committed_end:
            # A follower's high watermark now covers batches it may have appended above its old
            # one, from a leader since deposed: those must be the committed ones.
            low = max(self.verified.get(m.id, 0), log.log_start_offset)
            if hw > low:
                self._check_or_record(event, m, log, low, hw, False)
                self.verified[m.id] = hw
            return
        if m.role == "leader":
            voters = m.voters or self.voters  # (the voter set the leader counts: its own)
            holders = [v for v in voters if self._holds(v, log, hw)]
            if len(holders) < len(voters) // 2 + 1:
                self.fail("ConsistentCommittedData",
                          f"{event}: leader {m.id} (epoch {m.epoch}) committed offsets below {hw} but only "
                          f"voters {holders} of {list(voters)} hold them")
        start = min(hw, self.committed_end)
        self._check_or_record(event, m, log, min(start, max(0, hw)), hw, record=hw > self.committed_end)
        self.committed_end = max(self.committed_end, hw)

    def _holds(self, voter: int, leader_log: MetadataLog, hw: int) -> bool:
        v = self.members.get(voter)
        if hw <= 0:
            return True
        if v is not None and v.node is None and voter in self.down:
            return self._disk_holds(self.down[voter], leader_log, hw)
        if v is None or v.node is None or v.node.log is None:
            return False
        if v.flushed_end < hw:
            return False
        mine, theirs = entry_at(leader_log, hw - 1), entry_at(v.log, hw - 1)
        if mine is None or theirs is None:
            return mine is None and theirs is None and v.log.log_start_offset >= hw
        return (mine.base_offset, mine.last_offset, mine.epoch) == (theirs.base_offset, theirs.last_offset, theirs.epoch)

    @staticmethod
    def _disk_holds(disk: DurableLog, leader_log: MetadataLog, hw: int) -> bool:
        if disk.end_offset < hw:
            return False
        mine, theirs = entry_at(leader_log, hw - 1), disk.batch_at(hw - 1)
        if mine is None or theirs is None:
            return mine is None and theirs is None and disk.start_offset >= hw
        return (mine.base_offset, mine.last_offset, mine.epoch) == theirs

    def _check_or_record(self, event: object, m: Member, log: MetadataLog, start: int, end: int, record: bool) -> None:
        if end <= start:
            return
        seg = log.active_segment
        if seg is not None and start >= seg.base_offset and start >= log.log_start_offset:
            # (log.batches' common case, inlined, without a generator: after every commit, on every node)
            parsed, read, compare = seg.parsed_batches(), seg.read_batch, self._compare
            for j in range(seg.find(start), len(seg.entries)):
                b = (parsed.get(j) or read(j)).batch
                base = b.base_offset
                if base >= end:
                    break
                compare(event, m.id, base, base + b.last_offset_delta, b.partition_leader_epoch, b.raw, record)
            return
        for fb in log.batches(start):
            b = fb.batch
            if b.base_offset >= end:
                break
            self._compare(event, m.id, b.base_offset, b.last_offset, b.partition_leader_epoch, b.raw, record)

    def _crc(self, raw: bytes) -> int:
        """CRC-32 of a batch's bytes after its base offset and length, remembered by the bytes
        object (immutable, kept alive with its CRC): the replicas of a batch share the leader's
        checked parse, so each batch is summed once, not once per node."""
        known = self._crcs.get(id(raw))
        if known is not None and known[0] is raw:
            return known[1]
        crc = zlib.crc32(memoryview(raw)[12:])
        if len(self._crcs) >= CRC_KEEP:
            self._crcs.clear()
        self._crcs[id(raw)] = (raw, crc)
        return crc

    def _compare(self, event: object, node: int, base: int, last: int, epoch: int, raw: bytes, record: bool) -> None:
        known_crc = self._crcs.get(id(raw))  # (self._crc, its common case inlined)
        crc = known_crc[1] if known_crc is not None and known_crc[0] is raw else self._crc(raw)
        known = self.committed.get(base)
        if known is None:
            if record:
                self.committed[base] = (last, epoch, crc)
            return
        if known != (last, epoch, crc):
            self.fail("ConsistentCommittedData",
                      f"{event}: node {node} holds a batch at offsets {base}-{last} (epoch {epoch}) that differs "
                      f"from the committed batch at offsets {base}-{known[0]} (epoch {known[1]})")

    # -------------------------------------------------------------- appends, truncation, applying

    def appended(self, event: object, m: Member, raw: bytes) -> None:
        """A batch appended below the node's own high watermark must be the committed one. Above
        it, a follower may hold what a deposed leader sent it (Raft's uncommitted suffix, cut
        when it learns the new epoch), even at offsets another leader has committed since;
        `high_watermark` checks those once the node's own high watermark covers them."""
        base = int.from_bytes(raw[:8], "big", signed=True)
        if base < min(self.committed_end, self.hw.get(m.id, 0)):
            last = base + int.from_bytes(raw[23:27], "big", signed=True)
            epoch = int.from_bytes(raw[12:16], "big", signed=True)
            self._compare(event, m.id, base, last, epoch, raw, record=False)

    def truncating(self, event: str, m: Member, offset: int, *, reloads: bool = False) -> None:
        """`m` is about to cut its log at `offset` (divergence or a crash; `reloads`: a fetched
        snapshot replaces the log and the node's loader starts again from it)."""
        if self.verified.get(m.id, 0) > offset:
            self.verified[m.id] = offset
        shadow = self._shadows.get(m.id)
        if reloads or (shadow is not None and shadow[1] > offset):
            # (its shadow replayed batches that go: it starts again; one that stopped below
            # `offset` replayed only batches the cut keeps, and goes on from there)
            self._shadow_gen[m.id] = self._shadow_gen.get(m.id, 0) + 1
        if not reloads and m.node is not None and m.node.loader is not None and offset <= m.applied:
            self.fail("ImageMatchesLog", f"{event}: node {m.id} truncates its log to offset {offset}, but its "
                                         f"image holds the records up to offset {m.applied}")
        held = min(m.log.log_end_offset, self.committed_end)
        if offset >= held:
            return
        for fb in m.log.batches(offset):
            b = fb.batch
            if b.base_offset >= held:
                break
            known = self.committed.get(b.base_offset)
            if known is not None and known == (b.last_offset, b.partition_leader_epoch, self._crc(b.raw)):
                self.fail("ConsistentCommittedData",
                          f"{event}: node {m.id} truncates its log to offset {offset}, losing the committed batch "
                          f"at offsets {b.base_offset}-{b.last_offset} (epoch {b.partition_leader_epoch})")
                return

    def applied(self, event: object, m: Member) -> None:
        """After every apply: BrokersApplyOnlyCommitted, and ImageMatchesLog's per-event form (the
        node's image ends where its loader applied, at the end of a whole batch of its own
        log). The full form, a replay of the node's files, runs after every operation (`deep`)."""
        node = m.node
        loader = node.loader if node is not None else None
        applied = -1 if loader is None else loader.last_offset  # (m.applied)
        if applied >= self.committed_end:
            self.fail("BrokersApplyOnlyCommitted",
                      f"{event}: node {m.id} applied up to offset {applied}, but only offsets below "
                      f"{self.committed_end} are committed")
        if loader is None:
            return
        ends = loader.image.provenance.last_contained_offset
        if ends != applied and loader.idle:
            self.fail("ImageMatchesLog", f"{event}: node {m.id}'s image ends at offset {ends}, but its loader "
                                         f"applied its log up to offset {applied}")
            return
        log = m.log
        if applied >= log.log_start_offset:
            e = entry_at(log, applied)
            if e is None or e.last_offset != applied:
                self.fail("ImageMatchesLog", f"{event}: node {m.id} applied up to offset {applied}, which is not "
                                             f"the end of a batch of its log (log end {log.log_end_offset})")

    # -------------------------------------------------------------- deep checks

    def deep(self, event: str, members: list[Member]) -> None:
        """ImageMatchesLog and SnapshotMatchesLog for every running node. Each node has a
        shadow loader of its own that replays the node's files independently; it advances
        with the node and starts again when the node's files lose data it replayed (a
        truncation or crash that cuts below its offset, a disk fault, a fetched snapshot) or
        its release changes. A restarted node is compared again once it has applied past its
        shadow.

        Nodes share the images of commits they applied alike (kraftsim.sim.node.commit_share: the
        same batch bytes on the same image). A node whose image is the very object another
        node's replay was just compared with, at the same offset and software, and whose
        files lost nothing since its process started (so every batch it applied is still in
        its log), is covered by that comparison; the others replay their own files.

        A shadow replays only what was committed since its last check, from the image it
        last checked, gathered into one commit; shadows share those replays among
        themselves (`replay_into`, kraftsim.sim.engine.range_share), and the digests
        remember the parts of images compared before (`DigestCache`). Snapshot files are
        read back once per file identity (`_snapshots`), after every shadow has advanced:
        a read-back takes the load a shadow that started again made of the same content."""
        digests: dict[int, tuple[object, str]] = {}

        def digest(image: object) -> str:
            known = digests.get(id(image))
            if known is None or known[0] is not image:
                known = (image, image_digest(image, self.digests))  # type: ignore[arg-type]
                digests[id(image)] = known
            return known[1]

        verified: dict[int, tuple[object, int, tuple[object, ...]]] = {}
        # (gathered replays end a commit where a snapshot ends: the snapshot checks replay up
        # to there and adopt what the shadows replayed)
        self.shadow_share.stops = {sid.end_offset for m in members if m.running and m.node is not None
                                   and m.node.log is not None for sid in self.snapshot_ids(m)}
        checked: list[Member] = []
        for m in members:
            if not m.running or m.node is None or m.node.loader is None or m.node.blocked is not None:
                continue
            checked.append(m)
            node = m.node
            assert node.loader is not None and node.log is not None
            upto = node.applied_offset + 1
            key = (self._shadow_gen.get(m.id, 0), m.state.release)
            software = (m.state.release, node.kip_778)
            image = node.loader.image
            same = verified.get(id(image))
            if same is not None and same[0] is image and same[1:] == (upto, software) \
                    and m.disk_gen == m.disk_gen_at_start:
                continue
            shadow = self._shadows.get(m.id)
            if shadow is not None and shadow[0] == key and upto <= shadow[1]:
                continue  # the node (restarted) has not caught up with its shadow yet
            if shadow is None or shadow[0] != key or upto > node.log.log_end_offset \
                    or shadow[1] < node.log.log_start_offset:  # (retention removed what it would replay next)
                loader = replay_loader(node, upto, share=self.shadow_share)
            else:
                loader = shadow[2]
                replay_into(loader, node, shadow[1], upto, self.shadow_share)
            if loader is not None:
                if digest(loader.image) != digest(image):
                    self.fail("ImageMatchesLog", f"{event}: node {m.id}'s image (applied up to offset "
                                                 f"{node.applied_offset}) differs from a replay of its log")
                elif m.disk_gen == m.disk_gen_at_start:
                    verified[id(image)] = (image, upto, software)
                self._shadows[m.id] = (key, upto, loader)
        # (every shadow first: a shadow that starts again keeps its snapshot load in
        # `shadow_share`, where a read-back of the same file's content takes it)
        for m in checked:
            self._snapshots(event, m)
        self.checked_snapshots.clear()  # (a file's copies are read back in the check that reads it)

    def shadow(self, node: int) -> tuple[int, MetadataImage] | None:
        """The image `node`'s shadow loader holds after the last deep check, and the offset
        it replayed up to (exclusive); None without a shadow (tests compare it with a full
        replay)."""
        shadow = self._shadows.get(node)
        return None if shadow is None else (shadow[1], shadow[2].image)

    def _snapshots(self, event: str, m: Member) -> None:
        """SnapshotMatchesLog for `m`'s snapshots: each file is checked again whenever its
        identity (device, inode, size, mtime) differs from the one checked last; what a
        file loads to is remembered by identity and by content (`FileMemo`,
        `snapshot_content`), so a file shared by hard link, or holding what another node's
        holds, is loaded once (and each file is still read and checked once). The replay of
        the node's log it is compared with is made once per software, offset and log
        content (`_log_digest`)."""
        node = m.node
        assert node is not None and node.log is not None
        log = node.log
        for sid in self.snapshot_ids(m):
            if sid.end_offset <= 0 or log.log_start_offset > 0:
                continue  # the log no longer reaches back to its start
            key = (m.id, sid.end_offset, sid.epoch)
            path = snapshot_path(log.directory, sid)
            ident = file_identity(path)
            if ident is not None and self._snapshots_checked.get(key) == ident:
                continue
            self._snapshots_checked[key] = ident
            software = node.software
            contents: list[tuple[int, bytes]] = []  # (what the check found of the bytes read: their load takes it)

            def content(raw: bytes) -> tuple[int, bytes]:
                contents.append(self.checked_snapshots.content(path, node.registry, raw))
                return contents[-1]

            def load_digest(raw: bytes) -> str:
                checked = (contents[-1], self.checked_snapshots.take_parsed(raw))
                return _snapshot_digest(node, sid, path, raw, self.shadow_share.snapshots, self.digests,
                                        checked=checked)
            try:
                loaded = self.snapshot_digests.value(path, ident, (software, sid), load_digest, content)
            except KraftsimError as e:
                self.fail("SnapshotMatchesLog", f"{event}: node {m.id}'s snapshot at offset {sid.end_offset} "
                                                f"(epoch {sid.epoch}) cannot be read: {e}")
                continue
            finally:
                self.checked_snapshots.take_parsed(None)  # (not loaded: a content already known)
            expected = self._log_digest(node, sid.end_offset)
            if expected is not None and not node.kip_778 and expected != loaded:
                self.fail("SnapshotMatchesLog", f"{event}: node {m.id}'s snapshot at offset {sid.end_offset} "
                                                f"(epoch {sid.epoch}) differs from a replay of its log")

    def _log_digest(self, node, end: int) -> str | None:  # type: ignore[no-untyped-def]
        """The digest of `replay_image(node, end, use_snapshots=False)`: replayed once per
        software, offset and log content. Nodes of one cluster hold the same committed log,
        and replay is deterministic, so a node whose log below `end` holds the batches
        another's held (`_log_key`: each batch's offsets, epoch, size and checked CRC-32C,
        what the commit share and ConsistentCommittedData take for the same bytes) gets the
        digest of that node's replay. Every batch is still read and its CRC checked."""
        key = (node.software, end, _log_key(node.log, end))
        if key in self._log_digests:
            self.log_replays_taken += 1
            return self._log_digests[key]
        expected = replay_image(node, end, use_snapshots=False, share=self.shadow_share)
        digest = None if expected is None else image_digest(expected, self.digests)
        self.log_replays += 1
        if len(self._log_digests) >= LOG_DIGESTS_KEEP:
            self._log_digests.clear()
        self._log_digests[key] = digest
        return digest


def _log_key(log: MetadataLog, end: int) -> bytes:
    """What names the batches of `log` holding offsets below `end` (from the log's start;
    each read and checked as a replay reads it): a SHA-256 of each one's `_BATCH_KEY`."""
    h = hashlib.sha256()
    pack = _BATCH_KEY.pack
    for fb in log.batches(0):
        b = fb.batch
        if b.base_offset >= end:
            break
        h.update(pack(b.base_offset, b.last_offset_delta, b.partition_leader_epoch, len(b.raw), b.crc))
    return h.digest()


def _snapshot_digest(node, sid: SnapshotId, path: Path, raw: bytes,  # type: ignore[no-untyped-def]
                     share: SnapshotShare | None = None, digests: DigestCache | None = None, *,
                     checked: tuple[tuple[int, bytes], SnapshotFile | None] | None = None) -> str:
    """The digest of what a fresh loader of `node`'s software loads from the snapshot
    file `path` holding `raw`; through `share` (the shadows' snapshot loads: a shadow's
    load of the same content is taken instead of decoding it again). The read-back's own
    load is not kept: nothing holds its image afterwards, and at a million partitions a
    kept one would hold a whole image and its delta alive for a decode it might save.
    `digests`: the checker's digest parts, used for a load taken from `share` (its image
    is held there, and by the shadow that made it, whose digest put its topics in the
    cache); a decode of its own is digested through a cache of its own, which lets go of
    it afterwards. `checked`: what the caller's check of `raw` as `read_snapshot` checks
    found (their content, and their parse when it made one), not made again here."""
    loader = MetadataLoader(node.catalog, fault_handler=_as_node, clock_ns=lambda: 0, mv_change=_mv_handling(node))
    taken = False
    if share is not None:
        adopted = share.adopted
        share.load(loader, path, sid, node.registry, node.software,
                   data=raw, keep=False, checked=checked)
        taken = share.adopted > adopted
    else:
        snap = checked[1] if checked is not None else None
        load_snapshot(loader, read_snapshot(path, node.registry, data=raw) if snap is None else snap,
                      end_offset=sid.end_offset, epoch=sid.epoch)
    return image_digest(loader.image, digests if taken and digests is not None else None)


def _as_node(fault: LoaderFault) -> None:
    """A running node's loader reports a record it cannot load and goes on (a broker's
    metadata loading faults are not fatal in Kafka; a controller with one does not start),
    so a replay of its files does the same rather than stop the check."""


def _mv_handling(node) -> MvChangeHandling:  # type: ignore[no-untyped-def]
    return MvChangeHandling.KIP_778 if node.kip_778 else MvChangeHandling.KAFKA


def replay_loader(node, upto: int, *, use_snapshots: bool = True,  # type: ignore[no-untyped-def]
                  share: RangeShare | None = None) -> MetadataLoader | None:
    """A fresh loader fed the node's newest usable snapshot and its log, up to offset `upto`
    (exclusive); None when the files cannot give it. `share`: see `replay_into`."""
    log = node.log
    loader = MetadataLoader(node.catalog, fault_handler=_as_node, clock_ns=lambda: 0, mv_change=_mv_handling(node))
    start = log.log_start_offset
    if use_snapshots:
        snaps = [s for s in log.snapshot_ids() if s.end_offset > 0 and start <= s.end_offset <= upto]
        if snaps:
            sid = snaps[-1]
            if share is not None:  # (kraftsim.sim.node.snapshot_share: one load per file's bytes)
                share.snapshots.load(loader, snapshot_path(log.directory, sid), sid, node.registry,
                                     node.software)
            else:
                load_snapshot(loader, read_snapshot(snapshot_path(log.directory, sid), node.registry),
                              end_offset=sid.end_offset, epoch=sid.epoch)
            start = sid.end_offset
    elif start > 0:
        return None
    if upto > start:
        replay_into(loader, node, start, upto, share, rebase=not use_snapshots)
    return loader


def replay_into(loader: MetadataLoader, node, start: int, upto: int,  # type: ignore[no-untyped-def]
                share: RangeShare | None = None, *, rebase: bool = False) -> None:
    """Hand `loader` the node's log from offset `start` up to `upto` (exclusive), the batch
    holding `upto - 1` cut there.

    Without `share`, one commit per batch, as the raft layer hands committed batches over
    (the plain, full replay). With `share`, the batches go to the loader as one commit, as
    a catching-up loader gathers them, and runs of whole batches some other loader of the
    same software replayed on the very image object this one stands on are adopted from it
    instead of replayed (kraftsim.sim.engine.range_share): replay is deterministic, so the
    result is the one this replay would reach. Only loaders that replay files share a
    RangeShare, so a shadow's result never comes from the node it checks.

    `rebase` (a replay from the log's start, whose images no shadow that started from a
    snapshot stands on): it also ends a commit where kept runs start, and there stands on a
    run's start image equal to its own to adopt that run (`RangeShare.rebase_onto`)."""
    loader.set_high_watermark(upto)
    end = start
    log = node.log
    seg = log.active_segment
    if seg is not None and start >= seg.base_offset and start >= log.log_start_offset:
        # (log.batches' common case, inlined: every shadow walks its node's new batches)
        parsed, read = seg.parsed_batches(), seg.read_batch
        batches: Iterable[FileBatch] = (parsed.get(j) or read(j) for j in range(seg.find(start), len(seg.entries)))
    else:
        batches = log.batches(start)
    todo: list[tuple[FileBatch, int, bool]] = []  # (batch, replay from, cut at upto)
    for fb in batches:
        b = fb.batch
        base = b.base_offset
        last = base + b.last_offset_delta
        if last < end:
            continue  # wholly before the start (the snapshot already holds it)
        if base >= upto:
            break
        cut = last >= upto
        todo.append((fb, end, cut))
        if cut:
            break
        end = b.next_offset
    if share is None:
        for fb, first, cut in todo:
            loader.handle_commit([_committed(node, fb, first, upto, cut)])
        return
    software = node.software
    whole: list[bytes] = []  # (the leading whole batches: the ones a kept run can stand for)
    for fb, first, cut in todo:
        if cut or first > fb.batch.base_offset:
            break
        whole.append(fb.batch.raw)
    stops = share.stops | share.run_starts(software) if rebase else share.stops
    done = 0
    while done < len(todo):
        while done < len(whole) and loader.idle:
            run = share.longest(software, loader, whole, done)
            if run is None and rebase:
                run = share.rebase_onto(software, loader, whole, done)
            if run is None:
                break
            loader.adopt(run.delta, run.image, run.manifest, kraft_version=run.kraft_version, voters=run.voters)
            done += len(run.raws)
            share.adopted += len(run.raws)
        if done >= len(todo):
            return
        # (one commit up to the next offset another replay is likely to stop at too; under
        # KIP-778 one per batch, as a metadata.version change rewrites the image it ends)
        stop = done
        while stop < len(todo):
            stop += 1
            if node.kip_778 or todo[stop - 1][0].batch.next_offset in stops:
                break
        idle, before, raft_before = loader.idle, loader.image, (loader.kraft_version, loader.voters)
        publishes, faults = loader.publishes, len(loader.faults)
        # (decoded one batch at a time, as Kafka's batch reader hands them over: a replay from
        # the log's start gathers millions of records into one commit)
        loader.handle_commit(_committed(node, fb, first, upto, cut) for fb, first, cut in todo[done:stop])
        share.replayed += stop - done
        # (a run that ends idle, without faults, on the image it last published; a transaction
        # at its start publishes once more, before the Begin: shadows have no publishers)
        if stop <= len(whole) and idle and loader.publishes > publishes and loader.idle \
                and len(loader.faults) == faults and loader.last_publish is not None \
                and loader.last_publish[1] is loader.image:
            share.keep_run(software, whole[done:stop], before, raft_before, loader)
        done = stop


def _committed(node, fb: FileBatch, first: int, upto: int, cut: bool) -> CommittedBatch:  # type: ignore[no-untyped-def]
    """The batch `fb` as the raft layer hands it over: its records from offset `first`, cut
    before `upto` when `cut`."""
    b = fb.batch
    entries = decode_file_batch(fb, node.registry)
    if first > b.base_offset or cut:  # (a whole batch is handed over as decoded: a fresh list)
        entries = [e for e in entries if first <= e.offset < upto]
    return CommittedBatch(b.base_offset, upto - 1 if cut else b.last_offset, b.partition_leader_epoch,
                          b.max_timestamp, b.size, entries)


def replay_image(node, upto: int, *, use_snapshots: bool = True,  # type: ignore[no-untyped-def]
                 share: RangeShare | None = None):
    """The image `replay_loader` builds (None when the files cannot give it)."""
    loader = replay_loader(node, upto, use_snapshots=use_snapshots, share=share)
    return None if loader is None else loader.image
