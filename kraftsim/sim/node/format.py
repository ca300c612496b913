"""What both simulators share about making a cluster: the seeded ids (cluster id, each
process start's incarnation id), the virtual clock's first instant, and formatting a
node's directory as `kafka-storage format` formats it."""

from __future__ import annotations

import os
import random
from dataclasses import replace
from pathlib import Path
from typing import Callable, Collection, Iterable, Sequence

from kraftsim.sim.node.simnode import CONTROLLER_LISTENER, NodeState, node_directory
from kraftsim.errors import KraftsimError
from kraftsim.protocol.entries import Payload
from kraftsim.protocol.primitives import Uuid
from kraftsim.protocol.registry import Registry
from kraftsim.storage import ServerConfig, random_uuid, read_meta_properties, storage_format
from kraftsim.storage.dynamic_voters import DynamicVoter, voters_record
from kraftsim.storage.dirlock import LOCK_FILE
from kraftsim.storage.meta_properties import MAX_NODE_ID
from kraftsim.storage.names import META_PROPERTIES_FILE
from kraftsim.storage.server_config import Listener
from kraftsim.javacompat import date_to_string as java_date
from kraftsim.versions import Catalog

#: What marks a simulated cluster's directory, beside its lock file (both simulators' `cluster.json`).
CLUSTER_STATE_FILE = "cluster.json"

#: Virtual time of a new cluster: 2025-01-01T00:00:00Z.
EPOCH_MS = 1_735_689_600_000


def elapsed_text(ms: int) -> str:
    """Simulated time as every command prints it: `+12.345 s` (milliseconds since a start)."""
    return f"+{ms / 1000:.3f} s"


def clock_text(now_ms: int) -> str:
    """A cluster's virtual clock as time since the cluster was created (elapsed_text)."""
    return elapsed_text(now_ms - EPOCH_MS)


def new_cluster_directory_problem(directory: Path | str) -> str | None:
    """Why a new cluster cannot be made in `directory`, or None. It must be new or empty, and
    not inside another cluster's directory or a Kafka log directory (simulated or real): Kafka
    refuses to load a log directory holding a folder it does not know, and the new cluster's
    writes would go around the other cluster's lock."""
    d = Path(directory)
    try:
        os.stat(d)
    except FileNotFoundError:
        pass
    except OSError as e:  # a symlink loop, a file on the way, a name too long: no directory can be made there
        return f"{d}: cannot make a cluster there: {e.strerror or e}"
    if d.exists() and (not d.is_dir() or any(d.iterdir())):
        return f"{d}: already exists and is not an empty directory"
    for folder in Path(os.path.realpath(d)).parents:
        if (folder / META_PROPERTIES_FILE).is_file():
            return (f"{d}: lies inside the Kafka log directory {folder} (Kafka refuses to load one holding a "
                    "folder that is not a partition's); make the cluster outside it")
        if (folder / CLUSTER_STATE_FILE).is_file() and (folder / LOCK_FILE).is_file():
            return f"{d}: lies inside the cluster directory {folder}; make the cluster outside it"
    return None


def incarnation_id(seed: int, node_id: int, start: int) -> str:
    """The incarnation id of a node's `start`-th process start (Kafka: Uuid.randomUuid)."""
    return str(random_uuid(random.Random(f"kraftsim:{seed}:incarnation:{node_id}:{start}")))


def cluster_id_for(seed: int) -> str:
    return str(random_uuid(random.Random(f"kraftsim:{seed}:cluster-id")))


def directory_id_for(seed: int, node_id: int) -> str:
    """The metadata directory id a dynamic quorum's initial controller is formatted with
    (`--initial-controllers id@host:port:DIRECTORY_ID`; Kafka users take it from
    `kafka-storage random-uuid`)."""
    return str(random_uuid(random.Random(f"kraftsim:{seed}:directory-id:{node_id}")))


def joining_node_id(ids: Collection[int], node_id: int | None) -> int:
    """The id of a node joining a cluster of `ids`: `node_id`, or by default the highest id + 1.
    KraftsimError, before anything is written, when it is taken or not a node.id Kafka can hold
    (an int32: a larger one is formatted into a meta.properties no node can read back)."""
    nid = max(ids, default=0) + 1 if node_id is None else node_id
    if nid < 0:
        raise KraftsimError(f"node id {nid} must not be negative")
    if nid > MAX_NODE_ID and node_id is None:
        raise KraftsimError(f"no default node id is left: the highest id + 1 is {nid}, above {MAX_NODE_ID}, the "
                            "largest node.id (an int32); give the new node a free id")
    if nid > MAX_NODE_ID:
        raise KraftsimError(f"node id {nid} is above {MAX_NODE_ID}, the largest node.id (an int32)")
    if nid in ids:
        raise KraftsimError(f"the cluster already has a node {nid}")
    return nid


def format_node(cluster_dir: Path, catalog: Catalog, state: NodeState, *, voters: Sequence[int], cluster_id: str,
                seed: int, now_ms: int, release_version: str | None = None, features: Sequence[str] = (),
                emit: Callable[[str], None] = print, dynamic: str | None = None, again: int = 0) -> None:
    """`kafka-storage format` for one node, with the node's release as the tool's: the node's
    directory is both its log dir and its metadata log dir. The quorum is static unless
    `dynamic` (KIP-853: controller.quorum.bootstrap.servers instead of the voters) says how a
    controller is formatted: "standalone", "initial" (--initial-controllers with `voters`) or
    "none" (--no-initial-controllers, a controller that joins later). `again` counts the
    formats of the node after its first (a wiped disk): each draws a new directory id."""
    directory = str(node_directory(cluster_dir, state.id))
    name, port = CONTROLLER_LISTENER
    if dynamic is None:
        config = ServerConfig(process_roles=state.roles, node_id=state.id, log_dirs=(directory,),
                              metadata_log_dir=directory, controller_listener_names=(name,),
                              quorum_voters=tuple(f"{v}@node-{v}:{port}" for v in voters))
    else:
        config = ServerConfig(process_roles=state.roles, node_id=state.id, log_dirs=(directory,),
                              metadata_log_dir=directory, controller_listener_names=(name,),
                              quorum_bootstrap_servers=tuple(f"node-{v}:{port}" for v in voters),
                              listeners=(Listener(name, f"node-{state.id}", port),))
    # The node's own configs, as its server.properties would hold them (format reads them too).
    config = replace(config, unstable_configs=tuple(sorted(state.config_texts.items())))
    controller = "controller" in state.roles
    initial = ",".join(f"{v}@node-{v}:{port}:{directory_id_for(seed, v)}" for v in voters) \
        if controller and dynamic == "initial" else None
    rng = random.Random(f"kraftsim:{seed}:format:{state.id}" + (f":again:{again}" if again else ""))
    storage_format(catalog.at_release(state.release), config, cluster_id=cluster_id,
                   release_version=release_version, features=features, clock=lambda: now_ms, rng=rng,
                   date=java_date(now_ms // 1000), fsync=False, out=lambda line: _format_line(emit, state.id, line),
                   standalone=controller and dynamic == "standalone", initial_controllers=initial,
                   no_initial_controllers=controller and dynamic == "none")


def _format_line(emit: Callable[[str], None], node_id: int, line: str) -> None:
    """kafka-storage format's lines for one node, without its BootstrapMetadata dump (the
    same long line for every node formatted; `kraftsim storage format` still prints it)."""
    if not line.startswith("Bootstrap metadata: "):
        emit(f"[node {node_id}] {line}")



def node_directory_id(cluster_dir: Path, node_id: int) -> Uuid | None:
    """A simulated node's metadata directory id (its meta.properties), None when it has none."""
    try:
        meta = read_meta_properties(node_directory(cluster_dir, node_id))
    except KraftsimError:
        return None
    did = meta.meta.directory_id
    return None if did is None else Uuid.from_string(did)


def static_voters_record(cluster_dir: Path, voters: Iterable[int], registry: Registry) -> Payload:
    """The VotersRecord raft writes for a static quorum upgraded to kraft.version 1: each
    configured voter with its endpoint and the directory id it fetches with."""
    dynamic = {v: DynamicVoter(v, f"node-{v}", CONTROLLER_LISTENER[1], node_directory_id(cluster_dir, v) or Uuid.ZERO)
               for v in voters}
    return voters_record(dynamic, CONTROLLER_LISTENER[0], registry)


__all__ = ["EPOCH_MS", "clock_text", "cluster_id_for", "directory_id_for", "elapsed_text", "format_node", "incarnation_id",
           "joining_node_id", "node_directory_id", "static_voters_record"]
