"""PartitionRegistration: one partition's replicas, ISR, leader and epochs.

Semantics are Kafka's PartitionRegistration (metadata/.../PartitionRegistration.java):

- from a PartitionRecord: absent or empty Directories mean "every replica MIGRATING";
  null ELR / LastKnownElr mean empty.
- `merge(PartitionChangeRecord)`: a null list leaves the field unchanged; Leader -2 leaves
  leader and leader epoch unchanged, any other value (even the current leader) sets the
  leader and bumps the leader epoch by one; LeaderRecoveryState -1 is unchanged; the
  partition epoch always goes up by one. Directories: a null list leaves them as they are,
  any other replaces them; either way, directories that are all MIGRATING (or none) become
  MIGRATING for each of the new replicas (KAFKA-16583, 3.7.1 on: a reassignment below
  3.7-IV2 leaves every replica MIGRATING; 3.7.0 gave newcomers UNASSIGNED and its snapshots
  then failed). Directories of another length than the replicas are refused.

Memory: one frozen, untracked (gc=False) Struct of 11 slots (104 bytes) per partition;
every tuple in it is interned (intern.py), so replica sets, ISRs and directory lists are
shared across partitions.
"""

from __future__ import annotations

from typing import Any, Callable

import msgspec

from kraftsim.image import intern
from kraftsim.image.errors import MetadataReplayError
from kraftsim.protocol.fastpath import partition_paths
from kraftsim.protocol.primitives import Uuid

NO_LEADER = -1
NO_LEADER_CHANGE = -2
RECOVERED = 0
RECOVERING = 1
LEADER_RECOVERY_NAMES = {RECOVERED: "RECOVERED", RECOVERING: "RECOVERING"}


def _recovery_state(value: int) -> int:
    if value not in LEADER_RECOVERY_NAMES:
        raise MetadataReplayError(f"Value {value} is not a valid leader recovery state")
    return value


_find_ints = intern.find_ints


class PartitionRegistration(msgspec.Struct, frozen=True, gc=False):
    """A partition's state; every sequence is an interned tuple."""

    replicas: tuple[int, ...]
    directories: tuple[Uuid, ...]
    isr: tuple[int, ...]
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    leader: int = NO_LEADER
    leader_recovery_state: int = RECOVERED
    leader_epoch: int = 0
    partition_epoch: int = 0
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()

    def merge(self, r: Any) -> "PartitionRegistration":
        """The registration after a PartitionChangeRecord (Kafka's merge, `merge_plain`)."""
        if (r.replicas is None and r.removing_replicas is None and r.adding_replicas is None
                and r.eligible_leader_replicas is None and r.last_known_elr is None and r.directories is None
                and len(self.directories) == len(self.replicas) > 0):
            # The usual change (ISR, leader, recovery state): the replica lists and directories stay.
            lrs = r.leader_recovery_state
            if lrs == -1:
                lrs = self.leader_recovery_state
            elif lrs != RECOVERED and lrs != RECOVERING:
                _recovery_state(lrs)
            x = r.isr
            isr = self.isr if x is None else _find_ints(tuple(x)) or intern.ints(x)
            leader = r.leader
            if leader == NO_LEADER_CHANGE:
                leader, leader_epoch = self.leader, self.leader_epoch
            else:
                leader_epoch = self.leader_epoch + 1
            return PartitionRegistration(self.replicas, self.directories, isr, self.removing_replicas,
                                         self.adding_replicas, leader, lrs, leader_epoch, self.partition_epoch + 1,
                                         self.elr, self.last_known_elr)
        return self.merge_plain(r)

    def merge_plain(self, r: Any) -> "PartitionRegistration":
        """`merge` by the general rule alone: the definition its shortcut must agree with."""
        replicas = self.replicas if r.replicas is None else intern.ints(r.replicas)
        dirs = self.directories if r.directories is None else self._checked_directories(r)
        if all(d == intern.MIGRATING for d in dirs):  # (none at all included)
            dirs = intern.migrating(len(replicas))
        elif len(dirs) != len(replicas):
            raise MetadataReplayError("The lengths for replicas and directories do not match.")
        return self._merged(r, replicas, dirs)

    @staticmethod
    def _checked_directories(r: Any) -> tuple[Uuid, ...]:
        """A PartitionChangeRecord's directories, refused when given for replicas of another count."""
        if r.replicas is not None and r.directories and len(r.directories) != len(r.replicas):
            raise MetadataReplayError(
                f"The lengths for replicas and directories do not match in PartitionChangeRecord for "
                f"{r.topic_id}:{r.partition_id}")
        return intern.uuids(r.directories)

    def _merged(self, r: Any, replicas: tuple[int, ...], dirs: tuple[Uuid, ...]) -> "PartitionRegistration":
        """The registration after `r`, with its replicas and directories worked out."""
        if r.leader == NO_LEADER_CHANGE:
            leader, leader_epoch = self.leader, self.leader_epoch
        else:
            leader, leader_epoch = r.leader, self.leader_epoch + 1
        lrs = self.leader_recovery_state if r.leader_recovery_state == -1 else _recovery_state(r.leader_recovery_state)
        return PartitionRegistration(
            replicas,
            dirs,
            self.isr if r.isr is None else intern.ints(r.isr),
            self.removing_replicas if r.removing_replicas is None else intern.ints(r.removing_replicas),
            self.adding_replicas if r.adding_replicas is None else intern.ints(r.adding_replicas),
            leader,
            lrs,
            leader_epoch,
            self.partition_epoch + 1,
            self.elr if r.eligible_leader_replicas is None else intern.ints(r.eligible_leader_replicas),
            self.last_known_elr if r.last_known_elr is None else intern.ints(r.last_known_elr),
        )

    def merge_unassigning_new_replicas(self, r: Any) -> "PartitionRegistration":
        """Kafka 3.7.0's merge (policy partition_change_directories "from-replicas"): replicas
        that change without directories keep each survivor's directory and give each new
        replica UNASSIGNED (DirectoryId.createDirectoriesFrom); no directories at all become
        MIGRATING for the old replica count. Everything else is `merge_plain`'s."""
        replicas = self.replicas if r.replicas is None else intern.ints(r.replicas)
        if r.directories:
            dirs = self._checked_directories(r)
        elif r.replicas is not None:
            old = dict(zip(self.replicas, self.directories))
            dirs = intern.uuids(old.get(b, intern.UNASSIGNED) for b in r.replicas)
        else:
            dirs = self.directories
        if not dirs:
            dirs = intern.migrating(len(self.replicas))
        elif len(dirs) != len(replicas):
            raise MetadataReplayError("The lengths for replicas and directories do not match.")
        return self._merged(r, replicas, dirs)

    def clear_elr(self) -> "PartitionRegistration":
        """ClearElrRecord's effect: empty ELR and LastKnownElr via merge (partition epoch +1)."""
        return msgspec.structs.replace(self, elr=intern.EMPTY, last_known_elr=intern.EMPTY,
                                       partition_epoch=self.partition_epoch + 1)

    def has_elr(self) -> bool:
        return bool(self.elr or self.last_known_elr)


#: How a release merges a PartitionChangeRecord, by its policy partition_change_directories.
MERGE_RULES: dict[str, Callable[[PartitionRegistration, Any], PartitionRegistration]] = {
    "migrating": PartitionRegistration.merge,
    "from-replicas": PartitionRegistration.merge_unassigning_new_replicas,
}

#: The directory tuples of a record without directories, for 0..7 replicas.
MIGRATING_BY_COUNT = tuple(intern.migrating(n) for n in range(8))

_C_PATHS = partition_paths(PartitionRegistration, intern.INT_TUPLES, intern.UUID_TUPLES, MIGRATING_BY_COUNT)
#: For bulk replay, in C (None without the extension), each answering None where the Python
#: code must run (any other shape, a tuple not interned yet): `fast_merge(registration,
#: change)` is `merge`'s usual case (tests/image/test_apply_fast_paths.py checks it against
#: merge_plain), `fast_from_record(record)` bulk.py's common shape of a PartitionRecord
#: (tests/image/test_bulk_replay.py checks it against registration_from_record).
fast_merge = _C_PATHS.merge if _C_PATHS is not None else None
fast_from_record = _C_PATHS.from_record if _C_PATHS is not None else None


def registration_from_record(r: Any, _new: type[PartitionRegistration] = PartitionRegistration,
                             _empty: tuple[()] = intern.EMPTY,
                             _find_ints: Any = intern.find_ints,
                             _find_uuids: Any = intern.find_uuids) -> PartitionRegistration:
    """The registration a PartitionRecord describes (bulk.py inlines its common shape).

    Same result as interning every list with intern.ints / intern.uuids, with fewer
    intermediate objects: an ISR equal to the replica list reuses its tuple, empty lists
    skip interning, and the MIGRATING directory tuples of small replica counts are
    precomputed.
    """
    reps = r.replicas
    if reps:
        t = tuple(reps)
        replicas = _find_ints(t) or intern.ints(t)
    else:
        replicas = _empty
    x = r.isr
    isr = replicas if x == reps else intern.ints(x)
    d = r.directories
    if d:
        if len(d) != len(replicas):
            raise MetadataReplayError(
                f"The lengths for replicas and directories do not match in PartitionRecord for "
                f"{r.topic_id}:{r.partition_id}")
        t = tuple(d)
        dirs = _find_uuids(t) or intern.uuids(t)
    else:
        n = len(replicas)
        dirs = MIGRATING_BY_COUNT[n] if n < len(MIGRATING_BY_COUNT) else intern.migrating(n)
    lrs = r.leader_recovery_state
    if lrs != RECOVERED and lrs != RECOVERING:
        _recovery_state(lrs)
    if r.removing_replicas or r.adding_replicas or r.eligible_leader_replicas or r.last_known_elr:
        removing = intern.ints(r.removing_replicas)
        adding = intern.ints(r.adding_replicas)
        elr = intern.ints(r.eligible_leader_replicas)
        last_known_elr = intern.ints(r.last_known_elr)
    else:  # the usual case: no reassignment in progress, no ELR
        removing = adding = elr = last_known_elr = _empty
    return _new(replicas, dirs, isr, removing, adding, r.leader, lrs, r.leader_epoch, r.partition_epoch, elr,
                last_known_elr)
