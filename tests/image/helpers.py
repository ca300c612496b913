"""Helpers for the image tests: building records, reading oracle files, comparing records."""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any, Iterable

import pytest

from kraftsim.image import MetadataDelta, MetadataImage, image_from_records
from kraftsim.image.delta import TRANSACTION_RECORDS
from kraftsim.protocol.entries import LogEntry, Payload
from kraftsim.protocol.batch_io import read_log_entries
from kraftsim.protocol.framing import encode_metadata_record
from kraftsim.protocol.primitives import Uuid
from kraftsim.protocol.registry import default_registry
from tests.conftest import ORACLE

REGISTRY = default_registry()

needs_oracle = pytest.mark.skipif(not ORACLE.is_dir(), reason="../shared/oracle is not present")


def rec(_type: str, version: int | None = None, **fields: Any) -> Payload:
    """A Payload of record type `_type` at `version` (default: its highest) with `fields`."""
    rt = REGISTRY[_type]
    return Payload(rt, rt.schema.versions.hi if version is None else version, rt.new(**fields))


def uid(n: int, hi: int = 0x1234) -> Uuid:
    """A deterministic, well-spread test Uuid."""
    return Uuid.from_longs((hi << 32) | n, (n * 0x9E3779B97F4A7C15) & 0x7FFFFFFFFFFFFFFF)


def replay(records: Iterable[Any], base: MetadataImage | None = None, snapshot: bool = False) -> MetadataImage:
    return image_from_records(list(records), base=base or MetadataImage(), snapshot=snapshot)


def delta_of(records: Iterable[Any], base: MetadataImage | None = None) -> MetadataDelta:
    d = MetadataDelta(base or MetadataImage())
    for r in records:
        d.replay(r)
    return d


# --------------------------------------------------------------------------- oracle files


def read_entries(path: Path) -> list[LogEntry]:
    entries, torn = read_log_entries(path.read_bytes(), REGISTRY)
    return entries


def data_records(entries: Iterable[LogEntry]) -> list[LogEntry]:
    """Metadata records as a delta takes them: control records and transaction markers left out
    (the loader that consumes them is not part of this package)."""
    return [e for e in entries if not e.control and e.record_type.name not in TRANSACTION_RECORDS]


def oracle_logs() -> list[Path]:
    if not ORACLE.is_dir():
        return []
    return sorted(ORACLE.rglob("00000000000000000000.log"))


def oracle_snapshot_pairs() -> list[tuple[Path, Path | None, int]]:
    """(snapshot, log beside it or None, snapshot end offset) for every metadata snapshot."""
    if not ORACLE.is_dir():
        return []
    out = []
    for snap in sorted(ORACLE.rglob("*.checkpoint")):
        if snap.name == "bootstrap.checkpoint" or snap.parent.name != "__cluster_metadata-0":
            continue
        log = snap.parent / "00000000000000000000.log"
        out.append((snap, log if log.exists() else None, int(snap.name[:20])))
    return out


def rel(p: Path) -> str:
    return str(p.relative_to(ORACLE))


# --------------------------------------------------------------------------- record comparison

_MAP_KEYED = {"end_points", "features"}  # collections Kafka keeps in Java hash maps


def record_multiset(records: Iterable[Any], *, normalize_map_order: bool = False) -> collections.Counter:
    """(type, version, encoded bytes) of each record, as a multiset.

    With `normalize_map_order`, the map-keyed lists inside registrations (listeners and
    supported features) are sorted by name first: Kafka emits them in Java hash-map order.
    """
    out: collections.Counter = collections.Counter()
    for r in records:
        m = r.message
        if normalize_map_order and r.record_type.name in ("RegisterBrokerRecord", "RegisterControllerRecord"):
            m = type(m)(**{f: getattr(m, f) for f in m.__struct_fields__})
            for f in _MAP_KEYED:
                setattr(m, f, sorted(getattr(m, f), key=lambda x: x.name))
        out[(r.record_type.name, r.version, encode_metadata_record(r.record_type, m, r.version))] += 1
    return out
