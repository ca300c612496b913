"""The metadata.version of a node's bootstrap file, checked when the node starts.

Before it opens its log, a Kafka 3.x server (broker and controller alike) reads the
bootstrap.checkpoint of its metadata log directory and turns the metadata.version there
into one its code lists (KafkaRaftServer.initializeLogDirs, BootstrapDirectory); 4.x reads
it only when a controller activates on an empty log. A level
its release does not list, even as an unstable placeholder, stops the process before any
record is replayed: a directory formatted by a newer release at a newer metadata.version
cannot be rolled back to the older binaries. The words are the release's
(policy `bootstrap_metadata_version` in policies.toml).
"""

from __future__ import annotations

from pathlib import Path

from kraftsim.errors import KraftsimError
from kraftsim.storage.bootstrap import read_bootstrap
from kraftsim.storage.names import BOOTSTRAP_FILE
from kraftsim.versions import Catalog, VersionsError


def bootstrap_start_refusal(log_dir: Path | str, catalog: Catalog) -> str | None:
    """The fatal text of a node of `catalog`'s release starting on `log_dir`, whose
    bootstrap.checkpoint names a metadata.version that release does not know; else None
    (no file, or one that other checks refuse in their own words)."""
    if catalog.policy("bootstrap_metadata_version") == "at-activation":
        return None  # 4.x reads the file only when a controller activates on an empty log
    path = Path(log_dir) / BOOTSTRAP_FILE
    if not path.is_file():
        return None
    try:
        level = read_bootstrap(path, catalog.record_registry()).metadata_version_level
    except KraftsimError:
        return None
    try:
        catalog.mv_from_level(level)
    except VersionsError:
        return catalog.policy_text("bootstrap_metadata_version", "unknown").format(
            level=level, minimum=catalog.minimum.level, maximum=catalog.latest_testing.level)
    return None
