"""Hypothesis strategies at the cluster level (re-exported by kraftsim.testing.strategies).

- `releases(catalog)`: a release name of the catalog ("3.9").
- `metadata_versions(catalog, release)`: a MetadataVersion the release knows (production only by default).
- `feature_levels(release, catalog)`: a map feature -> level that the release supports and
  Kafka's dependency rules accept (metadata.version included).
- `clusters(catalog)`: dicts for `Simulation.create`: controllers, brokers, release.
- `op_sequences(releases, node_ids)`: lists of `Step`s (scenario ops) to run with `run_step`.
- `fault_schedules(node_ids)`: lists of fault `Step`s (crash, start, partition, heal, run).
- `hypothetical_catalogs(base)`: `HypotheticalCatalog`s: extra metadata.versions with and
  without metadata changes, extra features with dependencies, extra record versions.
"""

from __future__ import annotations

from typing import Sequence

from hypothesis import strategies as st

from kraftsim.testing.catalogs import (
    HypotheticalCatalog, NewFeature, NewFeatureLevel, NewMetadataVersion, NewRecordType,
)
from kraftsim.testing.steps import Step
from kraftsim.versions import FEATURE_NAME as MV_NAME, Catalog, VersionsError, default_catalog


def releases(catalog: Catalog | None = None) -> st.SearchStrategy[str]:
    return st.sampled_from([r.name for r in (catalog or default_catalog()).releases])


def metadata_versions(catalog: Catalog | None = None, release: str | None = None,
                      production_only: bool = True) -> st.SearchStrategy[object]:
    cat = catalog or default_catalog()
    line = cat.at_release(release) if release else cat
    mvs = [mv for mv in line.metadata_versions if mv.level <= line.latest_production.level or not production_only]
    return st.sampled_from(mvs)


def feature_levels(release: str, catalog: Catalog | None = None) -> st.SearchStrategy[dict[str, int]]:
    line = (catalog or default_catalog()).at_release(release)
    ranges = line.supported_features()

    def valid(levels: dict[str, int]) -> bool:
        try:
            line.validate_levels(levels)
        except VersionsError:
            return False
        return True

    parts = {name: st.integers(lo, hi) for name, (lo, hi) in ranges.items() if name != "kraft.version"}
    parts[MV_NAME] = st.integers(max(ranges[MV_NAME][0], line.minimum.level), ranges[MV_NAME][1])
    return st.fixed_dictionaries(parts).filter(valid)


def clusters(catalog: Catalog | None = None, max_controllers: int = 3, max_brokers: int = 3) -> st.SearchStrategy[dict[str, int | str]]:
    return st.fixed_dictionaries({"controllers": st.integers(1, max_controllers),
                                  "brokers": st.integers(0, max_brokers), "release": releases(catalog)})


def _nodes(node_ids: Sequence[int]) -> st.SearchStrategy[list[int]]:
    return st.lists(st.sampled_from(list(node_ids)), min_size=1, max_size=len(node_ids), unique=True).map(sorted)


def fault_schedules(node_ids: Sequence[int], max_size: int = 6) -> st.SearchStrategy[list[Step]]:
    one = st.one_of(
        _nodes(node_ids).map(lambda ns: Step("crash", {"nodes": ns})),
        _nodes(node_ids).map(lambda ns: Step("start", {"nodes": ns})),
        _nodes(node_ids).map(lambda ns: Step("partition", {"groups": [ns]})),
        st.just(None).map(lambda _: Step("heal")),
        st.sampled_from([100, 1_000, 5_000]).map(lambda ms: Step("run", {"ms": ms})),
    )
    return st.lists(one, max_size=max_size)


def op_sequences(release_names: Sequence[str], node_ids: Sequence[int], levels: Sequence[int] = (),
                 max_size: int = 8) -> st.SearchStrategy[list[Step]]:
    lv = st.sampled_from(list(levels)) if levels else st.integers(1, 30)
    one = st.one_of(
        st.tuples(st.sampled_from(list(release_names)), _nodes(node_ids)).map(
            lambda t: Step("roll", {"release": t[0], "nodes": t[1]})),
        lv.map(lambda x: Step("features-upgrade", {"features": {MV_NAME: x}})),
        st.tuples(lv, st.booleans()).map(
            lambda t: Step("features-downgrade", {"features": {MV_NAME: t[0]}, "unsafe": t[1] or None})),
        st.integers(1, 2).map(lambda n: Step("create-topics", {"count": n})),
        _nodes(node_ids).map(lambda ns: Step("stop", {"nodes": ns})),
        _nodes(node_ids).map(lambda ns: Step("start", {"nodes": ns})),
        st.sampled_from([100, 1_000, 5_000]).map(lambda ms: Step("run", {"ms": ms})),
    )
    return st.lists(one, max_size=max_size)


@st.composite
def hypothetical_catalogs(draw: st.DrawFn, base: Catalog | None = None, max_versions: int = 4) -> HypotheticalCatalog:
    n = draw(st.integers(1, max_versions))
    changed = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    mvs = tuple(NewMetadataVersion(c) for c in changed)
    changed_at = [i for i, c in enumerate(changed) if c]
    records: tuple[NewRecordType, ...] = ()
    if bool(changed_at) and draw(st.booleans()):
        since = draw(st.lists(st.sampled_from(changed_at), min_size=1, max_size=len(changed_at), unique=True))
        records = (NewRecordType("HypotheticalRecord", tuple(sorted(since))),)
    features: tuple[NewFeature, ...] = ()
    if draw(st.booleans()):
        first = draw(st.integers(0, n - 1))
        levels = [NewFeatureLevel(1, bootstrap=first, needs_mv=first)]
        if draw(st.booleans()):
            second = draw(st.integers(first, n - 1))
            levels.append(NewFeatureLevel(2, bootstrap=second, needs_mv=second))
        features = (NewFeature("hypothetical.version", tuple(levels)),)
    return HypotheticalCatalog(mvs, features, records, base=base or default_catalog())
