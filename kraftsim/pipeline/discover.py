"""Finding the metadata files and cluster states below the paths a user names.

A path may be a metadata file, a `__cluster_metadata-0` directory, a node's log directory,
or any folder holding such things further down (a tree of clusters such as the oracle
corpus). Each item found keeps its path relative to the folder it was found under, so the
pipeline's output names files the same way on every machine.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable

from kraftsim.errors import KraftsimError, UsageError
from kraftsim.storage import BOOTSTRAP_FILE, PathKind, classify_path, metadata_files
from kraftsim.storage.names import METADATA_DIR_NAME, parse_snapshot_name, SnapshotState
from kraftsim.storage.view import metadata_places

#: Short names of the file kinds, as the pipeline's tables write them.
FILE_KINDS = {PathKind.SEGMENT: "segment", PathKind.SNAPSHOT: "snapshot", PathKind.BOOTSTRAP: "bootstrap"}


@dataclass(frozen=True)
class Found:
    """One file or directory found below a user's path."""

    path: str  # absolute
    rel: str  # relative to the folder it was found under, with '/' separators
    set: str  # the first component of rel
    kind: str  # segment, snapshot, bootstrap; for states also log (a metadata log directory)
    bytes: int  # size of the file, or of a directory's metadata files

    def as_row(self) -> dict[str, object]:
        return asdict(self)


def _anchor(arg: Path) -> tuple[Path, list[Path]]:
    """The folder names are taken relative to, and the metadata directories/files the argument stands for."""
    places = metadata_places(arg)
    if places != [arg]:  # a folder of clusters
        return arg, places
    try:
        classify_path(arg)
    except KraftsimError:
        raise UsageError(f"{arg}: not a metadata log directory, segment, snapshot or bootstrap file") from None
    return arg.parent, places


def _found(path: Path, root: Path, kind: str, size: int) -> Found:
    rel = path.relative_to(root).as_posix()
    return Found(str(path), rel, rel.split("/")[0], kind, size)


def find_files(paths: Iterable[str | Path]) -> list[Found]:
    """Every metadata file the paths stand for, each once: per directory the bootstrap file,
    the segments by offset, then the snapshots oldest first (as `kraftsim log dump` lists them)."""
    out: list[Found] = []
    seen: set[Path] = set()
    for arg in map(Path, paths):
        arg = arg.absolute()
        root, places = _anchor(arg)
        for place in places:
            for kind, path in metadata_files(place):
                if path not in seen:
                    seen.add(path)
                    out.append(_found(path, root, FILE_KINDS[kind], path.stat().st_size))
    return out


def find_states(paths: Iterable[str | Path]) -> list[Found]:
    """Every cluster state the paths stand for, each once: each metadata log directory (its
    state at the end of the log), each snapshot and each bootstrap file; a segment named on
    its own is a state too."""
    out: list[Found] = []
    seen: set[Path] = set()

    def add(path: Path, root: Path, kind: str, size: int) -> None:
        if path not in seen:
            seen.add(path)
            out.append(_found(path, root, kind, size))

    for arg in map(Path, paths):
        arg = arg.absolute()
        root, places = _anchor(arg)
        for place in places:
            kind = classify_path(place)
            if kind in (PathKind.SEGMENT, PathKind.SNAPSHOT, PathKind.BOOTSTRAP):
                add(place, root, FILE_KINDS[kind], place.stat().st_size)
                continue
            if kind is PathKind.LOG_DIR and (place / BOOTSTRAP_FILE).is_file():
                boot = place / BOOTSTRAP_FILE
                add(boot, root, "bootstrap", boot.stat().st_size)
            metadata_dir = place / METADATA_DIR_NAME if kind is PathKind.LOG_DIR else place
            if not metadata_dir.is_dir():
                continue
            files = [p for k, p in metadata_files(metadata_dir)]
            add(metadata_dir, root, "log", sum(p.stat().st_size for p in files))
            for p in files:
                name = parse_snapshot_name(p.name)
                if name is not None and name.state is SnapshotState.FROZEN:
                    add(p, root, "snapshot", p.stat().st_size)
    return out
