"""Images of the real Kafka logs in ../shared/oracle, for the simulated-node tests.

Independently of the MetadataLoader, an image is built as a node builds it at start-up: the newest
snapshot, then the log after it, replayed into one delta (control records and transaction
markers left out), with the provenance's last contained offset at the end of what the
directory holds. The finalized levels are also computed here straight from the
FeatureLevelRecords, independently of the image code, to check against.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.image import MetadataDelta, MetadataImage, MetadataProvenance
from kraftsim.image.delta import TRANSACTION_RECORDS
from kraftsim.storage import MetadataLogView
from tests.conftest import ORACLE

needs_oracle = pytest.mark.skipif(not ORACLE.is_dir(), reason="../shared/oracle is not present")


def oracle_metadata_dirs() -> list[Path]:
    return sorted(ORACLE.rglob("__cluster_metadata-0")) if ORACLE.is_dir() else []


def rel(p: Path) -> str:
    return str(p.relative_to(ORACLE))


def image_of(directory: Path, stop_after: int | None = None) -> tuple[MetadataImage, dict[str, int], int]:
    """(image, finalized levels read from the records, last contained offset) of a directory.

    The base image is empty, so the snapshot's records need no finish_snapshot. With
    `stop_after`, only that many entries are replayed (a node that is behind) and the last
    offset is that of the last entry replayed: use it on directories without a snapshot,
    whose entries carry log offsets.
    """
    with MetadataLogView(directory) as view:
        delta = MetadataDelta()
        levels: dict[str, int] = {}
        last = None
        count = 0
        for entry in view.entries():
            if stop_after is not None and count >= stop_after:
                break
            count += 1
            last = entry
            if entry.control or entry.record_type.name in TRANSACTION_RECORDS:
                continue
            delta.replay(entry)
            if entry.record_type.name == "FeatureLevelRecord":
                levels[entry.message.name] = entry.message.feature_level
        last_offset = view.end_offset - 1 if stop_after is None else last.offset
        epoch = last.epoch if last is not None else -1
    image = delta.apply(MetadataProvenance(last_offset, epoch, -1, True))
    return image, {n: lvl for n, lvl in levels.items() if lvl != 0}, last_offset
