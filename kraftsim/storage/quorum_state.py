"""`quorum-state`: a KRaft voter's election state (leader, epoch, vote), as compact JSON.

Kafka writes QuorumStateData through its generated JSON converter (fields in schema
order, only those present at the version) and adds `data_version`; there is no trailing
newline. Version 0 carries clusterId, appliedOffset and currentVoters; version 1 (the
dynamic quorum, KIP-853) drops them and adds votedDirectoryId.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kraftsim import jsoninput
from kraftsim.errors import KraftsimError
from kraftsim.protocol.primitives import Uuid
from kraftsim.storage.fileio import atomic_write, read_file_in
from kraftsim.storage.names import QUORUM_STATE_FILE

DATA_VERSION = "data_version"
ZERO_UUID = str(Uuid.ZERO)

# (json name, python name, type, versions)
_FIELDS: tuple[tuple[str, str, str, tuple[int, ...]], ...] = (
    ("clusterId", "cluster_id", "string", (0,)),
    ("leaderId", "leader_id", "int32", (0, 1)),
    ("leaderEpoch", "leader_epoch", "int32", (0, 1)),
    ("votedId", "voted_id", "int32", (0, 1)),
    ("votedDirectoryId", "voted_directory_id", "uuid", (1,)),
    ("appliedOffset", "applied_offset", "int64", (0,)),
    ("currentVoters", "current_voters", "voters", (0,)),
)
_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


@dataclass(frozen=True, slots=True)
class QuorumState:
    """QuorumStateData plus the data_version it is (to be) written at."""

    data_version: int = 0
    cluster_id: str = ""
    leader_id: int = -1
    leader_epoch: int = -1
    voted_id: int = -1
    voted_directory_id: str = ZERO_UUID
    applied_offset: int = 0
    current_voters: tuple[int, ...] | None = field(default=())

    def to_json(self) -> dict[str, object]:
        if self.data_version not in (0, 1):
            raise KraftsimError(f"unsupported quorum-state data_version {self.data_version}")
        out: dict[str, object] = {}
        for jname, pname, kind, versions in _FIELDS:
            if self.data_version in versions:
                value = getattr(self, pname)
                if kind == "voters":
                    value = None if value is None else [{"voterId": v} for v in value]
                out[jname] = value
        out[DATA_VERSION] = self.data_version
        return out

    def text(self) -> str:
        """The file's exact contents (Jackson's compact form, no newline)."""
        return json.dumps(self.to_json(), separators=(",", ":"), ensure_ascii=False)


def _field(obj: dict[str, Any], jname: str, kind: str, version: int) -> Any:
    if jname not in obj:
        raise KraftsimError(f"QuorumStateData: unable to locate field '{jname}', which is mandatory in version {version}")
    value = obj[jname]
    if kind in _RANGES:
        lo, hi = _RANGES[kind]
        if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
            raise KraftsimError(f"QuorumStateData expected {'an' if kind == 'int32' else 'a'} {kind} for field "
                                f"'{jname}', but got {json.dumps(value)}")
        return value
    if kind == "string":
        if not isinstance(value, str):
            raise KraftsimError(f"QuorumStateData expected a string type for field '{jname}', but got {json.dumps(value)}")
        return value
    if kind == "uuid":
        try:
            return str(Uuid.from_string(value))
        except Exception:
            raise KraftsimError(f"QuorumStateData expected a JSON string type for field '{jname}', "
                                f"but got {json.dumps(value)}") from None
    # voters
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, dict) and isinstance(v.get("voterId"), int) for v in value):
        raise KraftsimError(f"QuorumStateData expected a JSON array of voters for field '{jname}', but got {json.dumps(value)}")
    return tuple(v["voterId"] for v in value)


def parse_quorum_state(text: str, source: str = QUORUM_STATE_FILE) -> QuorumState:
    """Parse the JSON of a quorum-state file; errors name the file and say what is wrong."""
    try:
        try:
            obj = jsoninput.loads(text)
        except ValueError as e:
            raise KraftsimError(f"not JSON: {e}") from None
        if not isinstance(obj, dict):
            raise KraftsimError(f"Deserialized node {text.strip()} is not an object node")
        if DATA_VERSION not in obj:
            raise KraftsimError(f"Deserialized node {text.strip()} does not have {DATA_VERSION} field")
        version = obj[DATA_VERSION]
        if version not in (0, 1) or isinstance(version, bool):
            raise KraftsimError(f"unsupported {DATA_VERSION} {version}")
        values = {pname: _field(obj, jname, kind, version) for jname, pname, kind, versions in _FIELDS if version in versions}
        return QuorumState(data_version=version, **values)
    except KraftsimError as e:
        raise KraftsimError(f"Error while reading the Quorum status from the file {source}: {e}") from None


def read_quorum_state(path: Path | str) -> QuorumState:
    p, raw = read_file_in(path, QUORUM_STATE_FILE)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise KraftsimError(f"Error while reading the Quorum status from the file {p}: not UTF-8") from None
    return parse_quorum_state(text, str(p))


def write_quorum_state(path: Path | str, state: QuorumState, *, fsync: bool = True) -> Path:
    """Write quorum-state (a directory means the file in it) via `quorum-state.tmp`."""
    p = Path(path)
    if p.is_dir():
        p = p / QUORUM_STATE_FILE
    atomic_write(p, state.text().encode("utf-8"), fsync=fsync)
    return p
