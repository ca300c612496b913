"""Interning of the small values every partition repeats.

Why: at 1,000,000 partitions, a fresh tuple per replica list, ISR, directory list and Uuid
would cost more than the partitions themselves. A cluster has few distinct replica sets
(at most brokers^RF, in practice far fewer), so each distinct tuple is stored once and
shared by every partition that has it. Interned values are immutable, so sharing is safe.

The tables are process-wide and only grow; when one passes MAX_ENTRIES it is cleared
(interning is an optimisation: values already handed out stay valid, later ones are
simply not shared with them).
"""

from __future__ import annotations

from typing import Any, Iterable, TypeVar

from kraftsim.protocol.primitives import Uuid

MAX_ENTRIES = 1 << 20

_T = TypeVar("_T", tuple[int, ...], tuple[Uuid, ...])

EMPTY: tuple[()] = ()

_ints: dict[tuple[int, ...], tuple[int, ...]] = {(): EMPTY}
_uuids: dict[bytes, Uuid] = {}
_uuid_tuples: dict[tuple[bytes, ...], tuple[Uuid, ...]] = {(): EMPTY}

MIGRATING = Uuid(b"\x00" * 16)
UNASSIGNED = Uuid.from_longs(0, 1)
LOST = Uuid.from_longs(0, 2)
_uuids[bytes(MIGRATING)] = MIGRATING
_uuids[bytes(UNASSIGNED)] = UNASSIGNED
_uuids[bytes(LOST)] = LOST


def ints(values: Iterable[int] | None) -> tuple[int, ...]:
    """The shared tuple equal to `values` (None and empty give the empty tuple)."""
    if not values:
        return EMPTY
    t = tuple(values)
    found = _ints.get(t)
    return found if found is not None else _keep(_ints, t)


def _keep(table: dict[Any, _T], t: _T) -> _T:
    """Store a new tuple in an interning table (cleared first when full) and return it."""
    if len(table) >= MAX_ENTRIES:
        table.clear()
        table[()] = EMPTY
    table[t] = t
    return t


#: Lookups without insertion, for hot loops that build the tuple themselves: the shared
#: tuple equal to a tuple `t`, or None. (The tables are cleared in place, never replaced,
#: so these bound methods stay valid.)
find_ints = _ints.get
#: The tables themselves, read (never written) by the C builders of registrations (partition.py).
INT_TUPLES = _ints
UUID_TUPLES = _uuid_tuples
find_uuids = _uuid_tuples.get


def uuid(value: bytes) -> Uuid:
    """The shared Uuid equal to `value` (directory ids, incarnation ids repeat)."""
    found = _uuids.get(value)
    if found is None:
        if len(_uuids) >= MAX_ENTRIES:
            _uuids.clear()
        found = value if type(value) is Uuid else Uuid(value)
        _uuids[found] = found
    return found


def uuids(values: Iterable[bytes] | None) -> tuple[Uuid, ...]:
    """The shared tuple of shared Uuids equal to `values`."""
    if not values:
        return EMPTY
    t = tuple(values)
    found = _uuid_tuples.get(t)
    return found if found is not None else _keep(_uuid_tuples, tuple(uuid(u) for u in t))


def migrating(n: int) -> tuple[Uuid, ...]:
    """n MIGRATING directory ids: what Kafka assumes when a record carries no directories."""
    return uuids((MIGRATING,) * n)
