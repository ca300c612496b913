"""The model-level properties a ClusterStateMachine checks, beyond the simulator's own
invariants. Each check reads the cluster through the public API only and returns None
when the property holds, else one line saying what broke.

- `unsupported_finalized`: every finalized level is one that every registered node
  advertises (the registrations in the active controller's image) and that every running,
  unfenced node's software supports (its release in the catalog). Level 0 means "disabled" and is
  always fine.
- `lossless_downgrade_loss`: after a downgrade the catalog calls lossless, the image
  written at the new metadata.version as Kafka's bytes and read back equals the image in
  memory (the metadata.version aside). Partition leaders and registrations move while
  the change replicates, so the comparison is with the image after it. A downgrade the catalog calls lossy is exempt:
  what the lower version cannot express is exactly what it drops.
- `applied_uncommitted`: no node has applied a record beyond the offsets a majority of
  the voters hold in their logs (a record is committed once a majority has it).
- `refusal_changed`: a refused operation left the finalized levels and the topics alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from kraftsim.image import BrokerRegistration, Change, ControllerRegistration, FeatureRange, LossReport, MetadataImage, diff_images, image_from_records, registry_for, write_image
from kraftsim.protocol.entries import Payload
from kraftsim.protocol.framing import decode_metadata_record, encode_metadata_record
from kraftsim.sim import Simulation
from kraftsim.storage import MetadataLog
from kraftsim.versions import FEATURE_NAME as MV_NAME, Catalog

#: Names of the model-level properties (the failing one is named in a repro file).
FINALIZED_SUPPORTED = "FinalizedLevelSupported"
LOSSLESS_DOWNGRADE = "LosslessDowngradeLosesNothing"
APPLIED_COMMITTED = "NodesApplyOnlyCommitted"
REFUSAL_AS_KAFKA = "RefusedAsKafkaAndUnchanged"
MODEL_PROPERTIES = (FINALIZED_SUPPORTED, LOSSLESS_DOWNGRADE, APPLIED_COMMITTED, REFUSAL_AS_KAFKA)


def _ranges(features: Iterable[FeatureRange]) -> dict[str, tuple[int, int]]:
    return {f.name: (f.min_version, f.max_version) for f in features}


def _outside(level: int, rng: tuple[int, int] | None) -> bool:
    return level != 0 and (rng is None or not rng[0] <= level <= rng[1])


def _applied_levels(image: MetadataImage | None) -> dict[str, int]:
    """The finalized levels a node's own image holds (metadata.version included)."""
    if image is None:
        return {}
    return {name: level for name, level in image.features.all_levels().items() if level}


def unsupported_finalized(sim: Simulation, catalog: Catalog) -> str | None:
    """None when every finalized level is within every registered node's advertised range
    and every running node's software range; else the first node and level that is not.
    A running node is held to the levels it has applied itself: one that has not yet fetched
    the record of a newer level (added while cut off from the quorum, or lagging) serves
    nothing at it, and in Kafka, as here, a node whose software cannot apply that record
    stops when it fetches it."""
    finalized = sim.finalized()
    leader = sim.leader()
    image = sim.image(leader) if leader is not None else None
    if image is not None:
        regs: list[tuple[str, BrokerRegistration | ControllerRegistration]] = [
            ("broker", b) for b in image.cluster.sorted_brokers()]
        regs += [("controller", c) for c in image.cluster.sorted_controllers()]
        for role, reg in regs:
            ranges = _ranges(reg.supported_features)
            for name, level in sorted(finalized.items()):
                if _outside(level, ranges.get(name)):
                    rng = ranges.get(name)
                    return (f"{name} is finalized at {level}, but registered {role} {reg.id} advertises "
                            f"{'nothing' if rng is None else f'{rng[0]}-{rng[1]}'}")
    if image is None:
        return None  # without an active controller no node is serving the finalized levels
    in_records = _applied_levels(image)  # finalized by FeatureLevelRecords (kraft.version is not)
    for node in sim.nodes():
        if node.state != "running" or node.fenced:
            continue  # a fenced broker serves nothing: Kafka keeps it out until it registers
        supported = catalog.at_release(node.release).supported_features()
        own = _applied_levels(sim.image(node.id))
        for name, level in sorted(finalized.items()):
            if name in in_records:
                level = own.get(name, 0)  # what this node applied; 0: nothing yet
            if _outside(level, supported.get(name)):
                return f"{name} is finalized at {level}, but node {node.id} runs Kafka {node.release}, which does not support it"
    return None


@dataclass
class RoundTrip:
    """An image written at a metadata.version as record bytes and read back."""

    image: MetadataImage | None
    losses: LossReport
    error: str | None = None


def write_and_reread(image: MetadataImage, level: int, catalog: Catalog) -> RoundTrip:
    """`image` as the records of a snapshot at `level`, encoded to Kafka's bytes, decoded
    and replayed on an empty image (what a node loading that snapshot would hold)."""
    registry = registry_for(catalog)
    losses = LossReport()
    try:
        payloads = write_image(image, level, catalog, loss_handler=losses, registry=registry)
        reread = []
        for p in payloads:
            decoded = decode_metadata_record(registry, encode_metadata_record(p.record_type, p.message, p.version))
            reread.append(Payload(decoded.record_type, decoded.version, decoded.message))
        return RoundTrip(image_from_records(reread, catalog=catalog, snapshot=True), losses)
    except Exception as e:  # an encoder refusing a value the version cannot hold is a loss too
        return RoundTrip(None, losses, f"{type(e).__name__}: {e}")


def lossless_downgrade_loss(before: MetadataImage, after: MetadataImage, target: int,
                            catalog: Catalog) -> str | None:
    """For a downgrade the catalog calls lossless: None when `after`, written at `target` and
    read back, still holds everything `before` held (metadata.version aside)."""
    current = before.metadata_version
    if current is None or target >= current or catalog.is_lossy(current, target):
        return None
    trip = write_and_reread(after, target, catalog)
    where = f"downgrade {catalog.metadata_version(current).version} -> {catalog.metadata_version(target).version}"
    if trip.error is not None:
        return f"{where} is called lossless, but writing the image at the target fails: {trip.error}"
    if trip.losses:
        return f"{where} is called lossless, but writing the image drops {trip.losses.items[0].entity} ({trip.losses.items[0].summary})"
    assert trip.image is not None
    written = [c for c in diff_images(after, trip.image) if not _is_mv(c)]
    if written:
        return f"{where} is called lossless, but the image written and read back differs: {written[0].text}"
    return None


def _is_mv(change: Change) -> bool:
    return change.component == "features" and MV_NAME in change.entity


def log_end_on_disk(sim: Simulation, node: int) -> int:
    """One past the last offset in `node`'s metadata log as it is on disk."""
    log = MetadataLog.open(sim.log_dir(node), read_only=True, validate="last")
    try:
        return int(log.log_end_offset)
    finally:
        log.close()


def committed_end(sim: Simulation, voters: Iterable[int]) -> int:
    """One past the highest offset a majority of `voters` hold in their logs."""
    ends = sorted((log_end_on_disk(sim, v) for v in voters), reverse=True)
    return ends[len(ends) // 2] if ends else 0


def applied_uncommitted(sim: Simulation, voters: Iterable[int], committed_before: int = 0) -> tuple[str | None, int]:
    """(None, end) when no running node's image goes beyond `end`: one past the highest offset
    ever committed (held by a majority of `voters` now, or `committed_before`, the end seen
    earlier: a record once committed stays committed even if a voter's disk is wiped)."""
    voters = list(voters)
    end = max(committed_before, committed_end(sim, voters))
    for node in sim.nodes():
        image = sim.image(node.id) if node.state == "running" else None
        if image is None:
            continue
        applied = image.provenance.last_contained_offset
        if applied >= end:
            return (f"node {node.id} has applied up to offset {applied}, but the voters {voters} "
                    f"have committed offsets below {end} only"), end
    return None, end


@dataclass(frozen=True)
class Observed:
    """What a refused operation must leave unchanged."""

    finalized: tuple[tuple[str, int], ...]
    topics: tuple[str, ...]
    known: bool  # False without an active controller: nothing to compare


def observe(sim: Simulation) -> Observed:
    leader = sim.leader()
    image = sim.image(leader) if leader is not None else None
    if image is None:
        return Observed((), (), False)
    return Observed(tuple(sorted(sim.finalized().items())), tuple(t.name for t in image.topics.sorted_topics()), True)


def refusal_changed(before: Observed, after: Observed) -> str | None:
    if not (before.known and after.known):
        return None
    if before.finalized != after.finalized:
        return f"the finalized levels changed from {dict(before.finalized)} to {dict(after.finalized)}"
    if before.topics != after.topics:
        return f"the topics changed from {list(before.topics)} to {list(after.topics)}"
    return None
