"""What the parts of `kafka-storage format` share: constants, the formatter's error, the
clock and directory ids (Uuid.randomUuid and Java's HashMap order are in kraftsim.javacompat)."""

from __future__ import annotations

import random
import time
from dataclasses import replace
from pathlib import Path
from typing import Iterable

from kraftsim.errors import KraftsimError
from kraftsim.protocol.primitives import Uuid
from kraftsim.storage.batchfile import Clock
from kraftsim.storage.meta_properties import (
    DateLike, read_meta_properties, source_date_epoch, write_meta_properties,
)
from kraftsim.storage.names import META_PROPERTIES_FILE
from kraftsim.versions import Catalog

KRAFT_VERSION = "kraft.version"
FORMAT_SOURCE = "format command"
QUORUM_VOTERS = "controller.quorum.voters"
QUORUM_BOOTSTRAP_SERVERS = "controller.quorum.bootstrap.servers"


class FormatterError(KraftsimError):
    """Kafka's FormatterException: StorageTool prints the message alone and exits 1."""


def release_text(catalog: Catalog, policy: str, key: str) -> str | None:
    """A message of the release's value for a format policy (versions/data/policies.toml),
    None where that value has no such message (the rule does not apply to the release)."""
    try:
        return catalog.policy_text(policy, key)
    except KeyError:
        return None


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


def _directory_id_reserved(u: Uuid) -> bool:
    """Kafka's DirectoryId.reserved: most significant bits 0 and (signed) least significant bits < 100."""
    return u.msb == 0 and u.lsb < 100


def generate_directory_id(rng: random.Random, taken: Iterable[str | None]) -> Uuid:
    """MetaPropertiesEnsemble.Copier.generateValidDirectoryId: Uuid(nextLong, nextLong), safe and unused."""
    used = set(taken)
    while True:
        u = Uuid.from_longs(_signed64(rng.getrandbits(64)), _signed64(rng.getrandbits(64)))
        if not (str(u).startswith("-") or _directory_id_reserved(u)) and str(u) not in used:
            return u


def assign_directory_id(directory: Path, rng: random.Random, *, date: DateLike | None,
                        fsync: bool = True) -> Uuid | None:
    """What a Kafka 3.7+ node does at start-up to a log directory formatted without a
    directory.id (by 3.3-3.6, policy meta_properties_directory_id): it draws one and writes
    meta.properties again. Returns the new id, or None when the directory already has one."""
    path = directory / META_PROPERTIES_FILE
    meta = read_meta_properties(path).meta
    if meta.directory_id:
        return None
    new_id = generate_directory_id(rng, ())
    write_meta_properties(path, replace(meta, directory_id=str(new_id)), date=date, fsync=fsync)
    return new_id
