"""Client-metrics subscriptions (KIP-714, Kafka 3.7 on): the controller's check of a
subscription's configs, and how a broker describes them.

A subscription is a CLIENT_METRICS config resource named by the subscription; its configs are
`metrics` (metric name prefixes), `interval.ms` (the push interval) and `match` (selectors
`name=regex`). Kafka's controller checks the configs a change would leave the subscription
with (ClientMetricsConfigs.validate through ControllerConfigurationValidator): a name it does
not define, an interval outside 100 ms to 1 hour and a selector it cannot read refuse the
change, each with its release's words. How values are read changed over releases (3.7 to 3.9
split the text themselves; 4.0 parses it by the definitions; 4.2 refuses empty list
elements), and from 4.1 a broker describes a subscription's every config with its default.
Those facts are read from the jars (data/client_metrics_configs.toml).

One check is not reproduced everywhere: whether a selector's value compiles as a
java.util.regex.Pattern. Python's `re` is asked only for regexes made of characters and
constructs on which the two agree; for any other the verdict is `unmodelled`, so that `serve`
carries nothing out rather than answer as Kafka might not.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from typing import NamedTuple

import msgspec

from kraftsim.controller.api_errors import NONE, ApiError
from kraftsim.controller.config_descriptions import (
    CONFIG_TYPE_IDS, DEFAULT_CONFIG, DescribedConfig, Synonym, described_order, described_order_rule,
)
from kraftsim.controller.topic_configs import ConfigKey, config_list, config_value_error, described_value
from kraftsim.javacompat import (
    CHM_PROPERTIES_MAX_KEYS, concurrent_hash_map_bin, concurrent_hash_map_order,
    java_trim, parse_int,
    string_hash_order, string_split,
)
from kraftsim.versions import entry_for_release, release_name_key

#: DescribeConfigsResponse.ConfigSource of a subscription's own value.
CLIENT_METRICS_CONFIG = 7
INTERVAL_MS, MATCH = "interval.ms", "match"
MIN_INTERVAL_MS, MAX_INTERVAL_MS = 100, 3_600_000
#: The client attributes a selector may name (ClientMetricsConfigs' ALLOWED_MATCH_PARAMS).
MATCH_SELECTORS = frozenset({"client_instance_id", "client_id", "client_software_name", "client_software_version",
                             "client_source_address", "client_source_port"})
#: Regexes java.util.regex and Python's re read alike: ASCII letters, digits and a few literal
#: characters, with the operators . * + ? | ( ), "^" first and "$" last, but no group construct
#: "(?", escapes, classes, counted repetition or anchors elsewhere (where the two dialects part:
#: Java repeats an anchor, Python refuses to).
_PORTABLE_REGEX = re.compile(r"[A-Za-z0-9 _\-.:/@#%&~!*+?^$|()]*")


class ClientMetricsKey(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    type: str
    default: str | None = None
    documentation: str = ""


class ClientMetricsRules(msgspec.Struct, frozen=True, kw_only=True):
    """One entry of data/client_metrics_configs.toml (see its header)."""

    since: str
    read_from: str
    interval_parse: str
    list_parse: str
    empty_elements: str
    describes: str
    configs: tuple[ClientMetricsKey, ...]

    def key(self, name: str) -> ConfigKey:
        """The definition as a ConfigDef key (its parse and, from 4.2, ValidList's check)."""
        type_ = next(k.type for k in self.configs if k.name == name)
        return ConfigKey(name=name, type=type_, no_empty_values=type_ == "LIST" and self.empty_elements == "refused")


class _Data(msgspec.Struct, frozen=True):
    release: tuple[ClientMetricsRules, ...]


@cache
def _entries() -> tuple[ClientMetricsRules, ...]:
    text = resources.files("kraftsim.controller").joinpath("data/client_metrics_configs.toml").read_text("utf-8")
    data = msgspec.convert(tomllib.loads(text), _Data)
    return tuple(sorted(data.release, key=lambda e: release_name_key(e.since)))


@cache
def client_metrics_rules(release: str) -> ClientMetricsRules:
    """The rules of `release`: the last entry from its release or before (the first for older)."""
    return entry_for_release(_entries(), release)


def has_client_metrics(release: str) -> bool:
    """Whether `release` knows the CLIENT_METRICS config resource type (3.7 on: the first entry)."""
    return release_name_key(release) >= release_name_key(_entries()[0].since)


class Verdict(NamedTuple):
    """The controller's answer to a subscription's resulting configs: NONE or its refusal, and
    what of it kraftsim could not reproduce (None when all of it)."""

    error: ApiError
    unmodelled: str | None = None


def client_metrics_check(release: str, subscription: str, configs: Mapping[str, str]) -> Verdict:
    """The check a controller of `release` makes of subscription `subscription` holding
    `configs` once a change is applied, in Kafka's order: the name, names it does not define,
    the values' parse (4.0 on), the interval's range, then each selector of `match`."""
    rules = client_metrics_rules(release)
    if not subscription:
        return Verdict(ApiError("INVALID_REQUEST", "Subscription name can't be empty"))
    defined = [k.name for k in rules.configs]
    unknown = [n for n in string_hash_order(list(configs)) if n not in defined]
    if unknown:
        bins = [concurrent_hash_map_bin(n) for n in unknown]
        ordered = len(unknown) == 1 or (len(configs) <= CHM_PROPERTIES_MAX_KEYS and len(set(bins)) == len(bins))
        first = concurrent_hash_map_order(unknown)[0]  # (the Properties it looks at keep a ConcurrentHashMap)
        return Verdict(ApiError("INVALID_REQUEST", f"Unknown client metrics configuration: {first}"),
                       None if ordered else "which of several unknown subscription configs is named first")
    if rules.interval_parse == "ConfigDef":
        for name in defined:
            problem = config_value_error(rules.key(name), configs[name]) if name in configs else None
            if problem is not None:
                return Verdict(ApiError("INVALID_CONFIG", problem))
    if INTERVAL_MS in configs:
        raw = configs[INTERVAL_MS]
        interval = parse_int(java_trim(raw) if rules.interval_parse == "ConfigDef" else raw)
        if interval is None:  # (3.7 to 3.9: Integer.parseInt's NumberFormatException, an unexpected error)
            return Verdict(ApiError("UNKNOWN_SERVER_ERROR", None))
        if not MIN_INTERVAL_MS <= interval <= MAX_INTERVAL_MS:
            return Verdict(ApiError("INVALID_REQUEST", f"Invalid value {interval} for {INTERVAL_MS}, interval must be "
                                                       f"between {MIN_INTERVAL_MS} and {MAX_INTERVAL_MS} (1 hour)"))
    if MATCH in configs:
        raw = configs[MATCH]
        patterns = config_list(raw) if rules.list_parse == "ConfigDef" else string_split(raw, ",")
        return _selectors_check(patterns)
    return Verdict(NONE)


def _selectors_check(patterns: Sequence[str]) -> Verdict:
    """ClientMetricsConfigs.parseMatchingPatterns: each `name=regex` names a client attribute
    and its regex compiles."""
    for pattern in patterns:
        refused = Verdict(ApiError("INVALID_CONFIG", f"Illegal client matching pattern: {pattern}"))
        parts = string_split(pattern, "=")
        if len(parts) != 2 or java_trim(parts[0]) not in MATCH_SELECTORS:
            return refused
        regex = java_trim(parts[1])
        inner = regex.removeprefix("^").removesuffix("$")
        if (not _PORTABLE_REGEX.fullmatch(regex) or "(?" in regex or "^" in inner or "$" in inner
                or (regex.startswith("^") and inner[:1] in ("*", "+", "?"))):
            return Verdict(refused.error, f"whether the regex {regex!r} compiles in Java")
        try:
            re.compile(regex)
        except re.error:
            return refused
    return Verdict(NONE)


def describe_client_metrics_configs(release: str, held: Mapping[str, str], keys: Sequence[str] | None = None, *,
                                    documentation: bool = False) -> list[DescribedConfig]:
    """A broker of `release` describing a subscription holding `held` (an unknown subscription
    holds nothing): to 4.0 the held configs only, as its Properties list them, whatever `keys`
    asks for; from 4.1 every definition (or those of `keys`), in the order of the map the
    broker builds, its held value as the definitions parse it or its default."""
    rules = client_metrics_rules(release)
    if rules.describes == "held":
        names = concurrent_hash_map_order(string_hash_order(list(held)))
        # (no type, no synonyms, and the message's default documentation, "", whether asked for or not)
        return [DescribedConfig(n, held[n], CLIENT_METRICS_CONFIG, 0, (), "") for n in names]
    out = []
    for name in described_order(described_order_rule(release), [k.name for k in rules.configs]):
        if keys and name not in keys:
            continue
        spec = next(k for k in rules.configs if k.name == name)
        value = described_value(rules.key(name), held[name]) if name in held else spec.default
        synonyms = (Synonym(name, value, CLIENT_METRICS_CONFIG),) if name in held else ()
        out.append(DescribedConfig(name, value, CLIENT_METRICS_CONFIG if name in held else DEFAULT_CONFIG,
                                   CONFIG_TYPE_IDS.get(spec.type, 0), synonyms,
                                   spec.documentation if documentation else None))
    return out

