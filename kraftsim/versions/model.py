"""From merged catalog files to resolved, checked objects.

`build` resolves every reference (MV strings, feature names, policies) once and checks
the catalog's own structure; `resolve_line` then produces the metadata.version table
and features one release line sees. Kafka's own consistency rules for features run on
each line in `validation`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, cast
from pathlib import Path

from kraftsim.versions.errors import CatalogError
from kraftsim.versions.features import Feature, FeatureLevel
from kraftsim.versions.gates import Capability, GateTable, Versioned
from kraftsim.versions.loader import RawCatalog
from kraftsim.versions.metadata_version import (
    FEATURE_NAME as MV_NAME,
    RELEASE_NAME_RE,
    RELEASE_RE,
    VERSION_RE,
    MetadataVersion,
    MetadataVersionTable,
    release_key,
    release_line,
    release_name_key,
)
from kraftsim.versions.releases import Policy, PolicyValue, Release
from kraftsim.versions.schema import FeatureEntry, LevelEntry, MVRef, ReleaseEntry, Step

# build's lookup of a metadata.version reference: (reference, what refers to it) -> level
_MVLevel = Callable[[MVRef, str], int]

LATEST_TESTING = "latest-testing"


@dataclass(frozen=True)
class CatalogData:
    """The whole catalog, independent of any release line."""

    where: str
    versions: tuple[MetadataVersion, ...]  # every level, production flag unset
    gates: GateTable
    features: tuple[FeatureEntry, ...]
    releases: tuple[Release, ...]  # oldest first
    policies: tuple[Policy, ...]
    record_schema_dirs: tuple[Path, ...]
    line: str  # the default release line
    #: Kafka's ConfigRecord replay filter: resource types kept whole, types kept by name
    replay_keep_all: frozenset[str] = frozenset()
    replay_listed: frozenset[str] = frozenset()
    #: (since release, resource type, the names its code defines), in file order
    replay_config_names: tuple[tuple[str, str, frozenset[str]], ...] = ()

    def version_of(self, level: int) -> str:
        return next((mv.version for mv in self.versions if mv.level == level), str(level))

    def find_release(self, name: str) -> Release | None:
        """The release named `name` ("3.7.2"), or a line's newest patch release ("3.7")."""
        exact = next((r for r in self.releases if r.name == name), None)
        if exact is not None or not RELEASE_RE.match(name):
            return exact
        in_line = [r for r in self.releases if r.line == name]
        return in_line[-1] if in_line else None


@dataclass(frozen=True)
class Line:
    """What one release line sees: its MV table and its features, resolved."""

    release: Release
    table: MetadataVersionTable
    features: tuple[Feature, ...]


def build(raw: RawCatalog, where: str) -> CatalogData:
    """Resolve references and check the catalog's structure."""
    versions = _versions(raw, where)
    levels = {mv.level for mv in versions}
    by_version = {mv.version: mv.level for mv in versions}

    def mv_level(ref: MVRef, what: str) -> int:
        level = ref if isinstance(ref, int) else by_version.get(ref)
        if level not in levels:
            raise CatalogError("unknown-reference", f"{what} refers to unknown metadata.version {ref!r}", where)
        return level

    def steps(name: str, entries: list[Step], since: MVRef | None, default_version: int | None) -> tuple[int, tuple[tuple[int, int], ...]]:
        out = tuple((mv_level(s.since, name), s.version) for s in entries)
        if not out and default_version is not None and since is not None:
            out = ((mv_level(since, name), default_version),)
        if not out:
            raise CatalogError("steps", f"{name} has neither `since` nor `versions`", where)
        first = mv_level(since, name) if since is not None else out[0][0]
        if out[0][0] != first:
            raise CatalogError("steps", f"{name}: its first version step must be at its `since` level {first}", where)
        for (l1, v1), (l2, v2) in zip(out, out[1:]):
            if not (l2 > l1 and v2 > v1):
                raise CatalogError("steps", f"{name}: version steps must rise in both level and version", where)
        return first, out

    records = {}
    for name, rec in raw.records.items():
        since, st = steps(f"record {name}", rec.versions, rec.since, 0)
        records[name] = Versioned(name, since, st, rec.unsupported, rec.doc)
    requests = {}
    for name, req in raw.requests.items():
        since, st = steps(f"request {name}", req.versions, None, None)
        requests[name] = Versioned(name, since, st, None, req.doc)
    caps = {n: Capability(n, mv_level(c.since, f"capability {n}"), c.kind, c.doc) for n, c in raw.capabilities.items()}
    gates = GateTable(records, requests, caps)

    for mv in versions:
        added = gates.additions_at(mv.level)
        if added and not mv.metadata_changed:
            raise CatalogError(
                "metadata-change-flag",
                f"metadata.version {mv} adds {', '.join(added)} but has metadata_changed = false, "
                f"so a downgrade across it would wrongly count as lossless",
                where,
            )

    _check_features(raw.features, mv_level, where)
    policies = tuple(
        Policy(n, p.doc, tuple(PolicyValue(v, pv.doc, tuple(pv.texts.items())) for v, pv in p.values.items()))
        for n, p in raw.policies.items()
    )
    feature_names = [f.name for f in raw.features]
    top = _line_tops(versions)
    releases = tuple(sorted((rel for r in raw.releases for rel in _release(r, mv_level, feature_names, policies, top, where)),
                            key=lambda r: r.key))
    if not releases:
        raise CatalogError("release", "the catalog defines no release", where)
    rule = raw.replay_configs
    keep_all, listed = frozenset(rule.keep_all if rule else ()), frozenset(rule.listed if rule else ())
    if keep_all & listed:
        raise CatalogError("replay-configs", f"{', '.join(sorted(keep_all & listed))}: both kept whole and kept by "
                                             "name", where)
    names = []
    for e in raw.replay_config_names:
        if not RELEASE_NAME_RE.match(e.since):
            raise CatalogError("replay-configs", f"{e.resource_type} config names: since {e.since!r} is not a release "
                                                 "name", where)
        if e.resource_type not in listed:
            raise CatalogError("replay-configs", f"{e.resource_type} config names since {e.since}: the type is not "
                                                 f"one kept by name ({', '.join(sorted(listed)) or 'none'})", where)
        names.append((e.since, e.resource_type, frozenset(e.names)))
    data = CatalogData(where, versions, gates, tuple(raw.features), releases, policies, tuple(raw.record_schema_dirs),
                       releases[-1].name, keep_all, listed, tuple(names))
    if raw.line is not None:
        chosen = data.find_release(raw.line)
        if chosen is None:
            raise CatalogError("unknown-reference", f"line {raw.line} is not a release of the catalog", where)
        data = replace(data, line=chosen.name)
    return data


def _line_tops(versions: tuple[MetadataVersion, ...]) -> dict[tuple[int, int], int]:
    """A release line's default latest testing level: the highest level of its line or an
    earlier one (for lines without a level of their own: the earlier line's highest)."""
    out: dict[tuple[int, int], int] = {}
    for mv in versions:  # levels rise with their lines
        out[release_key(mv.release)] = mv.level
    return out


def _versions(raw: RawCatalog, where: str) -> tuple[MetadataVersion, ...]:
    out = []
    for e in raw.metadata_versions:
        if not VERSION_RE.match(e.version):
            raise CatalogError("mv-table", f"metadata.version {e.version!r} is not of the form <major>.<minor>-IV<n>", where)
        if e.placeholder_before is not None and not RELEASE_NAME_RE.match(e.placeholder_before):
            raise CatalogError("mv-table", f"metadata.version {e.version}: placeholder_before {e.placeholder_before!r} "
                                           "is not a release name", where)
        out.append(MetadataVersion(e.level, e.version, e.metadata_changed, e.introduced, production=False,
                                   placeholder_before=e.placeholder_before))
    if not out:
        raise CatalogError("mv-table", "the catalog defines no metadata.version", where)
    for a, b in zip(out, out[1:]):
        if b.level != a.level + 1:
            raise CatalogError("mv-table", f"metadata.version levels must rise by one: {a} is {a.level}, then {b} is {b.level}", where)
        if release_key(b.release) < release_key(a.release) or b.version == a.version:
            raise CatalogError("mv-table", f"metadata.version {b} cannot come after {a}", where)
    if len({mv.version for mv in out}) != len(out):
        raise CatalogError("mv-table", "a metadata.version string is used twice", where)
    return tuple(out)


def _check_features(features: list[FeatureEntry], mv_level: _MVLevel, where: str) -> None:
    by_name = {f.name: f for f in features}
    for f in features:
        lv = [lvl.level for lvl in f.levels]
        if not lv or any(b <= a for a, b in zip(lv, lv[1:])) or lv[0] < 0:
            raise CatalogError("feature-levels", f"feature {f.name} must have levels >= 0 in rising order", where)
        for lvl in f.levels:
            if lvl.since_release is not None and not RELEASE_NAME_RE.match(lvl.since_release):
                raise CatalogError("feature-levels", f"{f.name} level {lvl.level}: since_release {lvl.since_release!r} is not a release name", where)
            if lvl.bootstrap != LATEST_TESTING:
                mv_level(lvl.bootstrap, f"{f.name} level {lvl.level} bootstrap")
            _check_deps(f.name, lvl.level, lvl.dependencies, by_name, mv_level, where)


def _check_deps(
    name: str, level: int, deps: dict[str, MVRef], by_name: dict[str, FeatureEntry], mv_level: _MVLevel, where: str
) -> None:
    for dep, ref in deps.items():
        what = f"{name} level {level} dependency on {dep}"
        if dep == MV_NAME:
            if ref != LATEST_TESTING:
                mv_level(ref, what)
        elif dep not in by_name or not isinstance(ref, int) or ref not in {x.level for x in by_name[dep].levels}:
            raise CatalogError("unknown-reference", f"{what} names a feature or level that does not exist", where)


def _release(
    r: ReleaseEntry, mv_level: _MVLevel, feature_names: list[str], policies: tuple[Policy, ...],
    top: dict[tuple[int, int], int], where: str,
) -> list[Release]:
    """One Release per name the entry covers (itself and its patches)."""
    required: dict[str, MVRef] = {}
    for field in ("latest_production", "minimum_metadata_version", "validate_version_min_mv"):
        ref: MVRef | None = getattr(r, field)
        if ref is None:
            raise CatalogError("release", f"release {r.name} has no {field}", where)
        required[field] = ref
    features = r.features or {}
    testing = r.testing or {}
    for name in [*features, *testing]:
        if name not in feature_names:
            raise CatalogError("unknown-reference", f"release {r.name} lists unknown feature {name}", where)
    for name in testing:
        if name not in features or testing[name] < features[name]:
            raise CatalogError("release", f"release {r.name}: testing level of {name} must be a production feature's level at or above its latest production", where)
    pol = r.policies or {}
    for p in policies:
        if p.name not in pol or pol[p.name] not in {v.name for v in p.values}:
            raise CatalogError("unknown-reference", f"release {r.name} has no valid value for policy {p.name} (one of {', '.join(v.name for v in p.values)})", where)
    unknown = sorted(set(pol) - {p.name for p in policies})
    if unknown:
        raise CatalogError("unknown-reference", f"release {r.name} names unknown policy {unknown[0]}", where)
    overrides = []
    for o in r.dependency_overrides or []:
        if o.feature not in feature_names:
            raise CatalogError("unknown-reference", f"release {r.name} overrides dependencies of unknown feature {o.feature}", where)
        # a feature's level is an int (the override's feature levels are not checked here)
        deps = tuple((d, mv_level(v, f"release {r.name} override") if d == MV_NAME else cast(int, v))
                     for d, v in o.dependencies.items())
        overrides.append((o.feature, o.level, deps))
    boots = []
    for name, by_level in (r.bootstrap_overrides or {}).items():
        if name not in feature_names:
            raise CatalogError("unknown-reference", f"release {r.name} overrides the bootstrap of unknown feature {name}", where)
        boots += [(name, int(lvl), mv_level(v, f"release {r.name} bootstrap override")) for lvl, v in by_level.items()]
    ordered = tuple((n, features[n]) for n in feature_names if n in features)
    own_line = release_key(release_line(r.name))
    earlier = [level for line, level in top.items() if line <= own_line]
    if r.latest_testing is not None:
        latest_testing = mv_level(r.latest_testing, f"release {r.name} latest_testing")
    elif earlier:
        latest_testing = max(earlier)
    else:
        raise CatalogError("release", f"release {r.name} knows no metadata.version of its line or an earlier one; give latest_testing", where)
    changed = tuple(sorted((mv_level(v, f"release {r.name} metadata_changed"), flag) for v, flag in r.metadata_changed.items()))
    template = Release(
        name=r.name,
        latest_production=mv_level(required["latest_production"], f"release {r.name} latest_production"),
        latest_testing=latest_testing,
        minimum_metadata_version=mv_level(required["minimum_metadata_version"], f"release {r.name} minimum_metadata_version"),
        validate_version_min_mv=mv_level(required["validate_version_min_mv"], f"release {r.name} validate_version_min_mv"),
        features=ordered,
        testing=tuple((n, testing[n]) for n, _ in ordered if n in testing),
        dependency_overrides=tuple(overrides),
        bootstrap_overrides=tuple(boots),
        policies=tuple((p.name, pol[p.name]) for p in policies),
        metadata_changed=changed,
        entry=r.name,
        unconfirmed=tuple(r.unconfirmed),
        doc=r.doc,
    )
    return [replace(template, name=n) for n in (r.name, *r.patches)]


def resolve_line(data: CatalogData, release: Release) -> Line:
    """The MV table and the features that `release` knows, resolved for it."""
    where = f"{data.where} at release {release.name}"
    flags = dict(release.metadata_changed)
    known = [replace(mv, production=mv.level <= release.latest_production,
                     metadata_changed=flags.get(mv.level, mv.metadata_changed and not mv.is_placeholder_in(release.key)))
             for mv in data.versions if release.knows(mv)]
    if release.latest_production > release.latest_testing:
        raise CatalogError("release", f"release {release.name}: latest_production is above latest_testing", where)
    if not any(mv.level == release.latest_production for mv in known):
        raise CatalogError("release", f"release {release.name}: latest_production {data.version_of(release.latest_production)} is not a metadata.version it knows", where)
    if not known or known[0].level != release.minimum_metadata_version:
        raise CatalogError("release", f"release {release.name} does not know its minimum_metadata_version", where)
    table = MetadataVersionTable(known)
    by_version = {mv.version: mv.level for mv in data.versions}

    def mv_ref(ref: MVRef) -> int:
        if ref == LATEST_TESTING:
            return table.latest_testing.level
        return ref if isinstance(ref, int) else by_version[ref]

    overrides = {(f, lvl): deps for f, lvl, deps in release.dependency_overrides}
    boots = {(f, lvl): boot for f, lvl, boot in release.bootstrap_overrides}
    lp = dict(release.features)
    lt = dict(release.testing)
    entries = [f for f in data.features if f.kind == "test" or f.name in lp]
    resolved: dict[str, Feature] = {}
    for f in entries:
        enum = f.enum or f.name.upper().replace(".", "_")
        levels = []
        for e in f.levels:
            if not _has_level(release, e, table):
                continue  # a level of a later release: this release's code does not have it
            deps = overrides.get((f.name, e.level))
            if deps is None:
                # _check_deps made every feature's level an int
                deps = tuple((d, mv_ref(v) if d == MV_NAME else cast(int, v)) for d, v in e.dependencies.items())
            boot = boots.get((f.name, e.level), mv_ref(e.bootstrap))
            levels.append(FeatureLevel(f.name, e.level, e.const or f"{enum}_{e.level}", boot, data.version_of(boot), deps, e.doc))
        for d, _ in (dep for fl in levels for dep in fl.dependencies):
            if d != MV_NAME and d not in [x.name for x in entries]:
                raise CatalogError("unknown-reference", f"feature {f.name} depends on {d}, which release {release.name} does not know", where)
        top = levels[-1].level
        if f.kind == "production":
            latest, testing = lp[f.name], lt.get(f.name, lp[f.name])
            if testing != latest and not any(fl.level == testing for fl in levels):
                raise CatalogError("release", f"release {release.name}: {f.name} has no level {testing}", where)
        else:
            latest, testing = None, top
        resolved[f.name] = Feature(f.name, enum, f.kind, tuple(levels), latest if latest is not None else -1, testing, f.doc)
    for name, feat in resolved.items():  # test-only features: highest level whose dependencies are production ready
        if feat.kind == "test":
            ready = [fl.level for fl in feat.levels if all(_ready(d, lvl, table, resolved) for d, lvl in fl.dependencies)]
            resolved[name] = replace(feat, latest_production=max(ready, default=feat.minimum_production))
    return Line(release, table, tuple(resolved.values()))


def _has_level(release: Release, e: LevelEntry, table: MetadataVersionTable) -> bool:
    """Whether `release`'s code lists feature level `e` (not before its `since_release`)."""
    return e.since_release is None or release.key >= release_name_key(e.since_release)


def _ready(dep: str, level: int, table: MetadataVersionTable, features: dict[str, Feature]) -> bool:
    if dep == MV_NAME:
        return level <= table.latest_production.level
    return features[dep].kind == "production" and level <= features[dep].latest_production
