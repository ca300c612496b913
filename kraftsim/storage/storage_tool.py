"""Kafka's StorageTool commands as functions: `format` (runFormatCommand: checks, then the
Formatter), `info`, and standalone voters; with Kafka's texts and exit rules."""

from __future__ import annotations

import os
import random
import re
from pathlib import Path
from typing import Callable, Iterable, Sequence

from kraftsim.errors import KraftsimError
from kraftsim.regular_file import require_regular_file
from kraftsim.protocol.registry import Registry
from kraftsim.storage.batchfile import Clock
from kraftsim.storage.dynamic_voters import (
    DynamicVoter,
    parse_dynamic_voters,
)
from kraftsim.storage.format_common import (
    KRAFT_VERSION,
    QUORUM_BOOTSTRAP_SERVERS,
    QUORUM_VOTERS,
    release_text,
)
from kraftsim.javacompat import random_uuid
from kraftsim.storage.formatter import (
    FormatOptions,
    FormatResult,
    format_directories,
)
from kraftsim.storage.java_properties import load_properties, properties_text
from kraftsim.storage.meta_properties import DateLike, MetaProperties
from kraftsim.storage.names import META_PROPERTIES_FILE
from kraftsim.storage.server_config import (
    ServerConfig,
)
from kraftsim.versions import Catalog, MetadataVersion, ToolFailure, UnknownMetadataVersion
from kraftsim.versions import parse_feature_arg

# ------------------------------------------------------------------------------ StorageTool


def standalone_voters(config: ServerConfig, rng: random.Random) -> dict[int, DynamicVoter]:
    """StorageTool.createStandaloneDynamicVoters: this controller alone, on its first advertised
    controller listener (no host → localhost), with a fresh directory id."""
    if not config.is_controller:
        raise ToolFailure("You can only use --standalone on a controller.")
    listeners = config.effective_advertised_controller_listeners()
    if not listeners:
        raise KraftsimError("No controller listeners found.")
    host = listeners[0].host or "localhost"
    return parse_dynamic_voters(f"{config.node_id}@{host}:{listeners[0].port}:{random_uuid(rng)}")


def storage_format(catalog: Catalog, config: ServerConfig, *, cluster_id: str | None,
                   release_version: str | None = None, features: Sequence[str] = (), standalone: bool = False,
                   initial_controllers: str | None = None, no_initial_controllers: bool = False,
                   add_scram: Sequence[str] = (), ignore_formatted: bool = False, clock: Clock | None = None,
                   rng: random.Random | None = None, date: DateLike | None = None, out: Callable[[str], None] = print,
                   registry: Registry | None = None, fsync: bool = True) -> FormatResult:
    """`kafka-storage format`: StorageTool.runFormatCommand, then the Formatter (same checks, same order)."""
    rng = rng or random.SystemRandom()
    unstable = config.unstable_enabled(catalog)  # KafkaConfig reads the config before any check
    if not config.process_roles:
        raise ToolFailure("The kafka configuration file appears to be for a legacy cluster. "
                          "Formatting is only supported for clusters in KRaft mode.")
    both = release_text(catalog, "format_flag_checks", "both")
    if both is not None and release_version is not None and features:
        raise ToolFailure(both)
    kip853 = release_text(catalog, "format_flag_checks", "kraft_zero") is not None  # 3.9's dynamic-quorum rule
    opts = FormatOptions(
        node_id=config.node_id,
        cluster_id=cluster_id,
        controller=config.is_controller,
        unstable=unstable,
        ignore_formatted=ignore_formatted,
        controller_listener_name=config.controller_listener_name,
        metadata_log_directory=config.metadata_log_dir,
    )
    if release_version is not None:
        opts.release_version, opts.bootstrap_refusal = _release_version(catalog, config, release_version,
                                                                        opts.unstable)
        warning = release_text(catalog, "format_unstable", "warning")
        if warning is not None and opts.unstable and opts.release_version.level > catalog.latest_production.level:
            out(warning.format(version=opts.release_version))
    for arg in features:
        name, level = parse_feature_arg(arg)
        opts.feature_levels[name] = level
    opts.ignore_unknown_features = catalog.policy("format_flag_checks") == "3.8"
    static_voters_empty = not config.quorum_voters
    opts.has_dynamic_quorum = static_voters_empty
    if not static_voters_empty and (initial_controllers is not None or standalone) and not kip853:
        raise ToolFailure(
            f"You cannot specify {QUORUM_VOTERS} and format the node with --initial-controllers or --standalone. "
            f"If you want to use dynamic quorum, please remove {QUORUM_VOTERS} and specify "
            f"{QUORUM_BOOTSTRAP_SERVERS} instead.")
    if initial_controllers is not None:
        opts.initial_controllers = parse_dynamic_voters(initial_controllers)
    if standalone:
        opts.initial_controllers = standalone_voters(config, rng)
    if kip853:
        opts.has_dynamic_quorum = opts.initial_controllers is not None
    if (not no_initial_controllers and config.is_controller and static_voters_empty
            and opts.initial_controllers is None):
        raise ToolFailure(f"Because {QUORUM_VOTERS} is not set on this controller, you must specify one of the "
                          "following: --standalone, --initial-controllers, or --no-initial-controllers.")
    if opts.initial_controllers is not None and KRAFT_VERSION not in {f.name for f in catalog.production_features}:
        raise ToolFailure(f"Release {catalog.release} has no {KRAFT_VERSION} feature: it cannot format a dynamic quorum.")
    opts.scram_arguments = list(add_scram)
    opts.directories = config.directories
    return format_directories(catalog, opts, clock=clock, rng=rng, date=date, out=out, registry=registry, fsync=fsync)


def _release_version(catalog: Catalog, config: ServerConfig, text: str,
                     unstable: bool) -> tuple[MetadataVersion, str | None]:
    """--release-version as the release's StorageTool reads and checks it (policy format_version_checks),
    with the refusal 3.3 and 3.4 make only once they build the bootstrap file (else None)."""
    try:
        mv = catalog.mv_from_string(text, unstable)
    except UnknownMetadataVersion as e:
        unknown = release_text(catalog, "format_version_checks", "unknown")
        if unknown is None:
            raise ToolFailure(str(e)) from None
        try:
            mv = catalog.mv_from_string(text, unstable=True)
        except UnknownMetadataVersion:
            raise ToolFailure(unknown.format(version=text, minimum=catalog.minimum,
                                             maximum=catalog.latest_testing)) from None
        refusal = release_text(catalog, "format_version_checks", "unstable")
        if refusal is not None:
            raise ToolFailure(refusal.format(version=mv)) from None
        # Otherwise the Formatter refuses it ('not yet stable').
    jbod = release_text(catalog, "format_version_checks", "jbod")
    if (jbod is not None and "broker" in config.process_roles and len(config.log_dirs) > 1
            and not catalog.supports("directory_assignment", mv)):
        raise ToolFailure(jbod.format(version=mv))
    too_old = release_text(catalog, "format_version_checks", "too_old")
    if too_old is not None and mv.level < catalog.mv_from_string("3.3-IV0", unstable=True).level:
        if catalog.policy("format_version_checks") == "3.3":
            return mv, too_old
        raise ToolFailure(too_old)
    return mv, None


def _java_path_string(d: str) -> str:
    """Paths.get(d).toString(): repeated and trailing slashes dropped, nothing else changed."""
    s = re.sub("/+", "/", d)
    return s[:-1] if len(s) > 1 and s.endswith("/") else s


def storage_info(directories: Iterable[str], kraft_mode: bool = True) -> tuple[list[str], int]:
    """`kafka-storage info`: StorageTool.infoCommand's lines and exit code (1 when it found problems)."""
    dirs = sorted(directories)
    problems: list[str] = []
    found: list[str] = []
    prev: MetaProperties | None = None
    for d in dirs:
        p = Path(d)
        shown = _java_path_string(d)
        if not p.is_dir():
            problems.append(f"{shown} does not exist" if not p.exists() else f"{shown} is not a directory")
            continue
        found.append(shown)
        meta_path = p / META_PROPERTIES_FILE
        if not meta_path.exists():
            problems.append(f"{shown} is not formatted.")
            continue
        try:
            require_regular_file(meta_path)  # (a FIFO's open would wait forever, /dev/zero never end)
            props = load_properties(properties_text(meta_path.read_bytes()))
        except (OSError, ValueError) as e:
            raise KraftsimError(f"{meta_path}: {e}") from None
        try:
            cur = MetaProperties.from_properties(props)
        except KraftsimError as e:
            problems.append(f"Error loading {os.path.join(shown, META_PROPERTIES_FILE)}: {e}")
            continue
        if prev is None:
            prev = cur
        elif prev.cluster_id != cur.cluster_id:
            problems.append("Mismatched cluster IDs between storage directories.")
        elif prev.node_id != cur.node_id:
            problems.append("Mismatched node IDs between storage directories.")
    if prev is not None:
        if kraft_mode and prev.version == 0:
            problems.append("The kafka configuration file appears to be for a cluster in KRaft mode, but "
                            "the directories are formatted for legacy mode.")
        elif not kraft_mode and prev.version == 1:
            problems.append("The kafka configuration file appears to be for a legacy cluster, but "
                            "the directories are formatted for a cluster in KRaft mode.")
    if not dirs:
        return ["No directories specified."], 0
    lines: list[str] = []
    if found:
        lines.append("Found log directory:" if len(found) == 1 else "Found log directories:")
        lines += [f"  {d}" for d in found]
        lines.append("")
    if prev is not None:
        shown_props = ", ".join(f"{k}={v}" for k, v in sorted(prev.to_properties().items()))
        lines.append(f"Found metadata: {{{shown_props}}}")
        lines.append("")
    if problems:
        lines.append("Found problem:" if len(problems) == 1 else "Found problems:")
        lines += [f"  {p}" for p in problems]
        lines.append("")
        return lines, 1
    return lines, 0
