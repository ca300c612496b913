"""What the parts of `kafka-storage format` share: constants, the formatter's error, the
clock and randomness (Uuid.randomUuid, directory ids), and Java's HashMap iteration order
(where Kafka iterates a java.util.HashMap, the order is reproduced from the keys' hash codes)."""

from __future__ import annotations

import random
import time
from typing import Any, Callable, Iterable, Sequence

from kraftsim.errors import KraftsimError
from kraftsim.protocol.primitives import Uuid
from kraftsim.storage.batchfile import Clock
from kraftsim.storage.java_properties import java_string_hash
from kraftsim.storage.meta_properties import source_date_epoch

KRAFT_VERSION = "kraft.version"
FORMAT_SOURCE = "format command"
QUORUM_VOTERS = "controller.quorum.voters"
QUORUM_BOOTSTRAP_SERVERS = "controller.quorum.bootstrap.servers"


class FormatterError(KraftsimError):
    """Kafka's FormatterException: StorageTool prints the message alone and exits 1."""


# ------------------------------------------------------------------------------ clock, randomness


def default_clock() -> Clock:
    """SOURCE_DATE_EPOCH seconds × 1000 for every reading when set (reproducible files), else the wall clock."""
    sde = source_date_epoch()
    if sde is not None:
        fixed = sde * 1000
        return lambda: fixed
    return lambda: time.time_ns() // 1_000_000


def _signed64(x: int) -> int:
    return x - (1 << 64) if x >= 1 << 63 else x


_RESERVED_UUIDS = (Uuid.from_longs(0, 0), Uuid.from_longs(0, 1))  # ZERO_UUID, ONE_UUID (= METADATA_TOPIC_ID)


def random_uuid(rng: random.Random | None = None) -> Uuid:
    """Kafka's Uuid.randomUuid(): a java.util.UUID.randomUUID (version 4), never reserved, never printed with a leading '-'."""
    rng = rng or random.SystemRandom()
    while True:
        raw = bytearray(rng.getrandbits(128).to_bytes(16, "big"))
        raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
        raw[8] = (raw[8] & 0x3F) | 0x80  # IETF variant
        u = Uuid(bytes(raw))
        if u not in _RESERVED_UUIDS and not str(u).startswith("-"):
            return u


def _directory_id_reserved(u: Uuid) -> bool:
    """Kafka's DirectoryId.reserved: most significant bits 0 and (signed) least significant bits < 100."""
    return u.msb == 0 and u.lsb < 100


def _generate_directory_id(rng: random.Random, taken: Iterable[str | None]) -> Uuid:
    """MetaPropertiesEnsemble.Copier.generateValidDirectoryId: Uuid(nextLong, nextLong), safe and unused."""
    used = set(taken)
    while True:
        u = Uuid.from_longs(_signed64(rng.getrandbits(64)), _signed64(rng.getrandbits(64)))
        if not (str(u).startswith("-") or _directory_id_reserved(u)) and str(u) not in used:
            return u


# ------------------------------------------------------------------------------ java.util.HashMap order


def _java_int_hash(i: int) -> int:
    return i & 0xFFFFFFFF


def _bucket(h: int, capacity: int) -> int:
    return (h ^ (h >> 16)) & (capacity - 1)


def _table_size_for(c: int) -> int:
    n = 1
    while n < c:
        n *= 2
    return n


def _hashmap_capacity(size: int, initial: int = 16) -> int:
    """The table size of a HashMap that started with `initial` buckets and then had `size` keys
    put into it (it doubles whenever it gets more than 0.75 full)."""
    cap = initial
    while size > int(cap * 0.75):
        cap *= 2
    return cap


def copy_capacity(copied: int) -> int:
    """The first table size of `new HashMap<>(m)` for an m of `copied` keys (16 when m is empty)."""
    return _table_size_for(int(copied / 0.75 + 1.0)) if copied > 0 else 16


def hash_set_copy_capacity(copied: int) -> int:
    """The first table size of `new HashSet<>(c)` for a c of `copied` elements."""
    return _table_size_for(max(int(copied / 0.75) + 1, 16))


def java_hash_order(keys: Sequence[Any], hash_of: Callable[[Any], int], *, initial: int = 16) -> list[Any]:
    """The iteration order of a java.util.HashMap (or HashSet) whose keys were put in the order of
    `keys` into a table of `initial` buckets: by bucket of the final table, then by insertion
    (a resize keeps the relative order of the keys that share a bucket)."""
    cap = _hashmap_capacity(len(keys), initial)
    return [k for _, _, k in sorted((_bucket(hash_of(k), cap), i, k) for i, k in enumerate(keys))]


def _string_hash_order(keys: Sequence[str], *, initial: int = 16) -> list[str]:
    return java_hash_order(keys, java_string_hash, initial=initial)
