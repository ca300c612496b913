"""Writing the imported cluster: a Simulation directory whose nodes start from the source.

Each node's `__cluster_metadata-0` gets the source's log segments and the snapshot its
load started from, byte for byte (a lone snapshot gets an empty segment after it, as a
node that installed a fetched snapshot has); `meta.properties` carries the real cluster
id, node id and directory id (a 3.3-3.6 node has none: its first 3.7+ start draws one);
`bootstrap.checkpoint` is copied when the source has one;
`registration.json` keeps the listeners, rack and log directories the real node last
registered (kraftsim.sim.node.registration_profile); `quorum-state` names the voters and the
highest epoch the source reached, with no leader, so the first election of the simulated
quorum begins the next epoch. `cluster.json` lists
every node as running: the next command that opens the cluster starts each node from its
disk, as after a restart of the whole cluster. The virtual clock starts after the last
timestamp the source holds (never before kraftsim's usual start), so new records follow
the old ones in time.

With `--up-to-damage` the copy of a damaged log (never the source) is cut back to the valid
prefix the import loaded, so that every node starts where the summary says.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import msgspec

from kraftsim.sim.node.format import EPOCH_MS, cluster_id_for, incarnation_id
from kraftsim.sim.importing.plan import ImportPlan, PlannedNode
from kraftsim.sim.node.simnode import node_directory
from kraftsim.sim.node.registration_profile import (
    ProfileListener,
    RegistrationProfile,
    write_profile,
)
from kraftsim.sim.saved import STATE_FILE, SavedNode, SavedState
from kraftsim.sim.types import RUNNING, SimConfig
from kraftsim.sim.node.voters import quorum_state
from kraftsim.storage import (
    METADATA_DIR_NAME,
    MetadataLog,
    random_uuid,
    write_quorum_state,
)
from kraftsim.storage.fileio import atomic_write
from kraftsim.javacompat import date_to_string as java_date
from kraftsim.storage.meta_properties import MetaProperties, write_meta_properties
from kraftsim.storage.names import BOOTSTRAP_SNAPSHOT_ID, LOG_SUFFIX, segment_file_name, snapshot_file_name

BOOTSTRAP_FILE = "bootstrap.checkpoint"


def _copy_metadata(node: PlannedNode, target: Path) -> None:
    src = node.source
    target.mkdir(parents=True)
    if src.metadata_dir is not None:
        for p in sorted(src.metadata_dir.iterdir()):
            if p.is_file() and p.name.endswith(LOG_SUFFIX):
                shutil.copyfile(p, target / p.name)
    if src.snapshot_file is not None:
        shutil.copyfile(src.snapshot_file, target / src.snapshot_file.name)
    bootstrap = None if src.metadata_dir is None else src.metadata_dir / snapshot_file_name(BOOTSTRAP_SNAPSHOT_ID)
    if bootstrap is not None and bootstrap.is_file() and not (target / bootstrap.name).exists():
        shutil.copyfile(bootstrap, target / bootstrap.name)  # a dynamic quorum's first voter set
    if src.metadata_dir is None or not any(target.glob(f"*{LOG_SUFFIX}")):
        (target / segment_file_name(src.end_offset)).write_bytes(b"")
    if src.damage is not None:
        # The copy (never the source) is cut back to the valid prefix the import loaded: every
        # segment checked, then whatever lies at or after the damage removed.
        with MetadataLog.open(target, fsync=False, validate="all") as log:
            log.truncate_to(src.end_offset)


def _profile(plan: ImportPlan, node: PlannedNode) -> RegistrationProfile | None:
    """What the node's real counterpart last registered (None: it never registered)."""
    b = plan.image.cluster.brokers.get(node.id)
    c = plan.image.cluster.controllers.get(node.id)
    if b is None and c is None:
        return None

    def endpoints(reg: object) -> tuple[ProfileListener, ...] | None:
        if reg is None:
            return None
        return tuple(ProfileListener(e.name, e.host, e.port, e.security_protocol) for e in reg.listeners)  # type: ignore[attr-defined]

    dirs = tuple(str(x) for x in b.directories) if b is not None and b.directories else None
    if dirs is not None and node.directory_id is not None and node.directory_id not in dirs:
        dirs = (node.directory_id,) + dirs
    return RegistrationProfile(broker_listeners=endpoints(b), controller_listeners=endpoints(c),
                               rack=None if b is None else b.rack, log_dirs=dirs)


def _beside(node: PlannedNode) -> Path:
    """The log directory the source's metadata lives in (where bootstrap.checkpoint is kept)."""
    src = node.source
    inner = src.metadata_dir if src.metadata_dir is not None else src.snapshot_file.parent  # type: ignore[union-attr]
    return inner.parent


def write_cluster(plan: ImportPlan, directory: Path, *, seed: int = 0, policies: tuple[str, ...] = (),
                  config: SimConfig | None = None, catalog_path: str | None = None) -> SavedState:
    """Write the cluster directory (which must not exist or be empty: checked by the caller)."""
    d = Path(directory)
    cluster_id = plan.cluster_id or cluster_id_for(seed)
    last_ts = max(n.source.last_timestamp for n in plan.nodes)
    now_ms = max(EPOCH_MS, (last_ts // 1000 + 1) * 1000)
    epoch = plan.epoch
    d.mkdir(parents=True, exist_ok=True)
    nodes: list[SavedNode] = []
    for node in plan.nodes:
        home = node_directory(d, node.id)
        home.mkdir()
        _copy_metadata(node, home / METADATA_DIR_NAME)
        boot = _beside(node) / BOOTSTRAP_FILE
        if boot.is_file():
            shutil.copyfile(boot, home / BOOTSTRAP_FILE)
        if node.directory_id is None and node.keeps_directory_id:
            node.directory_id = str(random_uuid(random.Random(f"kraftsim:{seed}:import-directory:{node.id}")))
            node.directory_how = "not in the source: made from the seed"
        write_meta_properties(home, MetaProperties(version=1, cluster_id=cluster_id, node_id=node.id,
                                                   directory_id=node.directory_id),
                              date=java_date(now_ms // 1000), fsync=False)
        profile = _profile(plan, node)
        if profile is not None:
            write_profile(home, profile)
        write_quorum_state(home / METADATA_DIR_NAME / "quorum-state",
                           quorum_state(plan.kraft_version, leader=None, epoch=max(0, epoch), voted=None,
                                        voters=plan.voters), fsync=False)
        nodes.append(SavedNode(id=node.id, roles=node.roles, release=node.release,
                               incarnation=incarnation_id(seed, node.id, 1), status=RUNNING))
    saved = SavedState(cluster_id=cluster_id, seed=seed, now_ms=now_ms, policies=policies, catalog=catalog_path,
                       voters=plan.voters, kraft_version=plan.kraft_version, config=config or SimConfig(), nodes=nodes)
    data = json.dumps(msgspec.to_builtins(saved), indent=2, sort_keys=True) + "\n"
    atomic_write(d / STATE_FILE, data.encode("utf-8"), fsync=True)
    return saved


__all__ = ["write_cluster"]
