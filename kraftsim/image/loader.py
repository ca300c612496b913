"""MetadataLoader: committed batches and snapshots in, published (delta, image, manifest) out.

This is the one place where a node turns its metadata log into images, as Kafka's
MetadataLoader and MetadataBatchLoader do (kafka-facts §6.3):

- Committed batches are replayed into one MetadataDelta, which is applied and published at
  the end of each commit (the image is then batch aligned).
- Begin/End/AbortTransactionRecord drive a small state machine. While a transaction is
  open nothing is published; when it ends the whole delta is published; when it is
  aborted an empty delta is published, so only the provenance moves. A Begin in the middle
  of a delta first publishes what came before it.
- A snapshot load replaces the image (`finish_snapshot`) and drops any open transaction.
- Publishers hear nothing until the loader has caught up with the high watermark. A
  publisher installed later first receives the whole current image as a delta from the
  empty image, then every later delta.

The derived case of §6.3 (more records after an Abort before the next flush): by default
the loader does what Kafka's code does — the state moves ABORTED → NO_TRANSACTION and the
flush publishes the whole delta, the aborted transaction's records included. That is a
latent bug in Kafka rather than a design, so `AbortHandling.DISCARD` is offered as the
named alternative: the aborted records are dropped at the Abort itself, so whatever follows
publishes only its own changes. Both are tested against the same logs.
"""

from __future__ import annotations

import enum
import time
from typing import Callable, Iterable, NamedTuple, Protocol, Sequence

from kraftsim.errors import KraftsimError
from kraftsim.image.delta import TRANSACTION_RECORDS, MetadataDelta
from kraftsim.image.image import EMPTY_IMAGE, MetadataImage
from kraftsim.image.provenance import MetadataProvenance
from kraftsim.image.writer import iter_image_records
from kraftsim.protocol.entries import LogEntry
from kraftsim.versions import Catalog, default_catalog


class LoaderFault(KraftsimError):
    """A record the loader could not apply, as Kafka reports it to its fault handler."""

    def __init__(self, message: str, cause: BaseException | None = None):
        self.cause = cause
        super().__init__(message if cause is None else f"{message}: {cause}")


FaultHandler = Callable[[LoaderFault], None]


def raise_fault(fault: LoaderFault) -> None:
    """The default fault handler: stop at the first bad record (a controller's behaviour)."""
    raise fault


class TransactionState(enum.Enum):
    NO_TRANSACTION = "NO_TRANSACTION"
    STARTED = "STARTED"
    CONTINUED = "CONTINUED"
    ENDED = "ENDED"
    ABORTED = "ABORTED"


class AbortHandling(enum.Enum):
    """What happens to an aborted transaction's records when more records follow the Abort
    before the next flush (kafka-facts §6.3, the case marked derived)."""

    KAFKA = "kafka"  # publish them with what follows, as Kafka's code does
    DISCARD = "discard"  # drop them at the Abort


class CommittedBatch(NamedTuple):
    """One committed batch as the raft layer hands it to the loader."""

    base_offset: int
    last_offset: int
    epoch: int
    append_timestamp: int
    size_in_bytes: int
    entries: Sequence[LogEntry]  # control records included; the loader separates them

    @classmethod
    def of(cls, entries: Sequence[LogEntry], *, size_in_bytes: int = 0, last_offset: int | None = None,
           append_timestamp: int | None = None) -> "CommittedBatch":
        """A batch made of decoded entries (all from one batch of the log)."""
        if not entries:
            raise ValueError("a committed batch holds at least one record")
        first = entries[0]
        return cls(first.offset, entries[-1].offset if last_offset is None else last_offset, first.epoch,
                   first.timestamp if append_timestamp is None else append_timestamp, size_in_bytes, entries)


class LogDeltaManifest(NamedTuple):
    """What a publish after log records covers."""

    provenance: MetadataProvenance
    leader_epoch: int
    num_batches: int
    elapsed_ns: int
    num_bytes: int

    kind = "LOG_DELTA"


class SnapshotManifest(NamedTuple):
    """What a publish after a snapshot load (or a publisher's first full image) covers."""

    provenance: MetadataProvenance
    elapsed_ns: int

    kind = "SNAPSHOT"


Manifest = LogDeltaManifest | SnapshotManifest


class Publisher(Protocol):
    """Anything that wants images: brokers' caches, snapshot generators, verifiers."""

    name: str

    def on_metadata_update(self, delta: MetadataDelta, image: MetadataImage, manifest: Manifest) -> None: ...


class MetadataLoader:
    """Turns committed batches and snapshots into images and hands them to publishers.

    Not thread-safe: a simulated node drives it from one event loop. The clock only feeds
    the manifests' elapsed times, never the images.
    """

    def __init__(self, catalog: Catalog | None = None, *, fault_handler: FaultHandler = raise_fault,
                 abort_handling: AbortHandling = AbortHandling.KAFKA,
                 clock_ns: Callable[[], int] = time.perf_counter_ns):
        self.catalog = catalog if catalog is not None else default_catalog()
        self.fault_handler = fault_handler
        self.abort_handling = abort_handling
        self.clock_ns = clock_ns
        self.high_watermark: int | None = None
        #: Finalized kraft.version as the last KRaftVersionRecord said (a metric in Kafka).
        self.kraft_version: int | None = None
        self.faults: list[LoaderFault] = []
        self.publish_count = 0
        self._image = EMPTY_IMAGE
        self._caught_up = False
        self._publishers: dict[str, Publisher] = {}
        self._uninitialized: dict[str, Publisher] = {}
        self._reset_batch_state(EMPTY_IMAGE)

    # ------------------------------------------------------------------ public state

    @property
    def image(self) -> MetadataImage:
        """The newest image, published or not (before catching up it is not published)."""
        return self._image

    @property
    def caught_up(self) -> bool:
        return self._caught_up

    @property
    def transaction_state(self) -> TransactionState:
        return self._tx

    @property
    def last_offset(self) -> int:
        """The last offset replayed, published or not."""
        return self._last_offset

    @property
    def publishers(self) -> list[str]:
        return list(self._publishers) + list(self._uninitialized)

    # ------------------------------------------------------------------ publishers

    def install_publishers(self, *publishers: Publisher) -> None:
        """Add publishers; each first gets the whole current image once the loader has caught up."""
        for p in publishers:
            if p.name in self._publishers or p.name in self._uninitialized:
                raise KraftsimError(f"a publisher named {p.name!r} is already installed")
            self._uninitialized[p.name] = p
        self._initialize_new_publishers()

    def remove_publisher(self, name: str) -> Publisher:
        p = self._publishers.pop(name, None) or self._uninitialized.pop(name, None)
        if p is None:
            raise KraftsimError(f"no publisher named {name!r}")
        return p

    def set_high_watermark(self, high_watermark: int) -> None:
        """The raft layer's high watermark: publishing starts once the loader reaches it."""
        self.high_watermark = high_watermark
        self._initialize_new_publishers()

    # ------------------------------------------------------------------ input

    def handle_commit(self, batches: Iterable[CommittedBatch], *, aligned: bool = True) -> None:
        """Replay one commit's batches, then publish what they changed.

        Kafka always ends a commit on a batch boundary; `aligned=False` is for a reader that
        stops inside a batch (a snapshot requested at an offset that is not a boundary)."""
        for batch in batches:
            self._load_batch(batch)
        self._flush(aligned=aligned)

    def handle_load_snapshot(self, entries: Iterable[LogEntry], *, end_offset: int, epoch: int,
                             last_contained_log_timestamp: int) -> MetadataImage:
        """Replace the image with a snapshot's (its id is (end_offset, epoch)); publish it."""
        start = self.clock_ns()
        delta = MetadataDelta(self._image, self.catalog)
        for entry in entries:
            if entry.control:
                continue
            try:
                delta.replay(entry)
            except KraftsimError as e:
                self._fault(f"Error loading metadata snapshot record from offset {entry.offset}", e)
        delta.finish_snapshot()
        provenance = MetadataProvenance(end_offset - 1, epoch, last_contained_log_timestamp, True)
        image = delta.apply(provenance)
        self._reset_batch_state(image)
        self._has_seen_record = self._has_seen_record or not image.is_empty()
        self._publish(delta, image, SnapshotManifest(provenance, self.clock_ns() - start))
        return image

    # ------------------------------------------------------------------ the batch loader

    def _reset_batch_state(self, image: MetadataImage) -> None:
        """Start over from `image` (after a snapshot load): no delta, no transaction."""
        self._image = image
        self._delta: MetadataDelta | None = None
        self._tx = TransactionState.NO_TRANSACTION
        self._num_batches = 0
        self._num_bytes = 0
        self._last_offset = image.provenance.last_contained_offset
        self._last_epoch = image.provenance.last_contained_epoch
        self._last_time = image.provenance.last_contained_log_time_ms
        self._has_seen_record = getattr(self, "_has_seen_record", False)
        self._started_ns: int | None = None

    def _delta_now(self) -> MetadataDelta:
        if self._delta is None:
            self._delta = MetadataDelta(self._image, self.catalog)
            self._started_ns = self.clock_ns()
        return self._delta

    def _load_batch(self, batch: CommittedBatch) -> None:
        index = 0  # position among the batch's metadata records
        for entry in batch.entries:
            if entry.control:
                if entry.record_type.name == "KRaftVersionRecord":
                    self.kraft_version = entry.message.kraft_version
                continue
            try:
                self._replay(entry, index, batch)
            except KraftsimError as e:
                self._fault(f"Error loading metadata log record from offset {entry.offset}", e)
            self._last_offset = entry.offset
            self._has_seen_record = True
            index += 1
        self._last_offset = batch.last_offset
        self._last_epoch = batch.epoch
        self._last_time = batch.append_timestamp
        self._num_batches += 1
        self._num_bytes += batch.size_in_bytes

    def _replay(self, entry: LogEntry, index: int, batch: CommittedBatch) -> None:
        name = entry.record_type.name
        tx = self._tx
        open_tx = tx in (TransactionState.STARTED, TransactionState.CONTINUED)
        if name in TRANSACTION_RECORDS:
            if name == "BeginTransactionRecord":
                if open_tx:
                    raise KraftsimError("Encountered BeginTransactionRecord while already in a transaction")
                if self._num_batches > 0 or index > 0:
                    # Publish what precedes the transaction, ending just before the Begin.
                    self._apply_and_publish(self._delta_now(), MetadataProvenance(
                        entry.offset - 1, self._last_epoch if index == 0 else batch.epoch,
                        self._last_time if index == 0 else batch.append_timestamp, index == 0))
                self._tx = TransactionState.STARTED
            elif name == "EndTransactionRecord":
                if not open_tx:
                    raise KraftsimError("Encountered EndTransactionRecord without having seen a BeginTransactionRecord")
                self._tx = TransactionState.ENDED
            else:
                if not open_tx:
                    raise KraftsimError("Encountered AbortTransactionRecord without having seen a BeginTransactionRecord")
                self._tx = TransactionState.ABORTED
                if self.abort_handling is AbortHandling.DISCARD:
                    self._delta = None
            return
        if tx is TransactionState.STARTED:
            self._tx = TransactionState.CONTINUED
        elif tx in (TransactionState.ENDED, TransactionState.ABORTED):
            self._tx = TransactionState.NO_TRANSACTION
        self._delta_now().replay(entry)

    def _flush(self, *, aligned: bool) -> None:
        """Publish at the end of a commit, as the transaction state allows."""
        tx = self._tx
        if tx in (TransactionState.STARTED, TransactionState.CONTINUED):
            return
        provenance = MetadataProvenance(self._last_offset, self._last_epoch, self._last_time, aligned)
        if tx is TransactionState.ABORTED:
            # Nothing of the transaction appears; only the provenance moves on.
            self._delta = None
            self._apply_and_publish(MetadataDelta(self._image, self.catalog), provenance)
        elif self._num_batches > 0:
            self._apply_and_publish(self._delta_now(), provenance)
        self._tx = TransactionState.NO_TRANSACTION

    def _apply_and_publish(self, delta: MetadataDelta, provenance: MetadataProvenance) -> None:
        started = self._started_ns if self._started_ns is not None else self.clock_ns()
        image = delta.apply(provenance)
        manifest = LogDeltaManifest(provenance, self._last_epoch, self._num_batches, self.clock_ns() - started,
                                    self._num_bytes)
        self._image = image
        self._delta = None
        self._num_batches = 0
        self._num_bytes = 0
        self._started_ns = None
        self._publish(delta, image, manifest)

    def _fault(self, message: str, cause: BaseException) -> None:
        fault = LoaderFault(message, cause)
        self.faults.append(fault)
        self.fault_handler(fault)

    # ------------------------------------------------------------------ publishing

    def _still_catching_up(self, offset: int) -> bool:
        if self._caught_up:
            return False
        if self.high_watermark is None or offset < self.high_watermark - 1:
            return True
        if not self._has_seen_record and self._image.is_empty():
            return True
        self._caught_up = True
        return False

    def _publish(self, delta: MetadataDelta, image: MetadataImage, manifest: Manifest) -> None:
        self._image = image
        if self._still_catching_up(manifest.provenance.last_contained_offset):
            return
        self.publish_count += 1
        for p in list(self._publishers.values()):
            p.on_metadata_update(delta, image, manifest)
        self._initialize_new_publishers()

    def _initialize_new_publishers(self) -> None:
        """Send each waiting publisher the whole image, rewritten as one delta from empty."""
        if not self._uninitialized or self._still_catching_up(self._image.provenance.last_contained_offset):
            return
        image = self._image
        start = self.clock_ns()
        delta = full_image_delta(image, self.catalog)
        manifest = SnapshotManifest(image.provenance, self.clock_ns() - start)
        waiting, self._uninitialized = self._uninitialized, {}
        for name, p in waiting.items():
            p.on_metadata_update(delta, image, manifest)
            self._publishers[name] = p


def full_image_delta(image: MetadataImage, catalog: Catalog) -> MetadataDelta:
    """The image written at its own metadata.version and replayed on the empty image: what
    Kafka's ImageReWriter gives a new publisher."""
    delta = MetadataDelta(EMPTY_IMAGE, catalog)
    mv = image.metadata_version
    if mv is not None:
        delta.replay_all(iter_image_records(image, mv, catalog))
    return delta

