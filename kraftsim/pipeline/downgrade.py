"""The downgrade-matrix job's work for one cluster state: "can I still roll back, and what would I lose?"

The state (a log directory's end, a snapshot, a bootstrap file) is loaded into an image
with `load_path`; then, for every lower metadata.version the catalog knows, the image is
actually written there with a collecting loss handler. A row gives both the catalog's
judgement (Kafka's is_lossy: does it need an unsafe downgrade?) and what this state
would really drop, item by item.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Iterable

from kraftsim.errors import KraftsimError
from kraftsim.image import LossReport, image_digest, write_image
from kraftsim.image import load_path
from kraftsim.pipeline.defaults import catalog_of
from kraftsim.pipeline.discover import find_states

DOWNGRADE = "downgrade_matrix"


def downgrade_inputs(paths: Iterable[str | Path]) -> list[dict[str, object]]:
    """One input row per cluster state below `paths`."""
    return [f.as_row() for f in find_states(paths)]


def _base(item: dict[str, object]) -> dict[str, object]:
    return {"state": item["rel"], "set": item["set"], "state_kind": item["kind"], "end_offset": None,
            "source_mv": None, "source_mv_name": None, "target_mv": None, "target_mv_name": None,
            "metadata_changed": None, "catalog_losses": [], "lossless": None, "records_written": None,
            "loss_items": None, "losses": [], "digest": None, "error": None}


def _failed(item: dict[str, object], cause: str, started: float) -> dict[str, object]:
    row = _base(item)
    row.update(run_id=f"{item['rel']}@error", inputs=json.dumps({"state": item["rel"]}, sort_keys=True),
               verdict="error", error=cause, elapsed_s=time.perf_counter() - started)
    return row


def downgrade_rows(item: dict[str, Any], *, catalog: str | None = None,
                   release: str | None = None) -> list[dict[str, object]]:
    """One row per lower metadata.version for the state `item` (as from downgrade_inputs);
    a state that cannot be loaded gives one `error` row; one without a metadata.version
    the catalog knows gives none (there is nothing to downgrade)."""
    cat = catalog_of(catalog, release)
    started = time.perf_counter()
    try:
        loaded = load_path(item["path"], catalog=cat)
    except KraftsimError as e:
        return [_failed(item, str(e), started)]
    image = loaded.image
    level = image.metadata_version
    known = {mv.level for mv in cat.metadata_versions}
    if level is None or level not in known:
        return []
    digest = image_digest(image)
    source = cat.metadata_version(level)
    rows = []
    for target in cat.metadata_versions:
        if target.level >= source.level:
            continue
        t0 = time.perf_counter()
        row = _base(item)
        row.update(end_offset=loaded.end_offset, source_mv=source.level, source_mv_name=source.version,
                   target_mv=target.level, target_mv_name=target.version, digest=digest,
                   run_id=f"{item['rel']}@{target.version}",
                   inputs=json.dumps({"state": item["rel"], "target": target.version}, sort_keys=True))
        try:
            report = LossReport()
            written = write_image(image, target, cat, loss_handler=report)
            changes = cat.downgrade_losses(source, target)
        except KraftsimError as e:
            row.update(verdict="error", error=str(e), elapsed_s=time.perf_counter() - t0)
            rows.append(row)
            continue
        row.update(
            metadata_changed=cat.is_lossy(source, target),
            catalog_losses=[x.strip() for x in changes.lines()[1:] if not x.strip().startswith("behaviour ")],
            lossless=report.lossless, records_written=len(written), loss_items=len(report),
            losses=[{"kind": x.kind, "entity": x.entity, "summary": x.summary, "kafka_reported": x.kafka_reported}
                    for x in report],
            verdict="lossless" if report.lossless else "lossy",
            elapsed_s=time.perf_counter() - t0)
        rows.append(row)
    return rows

