"""`meta.properties`: who a log directory belongs to (cluster id, node id, directory id).

Versions: 0 (ZooKeeper era: `broker.id`, cluster.id optional) and 1 (KRaft: `node.id`
and `cluster.id` required). Reading follows Kafka's MetaProperties.Builder, with its error
texts; writing follows PropertiesUtils.writePropertiesFile (`meta.properties.tmp`, then an
atomic move). The date comment is the only input that is not data: pass it, or it comes
from SOURCE_DATE_EPOCH, or from the clock.
"""

from __future__ import annotations

import datetime as _dt
import os
import time
from dataclasses import dataclass
from pathlib import Path

from kraftsim.errors import KraftsimError
from kraftsim.javacompat import date_to_string, parse_int
from kraftsim.protocol.primitives import Uuid
from kraftsim.storage.fileio import atomic_write, read_file_in
from kraftsim.storage.java_properties import (
    KeyOrder, detect_key_order, load_properties, properties_text, store_properties,
)
from kraftsim.storage.names import META_PROPERTIES_FILE

VERSION_PROP = "version"
CLUSTER_ID_PROP = "cluster.id"
BROKER_ID_PROP = "broker.id"
NODE_ID_PROP = "node.id"
DIRECTORY_ID_PROP = "directory.id"
#: Kafka's node.id is an int32: a larger id cannot be formatted (meta.properties) or named by its tools.
MAX_NODE_ID = 2**31 - 1


@dataclass(frozen=True, slots=True)
class MetaProperties:
    """The contents of meta.properties that Kafka understands."""

    version: int = 1
    cluster_id: str | None = None
    node_id: int | None = None
    directory_id: str | None = None  # Kafka's Uuid text form (22 characters)

    def __post_init__(self) -> None:
        if self.version not in (0, 1):
            raise KraftsimError(f"Unknown meta.properties version number {self.version}")
        if self.version == 1:
            if self.cluster_id is None:
                raise KraftsimError("cluster.id was not found.")
            if self.node_id is None:
                raise KraftsimError("node.id was not found.")

    @classmethod
    def from_properties(cls, props: dict[str, str]) -> "MetaProperties":
        """Kafka's MetaProperties.Builder(Properties) and build()."""
        version_text = props.get(VERSION_PROP, "0")
        try:
            version = int(version_text.strip())
        except ValueError:
            raise KraftsimError(f"Invalid meta.properties version string '{version_text}'") from None
        if version not in (0, 1):
            raise KraftsimError(f"Unknown meta.properties version number {version}")
        node_id = None
        if version == 0:
            if BROKER_ID_PROP in props:
                node_id = _required_int(props, BROKER_ID_PROP)
        else:
            node_id = _required_int(props, NODE_ID_PROP)
        directory_id = props.get(DIRECTORY_ID_PROP)
        if directory_id is not None:
            try:
                Uuid.from_string(directory_id)
            except Exception as e:  # binascii.Error or ValueError
                raise KraftsimError(f"Unable to read {DIRECTORY_ID_PROP} as a Uuid: {e}") from None
        return cls(version, props.get(CLUSTER_ID_PROP), node_id, directory_id)

    def to_properties(self) -> dict[str, str]:
        """Kafka's toProperties, keys inserted in Kafka's order (it matters for hash order)."""
        props = {VERSION_PROP: str(self.version)}
        if self.cluster_id is not None:
            props[CLUSTER_ID_PROP] = self.cluster_id
        if self.version == 0:
            if self.node_id is not None:
                props[BROKER_ID_PROP] = str(self.node_id)
        else:
            props[NODE_ID_PROP] = str(self.node_id)
        if self.directory_id is not None:
            props[DIRECTORY_ID_PROP] = self.directory_id
        return props


def _required_int(props: dict[str, str], key: str) -> int:
    value = props.get(key)
    if value is None:
        raise KraftsimError(f"Failed to find {key}")
    number = parse_int(value)
    if number is None:
        raise KraftsimError(f"Unable to read {key} as a base-10 number.")
    return number


@dataclass(frozen=True, slots=True)
class MetaPropertiesFile:
    """A meta.properties as found on disk: the parsed properties and how the file was laid out."""

    path: str
    meta: MetaProperties
    properties: dict[str, str]  # every key, including any Kafka does not know
    date: str | None  # the date comment, without its '#'
    key_order: KeyOrder | None  # None when the lines follow neither JVM's order

    def text(self) -> str:
        """This file written again (every property kept, same date and order)."""
        if self.date is None or self.key_order is None:
            raise KraftsimError(f"{self.path}: not laid out as Java writes properties files; cannot reproduce it")
        return store_properties(self.properties, date_line=self.date, key_order=self.key_order)


def read_meta_properties(path: Path | str) -> MetaPropertiesFile:
    """Read a meta.properties file (or the one in a log directory)."""
    p, raw = read_file_in(path, META_PROPERTIES_FILE)
    try:
        text = properties_text(raw)  # as Kafka reads it (Properties.load(InputStream))
        props = load_properties(text)
    except ValueError as e:
        raise KraftsimError(f"{p}: {e}") from None
    try:
        meta = MetaProperties.from_properties(props)
    except KraftsimError as e:
        raise KraftsimError(f"{p}: {e}") from None
    lines = text.split("\n")
    date = lines[1][1:] if len(lines) > 2 and lines[0] == "#" and lines[1].startswith("#") else None
    try:
        order: KeyOrder | None = detect_key_order(list(props))
    except ValueError:
        order = None
    return MetaPropertiesFile(str(p), meta, props, date, order)


@dataclass(frozen=True, slots=True)
class StartRefusal:
    """Why a KRaft server does not start on its log directory: Kafka's fatal text, and the
    ERROR line it logs first when it could not read the file (None when it logs none)."""

    text: str
    logged: str | None = None


NO_READABLE = "No readable meta.properties files found."


def kraft_start_refusal(log_dir: Path | str, node_id: int) -> StartRefusal | None:
    """What a KRaft server configured with `node_id` says of its only log directory (also its
    metadata log directory) before it opens anything, as KafkaRaftServer.initializeLogDirs
    checks it (the same texts measured on Kafka 3.7.2, 4.0.2 and 4.4.0):

    - a meta.properties that is missing, or that the reader refuses (a v1 file without
      node.id or cluster.id, a bad version): "No readable meta.properties files found.",
      after logging "Error while reading meta.properties file <path>" for an unreadable one;
    - a node id (node.id, or broker.id of a v0 file) other than the configured one: the
      ensemble's "Stored node id ..." text;
    - a v0 file (no `version`) without broker.id: "Error: node ID not found in <dir>"; with
      broker.id but no cluster.id: "Error: cluster ID not found in <dir>". The reader itself
      accepts such files, as Kafka's does (kafka-storage info shows them as legacy mode).
    """
    directory = str(log_dir)
    path = str(Path(directory) / META_PROPERTIES_FILE)
    if not os.path.isfile(path):
        return StartRefusal(NO_READABLE)
    try:
        meta = read_meta_properties(path).meta
    except KraftsimError as e:
        reason = str(e).removeprefix(f"{path}: ")
        return StartRefusal(NO_READABLE, f"Error while reading meta.properties file {path}: {reason}")
    if meta.node_id is not None and meta.node_id != node_id:
        return StartRefusal(f"Stored node id {meta.node_id} doesn't match previous node id {node_id} in {path}. "
                            "If you moved your data, make sure your configured node id matches. If you intend to "
                            "create a new node, you should remove all data in your data directories.")
    if meta.node_id is None:
        return StartRefusal(f"Error: node ID not found in {directory}")
    if meta.cluster_id is None:
        return StartRefusal(f"Error: cluster ID not found in {directory}")
    return None


# The date comment's time, as `default_date` takes it: a datetime, epoch seconds, or the text itself.
DateLike = _dt.datetime | int | float | str


def default_date(timestamp: DateLike | None = None) -> str:
    """The date comment: the given time, else SOURCE_DATE_EPOCH, else the clock (UTC)."""
    if isinstance(timestamp, str):
        return timestamp
    if timestamp is None:
        timestamp = source_date_epoch()
        if timestamp is None:
            timestamp = time.time()
    return date_to_string(timestamp)


def source_date_epoch() -> int | None:
    """SOURCE_DATE_EPOCH (seconds), the fixed time of reproducible builds, or None when it is not set."""
    sde = os.environ.get("SOURCE_DATE_EPOCH")
    if sde is None:
        return None
    try:
        return int(sde)
    except ValueError:
        raise KraftsimError(f"SOURCE_DATE_EPOCH is not a number of seconds: {sde!r}") from None


def meta_properties_text(meta: MetaProperties, *, date: DateLike | None = None,
                         key_order: KeyOrder = "sorted") -> str:
    """The text Kafka writes for `meta`: `#`, `#<date>`, then the properties in `key_order`
    ("sorted" as Java 18+ writes them, "hash" as Java 11/17 do)."""
    return store_properties(meta.to_properties(), date_line=default_date(date), key_order=key_order)


def write_meta_properties(path: Path | str, meta: MetaProperties, *,
                          date: DateLike | None = None, key_order: KeyOrder = "sorted",
                          fsync: bool = True) -> Path:
    """Write meta.properties (a directory means the file in it) via `meta.properties.tmp`."""
    p = Path(path)
    if p.is_dir():
        p = p / META_PROPERTIES_FILE
    atomic_write(p, meta_properties_text(meta, date=date, key_order=key_order).encode("utf-8"), fsync=fsync)
    return p
