"""Formatting log directories: Kafka's Formatter (`kafka-storage format`) as functions.

The `kafka-storage` logic is split as Kafka splits it (kafka-facts §7.1): this module is the
Formatter; storage_tool.py is StorageTool (`runFormatCommand`, `infoCommand`);
scram_parser.py, dynamic_voters.py and server_config.py parse its inputs;
bootstrap_builder.py makes the bootstrap records; format_common.py holds what they share.
Error texts are Kafka's, in the order Kafka checks them. It takes a version Catalog (the release line whose
tool it acts as) and a ServerConfig (what Kafka reads from server.properties) and writes
`meta.properties`, `bootstrap.checkpoint` and, for a dynamic quorum, the zero checkpoint
`__cluster_metadata-0/00000000000000000000-0000000000.checkpoint`. No argparse here: the
CLI only turns flags into calls.

Determinism. The only inputs that are not data are time and randomness, and both are
parameters:

- `clock` (milliseconds, asked once per batch as it is started, like Kafka's Time):
  every formatted directory consumes three readings for its bootstrap.checkpoint
  (header, records, footer batch) and, for a dynamic metadata directory, three more for
  the zero checkpoint (its LastContainedLogTimestamp, header batch, footer batch).
  `default_clock()` is SOURCE_DATE_EPOCH × 1000 for every reading when that variable is
  set, else the wall clock; a test can pass `replay_clock(timestamps)` to rewrite a file
  exactly.
- `rng` (a `random.Random`): directory ids (Kafka's Random.nextLong twice), the standalone
  voter's directory id and `random-uuid` (Kafka's Uuid.randomUuid, a version-4 UUID), and
  SCRAM salts (Kafka's ScramFormatter.secureRandomBytes: a 130-bit random number written
  in base 36, as ASCII bytes). Default: `random.SystemRandom()` (os.urandom); pass
  `random.Random(seed)` for reproducible ids.
- the meta.properties date comment: `date`, else SOURCE_DATE_EPOCH, else the clock.

Where Kafka iterates a java.util.HashMap (the order of the per-directory "Formatting" lines,
which formatted directory "already formatted" names, the voter order of VotersRecord), the
order is reproduced from the keys' Java hash codes.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

from kraftsim.errors import KraftsimError
from kraftsim.regular_file import UnreadableFile, require_regular_file
from kraftsim.protocol.entries import Payload
from kraftsim.protocol.primitives import Uuid
from kraftsim.protocol.registry import Registry, default_registry
from kraftsim.storage.batchfile import Clock
from kraftsim.storage.format_layout import write_bootstrap_for, write_zero_checkpoint  # noqa: F401 (re-export)
from kraftsim.storage.bootstrap_builder import (
    bootstrap_metadata_string,
    bootstrap_records,
)
from kraftsim.storage.dynamic_voters import (
    DynamicVoter,
)
from kraftsim.storage.format_common import (
    FORMAT_SOURCE,
    KRAFT_VERSION,
    FormatterError,
    _directory_id_reserved,
    release_text,
    generate_directory_id,
    default_clock,
)
from kraftsim.javacompat import copy_capacity, hash_set_copy_capacity, string_hash_order
from kraftsim.storage.java_properties import load_properties, properties_text
from kraftsim.storage.meta_properties import DateLike, MetaProperties, write_meta_properties
from kraftsim.storage.names import (
    META_PROPERTIES_FILE,
)
from kraftsim.versions import Catalog, MetadataVersion
from kraftsim.versions import FEATURE_NAME as MV_NAME

# ------------------------------------------------------------------------------ the Formatter


@dataclass
class FormatOptions:
    """The settings of Kafka's Formatter (what StorageTool.runFormatCommand sets on it)."""

    node_id: int = -1
    cluster_id: str | None = None
    directories: Sequence[str] = ()
    release_version: MetadataVersion | None = None
    feature_levels: dict[str, int] = field(default_factory=dict)  # from --feature, metadata.version included
    unstable: bool = False
    ignore_formatted: bool = False
    scram_arguments: Sequence[str] = ()
    controller_listener_name: str | None = None
    metadata_log_directory: str | None = None
    initial_controllers: Mapping[int, DynamicVoter] | None = None
    has_dynamic_quorum: bool = False
    ignore_unknown_features: bool = False  # Kafka 3.8 (policy format_flag_checks)
    controller: bool = True  # the node has the controller role (Kafka 4.4 writes bootstrap records only there)
    #: 3.3 and 3.4 refuse a version before 3.3-IV0 as they build the first directory's bootstrap
    #: file, its meta.properties already written (policy format_version_checks).
    bootstrap_refusal: str | None = None


@dataclass(frozen=True)
class FormattedDirectory:
    path: str
    description: str  # "data directory", "metadata directory", "dynamic metadata directory", ...
    directory_id: str
    zero_checkpoint: Path | None


@dataclass
class FormatResult:
    lines: list[str]
    release_version: MetadataVersion
    feature_levels: dict[str, int]  # every effective level, kraft.version included, sorted by name
    bootstrap_records: list[Payload]
    formatted: list[FormattedDirectory]  # in the order they were written


LOG_DIRECTORY = "data directory"
STATIC_METADATA_DIRECTORY = "metadata directory"
DYNAMIC_METADATA_NON_VOTER_DIRECTORY = "dynamic metadata directory"
DYNAMIC_METADATA_VOTER_DIRECTORY = "dynamic metadata voter directory"


def directory_type(log_dir: str, metadata_log_directory: str | None, node_id: int,
                   initial_controllers: Mapping[int, DynamicVoter] | None) -> str:
    """Formatter.DirectoryType.calculate, as its description."""
    if log_dir != (metadata_log_directory or ""):
        return LOG_DIRECTORY
    if initial_controllers is None:
        return STATIC_METADATA_DIRECTORY
    if node_id in initial_controllers:
        return DYNAMIC_METADATA_VOTER_DIRECTORY
    return DYNAMIC_METADATA_NON_VOTER_DIRECTORY


def effective_release_version(catalog: Catalog, opts: FormatOptions) -> MetadataVersion:
    """Formatter.calculateEffectiveReleaseVersion."""
    if MV_NAME in opts.feature_levels:
        if opts.release_version is not None:
            raise FormatterError(f"Use --release-version instead of --feature {MV_NAME}=X to avoid ambiguity.")
        mv = catalog.mv_from_level(opts.feature_levels[MV_NAME])
    elif opts.release_version is not None:
        mv = opts.release_version
    else:
        # 3.9 on, unstable versions enabled make the default the latest testing level; 3.7 and
        # 3.8 keep LATEST_PRODUCTION (policy format_unstable, seen live on 3.7.2 and 3.8.1)
        testing_default = catalog.policy("format_unstable") == "feature-versions"
        return catalog.latest_testing if opts.unstable and testing_default else catalog.latest_production
    mv = catalog.metadata_version(mv.level)  # this line's view of it (production flag)
    if not opts.unstable and not mv.production:
        raise FormatterError(f"{MV_NAME} {mv} is not yet stable.")
    return mv


def effective_feature_levels(catalog: Catalog, opts: FormatOptions, release_version: MetadataVersion) -> dict[str, int]:
    """Formatter.calculateEffectiveFeatureLevels: given levels, then defaults at the release
    version (kraft.version by its own rule), then each level checked against all the others."""
    supported = {f.name: f for f in catalog.production_features}
    levels: dict[str, int] = {}
    for name in sorted(opts.feature_levels):
        if name != MV_NAME and name not in supported:
            if opts.ignore_unknown_features:
                continue
            raise FormatterError(f"Unsupported feature: {name}. Supported features are: {', '.join(sorted(supported))}")
        levels[name] = opts.feature_levels[name]
    levels[MV_NAME] = release_version.level
    for f in catalog.production_features:
        if f.name == KRAFT_VERSION:
            levels[KRAFT_VERSION] = _effective_kraft_level(catalog, levels.get(KRAFT_VERSION), opts.has_dynamic_quorum)
        elif f.name not in levels:
            levels[f.name] = f.default_version(release_version).level
    levels = dict(sorted(levels.items()))
    catalog.validate_levels(levels, opts.unstable)  # metadata.version passes: checked above
    return levels


def _effective_kraft_level(catalog: Catalog, configured: int | None, dynamic: bool) -> int:
    if configured is not None:
        kip853 = release_text(catalog, "format_flag_checks", "kraft_zero" if configured == 0 else "kraft_nonzero")
        if kip853 is not None and (configured == 0) == dynamic:
            raise FormatterError(kip853.format(level=configured))
        if configured == 0 and dynamic:
            raise FormatterError(
                "Cannot set kraft.version to 0 if controller.quorum.voters is empty and one of the flags "
                "--standalone, --initial-controllers, or --no-initial-controllers is used. For dynamic "
                "controllers support, try removing the --feature flag for kraft.version.")
        if configured != 0 and not dynamic:
            raise FormatterError(
                f"Cannot set kraft.version to {configured} unless controller.quorum.voters is empty and one of "
                "the flags --standalone, --initial-controllers, or --no-initial-controllers is used. "
                "For dynamic controllers support, try using one of --standalone, --initial-controllers, "
                "or --no-initial-controllers and removing controller.quorum.voters.")
        return configured
    return 1 if dynamic else 0


@dataclass
class _Ensemble:
    """MetaPropertiesEnsemble as the Loader finds the directories."""

    empty: list[str]  # sorted
    error: list[str]  # sorted
    props: dict[str, MetaProperties]  # sorted by directory


def _load_ensemble(directories: Iterable[str]) -> _Ensemble:
    """MetaPropertiesEnsemble.Loader.load: no meta.properties → empty; unreadable or invalid → error."""
    empty, error, props = [], [], {}
    for d in sorted(set(directories)):
        try:
            require_regular_file(Path(d) / META_PROPERTIES_FILE)  # (a FIFO's open would wait forever)
            raw = (Path(d) / META_PROPERTIES_FILE).read_bytes()
        except FileNotFoundError:  # Java's NoSuchFileException
            empty.append(d)
            continue
        except (OSError, UnreadableFile):
            error.append(d)
            continue
        try:
            props[d] = MetaProperties.from_properties(load_properties(properties_text(raw)))
        except (KraftsimError, ValueError):
            error.append(d)
    return _Ensemble(empty, error, props)


def _ensemble_text(ens: _Ensemble) -> str:
    """MetaPropertiesEnsemble.toString as the storage tool's loader leaves it (no metadata log
    directory named): every directory in sorted order, EMPTY, ERROR or its MetaProperties."""
    state = {d: "EMPTY" for d in ens.empty} | {d: "ERROR" for d in ens.error} | \
        {d: _meta_properties_text(m) for d, m in ens.props.items()}
    dirs = ", ".join(f"{d}: {state[d]}" for d in sorted(state))
    return f"MetaPropertiesEnsemble(metadataLogDir=Optional.empty, dirs={{{dirs}}})"


def _meta_properties_text(meta: MetaProperties) -> str:
    """MetaProperties.toString: the version, then whichever of the ids it holds."""
    parts = [f"version={meta.version}"]
    if meta.cluster_id is not None:
        parts.append(f"clusterId={meta.cluster_id}")
    if meta.node_id is not None:
        parts.append(f"nodeId={meta.node_id}")
    if meta.directory_id is not None:
        parts.append(f"directoryId={meta.directory_id}")
    return f"MetaProperties({', '.join(parts)})"


def _verify_ensemble(ens: _Ensemble, cluster_id: str, node_id: int) -> None:
    """MetaPropertiesEnsemble.verify(clusterId, nodeId, no flags), with its texts."""
    seen: dict[str, str] = {}
    for d, meta in ens.props.items():
        path = os.path.join(d, META_PROPERTIES_FILE)
        if meta.cluster_id is not None and meta.cluster_id != cluster_id:
            raise KraftsimError(f"Invalid cluster.id in: {path}. Expected {cluster_id}, but read {meta.cluster_id}")
        if meta.node_id is not None and meta.node_id != node_id:
            raise KraftsimError(
                f"Stored node id {meta.node_id} doesn't match previous node id {node_id} in {path}. If you moved "
                "your data, make sure your configured node id matches. If you intend to create a new node, you "
                "should remove all data in your data directories.")
        if meta.directory_id is not None:
            if _directory_id_reserved(Uuid.from_string(meta.directory_id)):
                raise KraftsimError(f"Invalid resrved directory ID {meta.directory_id} found in {d}")
            prev = seen.get(meta.directory_id)
            if prev is not None:
                raise KraftsimError(f"Duplicate directory ID Optional[{meta.directory_id}] found. It was the ID of "
                                    f"{prev}, but also of {d}")
            seen[meta.directory_id] = d


def format_directories(catalog: Catalog, opts: FormatOptions, *, clock: Clock | None = None,
                       rng: random.Random | None = None, date: DateLike | None = None, out: Callable[[str], None] = print,
                       registry: Registry | None = None, fsync: bool = True) -> FormatResult:
    """Kafka's Formatter.run(): preconditions, effective versions and bootstrap records, then
    every unformatted directory gets bootstrap.checkpoint (and the zero checkpoint for a
    dynamic metadata directory) and meta.properties. Lines go to `out` as Kafka prints them."""
    clock = clock or default_clock()
    rng = rng or random.SystemRandom()
    registry = registry or default_registry()
    lines: list[str] = []

    def emit(line: str) -> None:
        lines.append(line)
        out(line)

    if opts.node_id < 0:
        raise KraftsimError("You must specify a valid non-negative node ID.")
    if opts.cluster_id is None:
        raise FormatterError("You must specify the cluster id.")
    directories = sorted(set(opts.directories))
    if not directories:
        raise FormatterError("You must specify at least one directory to format")
    if opts.controller_listener_name is None:
        raise FormatterError("You must specify the name of the initial controller listener.")
    if opts.metadata_log_directory is not None and opts.metadata_log_directory not in directories:
        raise FormatterError(f"The specified metadata log directory, {opts.metadata_log_directory} was not one "
                             f"of the given directories: [{', '.join(directories)}]")
    release_version = effective_release_version(catalog, opts)
    levels = effective_feature_levels(catalog, opts, release_version)
    records = bootstrap_records(catalog, release_version, levels, opts.scram_arguments, rng=rng, registry=registry)

    # doFormat
    ens = _load_ensemble(directories)
    _verify_ensemble(ens, opts.cluster_id, opts.node_id)
    if catalog.policy("format_ensemble_line") == "print":  # (3.7.0 and 3.7.1)
        emit(f"metaPropertiesEnsemble={_ensemble_text(ens)}")
    formatted_order = string_hash_order(list(ens.props), initial=copy_capacity(len(ens.props)))  # Copier's HashMap
    if not opts.ignore_formatted and formatted_order:
        raise FormatterError(f"Log directory {formatted_order[0]} is already formatted. "
                             "Use --ignore-formatted to ignore this directory and format the others.")
    if ens.error:
        for d in string_hash_order(ens.error, initial=hash_set_copy_capacity(len(ens.error))):
            emit(f"I/O error trying to read log directory {d}. Ignoring...")
        if not ens.empty and not ens.props:
            raise FormatterError("No available log directories to format.")
    result = FormatResult(lines, release_version, levels, records, [])
    if ens.empty:
        _write_new_directories(catalog, opts, ens, release_version, levels, records, result, emit,
                               clock=clock, rng=rng, date=date, registry=registry, fsync=fsync)
    else:
        emit("All of the log directories are already formatted.")
    return result


def _write_new_directories(catalog: Catalog, opts: FormatOptions, ens: _Ensemble, release_version: MetadataVersion,
                           levels: Mapping[str, int], records: list[Payload], result: FormatResult,
                           emit: Callable[[str], None], *, clock: Clock, rng: random.Random, date: DateLike | None,
                           registry: Registry, fsync: bool) -> None:
    text = catalog.policy("format_text")
    if text == "kind-bootstrap":
        emit("Bootstrap metadata: " + bootstrap_metadata_string(records, release_version.level, FORMAT_SOURCE))
    types: dict[str, str] = {}
    new_props: dict[str, MetaProperties] = {}
    taken = [m.directory_id for m in ens.props.values()]
    with_ids = catalog.policy("meta_properties_directory_id") == "format"  # (3.3-3.6 write none)
    for d in ens.empty:
        types[d] = directory_type(d, opts.metadata_log_directory, opts.node_id, opts.initial_controllers)
        dir_id: object = None
        if types[d] == DYNAMIC_METADATA_VOTER_DIRECTORY:
            dir_id = opts.initial_controllers[opts.node_id].directory_id  # type: ignore[index]
        elif with_ids:
            dir_id = generate_directory_id(rng, taken)
        new_id = None if dir_id is None else str(dir_id)
        taken.append(new_id)
        new_props[d] = MetaProperties(1, opts.cluster_id, opts.node_id, new_id)
    if opts.bootstrap_refusal is not None:  # (3.3/3.4: the first directory's meta.properties, then the refusal)
        first = Path(ens.empty[0])
        _make_directory(first)
        write_meta_properties(first / META_PROPERTIES_FILE, new_props[ens.empty[0]], date=date, fsync=fsync)
        raise FormatterError(opts.bootstrap_refusal)
    # Copier.logDirProps: a HashMap copied from the formatted directories, then the new ones put
    # in sorted order; writeLogDirChanges puts the new ones, in that order, into another HashMap.
    new_in_order = _copier_write_order(list(ens.props), ens.empty)
    for line in _formatting_lines(text, ens, new_in_order, types, release_version):
        emit(line)
    for d in new_in_order:
        path = Path(d)
        _make_directory(path)
        zero = write_bootstrap_for(
            catalog, path, metadata_dir=types[d] != LOG_DIRECTORY, controller=opts.controller,
            dynamic=types[d] in (DYNAMIC_METADATA_VOTER_DIRECTORY, DYNAMIC_METADATA_NON_VOTER_DIRECTORY),
            records=records, voters=opts.initial_controllers or {}, kraft_version=levels.get(KRAFT_VERSION, 0),
            listener_name=opts.controller_listener_name or "", clock=clock, registry=registry, fsync=fsync)
        write_meta_properties(path / META_PROPERTIES_FILE, new_props[d], date=date, fsync=fsync)
        result.formatted.append(FormattedDirectory(d, types[d], new_props[d].directory_id or "", zero))


def _make_directory(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FormatterError(f"Error while writing meta.properties file {path}: {e}") from None


def _copier_write_order(formatted: list[str], new: list[str]) -> list[str]:
    """The order MetaPropertiesEnsemble.Copier writes the new directories in: a HashMap copied
    from the formatted ones with the new ones put in sorted order, whose new entries are put,
    in that order, into another HashMap."""
    all_dirs = string_hash_order([*formatted, *new], initial=copy_capacity(len(formatted)))
    return string_hash_order([d for d in all_dirs if d in set(new)])


def _formatting_lines(text: str, ens: _Ensemble, new_in_order: list[str], types: Mapping[str, str],
                      release_version: MetadataVersion) -> list[str]:
    """The 'Formatting ...' lines of the release's format_text policy (versions/data/policies.toml)."""
    if text in ("kind", "kind-bootstrap"):
        return [f"Formatting {types[d]} {d} with {MV_NAME} {release_version}." for d in new_in_order]
    if text == "dir":
        order = new_in_order
    elif text == "dir-sorted":
        order = list(ens.empty)
    elif text == "dir-repeated":
        # 3.7 ran the copier once per new directory, each time writing every new one so far.
        order = [d for k in range(1, len(ens.empty) + 1)
                 for d in _copier_write_order(list(ens.props), ens.empty[:k])]
    else:
        raise KraftsimError(f"unknown format_text policy value {text!r}")
    return [f"Formatting {d} with {MV_NAME} {release_version}." for d in order]
