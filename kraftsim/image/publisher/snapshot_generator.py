"""SnapshotGenerator: the publisher that decides when a node writes a snapshot.

Kafka's rules (kafka-facts §6.4): every published log delta adds its bytes to a counter;
a snapshot is due when the counter reaches `max_bytes`, or, when `max_time_ms` is not 0,
when that long has passed since the last snapshot. A due snapshot is emitted only if
snapshots are not disabled and the image ends on a batch boundary; otherwise nothing
happens and the counters keep growing, so the next aligned image gets it. The counters
are reset when a snapshot is emitted and when one is loaded (a SnapshotManifest, which is
also what a newly installed generator first receives).

Time is an injected millisecond clock (a simulation's virtual time), so which offsets get
snapshots is deterministic. Kafka runs emits on a queue of its own; here they run at once,
so the "queue not empty" case never arises.

Kafka's defaults are the builder's (100 MiB, 1 day: `BUILDER_DEFAULTS`); a real node uses
the config defaults SharedServer passes in (20 MiB, 1 h: `SHARED_SERVER_DEFAULTS`).

`mv_change_snapshots=True` adds KIP-778's snapshots, which Kafka 4.x does not take: when a
published delta changes metadata.version, the image the delta was built on (the state
just before the change) and the new image are both written, whatever the counters say.
Run it on a loader with `MvChangeHandling.KIP_778` so that the state before the change is
published on its own and the new image is rewritten at the new metadata.version; on a
Kafka-mode loader a lossy downgrade's image cannot be written and the emit fails with
Kafka's UnwritableMetadataException text (through the fault handler).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol

from kraftsim.errors import KraftsimError
from kraftsim.image.delta import MetadataDelta
from kraftsim.image.publisher.snapshot_emitter import snapshot_name
from kraftsim.image.image import MetadataImage
from kraftsim.image.loader.metadata_loader import LogDeltaManifest, Manifest
from kraftsim.image.writer.loss import LossReport

MIB = 1024 * 1024
MINUTE_MS = 60 * 1000


@dataclass(frozen=True)
class SnapshotTriggers:
    """When a snapshot is due: bytes replayed since the last one, or time since it (0: never)."""

    max_bytes: int
    max_time_ms: int

    def __post_init__(self) -> None:
        if self.max_bytes < 1 or self.max_time_ms < 0:
            raise ValueError(f"max_bytes must be at least 1 and max_time_ms at least 0, not {self}")


#: SnapshotGenerator.Builder's defaults.
BUILDER_DEFAULTS = SnapshotTriggers(max_bytes=100 * MIB, max_time_ms=24 * 60 * MINUTE_MS)
#: What a broker or controller runs with: metadata.log.max.record.bytes.between.snapshots and
#: metadata.log.max.snapshot.interval.ms at their defaults, as SharedServer passes them.
SHARED_SERVER_DEFAULTS = SnapshotTriggers(max_bytes=20 * MIB, max_time_ms=60 * MINUTE_MS)


class Emitter(Protocol):
    """Writes a snapshot of an image unless it exists (SnapshotEmitter, or a test double)."""

    def maybe_emit(self, image: MetadataImage, *, losses: LossReport | None = None) -> object: ...


class SnapshotFault(KraftsimError):
    """An emit that failed, as Kafka reports it to the fault handler."""

    def __init__(self, message: str, cause: BaseException):
        self.cause = cause
        super().__init__(f"{message}: {cause}")


def raise_snapshot_fault(fault: SnapshotFault) -> None:
    raise fault


@dataclass
class GeneratorEvent:
    """One decision: a snapshot emitted (or attempted), or a due snapshot not emitted."""

    offset: int  # the image's last contained offset
    emitted: bool
    reason: str  # why a snapshot was due
    message: str  # the line Kafka would log
    result: object = None  # what the emitter returned
    losses: LossReport | None = None


class SnapshotGenerator:
    """A Publisher that emits snapshots by Kafka's triggers (see the module docstring)."""

    name = "SnapshotGenerator"

    def __init__(self, emitter: Emitter, *, clock_ms: Callable[[], int],
                 triggers: SnapshotTriggers = BUILDER_DEFAULTS,
                 fault_handler: Callable[[SnapshotFault], None] = raise_snapshot_fault,
                 disabled_reason: str | None = None, mv_change_snapshots: bool = False):
        self.emitter = emitter
        self.clock_ms = clock_ms
        self.triggers = triggers
        self.fault_handler = fault_handler
        self.disabled_reason = disabled_reason
        self.mv_change_snapshots = mv_change_snapshots
        self.events: list[GeneratorEvent] = []
        self.bytes_since_last_snapshot = 0
        self.last_snapshot_time_ms = 0
        self.reset_snapshot_counters()

    @classmethod
    def for_shared_server(cls, emitter: Emitter, **kw: Any) -> "SnapshotGenerator":
        """A generator with the triggers a real node uses (20 MiB, 1 h)."""
        return cls(emitter, triggers=SHARED_SERVER_DEFAULTS, **kw)

    # ------------------------------------------------------------------ switches

    def reset_snapshot_counters(self) -> None:
        self.bytes_since_last_snapshot = 0
        self.last_snapshot_time_ms = self.clock_ms()

    def disable(self, reason: str) -> None:
        """Stop emitting (due snapshots are logged and skipped) until `enable()`."""
        self.disabled_reason = reason

    def enable(self) -> None:
        self.disabled_reason = None

    def begin_shutdown(self) -> None:
        if self.disabled_reason is None:
            self.disabled_reason = "we are shutting down"

    @property
    def emitted(self) -> list[GeneratorEvent]:
        return [e for e in self.events if e.emitted]

    # ------------------------------------------------------------------ the publisher

    def on_metadata_update(self, delta: MetadataDelta, image: MetadataImage, manifest: Manifest) -> None:
        if manifest.kind != "LOG_DELTA":
            self.reset_snapshot_counters()  # a snapshot was loaded (or this is our first image)
            return
        assert isinstance(manifest, LogDeltaManifest)
        self.bytes_since_last_snapshot += manifest.num_bytes
        if self.mv_change_snapshots and self._mv_change_snapshots(delta, image, manifest):
            return
        t = self.triggers
        if self.bytes_since_last_snapshot >= t.max_bytes:
            self._maybe_emit(f"we have replayed at least {t.max_bytes} bytes", image)
        elif t.max_time_ms != 0 and self.clock_ms() - self.last_snapshot_time_ms >= t.max_time_ms:
            self._maybe_emit(f"we have waited at least {t.max_time_ms // MINUTE_MS} minute(s)", image)

    def _mv_change_snapshots(self, delta: MetadataDelta, image: MetadataImage, manifest: LogDeltaManifest) -> bool:
        before = delta.image
        old, new = before.metadata_version, image.metadata_version
        if delta.metadata_version_changed() is None or old is None or new is None or old == new:
            return False
        change = manifest.metadata_version_change
        self._maybe_emit(f"metadata.version is changing from {old} to {new} (the state before the change)", before)
        self._maybe_emit(f"metadata.version changed from {old} to {new}", image,
                         losses=change.losses if change is not None else None)
        return True

    def _maybe_emit(self, reason: str, image: MetadataImage, losses: LossReport | None = None) -> None:
        prov = image.provenance
        name = snapshot_name(prov.snapshot_id())
        if self.disabled_reason is not None or not prov.is_offset_batch_aligned:
            why = self.disabled_reason if self.disabled_reason is not None else "metadata image is not batch aligned"
            self.events.append(GeneratorEvent(prov.last_contained_offset, False, reason,
                                              f"Not emitting {name} despite the fact that {reason} because "
                                              f"snapshots are disabled; {why}", losses=losses))
            return
        self.reset_snapshot_counters()
        event = GeneratorEvent(prov.last_contained_offset, True, reason,
                               f"Creating new KRaft snapshot file {name} because {reason}.", losses=losses)
        self.events.append(event)
        try:
            event.result = self.emitter.maybe_emit(image, losses=losses)
        except Exception as e:  # noqa: BLE001 - Kafka hands every emit error to the fault handler
            self.fault_handler(SnapshotFault("KRaft snapshot file generation error", e))
