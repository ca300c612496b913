"""Kafka's consistency rules for feature definitions, run on every release line.

Kafka checks each feature when its Feature enum loads
(validateDefaultValueAndLatestProductionValue) and refuses to start if one is broken.
kraftsim runs the same six rules, with Kafka's texts, on every release line of every
catalog it loads, so a hypothetical feature level that Kafka could never ship is
refused up front. Rule ids are ``kafka-2.5.<n>``.
"""

from __future__ import annotations

from kraftsim.versions.errors import CatalogError
from kraftsim.versions.features import Feature
from kraftsim.versions.metadata_version import FEATURE_NAME as MV_NAME
from kraftsim.versions.model import CatalogData, Line


def check_line(data: CatalogData, line: Line) -> None:
    """Apply the six rules to every feature of one release line, and check that the line's
    own metadata_changed flags agree with the gates it sees."""
    by_name = {f.name: f for f in line.features}
    for feature in line.features:
        _check_feature(data, line, feature, by_name)
    for mv in line.table:
        added = data.gates.additions_at(mv.level)
        if added and not mv.metadata_changed and not mv.is_placeholder_in(line.release.key):
            raise CatalogError("metadata-change-flag", f"metadata.version {mv} adds {', '.join(added)} but release "
                                                       f"{line.release.name} gives it metadata_changed = false",
                               f"{data.where} at release {line.release.name}")


def _check_feature(data: CatalogData, line: Line, f: Feature, by_name: dict[str, Feature]) -> None:
    where = f"{data.where} at release {line.release.name}"

    def fail(n: int, text: str) -> CatalogError:
        return CatalogError(f"kafka-2.5.{n}", text, where)

    table = line.table
    lp_mv = table.latest_production
    lp = f.get(f.latest_production)
    if lp is None:
        raise fail(1, f"Feature {f.enum} has latest production version {f.const_name(f.latest_production)} which is not one of its feature versions.")
    default = f.default_version(lp_mv)
    if lp.level < default.level:
        raise fail(2, f"Feature {f.enum} has latest production value {lp} smaller than its default version {default} with latest production MV.")
    for dep, level in lp.dependencies:
        if dep != MV_NAME and not by_name[dep].is_production_ready(level):
            d = by_name[dep]
            raise fail(3, f"Feature {f.enum} has latest production FeatureVersion {lp} with dependency {d.const_name(level)} that is not production ready. ({d.enum} latest production: {d.const_name(d.latest_production)})")
    for dep, level in lp.dependencies:
        if dep == MV_NAME and level > lp_mv.level:
            raise fail(4, f"Feature {f.enum} has latest production FeatureVersion {lp} with MV dependency {data.version_of(level)} that is not production ready. (MV latest production: {lp_mv})")
    for mv in table:
        dv = f.default_version(mv)
        for dep, level in dv.dependencies:
            if dep != MV_NAME:
                d = by_name[dep]
                dd = d.default_version(mv)
                if level > dd.level:
                    raise fail(5, f"Feature {f.enum} has default FeatureVersion {dv} when MV={mv} with dependency {d.const_name(level)} that is behind its default version {dd}.")
    for mv in table:
        dv = f.default_version(mv)
        for dep, level in dv.dependencies:
            if dep == MV_NAME and level > dv.bootstrap:
                raise fail(6, f"Feature {f.enum} has default FeatureVersion {dv} when MV={mv} with MV dependency {data.version_of(level)} that is behind its bootstrap MV {dv.bootstrap_version}.")
