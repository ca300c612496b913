"""Reads each release's client-metrics subscription facts from its jars and writes
kraftsim/controller/data/client_metrics_configs.toml from them.

`java/ClientMetricsConfigFacts.java`, run on the release's classpath, prints the definitions of
ClientMetricsConfigs (name, type, default, documentation), whether the release's broker
describes a subscription's every config or only the ones it holds, and runs the release's own
ClientMetricsConfigs.validate (what its controller checks a subscription's resulting configs
with) on probes. How a release reads the values is told by three of them (RULE_PROBES);
tests/conformance/test_client_metrics_configs_vs_jars.py compares kraftsim's verdicts with the
release's on many more.

    python3 -m kraftsim.conformance.client_metrics_config_facts [RELEASE ...]

The releases of READ when none is named (client metrics came in 3.7). An entry equal to the one
before it (in release order) is not written: the earlier one holds on.
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

PROGRAM = Path(__file__).with_name("java") / "ClientMetricsConfigFacts.java"
DATA = Path(__file__).resolve().parents[1] / "controller" / "data" / "client_metrics_configs.toml"
READ = ("3.7.2", "3.8.1", "3.9.2", "4.0.2", "4.1.2", "4.2.0", "4.2.1", "4.2.2", "4.3.1", "4.4.0")
#: One probe: the subscription's name and its resulting configs.
Probe = tuple[str, Mapping[str, str]]
#: The probes whose verdicts say how the release reads values (see `entry`), in this order.
RULE_PROBES: tuple[Probe, ...] = (
    ("s", {"interval.ms": "x"}),   # Integer.parseInt's NumberFormatException, or ConfigDef's ConfigException
    ("s", {"match": " "}),         # String.split(",") of the text (refused), or ConfigDef's LIST (empty: taken)
    ("s", {"metrics": "a,"}),      # an empty element taken, or refused (ValidList, 4.2 on)
)



@dataclass
class Facts:
    """What one release's jars print (see the module docstring)."""

    #: name, type, default (None: none), documentation; in definition order
    definitions: list[tuple[str, str, str | None, str]] = field(default_factory=list)
    describes: str = "held"
    #: per probe (by number from 1): "OK", or "Class\tmessage" of what refused it
    verdicts: dict[int, str] = field(default_factory=dict)


def read_facts(dist: KafkaDist, probes: Sequence[Probe] = ()) -> Facts:
    """Runs the program on `dist`'s classpath (one small JVM, bounded)."""
    stdin = "".join("\u0001".join([name, *(f"{k}={v}" for k, v in configs.items())]) + "\n"
                    for name, configs in probes)
    proc = subprocess.run([str(dist.java.path), "-Xmx128m", "-XX:TieredStopAtLevel=1", "-cp", dist.classpath,
                           str(PROGRAM)], input=stdin, capture_output=True, text=True, encoding="utf-8",
                          timeout=240, check=True)
    facts = Facts()
    for line in proc.stdout.splitlines():
        kind, *rest = line.split("\t")
        if kind == "def":
            default = None if rest[2] == "nodefault" else unescape(rest[2])
            facts.definitions.append((rest[0], rest[1], default, unescape(rest[4])))
        elif kind == "describes":
            facts.describes = rest[0]
        elif kind == "probe":
            facts.verdicts[int(rest[0])] = "OK" if rest[1] == "OK" else f"{rest[1]}\t{unescape(rest[2])}"
    return facts


def entry(facts: Facts) -> dict[str, Any]:
    """The data entry for one release's facts (without since / read_from), read with RULE_PROBES
    as the first probes."""
    interval, lists, empty = (facts.verdicts[n] for n in (1, 2, 3))
    return {"interval_parse": "parseInt" if interval.startswith("NumberFormatException") else "ConfigDef",
            "list_parse": "ConfigDef" if lists == "OK" else "split",
            "empty_elements": "taken" if empty == "OK" else "refused",
            "describes": facts.describes,
            "configs": [{"name": n, "type": t, **({"default": d} if d is not None else {}), "documentation": doc}
                        for n, t, d, doc in facts.definitions]}



HEADER = """\
# Client-metrics subscriptions (KIP-714) as each release's code defines and checks them, printed
# by the released jars (kraftsim/conformance/java/ClientMetricsConfigFacts.java). Do not edit by
# hand: run `python3 -m kraftsim.conformance.client_metrics_config_facts`
# (tests/conformance/test_client_metrics_configs_vs_jars.py checks this file and kraftsim's
# verdicts against the jars). Used by kraftsim.controller.client_metrics.
#
# [[release]]    since: the first release it holds for, until the next entry (a line's x.y.0, or
#                the patch read when another patch of its line was read before); read_from: the
#                release read.
#   interval_parse  how ClientMetricsConfigs.validate reads interval.ms: "parseInt"
#                   (Integer.parseInt of the text: a non-number is an unexpected error,
#                   UNKNOWN_SERVER_ERROR) or "ConfigDef" (the definitions' parse: INVALID_CONFIG)
#   list_parse      how it reads `match`: "split" (String.split(",") of the text) or "ConfigDef"
#                   (trimmed, split at commas with the spaces around them, empty text: no element)
#   empty_elements  "refused" when the definitions refuse a list with an empty element
#                   (ConfigDef.ValidList, "Configuration 'X' values must not be empty."), else "taken"
#   describes       "held": a broker describes a subscription's held configs only, without type or
#                   documentation; "all": every definition, the held value or the default, with
#                   type, synonym and documentation (ConfigHelper.createClientMetricsConfigEntry)
#   configs         the definitions in definition order: name, type, default (as
#                   ConfigDef.convertToString writes it), documentation
"""


def render(entries: Sequence[tuple[str, str, dict[str, Any]]]) -> str:
    """The data file for (since, read_from, entry) in release order."""
    out = [HEADER]
    for since_, read_from, e in entries:
        out.append(f"\n[[release]]\nsince = \"{since_}\"\nread_from = \"{read_from}\"\n")
        for name in ("interval_parse", "list_parse", "empty_elements", "describes"):
            out.append(f"{name} = {toml_value(e[name])}\n")
        out.append("configs = [\n" + "".join(f"  {toml_value(v)},\n" for v in e["configs"]) + "]\n")
    return "".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    versions = list(argv if argv else sys.argv[1:]) or list(READ)
    entries = entries_by_release(versions, lambda v: entry(read_facts(fetch(resolve_release(v)), RULE_PROBES)),
                                 lambda e: f"{len(e['configs'])} configs")
    DATA.write_text(render(entries), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
