"""The lines and errors of Kafka's storage and features tools that concern versions.

Pure functions: they take a Catalog and the user's arguments, and return the lines to
print or raise an error whose message is Kafka's text. The CLI only prints them, so
`kraftsim` and `kafka-storage` / `kafka-features` say the same things.

`tool` is "storage" (kafka-storage) or "features" (kafka-features); the two differ only
in how they word argument and level errors.
"""

from __future__ import annotations

from typing import Literal, Sequence

from kraftsim.javacompat import parse_int, string_hash
from kraftsim.versions.catalog import Catalog
from kraftsim.versions.errors import IllegalArgument, ToolFailure, UnknownFeature, UnknownMetadataVersion
from kraftsim.versions.metadata_version import FEATURE_NAME as MV_NAME

Tool = Literal["storage", "features"]
ArgStyle = Literal["name-level", "feature-dependencies"]



def _java_trim(s: str) -> str:
    """Java's String.trim: strip every char <= U+0020 at both ends."""
    start, end = 0, len(s)
    while start < end and s[start] <= " ":
        start += 1
    while end > start and s[end - 1] <= " ":
        end -= 1
    return s[start:end]


def _java_split_equals(arg: str) -> list[str]:
    """Java's arg.split("="): trailing empty parts are dropped."""
    parts = arg.split("=")
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def parse_feature_arg(arg: str, style: ArgStyle = "name-level") -> tuple[str, int]:
    """Parse a `name=level` argument.

    "name-level" is the wording of `kafka-storage format --feature`, `kafka-features
    upgrade/downgrade --feature` and `kafka-features feature-dependencies`;
    "feature-dependencies" is that of `kafka-storage feature-dependencies`.
    """
    if style == "feature-dependencies":
        parts = _java_split_equals(arg)
        if len(parts) != 2:
            raise ToolFailure(f"Invalid feature format: {arg}. Expected format: 'feature=version' (e.g. 'group.version=1')")
        name, raw = _java_trim(parts[0]), _java_trim(parts[1])
        level = parse_int(raw, 16)
        if level is None:
            raise ToolFailure(f"Invalid version format: {raw} for feature {name}")
        return name, level
    index = arg.find("=")
    if index < 0:
        raise ToolFailure(f"Can't parse feature=level string {arg}: equals sign not found.")
    name, raw = _java_trim(arg[:index]), _java_trim(arg[index + 1 :])
    level = parse_int(raw, 16)
    if level is None:
        raise ToolFailure(f"Can't parse feature=level string {arg}: unable to parse {raw} as a short.")
    return name, level


def version_mapping(catalog: Catalog, release_version: str | None = None) -> list[str]:
    """`version-mapping [--release-version V]`: the MV level, then each production feature's default."""
    if release_version is None:
        mv = catalog.latest_production
        shown = mv.version
    else:
        try:
            mv = catalog.mv_from_string(release_version, unstable=True)
        except UnknownMetadataVersion as exc:
            if catalog.policy("version_mapping_unknown") == "release-range":
                raise ToolFailure(catalog.policy_text("version_mapping_unknown", "unknown").format(
                    text=release_version, minimum=catalog.minimum.version,
                    latest=catalog.latest_production.version)) from None
            raise ToolFailure(str(exc)) from None
        shown = release_version
    lines = [f"{MV_NAME}={mv.level} ({shown})"]
    lines += [f"{name}={level}" for name, level in catalog.default_levels(mv, production_only=True).items()]
    return lines


def feature_dependencies(catalog: Catalog, args: Sequence[str], tool: Tool = "storage") -> list[str]:
    """`feature-dependencies --feature f=v ...`: what each feature level requires."""
    style: ArgStyle = "feature-dependencies" if tool == "storage" else "name-level"
    if tool == "storage" and catalog.policy("storage_feature_argument") == "match-error":
        for arg in args:
            if len(_java_split_equals(arg)) != 2:
                hash_hex = format(string_hash(arg), "x")
                raise ToolFailure(catalog.policy_text("storage_feature_argument", "error").format(hash=hash_hex))
    parsed = [parse_feature_arg(a, style) for a in args]
    lines: list[str] = []
    for name, level in parsed:
        if name == MV_NAME:
            try:
                mv = catalog.mv_from_level(level)
            except UnknownMetadataVersion:
                raise ToolFailure(f"Unknown metadata.version {level}") from None
            lines.append(f"{MV_NAME}={level} ({mv}) has no dependencies.")
            continue
        try:
            feature = catalog.feature(name)
        except UnknownFeature:
            raise ToolFailure(f"Unknown feature: {name}") from None
        try:
            fl = feature.from_level(level, allow_unstable=True)
        except IllegalArgument:
            if tool == "features":
                raise
            raise ToolFailure(f"Feature level {level} is not supported for feature {name}") from None
        if not fl.dependencies:
            lines.append(f"{name}={level} has no dependencies.")
            continue
        lines.append(f"{name}={level} requires:")
        for dep, dep_level in fl.dependencies:
            suffix = f" ({catalog.metadata_version(dep_level)})" if dep == MV_NAME else ""
            lines.append(f"    {dep}={dep_level}{suffix}")
    return lines


def release_version_updates(catalog: Catalog, release_version: str, downgrade: bool) -> dict[str, int]:
    """`kafka-features upgrade|downgrade --release-version V`: the levels the tool sends.

    metadata.version plus every production feature at its default for V; an upgrade
    leaves out features whose default is 0, a downgrade sends them all.
    """
    mv = catalog.mv_from_string(release_version, unstable=True)
    updates = {MV_NAME: mv.level}
    for name, level in catalog.default_levels(mv, production_only=True).items():
        if downgrade or level > 0:
            updates[name] = level
    return updates
