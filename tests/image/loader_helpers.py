"""Helpers for the loader, generator, emitter and MV-change tests: a log of committed batches
built from real records, and a publisher that records what it is given."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from kraftsim.image import MetadataDelta, MetadataImage
from kraftsim.image import CommittedBatch, Manifest
from kraftsim.protocol.entries import LogEntry, Payload, encode_control_batch, encode_data_batch
from tests.image.helpers import REGISTRY, rec


def begin(name: str = "tx") -> Payload:
    return rec("BeginTransactionRecord", name=name)


def end() -> Payload:
    return rec("EndTransactionRecord")


def abort(reason: str = "") -> Payload:
    return rec("AbortTransactionRecord", reason=reason)


def noop() -> Payload:
    return rec("NoOpRecord")


def mv(level: int) -> Payload:
    return rec("FeatureLevelRecord", name="metadata.version", feature_level=level)


def config(key: str, value: str | None = "v", resource: str = "t") -> Payload:
    """A topic's ConfigRecord. `key` must be a topic config Kafka defines: from 4.3 (the
    default catalog's release) replay drops any other name."""
    return rec("ConfigRecord", resource_type=2, resource_name=resource, name=key, value=value)


def feature(name: str, level: int) -> Payload:
    return rec("FeatureLevelRecord", name=name, feature_level=level)


def control(name: str, **fields: Any) -> Payload:
    rt = REGISTRY[name]
    return Payload(rt, int(fields.get("version", 0)), rt.new(**fields))


@dataclass
class LogBuilder:
    """Assigns offsets as a leader would: each batch starts at the log end offset.

    Batch sizes are the real encoded sizes, so byte counts in manifests are Kafka's.
    """

    next_offset: int = 0
    epoch: int = 1
    time_ms: int = 1_000
    batches: list[CommittedBatch] = field(default_factory=list)

    def batch(self, *payloads: Payload, epoch: int | None = None, time_ms: int | None = None,
              control_batch: bool = False) -> CommittedBatch:
        epoch = self.epoch if epoch is None else epoch
        ts = self.time_ms if time_ms is None else time_ms
        base = self.next_offset
        encode = encode_control_batch if control_batch else encode_data_batch
        raw = encode(base, list(payloads), epoch=epoch, timestamp=ts)
        entries = [LogEntry(base + i, epoch, ts, control_batch, p.record_type,
                            p.message.version if control_batch else p.version, p.message)
                   for i, p in enumerate(payloads)]
        b = CommittedBatch(base, base + len(payloads) - 1, epoch, ts, len(raw), entries)
        self.next_offset += len(payloads)
        self.time_ms = ts + 1
        self.batches.append(b)
        return b

    def leader_change(self, leader: int = 1, epoch: int | None = None) -> CommittedBatch:
        return self.batch(control("LeaderChangeMessage", leader_id=leader), epoch=epoch, control_batch=True)

    def raw(self, b: CommittedBatch) -> bytes:
        payloads = [Payload(e.record_type, e.version, e.message) for e in b.entries]
        encode = encode_control_batch if b.entries[0].control else encode_data_batch
        return encode(b.base_offset, payloads, epoch=b.epoch, timestamp=b.append_timestamp)


def records_of(batches: Sequence[CommittedBatch]) -> list[LogEntry]:
    return [e for b in batches for e in b.entries if not e.control]


@dataclass
class Published:
    delta: MetadataDelta
    image: MetadataImage
    manifest: Manifest

    @property
    def offset(self) -> int:
        return self.manifest.provenance.last_contained_offset

    @property
    def aligned(self) -> bool:
        return self.manifest.provenance.is_offset_batch_aligned


class Recorder:
    """A publisher that keeps every (delta, image, manifest) it is given."""

    def __init__(self, name: str = "recorder", fail: bool = False):
        self.name = name
        self.fail = fail
        self.seen: list[Published] = []

    def on_metadata_update(self, delta: MetadataDelta, image: MetadataImage, manifest: Manifest) -> None:
        if self.fail:
            raise RuntimeError("publisher failed")
        self.seen.append(Published(delta, image, manifest))

    @property
    def offsets(self) -> list[int]:
        return [p.offset for p in self.seen]

    @property
    def kinds(self) -> list[str]:
        return [p.manifest.kind for p in self.seen]
