"""The main job on its default settings: one pass through the whole chain kraftsim has.

It formats a node's storage as Kafka's storage tool would, writes the state of a cluster
of a chosen shape into that node's metadata log directory as a Kafka snapshot, checks the
files byte for byte, replays the snapshot into an image, and then asks, for every lower
metadata.version, "could this cluster downgrade there, and what exactly would be lost?" —
writing one lossless and one lossy downgrade snapshot to show both. The run is
deterministic: the same settings and seed give the same files and the same report.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from kraftsim.image import LossReport, diff_images, image_digest, write_image
from kraftsim.image.delta import image_from_records
from kraftsim.image.image import MetadataImage
from kraftsim.image.synthetic import ClusterShape, cluster_image
from kraftsim.protocol.registry import default_registry
from kraftsim.protocol.scan import verify_bytes
from kraftsim.storage import SnapshotId, read_snapshot, write_snapshot
from kraftsim.storage.formatter import FormatOptions, format_directories
from kraftsim.versions import Catalog, MetadataVersion

FIXED_TIME_MS = 1_700_000_000_000  # every timestamp the demo writes, so its bytes are reproducible
CLUSTER_ID = "kraftsim-demo-cluster0"


@dataclass
class DowngradeRow:
    target: MetadataVersion
    lossy: bool
    losses: LossReport
    verified: str = ""  # what was checked by writing and reading back, when done


@dataclass
class DemoResult:
    node_dir: Path
    snapshot: Path
    metadata_version: MetadataVersion
    image: MetadataImage
    rows: list[DowngradeRow] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)


def run_demo(out: Path, catalog: Catalog, shape: ClusterShape, *, seed: int = 0,
             say: Callable[[str], None] = print) -> DemoResult:
    """Run the demonstration into `out` (which must not hold an earlier run's node)."""
    mv = catalog.latest_production
    node_dir = out / "node-1"
    say(f"1. Formatting {node_dir} as kafka-storage {catalog.release.name} would (metadata.version {mv}):")
    format_directories(catalog, FormatOptions(node_id=1, cluster_id=CLUSTER_ID, directories=[str(node_dir)],
                                              controller_listener_name="CONTROLLER",
                                              metadata_log_directory=str(node_dir)),
                       clock=lambda: FIXED_TIME_MS, rng=random.Random(seed), out=lambda line: say("   " + line))

    say(f"2. Building a cluster of {shape.brokers} brokers, {shape.topics} topics x {shape.partitions} partitions "
        f"(RF {shape.replication_factor}), {shape.scram_users} SCRAM users, {shape.delegation_tokens} delegation token(s)")
    image = cluster_image(shape, catalog, mv, seed=seed)
    records = write_image(image, mv, catalog)
    metadata_dir = node_dir / "__cluster_metadata-0"  # created by the node at start-up, not by the format
    metadata_dir.mkdir(exist_ok=True)
    snapshot = write_snapshot(metadata_dir, SnapshotId(*image.provenance.snapshot_id()), records,
                              last_contained_log_timestamp=FIXED_TIME_MS, time_ms=FIXED_TIME_MS)
    say(f"   wrote {len(records)} records as the Kafka snapshot {snapshot}")

    say("3. Checking the files: every batch's CRC, every record decoded, every batch re-encoded byte for byte")
    for path in (node_dir / "bootstrap.checkpoint", snapshot):
        report = verify_bytes(path.read_bytes(), default_registry())
        say(f"   {path.name}: {'OK' if report.ok else 'PROBLEMS'}: {report.batches} batches, {report.records} records")
        if not report.ok:
            raise RuntimeError(f"{path}: " + "; ".join(p.describe() for p in report.problems))
    loaded = image_from_records(read_snapshot(snapshot).data_entries(), catalog=catalog, snapshot=True)
    same = image_digest(loaded) == image_digest(image)
    say(f"   replaying the snapshot gives the image it was written from: {'yes' if same else 'NO'}"
        f" (digest {image_digest(loaded)[:16]})")
    if not same:
        raise RuntimeError("the snapshot does not replay to the image it was written from")

    result = DemoResult(node_dir, snapshot, mv, image)
    say(f"4. What if the cluster downgraded metadata.version from {mv}?")
    lossless_shown = lossy_shown = False
    for target in reversed([m for m in catalog.metadata_versions if m.level < mv.level]):
        losses = LossReport()
        downgraded = write_image(image, target, catalog, loss_handler=losses)
        row = DowngradeRow(target, catalog.is_lossy(mv, target), losses)
        if (not row.lossy and not lossless_shown) or (row.lossy and row.losses and not lossy_shown):
            where = out / "what-if" / f"to-{target.version}"
            where.mkdir(parents=True)
            path = write_snapshot(where, SnapshotId(*image.provenance.snapshot_id()),
                                  downgraded, last_contained_log_timestamp=FIXED_TIME_MS, time_ms=FIXED_TIME_MS)
            reread = image_from_records(read_snapshot(path).data_entries(), catalog=catalog, snapshot=True)
            changes = [c.text for c in diff_images(image, reread)]
            shown = "; ".join(changes[:2]) + (f"; ... ({len(changes)} in all)" if len(changes) > 2 else "")
            row.verified = f"wrote {path} and read it back; differences from the original: {shown}"
            result.written.append(path)
            lossless_shown |= not row.lossy
            lossy_shown |= row.lossy
        result.rows.append(row)
    for row in result.rows:
        if not row.lossy:
            verdict = "lossless: a safe downgrade keeps everything"
        elif not row.losses:
            verdict = "lossy by the metadata.version flags, so Kafka refuses it; this cluster's data would lose nothing"
        else:
            kinds = ", ".join(f"{kind} x{len(items)}" for kind, items in row.losses.by_kind().items())
            verdict = f"LOSSY, refused by Kafka: would drop {len(row.losses)} item(s): {kinds}"
        say(f"   -> {row.target.version:9} {verdict}")
        if row.verified:
            say(f"      {row.verified}")
    floor = catalog.safe_downgrade_floor(mv)
    say(f"5. Summary: from {mv} a safe downgrade can reach {floor} at the lowest; "
        f"snapshots written under {out}")
    return result

