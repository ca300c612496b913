"""Log entries: the records of a batch decoded into typed messages, and the reverse.

This is the layer most of kraftsim reads and writes through: a batch becomes a list of
`LogEntry` (offset, epoch, control flag, record type, version, message), and a list of
messages becomes a batch in Kafka's exact bytes.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

from kraftsim.errors import CorruptRecordException, KraftsimError
from kraftsim.protocol import fastpath as _fastpath
from kraftsim.protocol.batch import RecordBatch, build_batch
from kraftsim.protocol.control import decode_control_record, encode_control_record
from kraftsim.protocol.framing import decode_metadata_record, encode_metadata_record
from kraftsim.protocol.json_view import struct_to_json
from kraftsim.protocol.registry import RecordType, Registry


class LogEntry(NamedTuple):
    """One decoded record with where it sits in the log."""

    offset: int
    epoch: int
    timestamp: int
    control: bool
    record_type: RecordType
    version: int
    message: Any

    @property
    def type_name(self) -> str:
        return self.record_type.type_name

    def to_json(self) -> dict[str, object]:
        """The record as `kraftsim log dump --json` prints it (DESIGN.md contract 2)."""
        schema = self.record_type.schema
        flexible = self.version in schema.flexible_versions
        return {
            "offset": self.offset,
            "epoch": self.epoch,
            "control": self.control,
            "type": self.type_name,
            "version": self.version,
            "data": struct_to_json(schema.body, self.message, self.version, flexible),
        }


class RecordDecodeError(KraftsimError):
    """A record inside an otherwise valid batch could not be decoded."""

    def __init__(self, offset: int, cause: str):
        self.offset = offset
        self.cause = cause
        super().__init__(f"record at offset {offset}: {cause}")


def decode_batch(batch: RecordBatch, registry: Registry) -> list[LogEntry]:
    """Decode every record of a batch. Control records of unknown types are skipped, as Kafka does."""
    if _fastpath.ENABLED:  # C decoder; None means "not the common case": decode here
        fast = _fastpath.try_decode_batch(batch, registry)
        if fast is not None:
            return fast
    return _decode_batch_here(batch, registry)


def decode_batch_prebuilt(batch: RecordBatch, registry: Registry) -> list[LogEntry | PrebuiltPartition]:
    """decode_batch for a loader replaying a snapshot: where the C decoder is built, each
    PartitionRecord in its usual shape comes as a PrebuiltPartition instead of a LogEntry
    (see PrebuiltPartition); everything else, and every error, as decode_batch gives it."""
    if _fastpath.ENABLED:
        fast = _fastpath.try_decode_batch(batch, registry, prebuilt=True)
        if fast is not None:
            return fast
    return list(_decode_batch_here(batch, registry))


def _decode_batch_here(batch: RecordBatch, registry: Registry) -> list[LogEntry]:
    """decode_batch in Python: the one definition of decoding, which the C decoder follows."""
    entries: list[LogEntry] = []
    control = batch.is_control
    base = batch.base_offset
    epoch = batch.partition_leader_epoch
    for rec in batch.records():
        offset = base + rec.offset_delta
        try:
            if control:
                decoded = decode_control_record(registry, rec.key, rec.value)
                if decoded is None:
                    continue
            else:
                if rec.value is None:
                    raise CorruptRecordException("metadata record has a null value")
                decoded = decode_metadata_record(registry, rec.value)
        except KraftsimError as e:
            raise RecordDecodeError(offset, str(e)) from None
        entries.append(LogEntry(offset, epoch, batch.base_timestamp + rec.timestamp_delta, control,
                                decoded.record_type, decoded.version, decoded.message))
    return entries


class PrebuiltPartition(NamedTuple):
    """A PartitionRecord decoded straight into the image's registration of its partition.

    Why: a snapshot is almost all PartitionRecords, and a loader replaying one keeps only
    each record's registration. Built from the bytes in C (`_speedups.c`, pb_build), it
    skips the message, its lists and its LogEntry. Only `decode_batch_prebuilt` hands these
    out, only for the shape `partition.fast_from_record` builds (the same registration,
    with the same interned tuples), and only once that registration's tuples are interned;
    any other record comes as a LogEntry. Like a PartitionRecord, it names its topic and
    partition (`topic_id`, `partition_id`), so that a replay error reads the same."""

    topic_id: Any  # Uuid
    partition_id: int
    registration: Any  # image.components.partition.PartitionRegistration (the image layer's class)


class Payload(NamedTuple):
    """A message to write, with the record version to write it at (ignored for control records)."""

    record_type: RecordType
    version: int
    message: Any


_fastpath.provide_types(log_entry=LogEntry, payload=Payload, prebuilt_partition=PrebuiltPartition)


def encode_data_batch(base_offset: int, payloads: Sequence[Payload], *, epoch: int, timestamp: int) -> bytes:
    """A metadata data batch, as the active controller appends it."""
    if _fastpath.ENABLED:  # C encoder; None means "not the common case": encode here
        fast = _fastpath.try_encode_data_batch(base_offset, payloads, epoch, timestamp)
        if fast is not None:
            return fast
    values = [(None, encode_metadata_record(p.record_type, p.message, p.version)) for p in payloads]
    return build_batch(base_offset, values, epoch=epoch, timestamp=timestamp)


def encode_control_batch(base_offset: int, payloads: Sequence[Payload], *, epoch: int, timestamp: int) -> bytes:
    """A control batch (leader change, snapshot header or footer, kraft.version, voters)."""
    values = [encode_control_record(p.record_type, p.message) for p in payloads]
    return build_batch(base_offset, values, epoch=epoch, timestamp=timestamp, control=True)
