"""Loading a path for a user: the checks a request must pass before `load_path` runs.

`replay_path` is `load_path` with the checks the `kraftsim replay` family makes first: the
path exists, the offset is not negative and applies to the path's kind, `--snapshot`
applies only to directories. Each failed check is a `LoadRequestError` with one line that
names the path and the cause.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from kraftsim.image.errors import ImageError
from kraftsim.image.loader.loading import LoadResult, SnapshotChoice, load_path
from kraftsim.image.loader.metadata_loader import MvChangeHandling
from kraftsim.regular_file import why_absent
from kraftsim.storage.names import PathKind, classify_path, parse_snapshot_name
from kraftsim.versions import Catalog


class LoadRequestError(ImageError):
    """A load that cannot be done as asked (missing path, offset that does not apply)."""


def replay_path(path: Path, catalog: Catalog, *, at: int | None = None, snapshot: SnapshotChoice = "latest",
                progress: Callable[[int, int], None] | None = None,
                mv_change: MvChangeHandling = MvChangeHandling.KAFKA, up_to_damage: bool = False) -> LoadResult:
    """load_path with the request checks: the path exists, the offset makes sense.

    `progress(done_bytes, total_bytes)` is called as the load goes, when given.
    """
    if not path.exists():
        raise LoadRequestError(f"{path}: {why_absent(path)}")
    kind = classify_path(path)
    if at is not None and at < 0:
        raise LoadRequestError(f"{path}: offset {at} is negative")
    if kind is PathKind.BOOTSTRAP and at not in (None, 0):
        raise LoadRequestError(f"{path}: a bootstrap file holds the state before the log begins (offset 0), "
                               f"not at {at}")
    if snapshot not in ("latest", "start") and kind not in (PathKind.METADATA_DIR, PathKind.LOG_DIR):
        raise LoadRequestError(f"{path}: --snapshot applies to a log directory, not a {kind.value}")
    if kind is PathKind.SNAPSHOT and at is not None and parse_snapshot_name(path.name) is None:
        raise LoadRequestError(f"{path}: the file name does not say which offset this snapshot holds; "
                               "--at/@OFFSET cannot apply")
    result = load_path(path, catalog=catalog, upto_offset=at, snapshot=snapshot, progress=progress,
                       mv_change=mv_change, up_to_damage=up_to_damage)
    if kind is PathKind.SEGMENT and at is not None and at > result.disk_end_offset:
        raise LoadRequestError(f"{path}: offset {at} is beyond the end of the segment ({result.disk_end_offset})")
    return result
