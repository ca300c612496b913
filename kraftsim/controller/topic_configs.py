"""Kafka's check of a topic's configs on the controller (ControllerConfigurationValidator for
TOPIC resources: LogConfig.validate), for CreateTopics and IncrementalAlterConfigs.

Each release's definitions are data (data/topic_configs.toml, printed by the released jars):
the names it knows, and per name a type and a validator. The check goes as Kafka's does: an
unknown name first ("Unknown topic config name: ..."), then each defined key in definition
order, parsed by its type and checked by its validator (ConfigDef's texts: "Invalid value V
for configuration K: ..."), then the one rule across keys the controller applies with its
default configuration (min.compaction.lag.ms not above max.compaction.lag.ms). Any failure is
INVALID_CONFIG. Rules that depend on a broker configured otherwise than by default (tiered
storage enabled) are not modelled.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources

import msgspec

from kraftsim.controller.api_errors import NONE, ApiError
from kraftsim.javacompat import (
    CHM_PROPERTIES_MAX_KEYS, concurrent_hash_map_order, double_to_string, java_trim, parse_int, string_hash_order,
)
from kraftsim.versions import entry_for_release, release_name_key

_INT_BITS = {"SHORT": 16, "INT": 32, "LONG": 64}
#: Double.parseDouble's decimal, NaN and Infinity forms (a float or double suffix allowed).
_JAVA_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[fFdD]?)")
#: Its hexadecimal form: 0x1.8p3.
_JAVA_HEX_DOUBLE = re.compile(r"[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+[fFdD]?")
#: ConfigDef's LIST separator.
_COMMA = re.compile(r"[ \t\n\x0b\f\r]*,[ \t\n\x0b\f\r]*")
_THROTTLED_REPLICA = re.compile(r"([0-9]+:[0-9]+)?")
_LONG_MAX = 2**63 - 1


class ConfigKey(msgspec.Struct, frozen=True, kw_only=True):
    """One config as a ConfigDef defines it: its type and validator (a topic config of a
    release, see data/topic_configs.toml; or a broker's dynamic config)."""

    name: str
    type: str
    at_least: int | None = None
    at_most: int | None = None
    or_equal: int | None = None
    one_of: tuple[str, ...] | None = None
    each_one_of: tuple[str, ...] | None = None
    no_empty_values: bool = False
    metadata_version_up_to: str | None = None
    throttled_replicas: bool = False


class TopicConfigs(msgspec.Struct, frozen=True):
    """What one release's code defines (an entry of data/topic_configs.toml)."""

    since: str
    names_checked_in: str
    keys: tuple[ConfigKey, ...]


class _Data(msgspec.Struct, frozen=True):
    message_format_versions: tuple[str, ...]
    topic_configs: tuple[TopicConfigs, ...]


@cache
def _data() -> _Data:
    text = resources.files("kraftsim.controller").joinpath("data/topic_configs.toml").read_text("utf-8")
    data = msgspec.convert(tomllib.loads(text), _Data)
    return msgspec.structs.replace(data, topic_configs=tuple(sorted(data.topic_configs,
                                                                    key=lambda e: release_name_key(e.since))))


@cache
def topic_configs(release: str) -> TopicConfigs:
    """The topic configs release `release` defines: the last entry from its release or before."""
    return entry_for_release(_data().topic_configs, release)


def topic_config_error(release: str, latest_production: str, configs: Mapping[str, str]) -> ApiError:
    """Kafka's verdict on a topic whose configs would be `configs` (every one it would then
    have, none null), on a controller of `release` whose newest production metadata.version
    is `latest_production`: NONE, or INVALID_CONFIG saying what is wrong."""
    defs = topic_configs(release)
    known = {k.name for k in defs.keys}
    unknown = [n for n in _names_in_check_order(defs, list(configs)) if n not in known]
    if unknown:
        return ApiError("INVALID_CONFIG", f"Unknown topic config name: {unknown[0]}")
    parsed: dict[str, object] = {}
    for key in defs.keys:
        if key.name in configs:
            value, problem = _parse(key, configs[key.name], latest_production)
            if problem is not None:
                return ApiError("INVALID_CONFIG", problem)
            parsed[key.name] = value
    least, most = parsed.get("min.compaction.lag.ms", 0), parsed.get("max.compaction.lag.ms", _LONG_MAX)
    assert isinstance(least, int) and isinstance(most, int)
    if least > most:
        return ApiError("INVALID_CONFIG", f"conflict topic config setting min.compaction.lag.ms ({least}) > "
                                          f"max.compaction.lag.ms ({most})")
    return NONE


def _names_in_check_order(defs: TopicConfigs, names: list[str]) -> list[str]:
    """The names in the order Kafka looks at them for an unknown one: the keys of the map the
    controller builds (a HashMap), or of the Properties made from it (which keeps them in a
    ConcurrentHashMap; its order is reproduced for up to CHM_PROPERTIES_MAX_KEYS keys)."""
    in_hash_map = string_hash_order(names)
    if defs.names_checked_in == "Properties" and len(names) <= CHM_PROPERTIES_MAX_KEYS:
        return concurrent_hash_map_order(in_hash_map)
    return in_hash_map


def _invalid(name: str, value: object, why: str) -> str:
    return f"Invalid value {value} for configuration {name}: {why}"


def config_list(raw: str) -> list[str]:
    """ConfigDef's parse of a LIST value: trimmed, no element when empty, else split at each
    comma with the whitespace around it (empty elements kept)."""
    text = java_trim(raw)
    return [] if not text else _COMMA.split(text)


def _parse_type(key: ConfigKey, raw: str) -> tuple[object, str | None]:
    """ConfigDef.parseType for one key: its value by type, or the text of the ConfigException
    that refuses it."""
    text = java_trim(raw)
    if key.type == "BOOLEAN":
        if text.lower() not in ("true", "false"):
            return None, _invalid(key.name, raw, "Expected value to be either true or false")
        return text.lower() == "true", None
    if key.type in _INT_BITS:
        number = parse_int(text, _INT_BITS[key.type])
        if number is None:
            return None, _invalid(key.name, raw, f"Not a number of type {key.type}")
        return number, None
    if key.type == "DOUBLE":
        real = _java_double(text)
        if real is None:
            return None, _invalid(key.name, raw, "Not a number of type DOUBLE")
        return real, None
    if key.type == "LIST":
        return config_list(raw), None
    return text, None  # STRING (and any other type kept as text)


def _parse(key: ConfigKey, raw: str, latest_production: str) -> tuple[object, str | None]:
    """ConfigDef.parseValue for one key: its value by type, then its validator; or the text
    of the ConfigException that refuses it."""
    value, problem = _parse_type(key, raw)
    if problem is not None:
        return value, problem
    return value, _validate(key, value, latest_production)


def described_value(key: ConfigKey, raw: str) -> str:
    """`raw` as a node describes the config `key` set to it: parsed by the key's type and
    written back (ConfigDef.convertToString: "01000" is 1000, "TRUE" true, "a , b" a,b,
    strings trimmed). A value the type refuses (not held by a node of this release) as it is."""
    value, problem = _parse_type(key, raw)
    if problem is not None:
        return raw
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return double_to_string(value)
    if isinstance(value, list):
        return ",".join(value)
    return str(value)


def config_value_error(key: ConfigKey, raw: str, latest_production: str = "") -> str | None:
    """ConfigDef's refusal of `raw` as the value of `key` (the ConfigException's text), or None.
    (`latest_production` matters only to a key that names a metadata version.)"""
    return _parse(key, raw, latest_production)[1]


def _java_double(text: str) -> float | None:
    """Double.parseDouble, or None where it would throw."""
    if _JAVA_HEX_DOUBLE.fullmatch(text):
        return float.fromhex(text.rstrip("fFdD"))
    if not _JAVA_DOUBLE.fullmatch(text):
        return None
    if text.lstrip("+-") in ("NaN", "Infinity"):
        return float(text.replace("Infinity", "inf"))
    return float(text.rstrip("fFdD"))


def _shown(value: object) -> str:
    """A parsed value as Java prints it in ConfigException."""
    if isinstance(value, float):
        return double_to_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(value) + "]"
    return str(value)


def _validate(key: ConfigKey, value: object, latest_production: str) -> str | None:
    """The key's validator on its parsed value: None, or the refusal's text."""
    name = key.name
    if key.or_equal is not None:  # (CompressionType's gzip level: a range, or one value)
        assert isinstance(value, int)
        if value != key.or_equal and not (key.at_least or 0) <= value <= (key.at_most or 0):
            return _invalid(name, value, f"Value must be between {key.at_least} and {key.at_most} or equal to "
                                         f"{key.or_equal}")
        return None
    if key.at_least is not None or key.at_most is not None:
        assert isinstance(value, (int, float))
        if key.at_least is not None and value < key.at_least:
            return _invalid(name, _shown(value), f"Value must be at least {key.at_least}")
        if key.at_most is not None and value > key.at_most:
            return _invalid(name, _shown(value), f"Value must be no more than {key.at_most}")
        return None
    if key.one_of is not None and value not in key.one_of:
        return _invalid(name, value, f"String must be one of: {', '.join(key.one_of)}")
    if key.no_empty_values and key.each_one_of is None and isinstance(value, list):  # (ValidList of any values)
        return f"Configuration '{name}' values must not be empty." if any(not v for v in value) else None
    if key.each_one_of is not None:
        assert isinstance(value, list)
        if key.no_empty_values and any(not v for v in value):
            return f"Configuration '{name}' values must not be empty."
        for v in value:
            if v not in key.each_one_of:
                return _invalid(name, v, f"String must be one of: {', '.join(key.each_one_of)}")
        return None
    if key.throttled_replicas:
        assert isinstance(value, list)
        parts = [java_trim(v) for v in value]
        if not (all(_THROTTLED_REPLICA.fullmatch(p) for p in parts) or "".join(parts) == "*"):
            return _invalid(name, _shown(value), f"{name} must be the literal '*' or a list of replicas in the "
                                                 "following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")
        return None
    if key.metadata_version_up_to is not None:
        assert isinstance(value, str)
        if not _known_version(value, key.metadata_version_up_to, latest_production):
            return _invalid(name, value, f"Version {value} is not a valid version")
    return None


def _known_version(text: str, up_to: str, latest_production: str) -> bool:
    """MetadataVersion.fromVersionString finds `text`: a version the release knows, or the
    short form (its release) of a production one; only the first two parts count (three for
    0.x), so 3.0.5 reads as 3.0."""
    versions: Sequence[str] = _data().message_format_versions
    known = versions[:versions.index(up_to) + 1]
    production = known[:known.index(latest_production) + 1] if latest_production in known else known
    parts = text.split(".")
    keep = 3 if text.startswith("0.") else 2
    wanted = text if keep >= len(parts) else ".".join(parts[:keep])
    return wanted in known or wanted in {v.split("-IV")[0] for v in production}
