"""MetadataLoader: committed batches and snapshots in, published (delta, image, manifest) out.

This is the one place where a node turns its metadata log into images, as Kafka's
MetadataLoader and MetadataBatchLoader do (kafka-facts §6.3):

- Committed batches are replayed into one MetadataDelta, which is applied and published at
  the end of each commit (the image is then batch aligned). Control batches count as
  batches (they move the offset, epoch and byte count) but hold no metadata records; a
  KRaftVersionRecord or VotersRecord among them is remembered (`kraft_version`, `voters`).
- Begin/End/AbortTransactionRecord drive a small state machine. While a transaction is
  open nothing is published; when it ends the whole delta is published; when it is
  aborted an empty delta is published, so only the provenance moves. A Begin in the middle
  of a delta first publishes what came before it, at the offset before the Begin, batch
  aligned when the Begin opens its batch. As in Kafka, that provenance takes the epoch and
  append time of the Begin's batch.
- A snapshot load replaces the image (`finish_snapshot`) and drops any open transaction.
- Publishers hear nothing until the loader has caught up: the high watermark is known,
  the loaded offset has reached it, and a record has been seen (a non-empty image counts).
  A publisher installed later first receives the whole current image as a delta from the
  empty image, then every later delta.
- Errors go to the fault handler with Kafka's texts; the default handler raises.

The derived case of §6.3 (more records after an Abort before the next flush): by default
the loader does what Kafka's code does — the state moves ABORTED → NO_TRANSACTION and the
flush publishes the whole delta, the aborted transaction's records included. That is a
latent bug in Kafka rather than a design, so `AbortHandling.DISCARD` is offered as the
named alternative: the aborted records are dropped at the Abort itself, so whatever follows
publishes only its own changes. Both are tested against the same logs.

metadata.version changes: Kafka 4.x replays the FeatureLevelRecord like any other record
(`MvChangeHandling.KAFKA`, the default). `MvChangeHandling.KIP_778` follows KIP-778: outside
a transaction, a FeatureLevelRecord that changes metadata.version first publishes what
came before it (as a Begin does), so the image just before the change is published on its
own; the delta holding the change is then published with the image rewritten at the new
metadata.version (writer/mv_change.py) and a `MetadataVersionChange` in its manifest saying what
the rewrite dropped. The loader's own image is the rewritten one from then on. Inside a
transaction the change takes effect when the transaction is published, and the state
before it is the one published at the Begin.
"""

from __future__ import annotations

import enum
import time
from typing import Callable, Iterable, NamedTuple, Protocol, Sequence

from kraftsim.errors import KraftsimError
from kraftsim.image.components.configs import DroppedConfigs
from kraftsim.image.bulk import replay_records
from kraftsim.image.delta import BulkRecord, MetadataDelta, RecordLike
from kraftsim.image.image import EMPTY_IMAGE, MetadataImage
from kraftsim.image.writer.loss import LossReport
from kraftsim.image.writer.mv_change import MetadataVersionChange, rewrite_at_metadata_version
from kraftsim.image.provenance import MetadataProvenance
from kraftsim.image.writer.image_writer import iter_image_records
from kraftsim.protocol.entries import LogEntry, PrebuiltPartition
from kraftsim.versions import FEATURE_NAME as MV_NAME, Catalog, default_catalog


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


_OPEN = (TransactionState.STARTED, TransactionState.CONTINUED)
#: The records whose replay the batch loader follows one by one (transaction state, metadata.version).
_STATEFUL = frozenset({"BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord",
                       "FeatureLevelRecord"})
#: The records that close a transaction, and the state each leaves.
_TX_ENDS = {"EndTransactionRecord": TransactionState.ENDED, "AbortTransactionRecord": TransactionState.ABORTED}


class AbortHandling(enum.Enum):
    """What happens to an aborted transaction's records when more records follow the Abort
    before the next flush (kafka-facts §6.3, the case marked derived)."""

    KAFKA = "kafka"  # publish them with what follows, as Kafka's code does
    DISCARD = "discard"  # drop them at the Abort


class MvChangeHandling(enum.Enum):
    """What the loader does when a FeatureLevelRecord changes metadata.version."""

    KAFKA = "kafka"  # Kafka 4.x: nothing special; published at the normal boundary
    KIP_778 = "kip-778"  # publish the state before the change, then the image rewritten at the new MV


class CommittedBatch(NamedTuple):
    """One committed batch as the raft layer hands it to the loader."""

    base_offset: int
    last_offset: int
    epoch: int
    append_timestamp: int
    size_in_bytes: int
    entries: Sequence[LogEntry]  # control records included; the loader separates them


class LogDeltaManifest(NamedTuple):
    """What a publish after log records covers."""

    provenance: MetadataProvenance
    leader_epoch: int
    num_batches: int
    elapsed_ns: int
    num_bytes: int
    #: Under MvChangeHandling.KIP_778, the metadata.version change this delta carried out.
    metadata_version_change: MetadataVersionChange | None = None

    @property
    def kind(self) -> str:
        return "LOG_DELTA"


class SnapshotManifest(NamedTuple):
    """What a publish after a snapshot load (or a publisher's first full image) covers."""

    provenance: MetadataProvenance
    elapsed_ns: int

    @property
    def kind(self) -> str:
        return "SNAPSHOT"


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

    _has_seen_record: bool | None  # None: decided from _reset_image when asked
    _reset_image: MetadataImage

    def __init__(self, catalog: Catalog | None = None, *, fault_handler: FaultHandler = raise_fault,
                 abort_handling: AbortHandling = AbortHandling.KAFKA,
                 mv_change: MvChangeHandling = MvChangeHandling.KAFKA,
                 clock_ns: Callable[[], int] = time.perf_counter_ns, initial_delta_on_use: bool = False):
        self.catalog = catalog if catalog is not None else default_catalog()
        self.fault_handler = fault_handler
        #: A new publisher's first delta (the whole image rewritten from empty: Kafka's
        #: ImageReWriter) is made when a publisher first reads it, not before sending it:
        #: a publisher that looks only at a snapshot manifest's image (a snapshot
        #: generator) costs nothing. The manifest's elapsed time then leaves the rewrite out
        #: (a caller with a clock of its own, such as a simulated node at 0, loses nothing).
        self.initial_delta_on_use = initial_delta_on_use
        self.abort_handling = abort_handling
        self.mv_change = mv_change
        self.clock_ns = clock_ns
        self.high_watermark: int | None = None
        #: Finalized kraft.version as the last KRaftVersionRecord said (a metric in Kafka).
        self.kraft_version: int | None = None
        #: The last VotersRecord read from a control batch (what a snapshot header would carry).
        self.voters: object | None = None
        self.faults: list[LoaderFault] = []
        #: ConfigRecords replay ignored: configs the catalog's release does not define (4.3 on).
        self.configs_dropped = DroppedConfigs()
        self.publish_count = 0
        #: Every publish, caught up or not, and the last one's (delta, image, manifest): what
        #: `adopt` hands another loader that replayed the same commit from the same image.
        self.publishes = 0
        self.last_publish: tuple[MetadataDelta, MetadataImage, Manifest] | None = None
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
    def has_seen_record(self) -> bool:
        """Kafka's MetadataBatchLoader.hasSeenRecord(): what the catch-up rule asks."""
        seen = self._has_seen_record
        if seen is None:  # (asked rarely: decided from the image it started from only then)
            seen = self._has_seen_record = not self._reset_image.is_empty()
        return seen

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
        if self._uninitialized:  # (_initialize_new_publishers' first test)
            self._initialize_new_publishers()

    # ------------------------------------------------------------------ input

    def handle_commit(self, batches: Iterable[CommittedBatch], *, aligned: bool = True) -> None:
        """Replay one commit's batches, then publish what they changed.

        Kafka always ends a commit on a batch boundary; `aligned=False` is for a reader that
        stops inside a batch (a snapshot requested at an offset that is not a boundary)."""
        for batch in batches:
            self.load_batch(batch)
        self.flush(aligned=aligned)

    def handle_load_snapshot(self, entries: Iterable[LogEntry | PrebuiltPartition], *, end_offset: int, epoch: int,
                             last_contained_log_timestamp: int) -> MetadataImage:
        """Replace the image with a snapshot's (its id is (end_offset, epoch)); publish it."""
        start = self.clock_ns()
        delta = MetadataDelta(self._image, self.catalog, dropped_configs=self.configs_dropped)
        failures = 0

        def failed(entry: BulkRecord, error: KraftsimError) -> None:
            nonlocal failures
            index = delta.records_replayed + failures  # its position among the snapshot's metadata records
            failures += 1
            self._fault(f"Error loading metadata log record {index} in snapshot at offset {end_offset - 1}", error)

        delta.replay_all(entries, on_error=failed, skip_control=True)
        delta.finish_snapshot()
        provenance = snapshot_provenance(end_offset, epoch, last_contained_log_timestamp)
        image = delta.apply(provenance)
        self._reset_batch_state(image)
        self._publish(delta, image, SnapshotManifest(provenance, self.clock_ns() - start))
        return image

    def adopt_snapshot(self, image: MetadataImage, *, end_offset: int, epoch: int,
                       last_contained_log_timestamp: int) -> MetadataImage:
        """What `handle_load_snapshot` of a snapshot holding `image`'s records gives this fresh,
        idle loader, without replaying them: the caller vouches that the snapshot's records
        replay to `image`'s metadata (a file written losslessly from it by this software).
        The image takes the snapshot's provenance; the delta, the image rewritten from
        empty, is made only if a publisher reads it. Returns the image."""
        start = self.clock_ns()
        provenance = snapshot_provenance(end_offset, epoch, last_contained_log_timestamp)
        if image.provenance != provenance:
            image = image.with_provenance(provenance)
        delta: MetadataDelta = _DeltaOnUse(image, self.catalog)  # type: ignore[assignment]
        self.adopt(delta, image, SnapshotManifest(provenance, self.clock_ns() - start),
                   kraft_version=self.kraft_version, voters=self.voters)
        return image

    # ------------------------------------------------------------------ the batch loader

    def _reset_batch_state(self, image: MetadataImage) -> None:
        """Start over from `image` (after a publish or a snapshot load): no delta, no transaction."""
        self._image = image
        self._delta: MetadataDelta | None = None
        self._tx = TransactionState.NO_TRANSACTION
        self._num_batches = 0
        self._num_bytes = 0
        self._last_offset = image.provenance.last_contained_offset
        self._last_epoch = image.provenance.last_contained_epoch
        self._last_time = image.provenance.last_contained_log_time_ms
        self._has_seen_record = None  # None: whether `image` is not empty
        self._reset_image = image
        self._started_ns: int | None = None
        self._mv_levels: list[int] = []  # metadata.version levels replayed into the delta, in order

    def _delta_now(self) -> MetadataDelta:
        if self._delta is None:
            self._delta = MetadataDelta(self._image, self.catalog, dropped_configs=self.configs_dropped)
            if self._started_ns is None:
                self._started_ns = self.clock_ns()
        return self._delta

    def load_batch(self, batch: CommittedBatch) -> None:
        """Replay one batch without the end-of-commit flush (Kafka's MetadataBatchLoader.loadBatch).

        Publishes only where a transaction (or, under KIP-778, a metadata.version change)
        begins in the middle of the accumulated delta."""
        if self._started_ns is None:
            self._started_ns = self.clock_ns()
        prev_epoch, prev_time = self._last_epoch, self._last_time
        # Kafka takes the epoch and append time at the start of the batch.
        self._last_epoch, self._last_time = batch.epoch, batch.append_timestamp
        loaded = 0  # records of this batch replayed so far (a reader may hand over a batch's tail only)
        entries = batch.entries
        n = len(entries)
        i = 0
        while i < n:
            entry = entries[i]
            if entry.control:
                self._read_control(entry)
                i += 1
                continue
            if entry.record_type.name not in _STATEFUL:  # a run of plain records: replayed in bulk
                j = i + 1
                while j < n and not entries[j].control and entries[j].record_type.name not in _STATEFUL:
                    j += 1
                self._replay_run(entries[i:j] if i or j < n else entries)
                loaded += j - i
                i = j
                continue
            i += 1
            index = entry.offset - batch.base_offset  # Kafka's index within the batch
            mid_delta = loaded > 0 or self._num_batches > 0
            if self.mv_change is MvChangeHandling.KIP_778 and mid_delta and self._changes_metadata_version(entry):
                self._split_before_mv_change(index, batch, prev_epoch, prev_time)
            try:
                self._replay(entry)
            except KraftsimError as e:
                self._fault(f"Error loading metadata log record from offset {entry.offset}", e)
            if self._tx is TransactionState.STARTED and mid_delta:
                # A transaction begins mid-delta: publish what precedes it, ending just before the Begin.
                self._apply_and_publish(self._delta_now(), MetadataProvenance(
                    self._last_offset, batch.epoch, batch.append_timestamp, index == 0))
                self._tx = TransactionState.STARTED
            self._last_offset = entry.offset
            loaded += 1
        self._last_offset = batch.last_offset
        self._num_batches += 1
        self._num_bytes += batch.size_in_bytes

    def _replay_run(self, run: Sequence[LogEntry]) -> None:
        """`_replay` of consecutive records none of which is a transaction marker or a
        FeatureLevelRecord, in one bulk replay (MetadataDelta.replay_all's path): the
        transaction state moves as the first one moves it, and the rest leave it alone."""
        tx = self._tx
        if tx is TransactionState.STARTED:
            self._tx = TransactionState.CONTINUED
        elif tx is TransactionState.ENDED or tx is TransactionState.ABORTED:
            self._tx = TransactionState.NO_TRANSACTION
        self._has_seen_record = True
        before = self._last_offset

        def failed(entry: RecordLike, error: KraftsimError) -> None:
            k = next(k for k, e in enumerate(run) if e is entry)
            self._last_offset = run[k - 1].offset if k else before  # (as after the records before it)
            self._fault(f"Error loading metadata log record from offset {run[k].offset}", error)

        replay_records(self._delta_now(), run, failed)
        self._last_offset = run[-1].offset

    def _read_control(self, entry: LogEntry) -> None:
        name = entry.record_type.name
        if name == "KRaftVersionRecord":
            self.kraft_version = entry.message.k_raft_version
        elif name == "VotersRecord":
            self.voters = entry.message

    def _replay(self, entry: LogEntry) -> None:
        name = entry.record_type.name
        tx = self._tx
        if name == "BeginTransactionRecord":
            if tx in _OPEN:
                raise KraftsimError("Encountered BeginTransactionRecord while already in a transaction")
            self._tx = TransactionState.STARTED
        elif name in _TX_ENDS:
            if tx not in _OPEN:
                raise KraftsimError(f"Encountered {name} without having seen a BeginTransactionRecord")
            self._tx = _TX_ENDS[name]
            if self._tx is TransactionState.ABORTED and self.abort_handling is AbortHandling.DISCARD:
                self._delta = None  # the delta began at the Begin: it holds only the transaction
                self._mv_levels = []
        else:
            if tx is TransactionState.STARTED:
                self._tx = TransactionState.CONTINUED
            elif tx in (TransactionState.ENDED, TransactionState.ABORTED):
                self._tx = TransactionState.NO_TRANSACTION
            self._has_seen_record = True
            self._delta_now().replay(entry)
            if name == "FeatureLevelRecord" and entry.message.name == MV_NAME:
                self._mv_levels.append(entry.message.feature_level)

    # ------------------------------------------------------------------ metadata.version changes (KIP-778)

    def _current_metadata_version(self) -> int | None:
        pending = self._delta.metadata_version_changed() if self._delta is not None else None
        return pending if pending is not None else self._image.metadata_version

    def _changes_metadata_version(self, entry: LogEntry) -> bool:
        """A FeatureLevelRecord outside a transaction that moves an already finalized metadata.version."""
        if entry.record_type.name != "FeatureLevelRecord" or entry.message.name != MV_NAME or self._tx in _OPEN:
            return False
        current = self._current_metadata_version()
        return current is not None and entry.message.feature_level != current

    def _split_before_mv_change(self, index: int, batch: CommittedBatch, prev_epoch: int, prev_time: int) -> None:
        """Publish everything before the change record, as a flush at the record before it would.

        Unlike Kafka's split at a Begin, the provenance takes the epoch and time of the batch
        that holds the record before the change."""
        epoch, log_time = (prev_epoch, prev_time) if index == 0 else (batch.epoch, batch.append_timestamp)
        self._publish_accumulated(MetadataProvenance(self._last_offset, epoch, log_time, index == 0))
        self._last_epoch, self._last_time = batch.epoch, batch.append_timestamp

    def _rewrite_for_mv_change(self, base: MetadataImage, image: MetadataImage
                               ) -> tuple[MetadataImage, MetadataVersionChange | None]:
        """The applied image rewritten at its new metadata.version, and what that dropped."""
        old, new, levels = base.metadata_version, image.metadata_version, self._mv_levels
        if old is None or new is None or not levels:
            return image, None
        highest, lowest = max(old, *levels), min(levels)
        if highest == new and lowest == new and old == new:
            return image, None
        start = self.clock_ns()
        report = LossReport()
        image, comps = rewrite_at_metadata_version(image, lowest, self.catalog, source=highest, loss_handler=report)
        via = None
        if lowest != new:  # down and up again inside one transaction: the loss happened at `lowest`
            via = lowest
            image, more = rewrite_at_metadata_version(image, new, self.catalog, source=lowest, loss_handler=report)
            comps = tuple(dict.fromkeys(comps + more))
        return image, MetadataVersionChange(old, new, report, comps, via, self.clock_ns() - start)

    # ------------------------------------------------------------------ publishing deltas

    def flush(self, *, aligned: bool = True) -> None:
        """Publish what has accumulated unless a transaction is open (Kafka's maybeFlushBatches)."""
        if self._tx in _OPEN or self._num_batches == 0:
            return
        self._publish_accumulated(MetadataProvenance(self._last_offset, self._last_epoch, self._last_time, aligned))

    def _publish_accumulated(self, provenance: MetadataProvenance) -> None:
        if self._tx is TransactionState.ABORTED:
            # Nothing of the transaction appears; only the provenance moves on.
            self._apply_and_publish(MetadataDelta(self._image, self.catalog), provenance)
        else:
            self._apply_and_publish(self._delta_now(), provenance)

    def _apply_and_publish(self, delta: MetadataDelta, provenance: MetadataProvenance) -> None:
        started = self._started_ns if self._started_ns is not None else self.clock_ns()
        base = self._image
        try:
            image = delta.apply(provenance)
        except KraftsimError as e:
            self._fault(f"Error generating new metadata image from metadata delta between offset "
                        f"{base.provenance.last_contained_offset} and {provenance.last_contained_offset}", e)
            self._reset_batch_state(base)
            return
        change = None
        if self.mv_change is MvChangeHandling.KIP_778 and delta.metadata_version_changed() is not None:
            image, change = self._rewrite_for_mv_change(base, image)
        manifest = LogDeltaManifest(provenance, self._last_epoch, self._num_batches, self.clock_ns() - started,
                                    self._num_bytes, change)
        self._publish(delta, image, manifest)
        self._reset_batch_state(image)

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
        if not self.has_seen_record:
            return True
        self._caught_up = True
        return False

    @property
    def idle(self) -> bool:
        """Nothing accumulated: the next commit starts from `image` alone."""
        return self._delta is None and self._tx is TransactionState.NO_TRANSACTION and self._num_batches == 0

    def publishes_nothing_at(self, offset: int) -> bool:
        """Whether a commit ending at `offset`, adopted now, would be published to nobody: the
        loader is still catching up to the high watermark below it (Kafka's loader publishes
        nothing until it has caught up). Such an adoption leaves nothing the next adoption
        does not overwrite, but its count (`adopt_superseded`)."""
        return not self._caught_up and (self.high_watermark is None or offset < self.high_watermark - 1)

    def adopt_superseded(self) -> None:
        """What `adopt` of a commit that `publishes_nothing_at` its offset leaves once the
        next commit is adopted too: the count of publishes (everything else it set, the next
        adoption sets again)."""
        self.publishes += 1

    def adopt(self, delta: MetadataDelta, image: MetadataImage, manifest: Manifest, *, kraft_version: int | None,
              voters: object | None) -> None:
        """Take the result of a commit another loader replayed from this loader's image (the
        same batches, the same catalog and handling: replay is deterministic), publishing it
        to this loader's publishers as if replayed here. Only for an `idle` loader."""
        self.kraft_version, self.voters = kraft_version, voters
        self._last_offset = manifest.provenance.last_contained_offset
        if self._caught_up and not self._uninitialized:
            # (_publish, inlined for the common case: every node adopts every shared commit)
            self.publishes += 1
            self.publish_count += 1
            self.last_publish = (delta, image, manifest)
            self._image = image
            for p in list(self._publishers.values()):
                try:
                    p.on_metadata_update(delta, image, manifest)
                except Exception as e:  # noqa: BLE001 - as in _publish
                    self._fault(f"Unhandled error publishing the new metadata image ending at "
                                f"{manifest.provenance.last_contained_offset} with publisher {p.name}", e)
            if self._uninitialized:
                self._initialize_new_publishers()
        else:
            self._publish(delta, image, manifest)
        # (_reset_batch_state for an idle loader: no delta, no transaction, no batches)
        prov = image.provenance
        self._image = self._reset_image = image
        self._last_offset = prov.last_contained_offset
        self._last_epoch = prov.last_contained_epoch
        self._last_time = prov.last_contained_log_time_ms
        self._has_seen_record = None
        self._started_ns = None
        if self._mv_levels:
            self._mv_levels = []

    def rebase(self, image: MetadataImage) -> None:
        """Stand on `image` instead of this idle loader's image, which the caller found equal to
        it (the same metadata and provenance) but another object: loaders of one software that
        hold equal images then hold one, and share their next commits
        (kraftsim.sim.node.commit_share). Nothing is published: nothing changed."""
        old = self._image
        self._image = self._reset_image = image
        if self.last_publish is not None and self.last_publish[1] is old:
            self.last_publish = (self.last_publish[0], image, self.last_publish[2])

    def _publish(self, delta: MetadataDelta, image: MetadataImage, manifest: Manifest) -> None:
        self.publishes += 1
        self.last_publish = (delta, image, manifest)
        self._image = image
        offset = manifest.provenance.last_contained_offset
        if not self._caught_up and self._still_catching_up(offset):
            return
        self.publish_count += 1
        for p in list(self._publishers.values()):
            try:
                p.on_metadata_update(delta, image, manifest)
            except Exception as e:  # noqa: BLE001 - Kafka routes every publisher error to the fault handler
                self._fault(f"Unhandled error publishing the new metadata image ending at {offset} with "
                            f"publisher {p.name}", e)
        if self._uninitialized:
            self._initialize_new_publishers()

    def _initialize_new_publishers(self) -> None:
        """Send each waiting publisher the whole image, rewritten as one delta from empty."""
        if not self._uninitialized or self._still_catching_up(self._image.provenance.last_contained_offset):
            return
        image = self._image
        start = self.clock_ns()
        if self.initial_delta_on_use:
            delta: MetadataDelta = _DeltaOnUse(image, self.catalog)  # type: ignore[assignment]
        else:
            delta = full_image_delta(image, self.catalog)
        manifest = SnapshotManifest(image.provenance, self.clock_ns() - start)
        waiting, self._uninitialized = self._uninitialized, {}
        for name, p in waiting.items():
            try:
                p.on_metadata_update(delta, image, manifest)
            except Exception as e:  # noqa: BLE001 - as Kafka: the publisher is dropped, the fault reported
                self._fault(f"Unhandled error initializing {name} with a snapshot at offset "
                            f"{image.provenance.last_contained_offset}", e)
                continue
            self._publishers[name] = p


class _DeltaOnUse:
    """`full_image_delta(image, catalog)`, made when first read (an attribute asked for) and
    then the delta itself for every use: see MetadataLoader.initial_delta_on_use."""

    __slots__ = ("_image", "_catalog", "_delta", "_settle")

    def __init__(self, image: MetadataImage, catalog: Catalog):
        self._image = image
        self._catalog = catalog
        self._delta: MetadataDelta | None = None
        self._settle: MetadataImage | None = None

    def settle(self, applied: MetadataImage) -> None:
        """`MetadataDelta.settle`, without making the delta to let go of its topic changes
        (a kept snapshot load's delta, which nobody may read: at a million partitions making
        it is a whole rewrite and replay of the image). A delta made later is settled as it
        is made, so it is the delta an eager settle would have left."""
        if self._delta is not None:
            self._delta.settle(applied)
        elif self._settle is None:  # (the first settle decides, as MetadataDelta's does)
            self._settle = applied

    def __getattr__(self, name: str) -> object:
        delta = self._delta
        if delta is None:
            delta = self._delta = full_image_delta(self._image, self._catalog)
            if self._settle is not None:
                delta.settle(self._settle)
                self._settle = None
        return getattr(delta, name)


def snapshot_provenance(end_offset: int, epoch: int, last_contained_log_timestamp: int) -> MetadataProvenance:
    """The provenance of an image loaded from the snapshot (end_offset, epoch)."""
    return MetadataProvenance(end_offset - 1, epoch, last_contained_log_timestamp, True)


def full_image_delta(image: MetadataImage, catalog: Catalog) -> MetadataDelta:
    """The image written at its own metadata.version and replayed on the empty image: what
    Kafka's ImageReWriter gives a new publisher."""
    delta = MetadataDelta(EMPTY_IMAGE, catalog)
    mv = image.metadata_version
    if mv is not None:
        delta.replay_all(iter_image_records(image, mv, catalog))
    delta.finish_snapshot()
    return delta
