"""The protocol fast path: the C extension `_speedups`, its programs, and drop-in functions.

The pure-Python codec (codec.py) generates one Python function per (struct, version). The
fast path compiles the same schemas, with the same rules, into flat "programs" (tuples of
opcodes) that `_speedups` interprets in C, and it moves the per-record loops of the hot
paths (split + CRC-32C + record parsing + framing + message decoding; message encoding +
framing + records + batch header + CRC-32C) into single C calls.

Contract: **same result or no result.** The C code handles the common, valid case. For
anything else (malformed bytes, record headers, values that need more than 64 bits, objects
of unexpected types, ...) it gives up and the pure-Python code runs, which produces the
exact value or raises the exact error it always raised. Error messages therefore come only
from the pure-Python modules.

Switches:

- `HAVE_SPEEDUPS`: the extension imported (it is optional; without a compiler kraftsim
  installs without it).
- `KRAFTSIM_PURE_PYTHON=1` in the environment at import time: never use it.
- `ENABLED` (module attribute, read by the hooks at every call) and `pure_python()` (a
  context manager that turns the fast path off for a block; not thread-safe), so tests can
  compare both paths in one process.

The functions:

- `try_*`: return None when the fast path does not apply; the hooks in batch.py /
  entries.py / framing.py / codec.py call these and go on with the pure code on None.
- `provide_types`: batch.py, entries.py and framing.py hand their NamedTuple classes to
  the C module when they define them, so this module imports none of them.

The drop-ins and the whole-buffer reader and writer (`read_log_entries`,
`iter_log_entries`, `encode_batches`) that sit above those modules live in batch_io.py.

Differences from the pure path that are not values:

- Equal Uuids decoded by C may be one shared object (Uuids are immutable).
- Messages of a msgspec Struct class that only stores its fields (gc=False, no
  `__post_init__`, the shipped classes) are built by filling a new instance's slots, as
  the class's own constructor would, without calling it; other classes are called.
- The lists inside decoded messages and the LogEntry / Record tuples built by C are not
  tracked by the cycle collector (like the gc=False message Structs they belong to), and
  the collector is paused during one C decode call: this keeps collections from scanning
  millions of young containers. A cycle a user later builds through such a list is not
  collected. `_speedups.configure(untrack=False)` restores tracking.
- A large decode (`read_log_entries` of more than 4 MiB) asks the kernel for the pages of
  each new allocator arena in one call (Linux's MADV_POPULATE_WRITE) instead of one page
  fault per page, and the batch encoders do the same for every output buffer of 64 KiB
  or more; `_speedups.configure(populate=False)` turns both off.
- Up to ARENA_CACHE arenas that Python's small-object allocator frees are kept mapped
  and reused (`_speedups.configure(arena_cache=N)`; 0 gives them back): decoding a
  batch of 70,000 records and dropping them otherwise maps, faults in and unmaps ~40 MiB
  per batch, system time as large as the decode itself. The cost: up to ARENA_CACHE MiB
  of freed memory stays resident.
- Programs are cached per codec and per record type (a `_kraftsim_fastpath` attribute on
  the RecordType). A RecordType subclass that overrides `encoder`/`decoder` is bypassed by
  the batch paths; use the pure functions for such types.
"""

from __future__ import annotations

import contextlib
import os
import weakref
from typing import Any, Callable, Iterator, NamedTuple, Protocol, Sequence

from kraftsim.protocol import compression
from kraftsim.protocol.primitives import Uuid
from kraftsim.protocol.schema import MAX_VERSION, FieldSpec, StructSpec, VersionRange

try:  # the extension is optional
    from kraftsim.protocol import _speedups
except ImportError:  # pragma: no cover - exercised only on installs without a compiler
    # Typed as the module: the functions below use it only when HAVE_SPEEDUPS / ENABLED say it is there.
    _speedups = None  # type: ignore[assignment]
_c = _speedups  # the name batch_io.py and the tests use

# The signatures of a codec's functions (codec.py generates them; FastDecoder/FastEncoder wrap them).
Decoder = Callable[[bytes, int], tuple[Any, int]]
Encoder = Callable[[Any, bytearray], None]

HAVE_SPEEDUPS: bool = _c is not None
FORCED_PURE: bool = os.environ.get("KRAFTSIM_PURE_PYTHON", "").strip().lower() not in ("", "0", "false", "no")
ENABLED: bool = HAVE_SPEEDUPS and not FORCED_PURE

#: Freed allocator arenas (1 MiB each on 64-bit CPython) the extension keeps mapped for reuse.
ARENA_CACHE = 64

if _c is not None:
    _c.configure(uuid=Uuid, arena_cache=ARENA_CACHE if ENABLED else 0)
    _c.set_enabled(ENABLED)

# The C module's type codes (its T_BOOL ... T_BYTES constants) by schema type name.
_TYPE_CODES: dict[str, int] = {} if _c is None else {
    t: getattr(_c, "T_" + t.upper())
    for t in ("bool", "int8", "int16", "int32", "int64", "uint16", "uint32", "float64", "uuid", "string", "bytes")
}

#: `tuple` of a list; the C extension's `untracked_tuple` where it is there: the same tuple,
#: taken off the cycle collector's lists at once when none of its items can be tracked
#: (CPython's own rule, otherwise applied when a collection first walks the tuple). For the
#: value chunks of pmap.ChunkMap. Chosen at import; equal results either way.
untracked_tuple: Callable[[list[Any]], tuple[Any, ...]] = (
    getattr(_c, "untracked_tuple", tuple) if HAVE_SPEEDUPS and not FORCED_PURE else tuple)


#: pmap.ChunkMap.updated's new value chunks made in C (`chunks_updated(positions, chunks,
#: changes, chunk_bits)`, None where the Python code must run), or None without the extension.
chunks_updated: Callable[[dict[Any, int], tuple[tuple[Any, ...], ...], Any, int],
                         tuple[tuple[Any, ...], ...] | None] | None = (
    getattr(_c, "chunks_updated", None) if HAVE_SPEEDUPS and not FORCED_PURE else None)


#: pmap.ChunkMap.of made in C for a dict keyed 0..n-1 in order, once pmap holds the shared
#: positions for n (`dense_chunk_map(items, chunk_bits)`: the ChunkMap provide_maps registered,
#: or None where the Python code must run), or None without the extension.
dense_chunk_map: Callable[[Any, int], Any] | None = (
    getattr(_c, "dense_chunk_map", None) if HAVE_SPEEDUPS and not FORCED_PURE else None)


class PartitionPaths(NamedTuple):
    """The C builders of partition registrations (image/components/partition.py)."""

    #: merge(registration, change): PartitionRegistration.merge's usual case, or None.
    merge: Callable[[Any, Any], Any]
    #: from_record(record): a PartitionRecord's usual shape as a registration, or None.
    from_record: Callable[[Any], Any]


def partition_paths(cls: type, int_tuples: dict[Any, Any], uuid_tuples: dict[Any, Any],
                    migrating_by_count: tuple[Any, ...]) -> PartitionPaths | None:
    """The C extension's partition builders, set to build `cls` (the registration class,
    whose field order they check) from the interned tuples in `int_tuples` and
    `uuid_tuples` (intern.py's tables, read, never written: a tuple not there yet makes
    them answer None, and the Python code interns it) and `migrating_by_count[n]` for n
    replicas without directories. None without the extension or when `cls` cannot be built
    by filling its slots."""
    configure = getattr(_c, "configure_partitions", None) if HAVE_SPEEDUPS and not FORCED_PURE else None
    if configure is None or not configure(cls, int_tuples, uuid_tuples, migrating_by_count):
        return None
    return PartitionPaths(_c.partition_merge, _c.partition_from_record)


def set_enabled(flag: bool) -> bool:
    """Turn the fast path on or off for the whole process; returns the previous setting."""
    global ENABLED
    old = ENABLED
    ENABLED = bool(flag) and HAVE_SPEEDUPS and not FORCED_PURE
    if _c is not None:
        _c.set_enabled(ENABLED)
    return old


@contextlib.contextmanager
def pure_python() -> Iterator[None]:
    """Run a block on the pure-Python code only (for tests and comparisons)."""
    old = set_enabled(False)
    try:
        yield
    finally:
        set_enabled(old)


# ----------------------------------------------------------------------------- programs


def _layout_boundaries(spec: StructSpec, flexible_versions: VersionRange, versions: VersionRange) -> list[int]:
    """Versions at which some rule the codec looks at may change (sorted, starts at 0).

    A program depends on the version only through range memberships (field present,
    tagged, nullable; flexible), so versions between two boundaries share one program.
    """
    points = {0}

    def add(r: VersionRange) -> None:
        if r.empty:
            return
        points.add(r.lo)
        if r.hi < MAX_VERSION:
            points.add(r.hi + 1)

    seen: set[int] = set()

    def walk(s: StructSpec) -> None:
        if id(s) in seen:
            return
        seen.add(id(s))
        for f in s.fields:
            add(f.versions)
            add(f.nullable_versions)
            add(f.tagged_versions)
            if f.struct is not None:
                walk(f.struct)

    add(flexible_versions)
    add(versions)
    walk(spec)
    return sorted(points)


class _Compiler:
    """Builds programs for one root struct (a record type or a codec), memoizing nested ones."""

    def __init__(self, nested: dict[str, type]):
        self.nested = nested
        self.memo: dict[tuple[str, int, bool, int], _c.Program] = {}

    def program(self, spec: StructSpec, version: int, flexible: bool, cls: type) -> _c.Program:
        key = (spec.name, version, flexible, id(cls))
        prog = self.memo.get(key)
        if prog is None:
            prog = self.memo[key] = _c.Program(self.spec_tuple(spec, version, flexible, cls))
        return prog

    def spec_tuple(self, spec: StructSpec, version: int, flexible: bool, cls: type) -> tuple[Any, ...]:
        names = tuple(f.py_name for f in spec.fields) + ("_unknown",)
        fields_of_cls = getattr(cls, "__struct_fields__", None)
        if fields_of_cls is not None and tuple(fields_of_cls) != names:
            raise TypeError(f"{cls!r}: fields {fields_of_cls} do not match the schema's {names}")
        slot = {f.name: i for i, f in enumerate(spec.fields)}
        untagged, tagged = spec.wire_fields(version, flexible)
        untagged_names = {f.name for f in untagged}

        def op(f: FieldSpec) -> tuple[int, int, int, int, _c.Program | None]:
            # Rules the programs do not carry: the generated Python code handles these.
            if f.flexible_versions is not None:
                raise TypeError(f"{f.name}: a field with its own flexible versions")
            if f.struct is not None and not f.is_array and f.tagged_in(version):
                raise TypeError(f"{f.name}: a tagged struct field")
            if f.struct is not None and not f.is_array and f.nullable_in(version):
                raise TypeError(f"{f.name}: a nullable struct field")
            sub: _c.Program | None
            if f.struct is not None:
                code = _c.T_STRUCT
                sub = self.program(f.struct, version, flexible, self.nested[f.struct.name])
            else:
                code = _TYPE_CODES[f.element_type]
                sub = None
            return (slot[f.name], code, int(f.is_array), int(f.nullable_in(version)), sub)

        untagged_ops = tuple(op(f) for f in untagged)
        tagged_ops = tuple((f.tag, *op(f), int(f.null_default), f.default_value()) for f in tagged)
        # What codec._gen_decoder assigns to every field it does not read in order.
        defaults: list[tuple[int, int, Any]] = []
        for f in spec.fields:
            if f.name in untagged_names:
                continue
            default = f.default_value()
            if isinstance(default, list):
                defaults.append((slot[f.name], 2, tuple(default)))
            elif f.struct is not None and not f.is_array and default is None:
                defaults.append((slot[f.name], 1, self.nested[f.struct.name]))
            else:
                defaults.append((slot[f.name], 0, default))
        # What codec._gen_encoder compares absent fields against.
        absent = tuple((slot[f.name], f.default_value()) for f in spec.fields if not f.present_in(version) and not f.ignorable)
        return (cls, bool(flexible), names, untagged_ops, tagged_ops, tuple(defaults), absent)


class CompiledCodec(Protocol):
    """What a program is compiled from: a codec.StructCodec (this module does not import codec)."""

    spec: StructSpec
    cls: type
    nested: dict[str, type]

    def flexible(self, version: int) -> bool: ...


# Per codec (StructCodec): its compiler and programs by version. Weak keys: the values
# hold classes and programs, never the codec itself.
_CODEC_STATE: "weakref.WeakKeyDictionary[CompiledCodec, tuple[_Compiler, dict[int, _c.Program]]]" = weakref.WeakKeyDictionary()


def program_for_codec(codec: CompiledCodec, version: int) -> _c.Program:
    """The program of a codec.StructCodec at one version."""
    state = _CODEC_STATE.get(codec)
    if state is None:
        state = _CODEC_STATE[codec] = (_Compiler(codec.nested), {})
    compiler, by_version = state
    prog = by_version.get(version)
    if prog is None:
        prog = by_version[version] = compiler.program(codec.spec, version, bool(codec.flexible(version)), codec.cls)
    return prog


def wrap_decoder(codec: CompiledCodec, version: int, pure: Decoder) -> Decoder:
    """A decoder with the pure one's signature `(buf, pos) -> (message, pos)`, in C."""
    if not HAVE_SPEEDUPS or FORCED_PURE:
        return pure
    try:
        return _c.FastDecoder(program_for_codec(codec, version), pure)
    except Exception:  # a schema/class combination the programs cannot express
        return pure


def wrap_encoder(codec: CompiledCodec, version: int, pure: Encoder) -> Encoder:
    """An encoder with the pure one's signature `(message, out: bytearray) -> None`, in C."""
    if not HAVE_SPEEDUPS or FORCED_PURE:
        return pure
    try:
        return _c.FastEncoder(program_for_codec(codec, version), pure)
    except Exception:
        return pure


# Per record type: (api_key, lo, hi, programs), programs[v] for v < len and programs[-1]
# for every later version (no rule changes after the last boundary).
_RecordState = tuple[int, int, int, tuple["_c.Program | None", ...]]
_RT_STATE: "weakref.WeakKeyDictionary[Any, _RecordState | None]" = weakref.WeakKeyDictionary()


def _record_state(rt: Any) -> _RecordState | None:
    try:
        return _RT_STATE[rt]
    except KeyError:
        pass
    except TypeError:  # not weak-referenceable: not a RecordType
        return None
    try:
        schema = rt.schema
        versions = schema.versions
        flexible = schema.flexible_versions
        bounds = _layout_boundaries(schema.body, flexible, versions)
        programs: list[_c.Program | None] = []
        for v in range(bounds[-1] + 1):
            if v in versions:
                programs.append(program_for_codec(rt.codec, v))
            else:
                programs.append(None)
        api_key = schema.api_key if schema.kind == "metadata" and isinstance(schema.api_key, int) else -1
        state: _RecordState | None = (api_key, versions.lo, versions.hi, tuple(programs))
    except Exception:
        state = None
    _RT_STATE[rt] = state
    return state


_ATTR = "_kraftsim_fastpath"


def _resolve(rt: Any) -> tuple[Any, ...] | None:
    """Called by the C encoder for a record type it has not seen: its (rt, api_key, lo, hi, programs).

    The answer is also cached on the RecordType instance (attribute `_kraftsim_fastpath`)
    where the C code looks first, so later calls skip this function.
    """
    state = _record_state(rt)
    if state is None or state[0] < 0:
        return None
    entry = (rt, *state)
    try:
        rt.__dict__[_ATTR] = entry
    except (AttributeError, TypeError):  # no instance dict: the C side caches per call only
        pass
    return entry


_TABLE_ATTR = "_kraftsim_decode_table"


def decode_table(registry: Any) -> list[Any]:
    """The C decoder's view of a Registry: a list indexed by apiKey of record-type entries.

    Cached per registry. A Registry counts its changes (`generation`), so its table is
    kept on it (attribute `_kraftsim_decode_table`) and checked in constant time: this
    runs for every record `framing.decode_metadata_record` decodes.
    """
    generation = registry.generation
    cached: tuple[int, list[Any]] | None = registry.__dict__.get(_TABLE_ATTR)
    if cached is not None and cached[0] == generation:
        return cached[1]
    by_key = registry.by_api_key
    size = max((k for k in by_key if isinstance(k, int) and 0 <= k <= 0x7FFF), default=-1) + 1
    table: list[Any] = [None] * size
    for key, rt in by_key.items():
        if not (isinstance(key, int) and 0 <= key <= 0x7FFF):
            continue
        state = _record_state(rt)
        if state is not None and state[0] == key:
            table[key] = (rt, *state)
    registry.__dict__[_TABLE_ATTR] = (generation, table)
    return table


def _kafka_partition_record_layout(version: int) -> tuple[tuple[tuple[str, str, object], ...], ...]:
    """Kafka's PartitionRecord at `version` (0-2) as the C decoder's PrebuiltPartition builder
    reads it (`_speedups.c`, pb_build): the untagged fields (name, type, nullable) in wire
    order, then the tagged ones (name, type, tag)."""
    untagged = (("PartitionId", "int32", False), ("TopicId", "uuid", False), ("Replicas", "[]int32", False),
                ("Isr", "[]int32", False), ("RemovingReplicas", "[]int32", False),
                ("AddingReplicas", "[]int32", False), ("Leader", "int32", False), ("LeaderEpoch", "int32", False),
                ("PartitionEpoch", "int32", False)) + ((("Directories", "[]uuid", False),) if version >= 1 else ())
    tagged = (("LeaderRecoveryState", "int8", 0),) + (
        (("EligibleLeaderReplicas", "[]int32", 1), ("LastKnownElr", "[]int32", 2)) if version >= 2 else ())
    return untagged, tagged


_PREBUILT_ATTR = "_kraftsim_prebuilt_type"


def _reads_as_kafka_partition_record(rt: Any) -> bool:
    """Whether `rt` lays out every version it shares with 0-2 as Kafka's PartitionRecord does,
    with Kafka's defaults for what a record may leave out (the builder assumes them: a
    recovery state of 0, no directories, no ELR)."""
    schema = rt.schema
    if schema.kind != "metadata" or schema.api_key != 3:
        return False
    for v in range(3):
        if v not in schema.versions:
            continue
        if v not in schema.flexible_versions:
            return False
        untagged, tagged = schema.body.wire_fields(v, True)
        if (tuple((f.name, f.type, f.nullable_in(v)) for f in untagged),
                tuple((f.name, f.type, f.tag) for f in tagged)) != _kafka_partition_record_layout(v):
            return False
        left_out = {f.name: f.default_value() for f in schema.body.fields if f.tagged_in(v) or not f.present_in(v)}
        if left_out.pop("LeaderRecoveryState", 0) != 0 or any(d not in (None, []) for d in left_out.values()):
            return False
    return True


def prebuilt_record_type(registry: Any) -> Any:
    """The registry's PartitionRecord type when the C decoder may build its records into
    registrations (its versions 0-2 are laid out as Kafka's), else None. Cached per
    registry, as decode_table."""
    generation = registry.generation
    cached: tuple[int, Any] | None = registry.__dict__.get(_PREBUILT_ATTR)
    if cached is not None and cached[0] == generation:
        return cached[1]
    rt = registry.by_api_key.get(3)
    try:
        found = rt if rt is not None and _reads_as_kafka_partition_record(rt) else None
    except AttributeError:  # (not a RecordType with a schema)
        found = None
    registry.__dict__[_PREBUILT_ATTR] = (generation, found)
    return found


# ----------------------------------------------------------------------------- setup


def provide_types(**types: Any) -> None:
    """Hand a value class (record, log_entry, payload, metadata_record) to the C module.

    batch.py, entries.py and framing.py call this when they define their NamedTuples, so
    this module never imports them (the hook modules import it, not the reverse).
    """
    if _c is not None:
        _c.configure(**types)


# ----------------------------------------------------------------------------- try_* (for hooks)


def try_parse_records(body: bytes, count: int) -> list[Any] | None:
    """batch.parse_records in C, or None (anomaly or headers: let Python parse)."""
    if not ENABLED:
        return None
    return _c.parse_records(body, count)


def try_decode_batch(batch: Any, registry: Any, prebuilt: bool = False) -> list[Any] | None:
    """entries.decode_batch for a data batch in C, or None (control batch, anomaly);
    `prebuilt`: entries.decode_batch_prebuilt's (PrebuiltPartitions where it can)."""
    if not ENABLED or batch.attributes & 0x20:
        return None
    table = decode_table(registry)
    build = prebuilt_record_type(registry) if prebuilt else None
    codec = batch.attributes & 0x07
    body, start = batch.raw, 61
    if codec:
        try:
            body, start = compression.decompress(codec, body[61:]), 0
        except Exception:
            return None  # the pure path raises the same error
    return _c.decode_records(body, start, len(body), batch.records_count, batch.base_offset,
                             batch.partition_leader_epoch, batch.base_timestamp, table, build)


def try_decode_metadata_record(registry: Any, value: bytes) -> Any:
    """framing.decode_metadata_record in C, or None."""
    if not ENABLED:
        return None
    return _c.decode_framed(value, decode_table(registry))


def try_encode_values(payloads: Sequence[Any]) -> list[bytes] | None:
    """[framing.encode_metadata_record(p.record_type, p.message, p.version) for p in payloads] in C, or None."""
    if not ENABLED:
        return None
    return _c.encode_values(payloads, _resolve)


def try_encode_value_batch(base_offset: int, values: Sequence[bytes], epoch: int, timestamp: int) -> bytes | None:
    """batch_io.encode_value_batch in C, or None (also from an extension built before it existed)."""
    encode = getattr(_c, "encode_value_batch", None) if ENABLED else None
    if encode is None:
        return None
    return encode(base_offset, values, epoch, timestamp)  # type: ignore[no-any-return]


def try_changed_positions(new: list[Any], old: list[Any], twins: list[Any]) -> tuple[list[int], list[Any]] | None:
    """writer.components.topics.changed_positions in C, or None."""
    changed = getattr(_c, "changed_positions", None) if ENABLED else None
    if changed is None:
        return None
    return changed(new, old, twins)  # type: ignore[no-any-return]


def try_partition_values(payload: Any, topic_id: Uuid, pids: list[int] | None, registrations: list[Any],
                         positions: list[int] | None, directories: bool) -> list[bytes] | None:
    """writer.components.topics' framed PartitionRecord values in C, or None: one per
    registration at `positions` (None: all), of partition `pids[i]` (`pids` None: i) of topic
    `topic_id`. `payload`: Payload(PartitionRecord type, version, a record the C code fills
    per partition); `directories`: the target holds replica directories. None when the fast
    path is off or any partition is not the usual case (the writer's Python loop then runs
    and reports what it loses)."""
    values = getattr(_c, "partition_values", None) if ENABLED else None
    if values is None:
        return None
    return values(payload, topic_id, pids, registrations, positions, directories, _resolve)  # type: ignore[no-any-return]


def try_values_records_size(values: Sequence[bytes], first_delta: int) -> int | None:
    """batchfile.records_size of the values' lengths in C, or None."""
    size = getattr(_c, "values_records_size", None) if ENABLED else None
    if size is None:
        return None
    return size(values, first_delta)  # type: ignore[no-any-return]


def try_partition_chunk_canon(chunk: Sequence[Any], first: int) -> bytes | None:
    """image.verification.digest's canonical bytes of a ChunkMap chunk of partition
    registrations (partition ids first, first + 1, ...) in C, or None."""
    chunk_canon = getattr(_c, "partition_chunk_canon", None) if ENABLED else None
    if chunk_canon is None:
        return None
    return chunk_canon(chunk, first)  # type: ignore[no-any-return]


def try_encode_data_batch(base_offset: int, payloads: Sequence[Any], epoch: int, timestamp: int) -> bytes | None:
    """entries.encode_data_batch in C, or None."""
    if not ENABLED:
        return None
    return _c.encode_data_batch(base_offset, payloads, epoch, timestamp, _resolve)


#: The per-topic loop `ri_records` runs for each topic of an index answer (see try_leader_isr_records).
LeaderIsrRecords = Callable[[list[Any], tuple[Any, ...], Any, dict[Any, Any], Any, Any, int, int], "int | None"]


def try_leader_isr_records() -> LeaderIsrRecords | None:
    """The C loop of leader_and_isr_updates' common partitions of one topic
    (`leader_isr_records(out, fixed, topic_id, made, chunks, parts, mask, start)`, documented
    in _speedups.c), or None (fast path off). `ri_records` runs it for each topic of an index
    answer (IndexedPartitions.records_walk); exposed for the tests that hold it to the Python
    loop record by record."""
    return getattr(_c, "leader_isr_records", None) if ENABLED else None


#: What image/bulk.py's replay loop calls for a run of partition records (see try_bulk_replay_run).
BulkReplayRun = Callable[[Any, Iterator[Any], list[Any], Any, Any, Callable[[Any], Any], Callable[[Any], Any], Any,
                          int, Any, Callable[[Any], Any], "dict[Any, Any] | None"], Any]


def try_bulk_replay_run() -> BulkReplayRun | None:
    """The C loop of bulk replay's runs of PartitionChangeRecords, PartitionRecords and
    TopicRecords (`br_replay_run(record, it, state, change_type, partition_type, to_change,
    to_partition, end, chunk_bits, topic_type, to_topic, changed)`, documented in _speedups.c), or None (fast path off, or an extension
    built before it existed): the Python loop then replays every record. Asked once per
    replay."""
    return getattr(_c, "br_replay_run", None) if ENABLED else None


#: What controller/replica_index.py's follow calls once per delta (see try_ri_follow).
RiFollow = Callable[[tuple[Any, ...], tuple[Any, ...], dict[Any, Any], Any, Any, Any], "list[Any] | None"]


def try_ri_follow() -> RiFollow | None:
    """The C loop of ReplicaIndex.follow's changed topics (`ri_follow(fixed, state,
    known, new_by_id, changed, deleted)`, documented in _speedups.c), or
    None (fast path off, or an extension built before it existed): the Python loop then
    follows every topic."""
    return getattr(_c, "ri_follow", None) if ENABLED else None


#: What controller/replica_index.py's IndexedPartitions.records_walk calls (see try_ri_records).
RiRecords = Callable[[list[Any], tuple[Any, ...], list[Any], dict[Any, Any], dict[Any, Any], type, dict[Any, Any], Any,
                      Any, int, int], "tuple[Any, ...] | None"]


def try_ri_records() -> RiRecords | None:
    """The C loop of leader_and_isr_updates over a whole replica index answer
    (`ri_records(out, fixed, order, masks, known, chunk_map, dense, enter, plain, at, start)`,
    documented in _speedups.c), or None (fast path off, or an extension built before it existed)."""
    return getattr(_c, "ri_records", None) if ENABLED else None


#: pmap.hash_uuid in C (`uuid_hash(value)`: `hash(int.from_bytes(value, "big"))` without the
#: int, the same number), or None without the extension. Chosen at import: a PMap keeps its
#: hash function, so the choice must not change under it.
uuid_hash: Callable[[bytes], int] | None = (
    getattr(_c, "uuid_hash", None) if HAVE_SPEEDUPS and not FORCED_PURE else None)

#: pmap.hash_str in C (`str_hash(value)`: the CRC-32 of the UTF-8 bytes, spread to 64 bits,
#: the same number), or None without the extension; chosen at import, as uuid_hash.
str_hash: Callable[[str], int] | None = (
    getattr(_c, "str_hash", None) if HAVE_SPEEDUPS and not FORCED_PURE else None)

#: What controller/replica_index.py's ensure calls to build the index (see try_ri_add_topics).
RiAddTopics = Callable[[tuple[Any, ...], tuple[Any, ...], list[Any], int], "int | None"]


def try_ri_add_topics() -> RiAddTopics | None:
    """The C loop of ReplicaIndex.ensure over a whole topics image (`ri_add_topics(fixed,
    state, items, at)`, documented in _speedups.c), or None (fast path
    off, or an extension built before it existed): the Python loop then adds every topic."""
    return getattr(_c, "ri_add_topics", None) if ENABLED else None


def try_partition_chunks_canon(chunks: tuple[Any, ...], chunk_bits: int,
                               cache: dict[int, Any] | None) -> bytes | None:
    """image.verification.digest's canonical bytes of a dense topic's chunks joined (its
    `_topic_hash` loop), each chunk through `cache` (DigestCache's chunks) when given, in C;
    or None (fast path off, an extension built before it existed, or a chunk it declines)."""
    chunks_canon = getattr(_c, "partition_chunks_canon", None) if ENABLED else None
    if chunks_canon is None:
        return None
    return chunks_canon(chunks, chunk_bits, cache)  # type: ignore[no-any-return]


#: What try_write_topics answers: where it stopped, and how many partitions it encoded and reused.
WrittenTopics = tuple[int, int, int]


def try_write_topics(topics: list[Any], start: int, kept: dict[Uuid, Any], fresh: dict[Uuid, Any], out: list[bytes],
                     written: type, chunk_map: type, payload: Any, directories: bool) -> WrittenTopics | None:
    """writer.components.topics.write_values' loop over `topics` from `start` in one C call,
    for its usual topics (`kept`: the last write's, as `written`; kept whole, or a changed
    dense `chunk_map` compared chunk by chunk with its kept chunks, the changed
    partitions encoded as try_partition_values does, `payload` and `directories` its
    arguments), filling `fresh` and `out` as the loop does, up to the first other topic: its
    position (len(topics) when done), with the partitions encoded and reused. None when the
    fast path is off or the extension predates it (the loop then runs)."""
    loop = getattr(_c, "tw_write_topics", None) if ENABLED else None
    if loop is None:
        return None
    return loop(topics, start, kept, fresh, out, written, chunk_map, payload,  # type: ignore[no-any-return]
                directories, _resolve)


#: What try_pmap_update answers: the new root and the change of size.
PmapUpdated = tuple[Any, int]


def try_pmap_update(root: Any, changes: list[tuple[int, Any, Any]], delete: Any, empty: dict[Any, Any],
                    split: Callable[[dict[Any, Any], int, Callable[[Any], int]], Any],
                    hash_fn: Callable[[Any], int]) -> PmapUpdated | None:
    """image.pmap._update(root, 0, changes, hash_fn) in one C call, the same nodes built the
    same way (`delete` and `empty` pmap's DELETE and empty leaf, `split` its _split). None when
    the fast path is off, the extension predates it, or the trie holds anything unusual (the
    Python recursion then runs)."""
    update = getattr(_c, "pm_update", None) if ENABLED else None
    if update is None:
        return None
    return update(root, changes, delete, empty, split, hash_fn)  # type: ignore[no-any-return]


#: PMap.update on the empty map in C (`pmap_build(changes, delete, empty, hash_fn)`: (root, size),
#: the nodes image/pmap.py's `_build` makes; None where its Python code must run), or None
#: without the extension.
pmap_build: Callable[[Any, Any, Any, Callable[[Any], int]], tuple[Any, int] | None] | None = (
    getattr(_c, "pm_build", None) if HAVE_SPEEDUPS and not FORCED_PURE else None)


#: PMap.get's walk in C (`pmap_get(pm, key, default)`: the value or `default`; NotImplemented
#: where image/pmap.py's Python body must run: the fast path off, anything unusual), or None
#: without the extension. Why: PMap.get is called once per topic of every delta.
pmap_get: Callable[[Any, Any, Any], Any] | None = (
    getattr(_c, "pmap_get", None) if HAVE_SPEEDUPS and not FORCED_PURE else None)


def provide_maps(pmap_cls: type, chunk_map_cls: type) -> bool:
    """Hand image/pmap.py's PMap and ChunkMap classes to the C module, whose loops then read a
    ChunkMap's dense chunks and look PMap keys up from the slots, without a Python call per
    topic (other classes, or a class whose methods were replaced, still get the call). False
    without the extension or when the classes are not laid out as expected."""
    register = getattr(_c, "map_readers", None) if HAVE_SPEEDUPS and not FORCED_PURE else None
    return register is not None and bool(register(pmap_cls, chunk_map_cls))


#: The C module's CRC-32C, which takes any buffer (a memoryview slice: no copy of the bytes it
#: covers), or None without the extension (google_crc32c takes bytes only).
crc32c_buffer: Callable[[bytes | bytearray | memoryview], int] | None = (
    getattr(_c, "crc32c", None) if HAVE_SPEEDUPS and not FORCED_PURE else None)


#: The C module's writer of (fd, bytes, position) items in order without the GIL
#: (storage.background_writes), or None without it.
pwrite_each: Callable[[list[tuple[Any, ...]], int], tuple[int, int, int]] | None = (
    getattr(_c, "pwrite_each", None) if HAVE_SPEEDUPS and not FORCED_PURE else None)


def crc32c(data: bytes) -> int:
    """CRC-32C of a bytes-like object (hardware instruction when available)."""
    if _c is not None:
        return _c.crc32c(data)
    import google_crc32c

    value: int = google_crc32c.value(bytes(data))
    return value


def info() -> dict[str, object]:
    """What is in use, for reports and benchmarks."""
    facts: dict[str, object] = {"have_speedups": HAVE_SPEEDUPS, "forced_pure": FORCED_PURE, "enabled": ENABLED}
    if _c is not None:
        facts.update(_c.info())
    return facts
