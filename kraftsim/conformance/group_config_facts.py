"""Reads each release's group config facts (KIP-848) from its jars and writes
kraftsim/controller/data/group_configs.toml from them.

`java/GroupConfigFacts.java`, run on the release's classpath, prints the definitions of
GroupConfig (name, type, default, validator, documentation), the group-coordinator configs of a
node started with the release's defaults (where a group's bounds and a broker's described
defaults come from), and runs the release's own GroupConfig.validate (what its controller checks
a group's resulting configs with) on probes. The words a bound's refusal uses are told by one of
them (RULE_PROBES); tests/conformance/test_group_configs_vs_jars.py compares kraftsim's verdicts
with the release's on many more.

    python3 -m kraftsim.conformance.group_config_facts [RELEASE ...]

The releases of READ when none is named (group configs came in 4.0; a release without them is
written as `absent`). An entry equal to the one before it is not written.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kraftsim.conformance.fact_files import entries_by_release, toml_value, unescape
from kraftsim.conformance.dist import KafkaDist, fetch, resolve_release

PROGRAM = Path(__file__).with_name("java") / "GroupConfigFacts.java"
DATA = Path(__file__).resolve().parents[1] / "controller" / "data" / "group_configs.toml"
READ = ("3.9.2", "4.0.2", "4.1.2", "4.2.0", "4.2.1", "4.2.2", "4.3.1", "4.4.0")
#: One probe: a group's resulting configs.
Probe = Mapping[str, str]
#: The probes whose verdicts say how the release words a refused bound (see `entry`).
RULE_PROBES: tuple[Probe, ...] = ({"consumer.session.timeout.ms": "1"},)


@dataclass
class Facts:
    """What one release's jars print (see the module docstring)."""

    present: bool = True
    #: name, type, default (None: none), validator, documentation; in definition order
    definitions: list[tuple[str, str, str | None, str, str]] = field(default_factory=list)
    synonyms: str = "own"
    #: the node's group.* and share.* server configs, as texts
    node: dict[str, str] = field(default_factory=dict)
    #: per probe (by number from 1): "OK", or "Class\tmessage" of what refused it
    verdicts: dict[int, str] = field(default_factory=dict)


def read_facts(dist: KafkaDist, probes: Sequence[Probe] = ()) -> Facts:
    """Runs the program on `dist`'s classpath (one small JVM, bounded)."""
    stdin = "".join("\u0001".join(f"{k}={v}" for k, v in configs.items()) + "\n" for configs in probes)
    proc = subprocess.run([str(dist.java.path), "-Xmx128m", "-XX:TieredStopAtLevel=1", "-cp", dist.classpath,
                           str(PROGRAM)], input=stdin, capture_output=True, text=True, encoding="utf-8",
                          timeout=240, check=True)
    facts = Facts()
    for line in proc.stdout.splitlines():
        kind, *rest = line.split("\t")
        if kind == "absent":
            facts.present = False
        elif kind == "def":
            default = None if rest[2] == "nodefault" else unescape(rest[2])
            facts.definitions.append((rest[0], rest[1], default, unescape(rest[3]), unescape(rest[4])))
        elif kind == "synonyms":
            facts.synonyms = rest[0]
        elif kind == "node":
            facts.node[rest[0]] = unescape(rest[1])
        elif kind == "probe":
            facts.verdicts[int(rest[0])] = "OK" if rest[1] == "OK" else f"{rest[1]}\t{unescape(rest[2])}"
    return facts


def _kept_node_configs(facts: Facts) -> dict[str, str]:
    """The node configs a group config is bounded by (group.F.min.REST / group.F.max.REST for a
    config F.REST) or takes its default from (group.NAME)."""
    kept = {}
    for name, *_ in facts.definitions:
        family, _, rest = name.partition(".")
        for key in (f"group.{family}.min.{rest}", f"group.{family}.max.{rest}", f"group.{name}"):
            if key in facts.node:
                kept[key] = facts.node[key]
    return dict(sorted(kept.items()))


def entry(facts: Facts) -> dict[str, Any]:
    """The data entry for one release's facts (without since / read_from), read with RULE_PROBES
    as the first probes."""
    if not facts.present:
        return {"present": "no"}
    bound = facts.verdicts[1]
    return {"present": "yes",
            "bound_words": "range" if bound.endswith("inclusive.") else "names",
            "synonyms": facts.synonyms,
            "configs": [{"name": n, "type": t, **({"default": d} if d is not None else {}), "validator": v,
                         "documentation": doc} for n, t, d, v, doc in facts.definitions],
            "node": _kept_node_configs(facts)}


HEADER = """\
# Group configs (KIP-848, Kafka 4.0 on) as each release's code defines and checks them, printed
# by the released jars (kraftsim/conformance/java/GroupConfigFacts.java). Do not edit by hand:
# run `python3 -m kraftsim.conformance.group_config_facts`
# (tests/conformance/test_group_configs_vs_jars.py checks this file and kraftsim's verdicts
# against the jars). Used by kraftsim.controller.group_configs.
#
# [[release]]    since: the first release it holds for, until the next entry (a line's x.y.0, or
#                the patch read when another patch of its line was read before); read_from: the
#                release read.
#   present      "no": the release has no GROUP resource type (its controller takes id 32 as
#                UNKNOWN); "yes": the rest below
#   bound_words  how GroupConfig.validate words a value outside the node's bounds: "names"
#                ("X must be greater than or equal to group.F.min.REST") or "range"
#                ("X must be in the range MIN to MAX inclusive.")
#   synonyms     how a broker describes a group's config: "own" (its value as held or the default,
#                with that one synonym, GROUP_CONFIG or DEFAULT_CONFIG) or "broker" (with the
#                broker configs it defaults to as synonyms too, 4.4's GroupConfig.brokerSynonym)
#   configs      the definitions in definition order: name, type, default (as
#                ConfigDef.convertToString writes it), validator (its toString), documentation
#   node         the group-coordinator configs of a node started with the release's defaults
#                that bound a group config F.REST (group.F.min.REST, group.F.max.REST) or give
#                its default (group.NAME)
"""


def render(entries: Sequence[tuple[str, str, dict[str, Any]]]) -> str:
    """The data file for (since, read_from, entry) in release order."""
    out = [HEADER]
    for since_, read_from, e in entries:
        out.append(f"\n[[release]]\nsince = \"{since_}\"\nread_from = \"{read_from}\"\npresent = \"{e['present']}\"\n")
        if e["present"] == "no":
            continue
        out.append(f"bound_words = {toml_value(e['bound_words'])}\nsynonyms = {toml_value(e['synonyms'])}\n")
        out.append("configs = [\n" + "".join(f"  {toml_value(v)},\n" for v in e["configs"]) + "]\n")
        # (quoted names: a bare dotted name in TOML is a path of tables)
        out.append("[release.node]\n" + "".join(f"{toml_value(k)} = {toml_value(v)}\n" for k, v in e["node"].items()))
    return "".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    versions = list(argv if argv else sys.argv[1:]) or list(READ)
    entries = entries_by_release(versions, lambda v: entry(read_facts(fetch(resolve_release(v)), RULE_PROBES)),
                                 lambda e: f"{len(e.get('configs', []))} configs")
    DATA.write_text(render(entries), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
