"""Where `kafka-storage format` puts the bootstrap records, as each release's tool does.

- Up to Kafka 4.3 (policy `format_layout` = "bootstrap-file"): `bootstrap.checkpoint` in every
  formatted directory; a dynamic metadata directory also gets the zero checkpoint
  `__cluster_metadata-0/00000000000000000000-0000000000.checkpoint` with the KRaft control
  records only.
- Kafka 4.4 (KIP-1170, "zero-checkpoint"): no `bootstrap.checkpoint`. On a node with the
  controller role the metadata log directory gets the zero checkpoint holding the snapshot
  header (with the KRaftVersion and voters records when kraft.version is 1 or more), the
  bootstrap records (metadata.version first) and the footer; every other directory, and
  every directory of a broker, gets meta.properties only. The layout follows the tool's
  release, not the metadata.version it formats with.

Reading both layouts is storage.bootstrap.read_bootstrap_dir's job.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from kraftsim.protocol.entries import Payload
from kraftsim.protocol.registry import Registry
from kraftsim.storage.batchfile import Clock
from kraftsim.storage.bootstrap import write_bootstrap
from kraftsim.versions import Catalog

BOOTSTRAP_FILE_LAYOUT = "bootstrap-file"
ZERO_CHECKPOINT_LAYOUT = "zero-checkpoint"


def layout_of(catalog: Catalog) -> str:
    """The layout the tool of `catalog`'s release writes."""
    return catalog.policy("format_layout")


def write_bootstrap_for(catalog: Catalog, path: Path, *, metadata_dir: bool, dynamic: bool, controller: bool,
                        records: Sequence[Payload], voters: Mapping, kraft_version: int, listener_name: str,
                        clock: Clock, registry: Registry, fsync: bool) -> Path | None:
    """Write one formatted directory's bootstrap files; returns the zero checkpoint, if written.

    `metadata_dir`: the directory is the node's metadata log directory; `dynamic`: it is a
    dynamic (KIP-853) metadata directory; `controller`: the node has the controller role."""
    from kraftsim.storage.formatter import write_zero_checkpoint  # the formatter imports this module

    if layout_of(catalog) == ZERO_CHECKPOINT_LAYOUT:
        if not (metadata_dir and controller):
            return None
        return write_zero_checkpoint(path, voters, kraft_version, listener_name, clock=clock, registry=registry,
                                     fsync=fsync, records=records)
    write_bootstrap(path, records, time_ms=clock, registry=registry, fsync=fsync)
    if dynamic:
        return write_zero_checkpoint(path, voters, kraft_version, listener_name, clock=clock, registry=registry,
                                     fsync=fsync)
    return None
