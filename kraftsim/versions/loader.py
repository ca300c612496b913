"""Reading catalog files and merging them into one raw catalog.

The shipped data is split by topic into several files, and a user's catalog is one more
file in the same format layered on top. Merging only adds: a user can add levels,
features, feature levels, releases, record types and record versions, never silently
replace Kafka's facts. References (MV strings, feature names) are resolved later, in
`model`, so that every file may refer to entries of every other.
"""

from __future__ import annotations

import errno
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from kraftsim import tomlinput
from kraftsim.regular_file import UnreadableFile, opened_file
from kraftsim.versions.errors import CatalogError, CatalogTooLarge, CatalogUnreadable
from kraftsim.versions.metadata_version import RELEASE_RE, release_line, release_name_key
from kraftsim.versions.schema import (
    CapabilityEntry,
    ConfigNamesEntry,
    FeatureEntry,
    FeatureLevelAddition,
    Fragment,
    LevelEntry,
    MetadataVersionEntry,
    PolicyEntry,
    RecordEntry,
    ReleaseEntry,
    ReplayConfigsRule,
    RequestEntry,
)

SHIPPED_FILES = ("metadata_versions.toml", "records.toml", "features.toml", "policies.toml", "releases.toml",
                 "replay_configs.toml")
"""The shipped data files, merged in this order."""

Fragments = list[tuple[str, Fragment, Path | None]]
"""Catalog fragments to merge, in order, as (source name, fragment, folder of its relative paths)."""


_V = TypeVar("_V")

CATALOG_LIMITS = {"metadata_versions": 1_000, "features": 200, "feature_levels": 2_000, "releases": 500,
                  "records": 2_000, "capabilities": 2_000, "requests": 2_000, "replay_config_names": 1_000}
"""How many entries of each kind one catalog file may hold unless its `[limits]` raise them.

Kafka has a few dozen of each; checking merged catalogs costs more than linear time in these
counts, so a file with 100,000 releases is refused before that work instead of running for
hours. `feature_levels` counts the levels of new features and the added ones; `releases`
counts patch releases too."""


@dataclass
class RawCatalog:
    """All fragments merged; names unique, release inheritance applied, refs unresolved."""

    sources: list[str] = field(default_factory=list)
    line: str | None = None
    record_schema_dirs: list[Path] = field(default_factory=list)
    metadata_versions: list[MetadataVersionEntry] = field(default_factory=list)
    records: dict[str, RecordEntry] = field(default_factory=dict)
    capabilities: dict[str, CapabilityEntry] = field(default_factory=dict)
    requests: dict[str, RequestEntry] = field(default_factory=dict)
    features: list[FeatureEntry] = field(default_factory=list)
    releases: list[ReleaseEntry] = field(default_factory=list)
    policies: dict[str, PolicyEntry] = field(default_factory=dict)
    replay_configs: ReplayConfigsRule | None = None
    replay_config_names: list[ConfigNamesEntry] = field(default_factory=list)


def parse_fragment(text: str, source: str) -> Fragment:
    """Parse one catalog file's text; syntax and type errors name the file."""
    try:
        data = tomlinput.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError("schema", f"not valid TOML: {exc}", source) from None
    except tomlinput.TomlTooComplex as exc:
        raise CatalogError("schema", str(exc), source) from None
    try:
        fragment = msgspec.convert(data, Fragment)
    except msgspec.ValidationError as exc:
        raise CatalogError("schema", str(exc), source) from None
    _check_counts(fragment, source)
    return fragment


def _check_counts(frag: Fragment, source: str) -> None:
    """Entry counts within CATALOG_LIMITS or the file's own `[limits]`, each refusal naming its limit."""
    unknown = sorted(set(frag.limits) - set(CATALOG_LIMITS))
    if unknown:
        raise CatalogError("limits", f"unknown key limits.{unknown[0]} (known: {', '.join(CATALOG_LIMITS)})", source)
    counts = {"metadata_versions": len(frag.metadata_versions), "features": len(frag.features),
              "feature_levels": sum(len(f.levels) for f in frag.features) + len(frag.feature_levels),
              "releases": sum(1 + len(r.patches) for r in frag.releases), "records": len(frag.records),
              "capabilities": len(frag.capabilities), "requests": len(frag.requests),
              "replay_config_names": len(frag.replay_config_names)}
    for key, count in counts.items():
        limit = frag.limits.get(key, CATALOG_LIMITS[key])
        if limit < 0:
            raise CatalogError("limits", f"limits.{key}: expected an integer >= 0, got {limit}", source)
        if count > limit:
            raise CatalogTooLarge("limits", f"{count:,} {key.replace('_', ' ')}: more than the {limit:,} a catalog "
                                         f"file may hold (the limit is [limits] {key}; raise it in the file, "
                                         f"e.g. [limits] {key} = N, if you mean it)", source)


def shipped_fragments() -> Fragments:
    """The package's own data files as (source name, fragment, folder)."""
    data = resources.files("kraftsim.versions") / "data"
    out: Fragments = []
    for name in SHIPPED_FILES:
        out.append((f"kraftsim/versions/data/{name}", parse_fragment(data.joinpath(name).read_text("utf-8"), name), None))
    return out


def read_fragment_file(path: Path) -> tuple[str, Fragment, Path]:
    """A user's catalog file; relative paths inside it are relative to its folder. Anything
    but a regular file is refused before it is opened (a FIFO's open would wait for a writer)."""
    try:
        with opened_file(path) as f:
            text = tomlinput.read_opened(f)
    except UnreadableFile as exc:
        missing = exc.errno in (errno.ENOENT, errno.ENOTDIR)
        raise CatalogUnreadable("does not exist" if missing else f"cannot read it: {exc.reason}", str(path)) from None
    except OSError as exc:
        raise CatalogUnreadable(f"cannot read it: {exc.strerror or exc}", str(path)) from None
    except tomlinput.TomlTooComplex as exc:
        raise CatalogError("schema", str(exc), str(path)) from None
    except UnicodeDecodeError as exc:
        raise CatalogError("schema", f"not a UTF-8 text file (byte {exc.start})", str(path)) from None
    return str(path), parse_fragment(text, str(path)), path.parent


def merge(fragments: Fragments) -> RawCatalog:
    """Merge fragments in order; any clash between them is refused."""
    raw = RawCatalog()
    pending_levels: list[tuple[str, FeatureLevelAddition]] = []
    for source, frag, folder in fragments:
        raw.sources.append(source)
        if frag.line is not None:
            raw.line = frag.line
        for d in frag.record_schema_dirs:
            p = Path(d)
            raw.record_schema_dirs.append(p if p.is_absolute() or folder is None else (folder / p).resolve())
        raw.metadata_versions.extend(frag.metadata_versions)
        if frag.replay_configs is not None:
            raw.replay_configs = frag.replay_configs
        raw.replay_config_names.extend(frag.replay_config_names)
        for name, rec in frag.records.items():
            _merge_record(raw, name, rec, source)
        for name, req in frag.requests.items():
            if name in raw.requests:
                old = raw.requests[name]
                raw.requests[name] = RequestEntry(versions=[*old.versions, *req.versions], doc=old.doc or req.doc)
            else:
                raw.requests[name] = req
        _add_unique(raw.capabilities, frag.capabilities, "capability", source)
        for feat in frag.features:
            if any(f.name == feat.name for f in raw.features):
                raise CatalogError("duplicate", f"feature {feat.name} is defined twice", source)
            raw.features.append(feat)
        pending_levels.extend((source, lv) for lv in frag.feature_levels)
        for name, pol in frag.policies.items():
            if name not in raw.policies:
                raw.policies[name] = pol
                continue
            old_policy = raw.policies[name]
            clash = sorted(set(old_policy.values) & set(pol.values))
            if clash:
                raise CatalogError("duplicate", f"policy {name} value {clash[0]} is defined twice", source)
            raw.policies[name] = PolicyEntry(values={**old_policy.values, **pol.values}, doc=old_policy.doc or pol.doc)
        for rel in frag.releases:
            rel = _normalised(rel, source)
            taken = {n for r in raw.releases for n in (r.name, *r.patches)}
            twice = next((n for n in (rel.name, *rel.patches) if n in taken), None)
            if twice is not None:
                raise CatalogError("duplicate", f"release {twice} is defined twice", source)
            raw.releases.append(_inherit(raw.releases, rel, source))
    for source, lv in pending_levels:
        target = next((f for f in raw.features if f.name == lv.feature), None)
        if target is None:
            raise CatalogError("unknown-reference", f"feature_levels adds a level to unknown feature {lv.feature}", source)
        entry = msgspec.structs.asdict(lv)
        del entry["feature"]
        target.levels.append(LevelEntry(**entry))
    return raw


def _merge_record(raw: RawCatalog, name: str, rec: RecordEntry, source: str) -> None:
    old = raw.records.get(name)
    if old is None:
        raw.records[name] = rec
        return
    if rec.since is not None and rec.since != old.since:
        raise CatalogError("duplicate", f"record {name} is already introduced at {old.since}", source)
    raw.records[name] = RecordEntry(
        since=old.since,
        versions=[*old.versions, *rec.versions],
        unsupported=rec.unsupported or old.unsupported,
        doc=old.doc or rec.doc,
    )


def _add_unique(target: dict[str, _V], new: dict[str, _V], what: str, source: str) -> None:
    for name, value in new.items():
        if name in target:
            raise CatalogError("duplicate", f"{what} {name} is defined twice", source)
        target[name] = value


def _normalised(rel: ReleaseEntry, source: str) -> ReleaseEntry:
    """Entry and patch names as Kafka names releases: a bare line "4.3" means "4.3.0"."""
    names = []
    for n in (rel.name, *rel.patches):
        try:
            major, minor, patch = release_name_key(n)
        except ValueError:
            raise CatalogError("release", f"release name {n!r} is not of the form <major>.<minor>.<patch>", source) from None
        names.append(f"{major}.{minor}.{patch}")
    if any(release_line(n) != release_line(names[0]) or release_name_key(n) <= release_name_key(names[0]) for n in names[1:]):
        raise CatalogError("release", f"release {names[0]}: its patches must be later releases of line {release_line(names[0])}", source)
    return msgspec.structs.replace(rel, name=names[0], patches=names[1:])


def _parent(earlier: list[ReleaseEntry], name: str) -> ReleaseEntry | None:
    """The entry `name` refers to: one it names (entry or patch), or a line's newest entry."""
    for r in earlier:
        if name in (r.name, *r.patches):
            return r
    if RELEASE_RE.match(name):
        in_line = [r for r in earlier if release_line(r.name) == name]
        return max(in_line, key=lambda r: release_name_key(r.name), default=None)
    return None


def _inherit(earlier: list[ReleaseEntry], rel: ReleaseEntry, source: str) -> ReleaseEntry:
    """Fill a release's missing fields from the release it inherits from.

    `latest_testing` and `metadata_changed` describe one release's own code (the next
    line's placeholder levels), `unconfirmed` one release's open facts: never inherited.
    """
    if rel.inherits is None:
        return rel
    parent = _parent(earlier, rel.inherits)
    if parent is None:
        raise CatalogError("unknown-reference", f"release {rel.name} inherits from unknown release {rel.inherits}", source)

    def pick(name: str) -> Any:
        own = getattr(rel, name)
        return getattr(parent, name) if own is None else own

    def merged(name: str) -> Any:
        own, base = getattr(rel, name), getattr(parent, name)
        return base if own is None else {**(base or {}), **own}

    return ReleaseEntry(
        name=rel.name,
        patches=rel.patches,
        inherits=rel.inherits,
        latest_production=pick("latest_production"),
        latest_testing=rel.latest_testing,
        metadata_changed=rel.metadata_changed,
        minimum_metadata_version=pick("minimum_metadata_version"),
        validate_version_min_mv=pick("validate_version_min_mv"),
        features=merged("features"),
        testing=merged("testing"),
        dependency_overrides=pick("dependency_overrides"),
        bootstrap_overrides=pick("bootstrap_overrides"),
        policies=merged("policies"),
        unconfirmed=rel.unconfirmed,
        doc=rel.doc or parent.doc,
    )
