"""The corpus job's work for one file: what `kraftsim log verify` checks, plus counts and bytes.

One scan with re-encoding per file (exactly `verify_bytes`), collecting on the way the
records and encoded bytes per record type, the PartitionRecords, and the levels that
FeatureLevelRecords set. Bad files do not stop the job: their problems are the row's.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Iterable

from kraftsim.errors import KraftsimError
from kraftsim.pipeline.defaults import catalog_of
from kraftsim.pipeline.discover import find_files
from kraftsim.pipeline.records import encoded_sizes
from kraftsim.protocol.scan import ScanReport, scan_file
from kraftsim.regular_file import opened_file
from kraftsim.versions import Catalog

CORPUS = "corpus_files"


def mv_name(catalog: Catalog, level: int | None) -> str | None:
    """The version string of a metadata.version level, None when the catalog has no such level."""
    if level is None:
        return None
    for mv in catalog.all_metadata_versions:
        if mv.level == level:
            return mv.version
    return None


def corpus_inputs(paths: Iterable[str | Path]) -> list[dict[str, object]]:
    """One input row per metadata file below `paths`."""
    return [f.as_row() for f in find_files(paths)]


def corpus_row(item: dict[str, Any], *, catalog: str | None = None, release: str | None = None) -> list[dict[str, Any]]:
    """The corpus row of one file (`item` as from corpus_inputs)."""
    cat = catalog_of(catalog, release)
    registry = cat.record_registry()
    report = ScanReport()
    type_bytes: Counter[str] = Counter()
    features: dict[str, int] = {}
    partitions = 0
    problems: list[str] = []
    try:
        with opened_file(Path(item["path"])) as f:
            for scanned in scan_file(f, registry, report, reencode=True):
                sizes = encoded_sizes(scanned.batch)
                for e in scanned.entries:
                    type_bytes[e.type_name] += sizes[e.offset]
                    if e.control:
                        continue
                    name = e.record_type.name
                    if name == "FeatureLevelRecord":
                        features[e.message.name] = e.message.feature_level
                    elif name == "PartitionRecord":
                        partitions += 1
    except KraftsimError as e:
        problems.append(str(e))
    problems += [p.describe() for p in report.problems]
    mv = features.get("metadata.version")
    holds_state = item["kind"] in ("snapshot", "bootstrap")
    return [{
        "path": item["rel"], "set": item["set"], "kind": item["kind"], "bytes": item["bytes"],
        "batches": report.batches, "control_batches": report.control_batches, "records": report.records,
        "first_offset": report.first_offset, "next_offset": report.next_offset,
        "record_types": [{"type": t, "records": n, "bytes": type_bytes[t]} for t, n in sorted(report.by_type.items())],
        "partitions": partitions,
        "bytes_per_partition": item["bytes"] / partitions if holds_state and partitions else None,
        "metadata_version": mv, "metadata_version_name": mv_name(cat, mv),
        "features": [{"name": n, "level": features[n]} for n in sorted(features)],
        "verdict": "problems" if problems else "ok",
        "problems": problems,
    }]
