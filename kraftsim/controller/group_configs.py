"""Group configs (KIP-848, Kafka 4.0 on): the controller's check of a group's configs.

A group's configs are a GROUP config resource (type 32) named by the group. Kafka's controller
checks the configs a change would leave the group with (GroupConfig.validate through
ControllerConfigurationValidator): names it does not define, values its definitions cannot
parse or whose own validator refuses them, then each value against the bounds the node's
group-coordinator configs set (group.F.min.REST and group.F.max.REST bound config F.REST).
The definitions, the words of a bound's refusal and the node's defaults are read from the jars
(data/group_configs.toml); a release without GroupConfig has no GROUP type at all, so its
controller refuses id 32 as an unknown resource type.

kraftsim's nodes run with their release's group-coordinator defaults. What kraftsim does not
reproduce gets the verdict `unmodelled` (so `serve` carries nothing out): a config whose checks
go past its definition and the node's bounds (a topic name, an assignor the node lists...),
a validator other than a numeric range, which of several unknown names or failed bounds is
named, and the session-above-heartbeat check (which the defaults' bounds never reach).

A broker describes a group's every config, its held value (parsed) or the node's default; from
4.3 with the broker configs it defaults to as synonyms, which kraftsim does not describe
(`describes_group_configs`).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources

import msgspec

from kraftsim.controller.api_errors import NONE, ApiError
from kraftsim.controller.client_metrics import Verdict
from kraftsim.controller.config_descriptions import (
    CONFIG_TYPE_IDS, DEFAULT_CONFIG, DescribedConfig, Synonym, described_order, described_order_rule,
)
from kraftsim.controller.topic_configs import ConfigKey, config_value_error, described_value
from kraftsim.javacompat import java_trim, parse_int
from kraftsim.versions import entry_for_release, release_name_key

#: DescribeConfigsResponse.ConfigSource of a group's own value.
GROUP_CONFIG = 8
#: A ConfigDef.Range as its toString writes it: "[1,...]", "[0,...,10]".
_RANGE = re.compile(r"\[(-?\d+),\.\.\.(?:,(-?\d+))?\]")
_NUMERIC = ("INT", "LONG", "SHORT")


class GroupConfigKey(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    type: str
    default: str | None = None
    validator: str = "null"
    documentation: str = ""

    def key(self) -> ConfigKey | None:
        """The definition as a ConfigDef key, or None when its validator is not a range."""
        if self.validator == "null":
            return ConfigKey(name=self.name, type=self.type)
        m = _RANGE.fullmatch(self.validator)
        if m is None:
            return None
        return ConfigKey(name=self.name, type=self.type, at_least=int(m[1]),
                         at_most=int(m[2]) if m[2] is not None else None)


class GroupConfigRules(msgspec.Struct, frozen=True, kw_only=True):
    """One entry of data/group_configs.toml (see its header)."""

    since: str
    read_from: str
    present: str
    bound_words: str = "names"
    synonyms: str = "own"
    configs: tuple[GroupConfigKey, ...] = ()
    node: dict[str, str] = msgspec.field(default_factory=dict)

    def bounds(self, name: str) -> tuple[tuple[str, int], tuple[str, int]] | None:
        """The node configs bounding `name` below and above, with their values, if any."""
        family, _, rest = name.partition(".")
        low, high = f"group.{family}.min.{rest}", f"group.{family}.max.{rest}"
        if low not in self.node or high not in self.node:
            return None
        return (low, int(self.node[low])), (high, int(self.node[high]))


class _Data(msgspec.Struct, frozen=True):
    release: tuple[GroupConfigRules, ...]


@cache
def _entries() -> tuple[GroupConfigRules, ...]:
    text = resources.files("kraftsim.controller").joinpath("data/group_configs.toml").read_text("utf-8")
    data = msgspec.convert(tomllib.loads(text), _Data)
    return tuple(sorted(data.release, key=lambda e: release_name_key(e.since)))


@cache
def group_config_rules(release: str) -> GroupConfigRules:
    """The rules of `release`: the last entry from its release or before (the first for older)."""
    return entry_for_release(_entries(), release)


def has_group_configs(release: str) -> bool:
    """Whether `release` knows the GROUP config resource type."""
    return group_config_rules(release).present == "yes"


def group_config_check(release: str, configs: Mapping[str, str]) -> Verdict:
    """The check a controller of `release` makes of a group holding `configs` once a change is
    applied, in Kafka's order: unknown names, the definitions' parse, the node's bounds."""
    rules = group_config_rules(release)
    defined = {k.name: k for k in rules.configs}
    unknown = [n for n in configs if n not in defined]
    if unknown:
        refused = ApiError("INVALID_CONFIG", f"Unknown group config name: {unknown[0]}")
        return Verdict(refused, None if len(unknown) == 1 else "which of several unknown group configs is named")
    for spec in rules.configs:
        if spec.name not in configs:
            continue
        key = spec.key()
        if key is None:
            return Verdict(NONE, f"what {spec.name}'s validator {spec.validator} takes")
        problem = config_value_error(key, configs[spec.name])
        if problem is not None:
            return Verdict(ApiError("INVALID_CONFIG", problem))
    failed: list[ApiError] = []
    for spec in rules.configs:
        if spec.name not in configs or spec.type == "BOOLEAN":
            continue
        bounds = rules.bounds(spec.name)
        if bounds is None or spec.type not in _NUMERIC:
            return Verdict(NONE, f"the checks of {spec.name} past its definition")
        value = parse_int(java_trim(configs[spec.name]))
        assert value is not None  # (parsed above)
        error = _bound_error(rules.bound_words, spec.name, value, *bounds)
        if error is not None:
            failed.append(error)
    if failed:
        return Verdict(failed[0], None if len(failed) == 1 else "which of several out-of-bounds group configs is named")
    return Verdict(NONE)


def _bound_error(words: str, name: str, value: int, low: tuple[str, int], high: tuple[str, int]) -> ApiError | None:
    if low[1] <= value <= high[1]:
        return None
    if words == "range":
        return ApiError("INVALID_CONFIG", f"{name} must be in the range {low[1]} to {high[1]} inclusive.")
    if value < low[1]:
        return ApiError("INVALID_CONFIG", f"{name} must be greater than or equal to {low[0]}")
    return ApiError("INVALID_CONFIG", f"{name} must be less than or equal to {high[0]}")


def describes_group_configs(release: str) -> bool:
    """Whether kraftsim describes a group's configs as a broker of `release` does (4.0 to 4.2:
    each config with its own synonym only)."""
    rules = group_config_rules(release)
    return rules.present == "yes" and rules.synonyms == "own"


def describe_group_configs(release: str, held: Mapping[str, str], keys: Sequence[str] | None = None, *,
                           documentation: bool = False) -> list[DescribedConfig]:
    """A broker of `release` describing a group holding `held` (one never changed holds
    nothing): every definition (or those of `keys`) in the order of the map the broker builds,
    its held value as the definitions parse it (GROUP_CONFIG) or the node's default
    (DEFAULT_CONFIG, from its group.NAME config where it has one), with that one synonym."""
    rules = group_config_rules(release)
    if not describes_group_configs(release):
        raise ValueError(f"kraftsim does not describe the group configs of {release}")
    out = []
    for name in described_order(described_order_rule(release), [k.name for k in rules.configs]):
        if keys and name not in keys:
            continue
        spec = next(k for k in rules.configs if k.name == name)
        key = spec.key() or ConfigKey(name=name, type=spec.type)
        value = described_value(key, held[name]) if name in held else rules.node.get(f"group.{name}", spec.default)
        source = GROUP_CONFIG if name in held else DEFAULT_CONFIG
        out.append(DescribedConfig(name, value, source, CONFIG_TYPE_IDS.get(spec.type, 0), (Synonym(name, value, source),),
                                   spec.documentation if documentation else None))
    return out
