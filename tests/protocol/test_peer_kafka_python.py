"""Cross-check kraftsim's codec against an independent peer: kafka-python 3.0.12.

kafka-python carries its own JSON-schema-driven protocol codec (kafka/protocol/api_data.py,
schemas/load_json.py, schemas/fields/*) and its own record batch reader (kafka.record).
Fed with Apache Kafka's own JSON schemas of the metadata and control records
(../shared/reference/kafka-schemas), it is a second implementation of the same bytes that
shares no code and no schema file with kraftsim. This module checks:

(a) every record of every real file under ../shared/oracle (all `.log` segments and
    `.checkpoint` snapshots, bootstrap.checkpoint included; ~189k batches, ~203k records):
    kafka-python's batch reader and the peer codec produce exactly kraftsim's
    `LogEntry.to_json()` (the `log dump --json` contract, DESIGN.md contract 2) for every
    record, and the peer re-encodes every body to the identical bytes. Every record is
    checked; it takes a few seconds, so no sampling is needed.
(b) hypothesis: random messages of every record type at every version, encoded by kraftsim,
    decode in the peer to the same values, and the peer writes kraftsim's bytes back.

How the peer is driven (read kafka-python's code before changing this):

- `ApiData`'s metaclass loads `<ClassName>.json` through `importlib.resources` from the
  package named by the class keyword `load_json=`. The Kafka schema folder is not a Python
  package, so a resource-only package is registered under `_kraftsim_kafka_schemas` whose
  loader serves the folder's files. kafka-python itself is not patched.
- `ApiData` asserts `"type": "data"`; the metadata schemas say `"type": "metadata"`, so the
  class's `json_patch` hook sets it to "data".
- `ApiData.decode/encode` go through `StructField.decode`, which passes the message version
  as a `version=` keyword next to the fields, and so cannot decode the control records,
  whose first field is also called `Version` ("got multiple values for keyword argument
  'version'"). The peer therefore uses the generated fast paths kafka-python itself uses
  for every request and response (`StructField.compiled_decode_from` /
  `compiled_encode_into`, as in `ApiMessage.decode/encode`).
- kafka-python's `StructField` cannot hold a struct without fields, so NoOpRecord and
  EndTransactionRecord (`"fields": []`) are decoded and encoded with kafka-python's
  `TaggedFields` codec alone (their body is just a tagged-field section).
- kafka-python writes a struct's tagged fields in declaration order; Kafka (and kraftsim)
  write them in ascending tag order (kafka-facts §4.2; MessageDataGenerator keeps them in a
  TreeMap by tag). The orders differ only for PartitionChangeRecord v2, which declares
  Directories (tag 8) before EligibleLeaderReplicas (6) and LastKnownElr (7). `json_patch`
  moves the tagged fields to the end of each struct, sorted by tag, so that the peer writes
  Kafka's order; the JSON view keeps Kafka's declaration order. No real file has records
  where this matters (the peer re-encodes them identically with or without the patch).
- kafka-python decodes the zero uuid as None and does not write unknown tagged fields back
  (it keeps them in `unknown_tags` on decode); both are accounted for below.
"""

from __future__ import annotations

import base64
import importlib.abc
import importlib.machinery
import importlib.util
import io
import json
import re
import sys
import uuid
import warnings
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftsim.protocol import compression
from kraftsim.protocol.batch import BatchSlice, TornTail, build_batch, parse_batch, split_batches
from kraftsim.protocol.entries import Payload, decode_batch, encode_control_batch, encode_data_batch
from kraftsim.protocol.framing import encode_metadata_record
from kraftsim.protocol.control import encode_control_record
from kraftsim.protocol.json_view import struct_to_json
from kraftsim.protocol.registry import RecordType, default_registry
from kraftsim.testing import strategies as ks

from ._oracle import KAFKA_SCHEMAS, ORACLE, oracle_record_files, rel

if not KAFKA_SCHEMAS.is_dir():
    pytest.skip(f"Kafka's JSON schemas not found at {KAFKA_SCHEMAS}", allow_module_level=True)
kafka = pytest.importorskip("kafka", reason="kafka-python (the peer codec) is not installed")
try:
    from kafka.protocol.api_data import ApiData
    from kafka.protocol.schemas.fields import StructField
    from kafka.protocol.schemas.fields.codecs.encode_buffer import EncodeBuffer
    from kafka.protocol.schemas.fields.codecs.tagged_fields import TaggedFields
    from kafka.protocol.schemas.fields.codecs.types import UUID as PeerUUID
    from kafka.protocol.schemas.fields.codecs.types import Bytes as PeerBytes
    from kafka.protocol.schemas.fields.codecs.types import UnsignedVarInt32
    from kafka.record.memory_records import MemoryRecords
    import kafka.codec as peer_codec
except ImportError as e:  # pragma: no cover - another kafka-python version
    pytest.skip(f"kafka-python {getattr(kafka, '__version__', '?')} lacks the JSON codec used here: {e}",
                allow_module_level=True)
if not hasattr(StructField, "compiled_decode_from"):  # pragma: no cover
    pytest.skip("this kafka-python has no compiled StructField codec (3.0.12 has)", allow_module_level=True)

REGISTRY = default_registry()

# ControlRecordType ids and names (clients/.../record/ControlRecordType.java), and the
# message schema of each KRaft control record. Kept here so the peer side does not
# depend on kraftsim's schema files.
CONTROL_TYPES = {
    2: ("LEADER_CHANGE", "LeaderChangeMessage"),
    3: ("SNAPSHOT_HEADER", "SnapshotHeaderRecord"),
    4: ("SNAPSHOT_FOOTER", "SnapshotFooterRecord"),
    5: ("KRAFT_VERSION", "KRaftVersionRecord"),
    6: ("KRAFT_VOTERS", "VotersRecord"),
}


# ------------------------------------------------------------------------- building the peer


class _SchemaFiles(importlib.abc.TraversableResources):
    def __init__(self, path: Path):
        self.path = path

    def files(self) -> Path:
        return self.path


class _SchemaLoader(importlib.abc.Loader):
    """Serves a plain folder as the resources of a package, for kafka-python's load_json."""

    def __init__(self, path: Path):
        self.path = path

    def create_module(self, spec):  # default module creation
        return None

    def exec_module(self, module) -> None:
        pass

    def get_resource_reader(self, name: str) -> _SchemaFiles:
        return _SchemaFiles(self.path)


SCHEMA_PACKAGE = "_kraftsim_kafka_schemas"
if SCHEMA_PACKAGE not in sys.modules:
    _spec = importlib.machinery.ModuleSpec(SCHEMA_PACKAGE, _SchemaLoader(KAFKA_SCHEMAS), is_package=True)
    _spec.submodule_search_locations = [str(KAFKA_SCHEMAS)]
    sys.modules[SCHEMA_PACKAGE] = importlib.util.module_from_spec(_spec)


def _tag_order_patch(fields: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Record Kafka's declaration order, then move tagged fields last, sorted by tag."""
    for i, f in enumerate(fields):
        f["x-declared"] = i
        if "fields" in f:
            f["fields"] = _tag_order_patch(f["fields"])
        if "tag" in f:
            # Only valid because every tagged KRaft field is tagged in all its versions.
            assert f.get("taggedVersions") == f["versions"], f
    untagged = [f for f in fields if "tag" not in f]
    tagged = sorted((f for f in fields if "tag" in f), key=lambda f: f["tag"])
    return untagged + tagged


def _json_patch(cls, schema: dict[str, Any]) -> dict[str, Any]:
    schema["x-kafka-type"] = schema["type"]
    schema["type"] = "data"  # ApiData only accepts "data"; the codec is the same
    schema["fields"] = _tag_order_patch(schema["fields"])
    return schema


def _peer_class(name: str) -> type:
    with warnings.catch_warnings():
        # kafka-python's load_json uses importlib.resources.read_text, deprecated in 3.11+.
        warnings.simplefilter("ignore", DeprecationWarning)
        return type(ApiData)(name, (ApiData,), {"json_patch": classmethod(_json_patch)}, load_json=SCHEMA_PACKAGE)


class PeerError(Exception):
    """The peer could not decode a body."""


def _uuid_text(value: uuid.UUID | None) -> str:
    raw = b"\x00" * 16 if value is None else value.bytes  # kafka-python reads the zero uuid as None
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _simple_to_json(codec: Any, value: Any) -> Any:
    if codec is PeerUUID:
        return _uuid_text(value)
    if value is None:
        return None
    if codec is PeerBytes:
        return base64.b64encode(bytes(value)).decode("ascii")
    return value


def _fields_to_json(fields, obj: Any, version: int, flexible: bool) -> dict[str, Any]:
    """Contract-2 JSON of a peer struct, from the peer's own (Kafka JSON) field model."""
    out: dict[str, Any] = {}
    for f in sorted(fields, key=lambda f: f._json["x-declared"]):
        if not f.for_version_q(version):
            continue
        value = getattr(obj, f.name)
        if flexible and f.tagged_field_q(version) and value == f.default:
            continue  # a tagged field is shown only when it differs from its default
        key = f._name[:1].lower() + f._name[1:]
        if f.is_struct_array():
            out[key] = None if value is None else [
                _fields_to_json(f.array_of._fields, v, version, flexible) for v in value
            ]
        elif f.is_struct():
            out[key] = None if value is None else _fields_to_json(f._fields, value, version, flexible)
        elif f.is_array():
            out[key] = None if value is None else [_simple_to_json(f.array_of._type, v) for v in value]
        else:
            out[key] = _simple_to_json(f._type, value)
    return out


class PeerType:
    """One record type as kafka-python sees it, from Kafka's JSON schema."""

    def __init__(self, json_name: str):
        raw = (KAFKA_SCHEMAS / f"{json_name}.json").read_text(encoding="utf-8")
        schema = json.loads(re.sub(r"(?m)^\s*//.*\n?", "", raw))
        self.name: str = schema["name"]
        self.api_key: int | None = schema.get("apiKey")
        lo, _, hi = schema["validVersions"].partition("-")
        self.versions = range(int(lo), int(hi or lo) + 1)
        if schema["fields"]:
            self.cls: type | None = _peer_class(json_name)
            self.fields = self.cls._struct._fields
        else:
            # kafka-python's StructField needs at least one field; the body of a record
            # without fields is just its tagged-field section.
            self.cls = None
            self.fields = ()
            self._tagged = TaggedFields([])

    @property
    def type_name(self) -> str:
        """MetadataRecordType's enum name: the record name in upper snake case."""
        return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", self.name).upper()

    def flexible(self, version: int) -> bool:
        return self.cls is None or self.cls.flexible_version_q(version)

    def decode(self, body: bytes, version: int) -> Any:
        if version not in self.versions:
            raise PeerError(f"{self.name} has no version {version}")
        if self.cls is None:
            bio = io.BytesIO(body)
            unknown = self._tagged.decode(bio, version=version)
            if bio.tell() != len(body):
                raise PeerError(f"{len(body) - bio.tell()} byte(s) left after {self.name}")
            return unknown  # {"_<tag>": payload}
        flexible = self.flexible(version)
        fn = self.cls._struct.compiled_decode_from(version, compact=flexible, tagged=flexible, data_class=self.cls)
        obj, pos = fn(memoryview(body), 0)
        if pos != len(body):
            raise PeerError(f"{len(body) - pos} byte(s) left after {self.name}")
        return obj

    def encode(self, obj: Any, version: int) -> bytes:
        if self.cls is None:
            return self._tagged.encode({}, version=version)  # kafka-python drops unknown tags
        flexible = self.flexible(version)
        out = EncodeBuffer(256)
        self.cls._struct.compiled_encode_into(version, compact=flexible, tagged=flexible)(obj, out)
        return bytes(out.result())

    def to_json(self, obj: Any, version: int) -> dict[str, Any]:
        return _fields_to_json(self.fields, obj, version, self.flexible(version))

    def unknown_tags(self, obj: Any) -> dict[str, bytes]:
        tags = obj if self.cls is None else (obj.unknown_tags or {})
        return {k: bytes(v) for k, v in tags.items()}


PEERS = {p.stem: PeerType(p.stem) for p in sorted(KAFKA_SCHEMAS.glob("*.json"))}
PEER_BY_API_KEY = {p.api_key: p for p in PEERS.values() if p.api_key is not None}
PEER_BY_CONTROL_TYPE = {t: PEERS[name] for t, (_, name) in CONTROL_TYPES.items()}


def peer_for(rt: RecordType) -> PeerType:
    if rt.schema.kind == "metadata":
        return PEER_BY_API_KEY[rt.schema.api_key]
    return PEER_BY_CONTROL_TYPE[rt.schema.control_type]


def _read_uvarint(bio: io.BytesIO) -> int:
    return UnsignedVarInt32.decode(bio)


def peer_record(record: Any, control: bool) -> tuple[dict[str, Any], PeerType, bytes, int, Any]:
    """Decode one kafka-python record with the peer: (type/version/data json, peer, body, version, message)."""
    value = bytes(record.value)
    if control:
        # The ControlRecord parsed the key (int16 key version, int16 type); the value is
        # the bare message, whose leading int16 is its version.
        type_name, schema_name = CONTROL_TYPES[record.type]
        peer = PEERS[schema_name]
        version = int.from_bytes(value[:2], "big", signed=True)
        body = value
    else:
        bio = io.BytesIO(value)
        frame_version = _read_uvarint(bio)
        api_key = _read_uvarint(bio)
        version = _read_uvarint(bio)
        if frame_version != 1:
            raise PeerError(f"frame version {frame_version}")
        peer = PEER_BY_API_KEY[api_key]
        type_name = peer.type_name
        body = value[bio.tell():]
    message = peer.decode(body, version)
    view = {"type": type_name, "version": version, "data": peer.to_json(message, version)}
    return view, peer, body, version, message


# --------------------------------------------------------------------- (a) the oracle files

ORACLE_FILES = oracle_record_files()


def test_oracle_is_complete():
    if not ORACLE.is_dir():
        pytest.skip("../shared/oracle is not present")
    assert len(ORACLE_FILES) == 92
    assert sum(p.name == "bootstrap.checkpoint" for p in ORACLE_FILES) >= 15


def _json_text(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False)


@pytest.mark.skipif(not ORACLE_FILES, reason="../shared/oracle is not present")
@pytest.mark.parametrize("path", ORACLE_FILES, ids=[rel(p) for p in ORACLE_FILES])
def test_log_dump_json_agrees_with_kafka_python(path: Path):
    data = path.read_bytes()
    pieces = list(split_batches(data))
    slices = [p for p in pieces if isinstance(p, BatchSlice)]
    torn = [p for p in pieces if isinstance(p, TornTail)]
    peer_batches = list(MemoryRecords(data))
    assert len(peer_batches) == len(slices), "the two readers cut the file into different batches"
    assert not torn  # Kafka's files end on a batch boundary
    records = 0
    for piece, pb in zip(slices, peer_batches):
        batch = parse_batch(piece.data)
        assert pb.validate_crc(), f"kafka-python: bad CRC in batch at offset {pb.base_offset}"
        assert (batch.base_offset, batch.partition_leader_epoch, batch.is_control, batch.base_timestamp) == (
            pb.base_offset, pb.leader_epoch, pb.is_control_batch, pb.first_timestamp)
        entries = decode_batch(batch, REGISTRY)
        peer_records = list(pb)
        assert len(entries) == len(peer_records), f"batch at offset {pb.base_offset}"
        for entry, rec in zip(entries, peer_records):
            view, peer, body, version, message = peer_record(rec, pb.is_control_batch)
            expected = {"offset": rec.offset, "epoch": pb.leader_epoch, "control": pb.is_control_batch, **view}
            got = entry.to_json()
            if got != expected or _json_text(got) != _json_text(expected):  # values, then field order
                pytest.fail(f"{rel(path)} offset {rec.offset}: kraftsim {_json_text(got)}\n"
                            f"{' ' * len(rel(path))}        kafka-python {_json_text(expected)}")
            assert entry.timestamp == rec.timestamp
            # The peer writes the body back byte for byte (so it read all of it) ...
            assert not peer.unknown_tags(message), f"offset {rec.offset}: unknown tagged fields"
            assert peer.encode(message, version) == body, f"offset {rec.offset}: peer re-encode differs"
            # ... and so does kraftsim (contract 1).
            if entry.control:
                assert encode_control_record(entry.record_type, entry.message) == (bytes(rec.key), bytes(rec.value))
            else:
                assert encode_metadata_record(entry.record_type, entry.message, entry.version) == bytes(rec.value)
            records += 1
    assert records == sum(b.records_count for b in map(parse_batch, (s.data for s in slices)))


# ------------------------------------------------------------- (b) random messages, hypothesis

RECORD_VERSIONS = ks.all_record_versions(REGISTRY)
IDS = [f"{rt.name}-v{v}" for rt, v in RECORD_VERSIONS]
PEER_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_peer_knows_every_kraftsim_record_type():
    for rt, version in RECORD_VERSIONS:
        peer = peer_for(rt)
        assert peer.name == rt.name
        assert version in peer.versions
    assert {p.name for p in PEERS.values()} == set(REGISTRY.by_name)


def _strip_unknown(msg: Any) -> Any:
    """The message without unknown tagged fields, at every depth."""
    changes: dict[str, Any] = {"_unknown": ()}
    for name in msg.__struct_fields__:
        value = getattr(msg, name)
        if isinstance(value, msgspec.Struct):
            changes[name] = _strip_unknown(value)
        elif isinstance(value, list) and value and isinstance(value[0], msgspec.Struct):
            changes[name] = [_strip_unknown(v) for v in value]
    return msgspec.structs.replace(msg, **changes)


@pytest.mark.parametrize(("rt", "version"), RECORD_VERSIONS, ids=IDS)
@PEER_SETTINGS
@given(data=st.data())
def test_peer_decodes_kraftsim_bytes_and_writes_them_back(rt: RecordType, version: int, data: st.DataObject):
    peer = peer_for(rt)
    msg = data.draw(ks.messages(rt, version), label="message")
    encoded = rt.encode(msg, version)
    message = peer.decode(encoded, version)
    assert peer.to_json(message, version) == struct_to_json(rt.schema.body, msg, version, True)
    assert peer.encode(message, version) == encoded


@pytest.mark.parametrize(("rt", "version"), RECORD_VERSIONS, ids=IDS)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_peer_sees_kraftsim_unknown_tagged_fields(rt: RecordType, version: int, data: st.DataObject):
    peer = peer_for(rt)
    msg = data.draw(ks.messages(rt, version, unknown_tags=True), label="message")
    encoded = rt.encode(msg, version)
    message = peer.decode(encoded, version)
    assert peer.unknown_tags(message) == {f"_{tag}": payload for tag, payload in msg._unknown}
    assert peer.to_json(message, version) == struct_to_json(rt.schema.body, msg, version, True)
    # kafka-python does not write unknown tags back; without them the bytes agree.
    assert peer.encode(message, version) == rt.encode(_strip_unknown(msg), version)


def test_tagged_fields_are_written_in_tag_order():
    # PartitionChangeRecord declares Directories (tag 8) before EligibleLeaderReplicas (tag 6).
    # Kafka's generated writer sorts tagged fields by tag; so must kraftsim and the peer.
    rt = REGISTRY["PartitionChangeRecord"]
    msg = rt.new(partition_id=3, directories=[], eligible_leader_replicas=[1])
    encoded = rt.encode(msg, 2)
    assert encoded.hex() == (
        "00000003" + "00" * 16  # PartitionId, TopicId
        + "02"  # two tagged fields
        + "06" + "05" + "02" + "00000001"  # tag 6: [1]
        + "08" + "01" + "01"  # tag 8: []
    )
    peer = PEERS["PartitionChangeRecord"]
    assert peer.encode(peer.decode(encoded, 2), 2) == encoded


# ------------------------------------------- batches built by kraftsim, read by kafka-python

PEER_CODECS = {
    compression.NONE: lambda: True,
    compression.GZIP: peer_codec.has_gzip,
    compression.SNAPPY: peer_codec.has_snappy,
    compression.LZ4: peer_codec.has_lz4,
    compression.ZSTD: peer_codec.has_zstd,
}


@pytest.mark.parametrize("codec", [
    pytest.param(c, id=compression.NAMES[c],
                 marks=pytest.mark.skipif(not has(), reason=f"kafka-python has no {compression.NAMES[c]} codec installed"))
    for c, has in sorted(PEER_CODECS.items())
])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    base_offset=st.integers(0, 2**40),
    epoch=st.integers(0, 2**31 - 1),
    timestamp=st.integers(0, 2**45),
    payloads=st.lists(ks.metadata_payloads(REGISTRY), min_size=1, max_size=10),
    control=st.lists(ks.control_payloads(REGISTRY), min_size=1, max_size=3),
)
def test_kafka_python_reads_kraftsim_batches(codec, base_offset, epoch, timestamp, payloads, control):
    values = [(None, encode_metadata_record(p.record_type, p.message, p.version)) for p in payloads]
    data = build_batch(base_offset, values, epoch=epoch, timestamp=timestamp, compression_codec=codec)
    data += encode_control_batch(base_offset + len(payloads), control, epoch=epoch, timestamp=timestamp)
    entries = [e for piece in split_batches(data) for e in decode_batch(parse_batch(piece.data), REGISTRY)]
    peer_batches = list(MemoryRecords(data))
    assert len(peer_batches) == 2
    assert [pb.is_control_batch for pb in peer_batches] == [False, True]
    assert peer_batches[0].compression_type == codec
    got = []
    for pb in peer_batches:
        assert pb.validate_crc()
        for rec in pb:
            view, *_ = peer_record(rec, pb.is_control_batch)
            got.append({"offset": rec.offset, "epoch": pb.leader_epoch, "control": pb.is_control_batch, **view})
    assert got == [e.to_json() for e in entries]


def test_encode_data_batch_matches_kafka_python_builder():
    # kafka-python's own batch builder, given the same records, writes the same bytes
    # (key null, timestamp delta 0, no headers, producer id -1, CREATE_TIME).
    from kafka.record.default_records import DefaultRecordBatchBuilder

    rt = REGISTRY["FeatureLevelRecord"]
    payloads = [Payload(rt, 0, rt.new(name="metadata.version", feature_level=27))] * 3
    ours = encode_data_batch(5, payloads, epoch=1, timestamp=1700000000000)
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i, p in enumerate(payloads):
        builder.append(i, timestamp=1700000000000, key=None,
                       value=encode_metadata_record(p.record_type, p.message, p.version), headers=[])
    theirs = bytearray(builder.build())
    theirs[0:8] = (5).to_bytes(8, "big")  # kafka-python's builder leaves the base offset to the log
    theirs[12:16] = (1).to_bytes(4, "big")  # ... and the partition leader epoch (neither is CRC-covered)
    assert ours == bytes(theirs)
