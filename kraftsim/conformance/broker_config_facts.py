"""Reads each release's broker config facts from its jars and writes
kraftsim/controller/data/broker_configs.toml from them.

`java/BrokerConfigFacts.java`, run on the release's classpath, prints every KafkaConfig config
with its type, the definitions a broker checks dynamic configs against (DynamicConfig.Broker,
in their order, each with its default and validator), the per-broker and security sets of
DynamicBrokerConfig and the names it does not update dynamically; it also runs the release's
own DynamicBrokerConfig.validateConfigs on probes (tests/conformance/test_broker_configs_vs_jars.py
compares kraftsim's verdicts with them).

    python3 -m kraftsim.conformance.broker_config_facts [RELEASE ...]

The releases of READ when none is named. An entry equal to the one before it (in release order)
is not written: the earlier one holds on.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kraftsim.conformance.dist import KafkaDist, fetch, resolve_release
from kraftsim.conformance.fact_files import EVERY_RELEASE, since, toml_value
from kraftsim.versions import release_name_key

PROGRAM = Path(__file__).with_name("java") / "BrokerConfigFacts.java"
DATA = Path(__file__).resolve().parents[1] / "controller" / "data" / "broker_configs.toml"
READ = EVERY_RELEASE
#: One probe: "default" (the cluster-wide default) or "broker" (one broker's), and the configs.
Probe = tuple[str, Mapping[str, str]]
_RANGE = re.compile(r"\[(-?\d+)?,\.\.\.(?:,(-?\d+))?\]")
_GZIP_LEVEL = re.compile(r"\[(-?\d+),\.\.\.,(-?\d+)\] or (-?\d+)")


@dataclass
class Facts:
    """What one release's jars print (see the module docstring)."""

    #: name, type, static default (None: null or none), whether internal
    kafka_configs: list[tuple[str, str, str | None, bool]] = field(default_factory=list)
    #: name, type, default (None: null; "nodefault": none), validator class, validator text, flags
    dynamic: list[tuple[str, str, str | None, str, str, tuple[str, ...]]] = field(default_factory=list)
    sets: dict[str, list[str]] = field(default_factory=dict)
    #: per part of a broker that is reconfigured: the configs it reconfigures
    reconfigured: dict[str, set[str]] = field(default_factory=dict)
    #: per probe (by number from 1): "OK", or the refusal's text
    verdicts: dict[int, str] = field(default_factory=dict)
    #: per KafkaConfig config that has one: its documentation
    docs: dict[str, str] = field(default_factory=dict)

    def reconfigured_by(self) -> dict[str, list[str]]:
        """Per config some part of the broker reconfigures: those parts, by name."""
        parts: dict[str, list[str]] = {}
        for source, names in sorted(self.reconfigured.items()):
            for name in names:
                parts.setdefault(name, []).append(source)
        return dict(sorted(parts.items()))

    def unattributed(self) -> list[str]:
        """Dynamic configs of no part found (their part is elsewhere in the release)."""
        found = set().union(*self.reconfigured.values(), self.sets.get("security", []), ["metric.reporters"])
        return sorted(set(self.sets.get("all", [])) - found)


def read_facts(dist: KafkaDist, probes: Sequence[Probe] = ()) -> Facts:
    """Runs the program on `dist`'s classpath (one small JVM, bounded)."""
    stdin = "".join("\u0001".join([level, *(f"{k}={v}" for k, v in configs.items())]) + "\n"
                    for level, configs in probes)
    proc = subprocess.run([str(dist.java.path), "-Xmx128m", "-XX:TieredStopAtLevel=1", "-cp", dist.classpath,
                           str(PROGRAM)], input=stdin, capture_output=True, text=True, timeout=240, check=True)
    facts = Facts()
    for line in proc.stdout.splitlines():
        kind, *rest = line.split("\t")
        if kind == "kafka":
            default = rest[2][len("default="):] if rest[2].startswith("default=") else None
            facts.kafka_configs.append((rest[0], rest[1], default, rest[3] == "internal=true"))
        elif kind == "dynamic":
            default = rest[2][len("default="):] if rest[2].startswith("default=") else \
                (None if rest[2] == "nulldefault" else "nodefault")
            facts.dynamic.append((rest[0], rest[1], default, rest[3], rest[4], tuple(rest[5:])))
        elif kind == "doc":
            facts.docs[rest[0]] = _unescaped(rest[1])
        elif kind == "reconf":
            facts.reconfigured.setdefault(rest[0], set()).add(rest[1])
        elif kind == "probe":
            facts.verdicts[int(rest[0])] = "OK" if rest[1] == "OK" else rest[2]
        else:
            facts.sets.setdefault(kind, []).append(rest[0])
    return facts


def _unescaped(text: str) -> str:
    """A text the program wrote in ASCII (backslash escapes, UTF-16 code units as \\uXXXX)."""
    decoded = text.encode("ascii").decode("unicode_escape")
    return decoded.encode("utf-16", "surrogatepass").decode("utf-16")


def docs_since(read: Sequence[tuple[str, Mapping[str, str]]]) -> list[dict[str, str]]:
    """The [[doc]] entries for each release's docs (version, docs) in release order: a config's
    text from the first release it appears in, and again from each release that changes it."""
    out: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for i, (version, docs) in enumerate(read):
        for name, text in docs.items():
            if current.get(name) != text:
                current[name] = text
                out.append({"name": name, "since": since(version, [v for v, _ in read[:i]]), "text": text})
    return out


def docs_as_of(doc_entries: Sequence[Mapping[str, str]], version: str, names: Collection[str]) -> dict[str, str]:
    """Each config's documentation as of `version` from [[doc]] entries (the last text from
    its release or before), for the configs `version` defines (`names`)."""
    key = release_name_key(version)
    out: dict[str, str] = {}
    for d in sorted(doc_entries, key=lambda d: release_name_key(d["since"])):
        if release_name_key(d["since"]) <= key and d["name"] in names:
            out[d["name"]] = d["text"]
    return out


def dynamic_key(name: str, type_: str, default: str | None, vclass: str, vtext: str,
                flags: Sequence[str]) -> dict[str, Any]:
    """One definition as a data entry: kraftsim's form of its validator, or `unmodelled` saying
    which check kraftsim does not reproduce."""
    key: dict[str, Any] = {"name": name, "type": type_}
    if default is not None and default != "nodefault":
        key["default"] = default
    simple = vclass.rsplit(".", 1)[-1]
    if default == "nodefault":  # (ConfigDef.parse would ask for it)
        key["unmodelled"] = "no default"
    elif type_ == "CLASS":
        key["unmodelled"] = "CLASS (the class is loaded)"
    elif not vclass:
        pass
    elif simple == "ConfigDef$Range" and (m := _RANGE.fullmatch(vtext)):
        if m.group(1) is not None:
            key["at_least"] = int(m.group(1))
        if m.group(2) is not None:
            key["at_most"] = int(m.group(2))
    elif simple == "ConfigDef$ValidString" and vtext.startswith("["):
        key["one_of"] = vtext[1:-1].split(", ")
    elif simple == "ConfigDef$ValidList" and not flags and vtext.startswith("["):
        key["each_one_of"] = vtext[1:-1].split(", ")
    elif (m := _GZIP_LEVEL.fullmatch(vtext)) and simple in ("CompressionType$1$1", "ConfigDef$LambdaValidator"):
        key.update(at_least=int(m.group(1)), at_most=int(m.group(2)), or_equal=int(m.group(3)))
    else:
        key["unmodelled"] = f"{simple} {vtext} {' '.join(flags)}".strip()
    return key


def known_config(name: str, type_: str, default: str | None, internal: bool) -> dict[str, Any]:
    """One KafkaConfig config as a data entry: `default` only where it is not null, `internal`
    only where true."""
    key: dict[str, Any] = {"name": name, "type": type_}
    if default is not None:
        key["default"] = default
    if internal:
        key["internal"] = True
    return key


#: Probes whose refusals show how the release writes the set of names each check refuses
#: (Scala's Set(...) or HashSet(...), Java's [...]): (kind, probe, the name refused).
SET_PROBES: tuple[tuple[str, Probe, str], ...] = (
    ("non_dynamic", ("broker", {"log.dirs": "/x"}), "log.dirs"),
    ("security", ("broker", {"ssl.keystore.type": "PKCS12"}), "ssl.keystore.type"),
    ("per_broker", ("default", {"sasl.kerberos.service.name": "kafka"}), "sasl.kerberos.service.name"),
)


def entry(facts: Facts) -> dict[str, Any]:
    """The data entry for one release's facts (without since / read_from), read with SET_PROBES
    as the first probes."""
    set_texts = {}
    for n, (kind, _, name) in enumerate(SET_PROBES, 1):
        shown = facts.verdicts[n].rsplit(": ", 1)[-1]
        set_texts[kind] = shown[:shown.index(name)]
    return {"set_texts": set_texts,
            "kafka_configs": [known_config(*k) for k in facts.kafka_configs],
            "dynamic": [dynamic_key(*d) for d in facts.dynamic],
            "per_broker": sorted(facts.sets.get("perbroker", [])),
            "security": sorted(facts.sets.get("security", [])),
            "reconfigured_by": facts.reconfigured_by()}



HEADER = """\
# Broker configs as each release's code defines them, and what its broker checks when a dynamic
# broker config changes through its own listener (ConfigAdminManager → DynamicBrokerConfig),
# printed by the released jars (kraftsim/conformance/java/BrokerConfigFacts.java). Do not edit
# by hand: run `python3 -m kraftsim.conformance.broker_config_facts`
# (tests/conformance/test_broker_configs_vs_jars.py checks this file and kraftsim's verdicts
# against the jars). Used by kraftsim.controller.broker_dynamic_configs and
# kraftsim.controller.broker_config_listing.
#
# [[release]]    since: the first release it holds for, until the next entry (a line's x.y.0, or
#                the patch read when another patch of its line was read before); read_from: the
#                release read.
#   set_texts      how the broker opens the set of names each check refuses (non_dynamic,
#                  security, per_broker): Scala's "Set(" or "HashSet(", Java's "["
#   kafka_configs  every KafkaConfig config (name, type) in definition order; those not among
#                  `dynamic` are the ones it does not update dynamically; default: its default
#                  as the broker's static defaults hold it (absent: null or none; a list joined
#                  by commas, a class by its name, a password's own text); internal = true: an
#                  internal config (a broker describes it only when its server.properties sets it)
#   dynamic        the definitions it checks dynamic broker configs against (DynamicConfig.Broker),
#                  in their order: name, type, default, and the validator as in
#                  topic_configs.toml (at_least, at_most, or_equal, one_of, each_one_of), or
#                  `unmodelled`: the check kraftsim does not reproduce
#   per_broker     the configs it refuses at the cluster-wide default (per broker only)
#   security       the configs it updates only with a listener prefix
#   reconfigured_by  per config, the parts of the broker that a change of it reconfigures (each
#                  part's reconfigurable set, among those the program finds in the release:
#                  DynamicLogConfig, LogCleaner, DynamicThreadPool, DynamicListenerConfig,
#                  SocketServer, DynamicRemoteLogConfig, DynamicReplicationConfig,
#                  DynamicQuotaConfig, ProducerStateManager)
# [[doc]]        a KafkaConfig config's documentation (what DescribeConfigs answers with
#                IncludeDocumentation) from release `since` on, until a later entry for it
"""


def render(entries: Sequence[tuple[str, str, dict[str, Any]]], docs: Sequence[Mapping[str, str]] = ()) -> str:
    """The data file for (since, read_from, entry) in release order and the [[doc]] entries."""
    out = [HEADER]
    for since_, read_from, e in entries:
        out.append(f"\n[[release]]\nsince = \"{since_}\"\nread_from = \"{read_from}\"\n"
                   f"set_texts = {toml_value(e['set_texts'])}\n")
        for name in ("kafka_configs", "dynamic"):
            out.append(f"{name} = [\n" + "".join(f"  {toml_value(v)},\n" for v in e[name]) + "]\n")
        for name in ("per_broker", "security"):
            out.append(f"{name} = {toml_value(e[name])}\n")
        out.append("[release.reconfigured_by]\n" + "".join(f"{toml_value(k)} = {toml_value(v)}\n"
                                                           for k, v in e["reconfigured_by"].items()))
    for d in docs:
        out.append(f"\n[[doc]]\nname = {toml_value(d['name'])}\nsince = {toml_value(d['since'])}\n"
                   f"text = {toml_value(d['text'])}\n")
    return "".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    versions = list(argv if argv else sys.argv[1:]) or list(READ)
    entries: list[tuple[str, str, dict[str, Any]]] = []
    docs: list[tuple[str, dict[str, str]]] = []
    for i, version in enumerate(versions):
        facts = read_facts(fetch(resolve_release(version)), [probe for _, probe, _ in SET_PROBES])
        docs.append((version, facts.docs))
        e = entry(facts)
        if entries and entries[-1][2] == e:
            continue
        entries.append((since(version, versions[:i]), version, e))
        print(f"{version}: {len(e['kafka_configs'])} configs, {len(e['dynamic'])} dynamic", file=sys.stderr)
    DATA.write_text(render(entries, docs_since(docs)), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
