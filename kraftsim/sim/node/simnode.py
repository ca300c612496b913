"""A simulated Kafka node: a broker, a controller or both, running one catalog release.

A node owns what a real node owns on disk: its formatted directory (`meta.properties`,
`bootstrap.checkpoint`) and its replica of `__cluster_metadata-0` in Kafka's bytes. It
knows the cluster only by replaying that replica through its own MetadataLoader, as a
Kafka node does, and it advertises what its software supports (facts §2.6): the release's
supported feature ranges, in the order Kafka's registrations list them, and its
ApiVersions answer (KIP-35, KIP-584, KIP-1022).

Replication is byte for byte: a follower appends the leader's batches as they are
(`follow`) and hands each one to its loader as a committed batch. A batch that finalizes
a level the node's software does not support is appended (the raft layer does that) but
never applied: the node reports it and the cluster makes the node react as KIP-778 says
(a broker unregisters and stops, an inactive controller stops, an active one resigns).

A controller that starts on a log holding such a level cannot replay it: Kafka's
FeatureControlManager stops it with "Tried to apply FeatureLevelRecord ..., but this
controller only supports versions ..." (`replay_refusal`).

Advertised feature order. Kafka builds a node's supported-features map in a
java.util.HashMap (metadata.version first, then the features in declaration order) whose
table starts with 8 buckets; registration records list the features in that map's
iteration order. This is derived from the registrations in the oracle logs of Kafka 3.9,
4.0, 4.1 and 4.2, which it reproduces exactly.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Callable, Hashable, Iterable, Iterator, Mapping, TypeVar

import msgspec

from kraftsim.controller import (
    DISABLED, BrokerRegistrationRequest, ControllerRegistrationRequest, Listener, Range, SupportedFeature,
)
from kraftsim.image import MetadataImage
from kraftsim.image import RetentionSettings, SnapshotEmitter, loader_header_records
from kraftsim.image import KRAFT_VERSION
from kraftsim.image import SHARED_SERVER_DEFAULTS, SnapshotGenerator, SnapshotFault
from kraftsim.image import LoaderFault, LogDeltaManifest, Manifest, MetadataLoader, MvChangeHandling
from kraftsim.image import CommittedBatch, committed_batches, load_snapshot, starts_without_snapshot
from kraftsim.image import MetadataVersionChange
from kraftsim.image import registry_for
from kraftsim.image.delta import MetadataDelta
from kraftsim.protocol.batch import stored_crc
from kraftsim.protocol.entries import LogEntry
from kraftsim.protocol.primitives import Uuid
from kraftsim.sim.node.commit_share import NEUTRAL, BatchReads, CommitShare, Replayer, batch_reads
from kraftsim.sim.node.api_versions import ApiVersionsResponse, api_versions_response, max_api_versions_version
from kraftsim.sim.node.finalized import FinalizedFeatures, finalized_features
from kraftsim.sim.node.registration_profile import RegistrationProfile, read_profile
from kraftsim.sim.node.snapshot_share import replays_alike
from kraftsim.sim.node.voters import seed_loader
from kraftsim.sim.types import BROKER, CONTROLLER
from kraftsim.storage import METADATA_DIR_NAME, MetadataLog, decode_file_batch, read_meta_properties, read_snapshot
from kraftsim.storage import DEFAULT_SEGMENT_BYTES, assign_directory_id, java_struct_string
from kraftsim.javacompat import date_to_string as java_date, hash_map_order as java_hash_order, string_hash as java_string_hash
from kraftsim.storage.log import Validate
from kraftsim.storage.batchfile import FileBatch
from kraftsim.storage.segment import LogSegment
from kraftsim.storage.server_config import unstable_versions_enabled
from kraftsim.storage.snapshot import snapshot_path
from kraftsim.versions import FEATURE_NAME as MV_NAME, Catalog, range_text

ROLES = (BROKER, CONTROLLER)
#: Kafka's default listener ports; every simulated node is its own host, `node-<id>`.
BROKER_LISTENER = ("PLAINTEXT", 9092)
CONTROLLER_LISTENER = ("CONTROLLER", 9093)
#: Kafka's metadata.max.retention.bytes and .ms, as a node's snapshot emitter applies them.
DEFAULT_RETENTION = RetentionSettings()
#: The first table size of the HashMap a node's supported features are built in.
FEATURE_MAP_BUCKETS = 8


#: Nodes' log appends go through the writer thread (storage.background_writes); the simulator
#: waits for them at the end of each operation (Simulation._finish_op).
BACKGROUND_APPENDS = True


class NodeState(msgspec.Struct, kw_only=True):
    """What the cluster directory remembers of a node between commands."""

    id: int
    roles: tuple[str, ...]
    release: str
    incarnation: str  # this start's incarnation id (Kafka's Uuid text form)
    starts: int = 1  # how many times the process started (seeds the next incarnation id)
    running: bool = True
    last_heartbeat_ms: int | None = None
    #: The broker epoch it had before its last clean shutdown (-1: none; KIP-966's PreviousBrokerEpoch).
    previous_broker_epoch: int = -1
    #: Why the node is down, or why its last registration was refused (Kafka's text).
    note: str | None = None
    #: The node's own server configs kraftsim simulates, as server.properties texts
    #: (storage.server_config.NODE_CONFIGS); left out of saved state when none were given.
    configs: dict[str, str] | msgspec.UnsetType = msgspec.UNSET

    @property
    def config_texts(self) -> dict[str, str]:
        """`configs` as a plain mapping ({} when none were given)."""
        return {} if isinstance(self.configs, msgspec.UnsetType) else dict(self.configs)

    @property
    def is_broker(self) -> bool:
        return BROKER in self.roles

    @property
    def is_controller(self) -> bool:
        return CONTROLLER in self.roles

    @property
    def role_text(self) -> str:
        return "+".join(self.roles)


class Unsupported(msgspec.Struct, frozen=True):
    """A finalized level outside this node's supported range."""

    feature: str
    level: int
    supported: Range

    def text(self) -> str:
        lo, hi = self.supported
        if hi == 0:
            return f"finalized version {self.level} of {self.feature}, a feature its software does not support"
        return f"finalized version {self.level} of {self.feature} is outside the supported range {range_text(lo, hi)}"


class _MvChanges:
    """A publisher that keeps the KIP-778 metadata.version changes the loader carried out."""

    name = "MetadataVersionChanges"

    def __init__(self) -> None:
        self.changes: list[tuple[int, MetadataVersionChange]] = []

    def on_metadata_update(self, delta: MetadataDelta, image: MetadataImage, manifest: Manifest) -> None:
        if isinstance(manifest, LogDeltaManifest) and manifest.metadata_version_change is not None:
            self.changes.append((manifest.provenance.last_contained_offset, manifest.metadata_version_change))


def supported_ranges(release: Catalog, configs: Mapping[str, str] | msgspec.UnsetType) -> dict[str, Range]:
    """The ranges a node of `release` (the catalog at its release) with these server configs
    supports and advertises: up to the placeholder levels when its configs enable unstable
    versions the way that release reads them."""
    texts = {} if isinstance(configs, msgspec.UnsetType) else configs
    return release.supported_features(unstable_versions_enabled(release, texts))


def advertised_order(supported: Mapping[str, Range]) -> list[str]:
    """Feature names in the order Kafka's registrations list them (see the module docstring)."""
    return java_hash_order(list(supported), java_string_hash, initial=FEATURE_MAP_BUCKETS)


class SimNode:
    """A node's runtime: its state, its replica and its loader (see the module docstring).

    `base_catalog` is the catalog of every release; the node's software is
    `base_catalog.at_release(state.release)`. `clock_ms` is the cluster's virtual clock.
    `kip_778` runs the loader with KIP-778's metadata.version handling and has the node
    write KIP-778's snapshots around every metadata.version change. `kraft_version` is the
    raft layer's kraft.version as the cluster last knew it (a snapshot does not replay it).
    """

    def __init__(self, state: NodeState, directory: Path, *, base_catalog: Catalog, clock_ms: Callable[[], int],
                 kip_778: bool = False, kraft_version: int = 0, share: CommitShare | None = None):
        self.state = state
        self.directory = Path(directory)
        self.base_catalog = base_catalog
        self.catalog = base_catalog.at_release(state.release)
        self.clock_ms = clock_ms
        self.kip_778 = kip_778
        self.raft_kraft_version = kraft_version
        self.registry = registry_for(self.catalog)
        self.log: MetadataLog | None = None
        self.loader: MetadataLoader | None = None
        self.generator: SnapshotGenerator | None = None
        self.faults: list[str] = []
        #: The first batch this software cannot apply (a finalized level it does not support):
        #: the node applies nothing from there on.
        self.blocked: Unsupported | None = None
        self._mv_changes = _MvChanges()
        self._registers_controller: bool | None = None
        #: Committed batches replayed once for the cluster (None: this node replays every one).
        self.share = share
        #: What of this software its loader's replay reads (commit_share.replays_alike).
        self.replayer = Replayer(self.catalog, self.registry, kip_778)

    # ------------------------------------------------------------------ identity and software

    @property
    def id(self) -> int:
        return self.state.id

    @property
    def software(self) -> tuple[object, ...]:
        """What replays alike: loaders of equal software reach equal images from equal ones
        (the commit and snapshot shares' key)."""
        return (self.state.release, self.kip_778, id(self.base_catalog))

    @property
    def metadata_dir(self) -> Path:
        return self.directory / str(METADATA_DIR_NAME)

    @property
    def unstable_versions(self) -> bool:
        """Whether the node runs with unstable versions enabled: its release reads its own
        config name for it (policy format_unstable), so a roll can turn it on or off."""
        return unstable_versions_enabled(self.catalog, self.state.config_texts)

    @property
    def supported(self) -> dict[str, Range]:
        """What this node's software supports (facts §2.6), up to the release's placeholder
        levels when unstable versions are enabled; features with max 0 are absent."""
        return supported_ranges(self.catalog, self.state.config_texts)

    def supported_range(self, feature: str) -> Range:
        return self.supported.get(feature, DISABLED)

    def advertised_features(self) -> tuple[SupportedFeature, ...]:
        ranges = self.supported
        return tuple(SupportedFeature(n, *ranges[n]) for n in advertised_order(ranges))

    def registration_needs_refresh(self) -> bool:
        """Kafka's BrokerRegistrationTracker (3.7 on): once the metadata.version this broker
        sees carries log directories (3.7-IV2) and its own registration there has none (it
        registered below that level), it must send its registration again."""
        image = self.image
        mv = None if image is None else image.metadata_version
        if image is None or mv is None or not self.catalog.supports("directory_assignment", mv):
            return False
        reg = image.cluster.broker(self.id)
        return reg is not None and not reg.directories and str(reg.incarnation_id) == self.state.incarnation

    def directory_id(self) -> Uuid | None:
        meta = read_meta_properties(self.directory / "meta.properties").meta
        return Uuid.from_string(meta.directory_id) if meta.directory_id else None

    def registers_controller(self) -> bool:
        """Whether this software sends ControllerRegistration at all (KIP-919, Kafka 3.7 on)."""
        if self._registers_controller is None:
            self._registers_controller = self.state.is_controller and self.catalog.supports(
                "controller_registration", self.catalog.latest_production)
        return self._registers_controller

    def unsupported(self, levels: Mapping[str, int]) -> list[Unsupported]:
        """The finalized levels (level 0 = disabled is always fine) this software does not support."""
        out = []
        for name in sorted(levels):
            level = levels[name]
            rng = self.supported_range(name)
            if level != 0 and not rng[0] <= level <= rng[1]:
                out.append(Unsupported(name, level, rng))
        return out

    def replay_refusal(self, finalized: Mapping[str, int]) -> str | None:
        """Kafka's fatal replay error when this controller starts on a log whose `finalized`
        levels its software does not support (kraft.version only where the release replays
        it as a feature: 3.x); else None."""
        if not self.state.is_controller:
            return None
        levels = dict(finalized)
        if not self.catalog.keeps_kraft_version_feature():
            levels.pop(KRAFT_VERSION, None)
        # The log replays metadata.version first (the bootstrap records start with it).
        for u in sorted(self.unsupported(levels), key=lambda u: u.feature != MV_NAME):
            rt = self.registry["FeatureLevelRecord"]
            rec = java_struct_string(rt.schema.body, rt.new(name=u.feature, feature_level=u.level))
            return (f"Tried to apply FeatureLevelRecord {rec}, but this controller only supports versions "
                    f"{range_text(*u.supported)}")
        return None

    # ------------------------------------------------------------------ requests it sends

    def broker_registration(self, cluster_id: str, previous_broker_epoch: int) -> BrokerRegistrationRequest:
        name, port = BROKER_LISTENER
        dirs = (self.directory_id(),) if self.catalog.supports("directory_assignment", self.catalog.latest_production) else ()
        request = BrokerRegistrationRequest(
            broker_id=self.id, cluster_id=cluster_id, incarnation_id=Uuid.from_string(self.state.incarnation),
            listeners=(Listener(name, f"node-{self.id}", port),), features=self.advertised_features(),
            log_dirs=tuple(d for d in dirs if d is not None), previous_broker_epoch=previous_broker_epoch)
        return _with_profile(request, read_profile(self.directory))

    def controller_registration(self) -> ControllerRegistrationRequest:
        name, port = CONTROLLER_LISTENER
        request = ControllerRegistrationRequest(
            controller_id=self.id, incarnation_id=Uuid.from_string(self.state.incarnation),
            listeners=(Listener(name, f"node-{self.id}", port),), features=self.advertised_features())
        return _with_profile(request, read_profile(self.directory))

    # ------------------------------------------------------------------ metadata it knows

    @property
    def image(self) -> MetadataImage | None:
        return None if self.loader is None else self.loader.image

    @property
    def published(self) -> bool:
        """Whether its loader has published an image to its publishers: it caught up to the
        high watermark once (a new process has a new loader: since the process started)."""
        return self.loader is not None and self.loader.caught_up

    @property
    def kraft_version(self) -> int:
        seen = None if self.loader is None else self.loader.kraft_version
        return self.raft_kraft_version if seen is None else seen

    @property
    def applied_offset(self) -> int:
        """The last offset its loader replayed (-1 before any)."""
        return -1 if self.loader is None else self.loader.last_offset

    @property
    def log_end_offset(self) -> int:
        if self.log is not None:
            return int(self.log.log_end_offset)
        with MetadataLog.open(self.metadata_dir, read_only=True) as log:
            return int(log.log_end_offset)

    def finalized(self) -> FinalizedFeatures | None:
        return None if self.image is None else finalized_features(self.image, self.kraft_version)

    def api_versions(self, request_version: int, listener: str | None = None) -> ApiVersionsResponse:
        """This node's ApiVersions answer; `listener` is "broker" or "controller" (default: its first role)."""
        role = listener or self.state.roles[0]
        return api_versions_response(self.state.release, role, request_version,
                                     self.image if self.state.running else None,
                                     catalog=self.base_catalog, unstable=self.unstable_versions,
                                     kraft_version=self.kraft_version)

    def max_api_versions_version(self, listener: str | None = None) -> int:
        return max_api_versions_version(self.state.release, listener or self.state.roles[0])

    def mv_changes(self) -> list[tuple[int, MetadataVersionChange]]:
        """KIP-778 metadata.version changes this node's loader carried out since it started."""
        return list(self._mv_changes.changes)

    def snapshot_events(self) -> list[Any]:  # the generator's GeneratorEvents (not exported by kraftsim.image)
        return [] if self.generator is None else list(self.generator.events)

    # ------------------------------------------------------------------ running

    def open(self, *, apply_log: bool = True, high_watermark: Callable[[], int] | None = None,
             retention: RetentionSettings | None = DEFAULT_RETENTION, segment_bytes: int | None = None,
             validate: Validate = "last", scanned: MetadataLog | None = None, read_only: bool = False) -> None:
        """Open the replica and rebuild the loader from disk (newest snapshot, then the log),
        as a node does at start-up; publishers are installed once it has caught up.

        Without `apply_log` only the snapshot is loaded: the raft layer hands the loader
        the log as it learns the high watermark (`apply_committed`). `high_watermark` and
        `retention` go to the node's snapshot emitter; `validate` to MetadataLog.open.
        `scanned`: this node's log, just opened read-only with nothing to recover, taken
        as the replica (MetadataLog.to_writable) instead of opening the files again.
        `read_only`: only look (a status): the files are read as they are, a torn tail is
        left out in memory, never cut on disk."""
        seg_bytes = DEFAULT_SEGMENT_BYTES if segment_bytes is None else segment_bytes
        if (not read_only and self.catalog.policy("meta_properties_directory_id") == "format"
                and (self.directory / "meta.properties").is_file()):
            # (a directory 3.3-3.6 formatted has no directory.id: a 3.7+ node gives it one as it starts)
            assign_directory_id(self.directory, random.Random(f"kraftsim:directory-id:{self.state.incarnation}"),
                                date=java_date(self.clock_ms() // 1000), fsync=False)
        if read_only:
            self.log = MetadataLog.open(self.metadata_dir, read_only=True, validate=validate, segment_bytes=seg_bytes)
        elif scanned is not None and scanned.to_writable(fsync=False, segment_bytes=seg_bytes):
            self.log = scanned
        else:
            if scanned is not None:
                scanned.close()
            self.log = MetadataLog.open(self.metadata_dir, fsync=False, validate=validate, segment_bytes=seg_bytes)
        if not read_only:
            self.log.background_appends = BACKGROUND_APPENDS
        self.loader = MetadataLoader(self.catalog, fault_handler=self._on_fault, clock_ns=lambda: 0,
                                     initial_delta_on_use=True,
                                     mv_change=MvChangeHandling.KIP_778 if self.kip_778 else MvChangeHandling.KAFKA)
        log = self.log
        snaps = [s for s in log.snapshot_ids() if s.end_offset >= log.log_start_offset and s.end_offset > 0]
        if starts_without_snapshot(log, self.catalog):
            snaps = []  # (3.3-3.5 replay a log that still starts at offset 0 whole)
        self.loader.set_high_watermark(log.log_end_offset)
        start = log.log_start_offset
        writes_as = (self.state.release, id(self.base_catalog))  # (what its snapshot emitter vouches for)
        if snaps:
            sid = snaps[-1]
            if self.share is not None:  # (kraftsim.sim.node.snapshot_share: one load per file's content)
                self.share.snapshots.load(self.loader, snapshot_path(log.directory, sid), sid, self.registry,
                                          self.software, seed_loader,
                                          reads_like=self._reads_like)
            else:
                snap = read_snapshot(snapshot_path(log.directory, sid), self.registry)
                load_snapshot(self.loader, snap, end_offset=sid.end_offset, epoch=sid.epoch)
                seed_loader(self.loader, snap.header_entries)  # kraft.version and voters (sim.voters)
            start = sid.end_offset
        if apply_log:
            self._apply_from(start)
        emitter = SnapshotEmitter(log, catalog=self.catalog, clock_ms=self.clock_ms, registry=self.registry,
                                  header_records=loader_header_records(self.loader, self.registry), fsync=False,
                                  high_watermark=high_watermark, retention=retention,
                                  copies=self.share.snapshots.writes if self.share is not None else None,
                                  software=writes_as)
        self.generator = SnapshotGenerator(emitter, clock_ms=self.clock_ms, triggers=SHARED_SERVER_DEFAULTS,
                                           fault_handler=self._on_snapshot_fault, mv_change_snapshots=self.kip_778)
        self.loader.install_publishers(self.generator, self._mv_changes)

    def _reads_like(self, software: Hashable, image: MetadataImage) -> bool:
        """Whether the snapshot of `image` this node's emitter or another's wrote under
        `software` (an emitter's key: release, base catalog) loads, under this node's
        software, to `image` (kraftsim.sim.node.snapshot_share)."""
        if not isinstance(software, tuple) or len(software) != 2 or software[1] != id(self.base_catalog):
            return False
        writer = self.catalog if software[0] == self.state.release else self.base_catalog.at_release(software[0])
        return replays_alike(writer, self.catalog, image)

    def close(self) -> None:
        if self.log is not None:
            self.log.close()
            self.log = None

    def retire(self) -> None:
        """The process ended: close the replica and let go of the loader and its publishers.

        Why: they refer back to each other (the loader holds this node's fault handlers and
        the snapshot generator, whose emitter reads the loader's KRaft state), and such
        cycles are freed only by a full run of the cycle collector, which comes seldom while
        a cluster's state is alive (kraftsim.gcpause). At a million partitions a stopped
        node's image and pending delta are hundreds of MB that would stay until then."""
        self.close()
        if self.loader is not None:
            for name in self.loader.publishers:
                self.loader.remove_publisher(name)
        self.loader = self.generator = None

    def _on_fault(self, fault: LoaderFault) -> None:
        self.faults.append(str(fault))

    def _on_snapshot_fault(self, fault: SnapshotFault) -> None:
        self.faults.append(str(fault))

    def follow(self, leader_log: MetadataLog) -> Unsupported | None:
        """Copy the leader's batches this replica lacks, byte for byte, and apply them in order.

        Stops at the first batch that finalizes a level this software does not support: that
        batch is in the replica but not applied, the node is `blocked` from then on, and the
        finding is returned (once).
        """
        assert self.log is not None and self.loader is not None
        if self.log is not leader_log:
            for fb in leader_log.batches(self.log.log_end_offset):
                self.log.append(fb.batch.raw)
        return self.apply_new()

    def apply_new(self) -> Unsupported | None:
        """Apply the replica's batches beyond what the loader has replayed."""
        assert self.log is not None and self.loader is not None
        return self._apply_from(self.loader.last_offset + 1)

    def apply_committed(self, high_watermark: int) -> Unsupported | None:
        """Apply the replica's batches below the raft high watermark that the loader has not
        replayed yet (raft hands the loader whole committed batches only)."""
        log, loader = self.log, self.loader
        assert log is not None and loader is not None
        start, end = loader.last_offset + 1, log.log_end_offset
        if high_watermark < end:
            end = high_watermark
        if self.blocked is not None or start >= end:
            return None  # (_apply_from's first test, asked here: most calls have nothing to apply)
        if self.share is None:
            return self._apply_from(start, end)
        loader.set_high_watermark(end)  # (_apply_from's path with a share, inlined)
        return self._apply_shared(start, end)

    def _apply_from(self, start: int, upto: int | None = None) -> Unsupported | None:
        """Hand the loader the replica's records from offset `start` up to `upto` (default:
        the log end), batch by batch, up to the first batch this software cannot apply
        (the node is `blocked` from then on)."""
        assert self.log is not None and self.loader is not None
        end = self.log.log_end_offset if upto is None else upto
        if self.blocked is not None or start >= end:
            return None
        self.loader.set_high_watermark(end)
        if self.share is not None:
            return self._apply_shared(start, end)
        for cb, whole in committed_batches(self.log.batches(start), self.registry, start, end):
            if not whole:
                break  # the high watermark inside a batch: it is not committed as a whole yet
            found = self._unsupported_in(cb.entries)
            if found is not None:
                self.blocked = found
                return found
            self.loader.handle_commit([cb])
        return None

    def _apply_shared(self, start: int, end: int) -> Unsupported | None:
        """`_apply_from` with whole batches replayed once across the cluster (kraftsim.sim.node.commit_share).

        The batches come from the active segment when it holds `start` (the common case,
        walked here without a generator): each batch it keeps a checked parse of, and each
        other one that `_adopt_unparsed` does not adopt, read and checked as
        `LogSegment.read_batch` does (its errors unchanged); else from `log.batches`."""
        loader, share = self.loader, self.share
        assert self.log is not None and loader is not None and share is not None
        software = self.software
        done = share.kept()  # (CommitShare.find, inlined: every node passes here for every commit)
        adopt = loader.adopt
        log = self.log
        seg = log.active_segment
        others: Iterator[FileBatch] | None = None
        if seg is not None and start >= seg.base_offset and start >= log.log_start_offset:
            parsed, entries = seg.parsed_batches(), seg.entries
            j, n = seg.find(start), len(entries)
        else:
            others = iter(log.batches(start))
        while True:
            if others is None:
                if j >= n:
                    break
                fb = parsed.get(j)
                if fb is None:
                    assert seg is not None  # (others is None only when the active segment was taken)
                    j = self._adopt_unparsed(seg, j, start, end, software)
                    if j >= n:
                        break
                    fb = parsed.get(j) or seg.read_batch(j)  # (where the adoptions ended)
                j += 1
            else:
                fb = next(others, None)
                if fb is None:
                    break
            b = fb.batch
            base = b.base_offset
            last = base + b.last_offset_delta
            if base >= end or last >= end:
                break  # the high watermark inside a batch: it is not committed as a whole yet
            if last < start:
                continue
            key = (base, last, b.partition_leader_epoch, b.crc)
            whole = base >= start and loader.idle
            if whole:
                hit = done.get((software, key))
                if (hit is not None and hit[0] is loader.image
                        and hit[1] == (loader.kraft_version, loader.voters)):
                    # (a node of this release applied it: nothing in it is unsupported here)
                    adopt(hit[2], hit[3], hit[4], kraft_version=hit[5], voters=hit[6])
                    share.adopted += 1
                    continue
                hit = self._across(key)
                if hit is not None:
                    adopt(hit[2], hit[3], hit[4], kraft_version=hit[5], voters=hit[6])
                    share.adopted += 1
                    share.adopted_across += 1
                    continue
            entries_in = decode_file_batch(fb, self.registry)
            if start > fb.batch.base_offset:  # (else all of them: the decode's own fresh list)
                entries_in = [e for e in entries_in if e.offset >= start]
            reads = batch_reads(entries_in)
            found = self._refused(reads)
            if found is not None:
                self.blocked = found
                return found
            before, raft_before, publishes, faults = loader.image, (loader.kraft_version, loader.voters), \
                loader.publishes, len(loader.faults)
            loader.handle_commit([CommittedBatch(b.base_offset, b.last_offset, b.partition_leader_epoch,
                                                 b.max_timestamp, b.size, entries_in)])
            share.replayed += 1
            if whole and loader.publishes == publishes + 1 and loader.idle and len(loader.faults) == faults \
                    and not share.rebase(software, key, loader):  # (an equal image another node got: take it)
                share.keep(software, key, before, raft_before, loader, b.raw, reads=reads, replayer=self.replayer)
        return None

    def _across(self, key: object) -> tuple[Any, ...] | None:
        """A commit of the batch `key` another software replayed on this idle loader's image
        that replays here alike (CommitShare.across), and finalizes no level this node
        refuses; None if none."""
        loader, share = self.loader, self.share
        assert loader is not None and share is not None
        hit = share.across(self.software, key, loader.image, (loader.kraft_version, loader.voters), self.replayer)
        if hit is None or (hit[8] is not NEUTRAL and self._refused(hit[8]) is not None):
            return None
        return hit

    def _adopt_unparsed(self, seg: LogSegment, j: int, start: int, end: int, software: tuple[object, ...]) -> int:
        """Adopt the active segment's batches from `j` on that it keeps no parse of (a node that
        started again applies its whole log) by their bytes, for `_apply_shared`; the index
        of the first batch not adopted.

        The batches (up to the high watermark `end`) are read as bytes with one read: a
        batch whose bytes equal, byte for byte, the checked bytes of a batch another node
        of this software applied on this very image (the same key, the same loader state)
        is adopted without parsing them. Equal bytes parse alike and pass the same CRC
        check, so this is what parsing and adopting would do. The first batch that is
        parsed in memory, not whole and committed, or not matched ends the run (it is read
        and checked as `LogSegment.read_batch` does, its errors unchanged)."""
        loader, share = self.loader, self.share
        assert loader is not None and share is not None
        entries, parsed, done, adopt = seg.entries, seg.parsed_batches(), share.kept(), loader.adopt
        stop = seg.find(end)  # (the first batch that ends at or past the high watermark)
        if j >= stop or entries[j].base_offset < start:
            return j
        raws = seg.read_raws(j, stop)
        if not raws:
            return j  # (the file is shorter than its index: read_batch names the batch)
        k = j
        # A commit adopted while the loader is still catching up publishes nothing, reads
        # nothing an adoption before it set, and leaves nothing the next adoption does not
        # set again but a count: it is held back (`pending`), and adopted only when the next
        # one is not such a commit or the run ends (before that, the image and raft state the
        # loader would have are the held-back commit's).
        pending = None
        image, raft = loader.image, (loader.kraft_version, loader.voters)
        try:
            while k < stop and k not in parsed:
                e, raw = entries[k], raws[k - j]
                if not loader.idle:  # (adoptions leave an idle loader idle)
                    break
                # (the key: base offset, last offset, epoch (the index entry's fields 0, 1, 4), the CRC)
                hit = done.get((software, (e[0], e[1], e[4], stored_crc(raw))))
                if hit is None or hit[0] is not image or hit[1] != raft or hit[7] != raw:
                    break
                quiet = loader.publishes_nothing_at(hit[4].provenance.last_contained_offset)
                if pending is not None:
                    if quiet:
                        loader.adopt_superseded()
                    else:
                        adopt(pending[2], pending[3], pending[4], kraft_version=pending[5], voters=pending[6])
                    pending = None
                if quiet:
                    pending = hit
                else:
                    adopt(hit[2], hit[3], hit[4], kraft_version=hit[5], voters=hit[6])
                image, raft = hit[3], (hit[5], hit[6])
                k += 1
        finally:
            if pending is not None:
                adopt(pending[2], pending[3], pending[4], kraft_version=pending[5], voters=pending[6])
            share.adopted += k - j  # (counted once for the run)
        return k

    def _unsupported_in(self, entries: Iterable[LogEntry]) -> Unsupported | None:
        return self._refused(batch_reads(entries))

    def _refused(self, reads: BatchReads) -> Unsupported | None:
        """The first level a batch that reads `reads` finalizes that this software does not support."""
        for feature, level in reads.levels():
            found = self.unsupported({feature: level})
            if found:
                return found[0]
        return None


R = TypeVar("R", BrokerRegistrationRequest, ControllerRegistrationRequest)


def _with_profile(request: R, profile: RegistrationProfile | None) -> R:
    """An imported node's registration keeps its real counterpart's listeners, rack and log
    directories (kraftsim.sim.node.registration_profile); other nodes' requests are unchanged."""
    if profile is None:
        return request
    changes: dict[str, object] = {}
    if isinstance(request, BrokerRegistrationRequest):
        if profile.broker_listeners is not None:
            changes["listeners"] = tuple(Listener(x.name, x.host, x.port, x.security_protocol)
                                         for x in profile.broker_listeners)
        changes["rack"] = profile.rack
        if profile.log_dirs is not None and request.log_dirs:
            changes["log_dirs"] = tuple(Uuid.from_string(d) for d in profile.log_dirs)
    elif profile.controller_listeners is not None:
        changes["listeners"] = tuple(Listener(x.name, x.host, x.port, x.security_protocol)
                                     for x in profile.controller_listeners)
    return msgspec.structs.replace(request, **changes)


def node_directory(cluster_dir: Path, node_id: int) -> Path:
    """Where a node's formatted log directory lives inside the cluster directory."""
    return Path(cluster_dir) / f"node-{node_id}"


__all__ = [
    "BROKER", "CONTROLLER", "ROLES", "NodeState", "SimNode", "Unsupported", "advertised_order",
    "node_directory",
]
