"""Each release's broker config definitions, as its jars print them (data/broker_configs.toml):
what a broker checks a change to its dynamic configs against before it forwards the change.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from functools import cache, cached_property
from importlib import resources

import msgspec

from kraftsim.controller.topic_configs import ConfigKey
from kraftsim.versions import entry_for_release, release_name_key

#: A config set for one listener only (DynamicBrokerConfig's listener prefix).
LISTENER_PREFIXED = re.compile(r"listener\.name\.[^.]*\..*")


class DynamicKey(ConfigKey, frozen=True, kw_only=True):
    """A definition a broker checks dynamic configs against: its ConfigKey, its default, and
    which of its checks kraftsim does not reproduce (`unmodelled`), if any."""

    default: str | None = None
    unmodelled: str | None = None


class KnownConfig(msgspec.Struct, frozen=True, kw_only=True):
    """A KafkaConfig config: name, type, its default as the broker's static defaults hold it
    (None: null or none) and whether it is internal (described only when set)."""

    name: str
    type: str
    default: str | None = None
    internal: bool = False


class SetTexts(msgspec.Struct, frozen=True):
    """How the broker opens the set of names each of its checks refuses: "Set(", "HashSet(", "["."""

    non_dynamic: str
    security: str
    per_broker: str


class BrokerConfigDefinitions(msgspec.Struct, frozen=True, dict=True):
    """One entry of data/broker_configs.toml (see its header)."""

    since: str
    read_from: str
    set_texts: SetTexts
    kafka_configs: tuple[KnownConfig, ...]
    dynamic: tuple[DynamicKey, ...]
    per_broker: frozenset[str]
    security: frozenset[str]
    reconfigured_by: dict[str, tuple[str, ...]]

    @cached_property
    def dynamic_by_name(self) -> dict[str, DynamicKey]:
        return {k.name: k for k in self.dynamic}

    @cached_property
    def known(self) -> frozenset[str]:
        """Every name the release defines: KafkaConfig's and the dynamic ones."""
        return frozenset(k.name for k in self.kafka_configs) | frozenset(self.dynamic_by_name)

    @cached_property
    def non_dynamic(self) -> frozenset[str]:
        """The KafkaConfig configs a broker does not update dynamically."""
        return frozenset(k.name for k in self.kafka_configs if k.name not in self.dynamic_by_name)

    def shown(self, kind: str, names: list[str]) -> str:
        """`names` as the broker writes the set of them (`kind`: a field of SetTexts)."""
        opening = getattr(self.set_texts, kind)
        return f"{opening}{', '.join(names)}{']' if opening == '[' else ')'}"


class _Doc(msgspec.Struct, frozen=True):
    name: str
    since: str
    text: str


class _Data(msgspec.Struct, frozen=True):
    release: tuple[BrokerConfigDefinitions, ...]
    doc: tuple[_Doc, ...] = ()


@cache
def _data() -> _Data:
    text = resources.files("kraftsim.controller").joinpath("data/broker_configs.toml").read_text("utf-8")
    return msgspec.convert(tomllib.loads(text), _Data)


@cache
def _entries() -> tuple[BrokerConfigDefinitions, ...]:
    return tuple(sorted(_data().release, key=lambda e: release_name_key(e.since)))


@cache
def broker_config_docs(release: str) -> Mapping[str, str]:
    """Each KafkaConfig config's documentation on a node of `release` (what DescribeConfigs
    answers with IncludeDocumentation): the last text from its release or before, for the
    configs it defines."""
    key, names = release_name_key(release), {k.name for k in broker_config_definitions(release).kafka_configs}
    docs = sorted(_data().doc, key=lambda d: release_name_key(d.since))
    return {d.name: d.text for d in docs if release_name_key(d.since) <= key and d.name in names}


@cache
def broker_config_definitions(release: str) -> BrokerConfigDefinitions:
    """The definitions of `release`: the last entry from its release or before."""
    return entry_for_release(_entries(), release)
