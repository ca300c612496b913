"""Reads, from a live node of each release, how it describes a topic that has no configs of
its own, and writes kraftsim/controller/data/config_descriptions.toml from it.

A node with no static configs (as a served node has none) is started alone; it creates topic
`t` and answers DescribeConfigs for it (with synonyms and documentation) and for the broker
configs that stand behind the topic configs with more than one broker synonym. What is kept
per release: each topic config's default value (and CreateTopics' own, where the
controller's answer lists other configs), its broker synonym (the one DescribeConfigs
names as the DEFAULT_CONFIG synonym) and that one's default, the defaults of the broker
configs behind the multi-name synonyms and of the dynamic ones,
which map's order the answer follows (checked: the order computed from the release's config
definitions must be the live one), and each config's documentation. CreateTopics' answer for
`t` (the controller's view) is checked to list defaults only, by name.

    python3 -m kraftsim.conformance.config_descriptions [RELEASE ...]

The releases of READ when none is named. The node is stopped (its
process group killed) when a release is read, whatever happens.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kraftsim.conformance.dist import KafkaDist, fetch, resolve_release
from kraftsim.conformance.fact_files import EVERY_RELEASE
from kraftsim.conformance.node import LiveNode
from kraftsim.conformance.wire_client import WireClient
from kraftsim.controller import DESCRIBE_ORDERS, MULTI_NAME_SYNONYMS, described_order, topic_config_definitions
from kraftsim.versions import release_name_key

DATA = Path(__file__).resolve().parents[1] / "controller" / "data" / "config_descriptions.toml"
TOPIC_RESOURCE, BROKER_RESOURCE, DEFAULT_CONFIG = 2, 4, 5
#: A broker's replication quotas (QuotaConfigs' broker configs).
QUOTA_CONFIGS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate",
                 "replica.alter.log.dirs.io.max.bytes.per.second")
#: The releases read when none is named: a patch of every line from 3.3 (4.2's three: 4.2.2
#: defines a config 4.2.0 does not).
READ = EVERY_RELEASE

#: What one release says: its order rule, and per config (default, synonym, documentation),
#: and the broker defaults behind the multi-name synonyms.
Capture = dict[str, Any]


def capture(dist: KafkaDist) -> Capture:
    """What a live node of `dist` answers (see the module's text)."""
    release = dist.release.version
    with tempfile.TemporaryDirectory(prefix="kraftsim-topic-configs-") as tmp:
        node = LiveNode(dist, Path(tmp), heap="384m")
        node.format()
        with node:
            node.start()
            with WireClient("127.0.0.1", node.broker_port) as client:
                created = client.request("CreateTopics", 7, {
                    "Topics": [{"Name": "t", "NumPartitions": 1, "ReplicationFactor": 1, "Configs": []}],
                    "timeoutMs": 30000, "validateOnly": False})["Topics"][0]
                described = client.request("DescribeConfigs", 4, {
                    "Resources": [{"ResourceType": TOPIC_RESOURCE, "ResourceName": "t", "ConfigurationKeys": None}],
                    "IncludeSynonyms": True, "IncludeDocumentation": True})["Results"][0]
                broker = client.request("DescribeConfigs", 4, {
                    "Resources": [{"ResourceType": BROKER_RESOURCE, "ResourceName": "1", "ConfigurationKeys": None}],
                    "IncludeSynonyms": True, "IncludeDocumentation": False})["Results"][0]
                quotas = _quota_configs(client)
    if created["ErrorCode"] or described["ErrorCode"] or broker["ErrorCode"]:
        raise RuntimeError(f"{release}: {created} / {described['ErrorCode']} / {broker['ErrorCode']}")
    configs = described["Configs"]
    names = [c["Name"] for c in configs]
    defined = [k.name for k in topic_config_definitions(release).keys]
    orders = [rule for rule in DESCRIBE_ORDERS if described_order(rule, [n for n in defined if n in names]) == names]
    if not orders:
        raise RuntimeError(f"{release}: no known map order gives the live order {names}")
    synonyms, defaults, broker_defaults = {}, {}, {}
    for c in configs:
        by_default = [s for s in c["Synonyms"] if s["Source"] == DEFAULT_CONFIG]
        if len(by_default) > 1 or (c["ConfigSource"] != DEFAULT_CONFIG and not by_default):
            raise RuntimeError(f"{release}: {c['Name']} is neither a default nor a broker config's: {c}")
        # (a config the controller set itself, such as the cluster's min.insync.replicas when ELR
        # is enabled, is described from its dynamic default: its own default is its synonym's)
        defaults[c["Name"]] = by_default[0]["Value"] if c["ConfigSource"] != DEFAULT_CONFIG else c["Value"]
        if by_default:
            synonyms[c["Name"]] = by_default[0]["Name"]
            broker_defaults[by_default[0]["Name"]] = by_default[0]["Value"]
    dynamic = {c["Name"]: c["ConfigType"] for c in broker["Configs"] if not c["ReadOnly"]}
    wanted = set(dynamic) | {n for names in MULTI_NAME_SYNONYMS.values() for n in names}
    broker_defaults.update({s["Name"]: s["Value"] for c in broker["Configs"] for s in c["Synonyms"]
                            if s["Source"] == DEFAULT_CONFIG and s["Name"] in wanted and s["Value"] is not None})
    read_only = sorted(c["Name"] for c in broker["Configs"] if c["ReadOnly"])
    quota_types = {c["Name"]: c["ConfigType"] for c in quotas}
    quotas_read_only = {c["ReadOnly"] for c in quotas}
    if len(quotas_read_only) != 1:
        raise RuntimeError(f"{release}: the replication quotas are not described alike: {quotas}")
    described = {c["Name"]: (c["Value"], c["ConfigSource"]) for c in configs}
    answered = created.get("Configs") or []
    if [c["Name"] for c in answered] != sorted(c["Name"] for c in answered) or \
            any(c["Name"] in described and (c["Value"], c["ConfigSource"]) != described[c["Name"]] for c in answered):
        raise RuntimeError(f"{release}: CreateTopics answers other than DescribeConfigs, or not by name: {created}")
    created_defaults = {c["Name"]: defaults.get(c["Name"], c["Value"]) for c in answered}
    return {"release": release, "order": orders[0], "defaults": defaults,
            "created_defaults": {} if created_defaults == defaults else created_defaults,
            "synonyms": synonyms, "broker_defaults": broker_defaults, "dynamic": dynamic,
            "read_only": read_only, "quotas": quota_types, "quotas_read_only": quotas_read_only.pop(),
            "docs": {c["Name"]: c["Documentation"] for c in configs}}


def _quota_configs(client: WireClient) -> list[dict[str, Any]]:
    """Node 1's replication quotas (set through its own listener; its broker configs do not
    define them, so it describes them only once set) as it then describes them."""
    altered = client.request("IncrementalAlterConfigs", 1, {"Resources": [{
        "ResourceType": BROKER_RESOURCE, "ResourceName": "1",
        "Configs": [{"Name": n, "ConfigOperation": 0, "Value": "1000"} for n in QUOTA_CONFIGS]}], "ValidateOnly": False})
    if altered["Responses"][0]["ErrorCode"]:
        raise RuntimeError(f"the replication quotas were not set: {altered}")
    for _ in range(40):  # (bounded: the node applies them once its controller has committed them)
        described: list[dict[str, Any]] = client.request("DescribeConfigs", 4, {
            "Resources": [{"ResourceType": BROKER_RESOURCE, "ResourceName": "1", "ConfigurationKeys": list(QUOTA_CONFIGS)}],
            "IncludeSynonyms": False, "IncludeDocumentation": False})["Results"][0]["Configs"]
        if len(described) == len(QUOTA_CONFIGS):
            return described
        time.sleep(0.25)
    raise RuntimeError(f"node 1 did not describe its replication quotas: {described}")


def _since(release: str, earlier: Sequence[str]) -> str:
    """The first release an entry read from `release` is taken to hold for: its line's first
    (x.y.0), unless a release of that line was read before it (then itself)."""
    line = ".".join(release.split(".")[:2])
    return release if any(e.startswith(line + ".") for e in earlier) else line + ".0"


def _toml_string(text: str) -> str:
    out = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return '"' + "".join(ch if ch >= " " else f"\\u{ord(ch):04x}" for ch in out) + '"'


def _table(values: Mapping[str, str | int]) -> str:
    return "{ " + ", ".join(f"{_toml_string(k)} = {v if isinstance(v, int) else _toml_string(v)}"
                            for k, v in sorted(values.items())) + " }"


def render(captures: Sequence[Capture]) -> str:
    """The data file for `captures` (oldest release first): an entry where a release's order,
    defaults, synonyms or broker defaults differ from the entry before, and a documentation
    text where a config's differs from its text in the release before."""
    lines = [HEADER]
    last: tuple[object, ...] | None = None
    read: list[str] = []
    docs: list[str] = []
    last_doc: dict[str, str | None] = {}
    for c in captures:
        since = _since(c["release"], read)
        read.append(c["release"])
        kept = (c["order"], c["defaults"], c["created_defaults"], c["synonyms"], c["broker_defaults"], c["dynamic"],
                c["read_only"], c["quotas"], c["quotas_read_only"])
        if kept != last:
            last = kept
            lines += ["", "[[release]]", f"since = {_toml_string(since)}", f"read_from = {_toml_string(c['release'])}",
                      f"order = {_toml_string(c['order'])}", f"defaults = {_table(c['defaults'])}",
                      *([f"created_defaults = {_table(c['created_defaults'])}"] if c["created_defaults"] else []),
                      f"synonyms = {_table(c['synonyms'])}", f"broker_defaults = {_table(c['broker_defaults'])}",
                      f"dynamic_broker_configs = {_table(c['dynamic'])}",
                      "read_only_broker_configs = [" + ", ".join(_toml_string(n) for n in c["read_only"]) + "]",
                      f"quota_broker_configs = {_table(c['quotas'])}",
                      f"quota_configs_described_read_only = {'true' if c['quotas_read_only'] else 'false'}"]
        for name, text in sorted(c["docs"].items()):
            if text is not None and last_doc.get(name) != text:
                last_doc[name] = text
                docs += ["", "[[doc]]", f"name = {_toml_string(name)}", f"since = {_toml_string(since)}",
                         f"text = {_toml_string(text)}"]
    return "\n".join(lines + docs) + "\n"


HEADER = """\
# How each release's node describes a topic's configs when neither the topic nor the broker sets
# them (DescribeConfigs; CreateTopics from v5 answers the same defaults), read from a live node
# of the release with no static configs by kraftsim/conformance/config_descriptions.py (do not
# edit by hand: run `python3 -m kraftsim.conformance.config_descriptions`). Used by
# kraftsim.controller.config_descriptions.
#
# [[release]]       since: the first release it holds for (a line's x.y.0, or the patch read when
#                   another patch of its line was read before); read_from: the release read.
#   order           the map whose order DescribeConfigs lists a topic's configs in: "scala" (a
#                   Scala mutable.HashMap of every config) or "java" (a java.util.HashMap of the
#                   non-internal configs, put in definition order)
#   defaults        each described config's default value
#   created_defaults  where CreateTopics answers another set of configs or values: its own
#   synonyms        the broker config named as its DEFAULT_CONFIG synonym (a config whose broker
#                   synonym has no default, such as retention.ms's log.retention.ms, is absent:
#                   see kraftsim.controller.config_descriptions.MULTI_NAME_SYNONYMS)
#   broker_defaults the defaults of the broker configs named as synonyms, of those behind the
#                   multi-name synonyms, and of the dynamic ones
#   dynamic_broker_configs  the broker configs a node of the release defines and applies when they
#                   are set dynamically (those it does not describe as read-only), each with its
#                   ConfigType
#   read_only_broker_configs  those it defines and does not apply when set dynamically: a node
#                   drops them (DynamicBrokerConfig), whatever the metadata holds, and keeps
#                   the names it does not define (the replication throttle rates among them)
#   quota_broker_configs  the replication quotas (which its broker configs do not define: they are
#                   described once set), each with its ConfigType; ..._described_read_only: whether
#                   a node describes them as read-only (as it does every name it does not hold
#                   as dynamic)
# [[doc]]           a config's documentation (IncludeDocumentation) from release `since` on"""


def main(argv: Sequence[str]) -> int:
    releases = [resolve_release(v) for v in argv or READ]
    captures = []
    for r in sorted(releases, key=lambda r: release_name_key(r.version)):
        print(f"reading {r.version} ...", file=sys.stderr, flush=True)
        captures.append(capture(fetch(r)))
    DATA.write_text(render(captures), encoding="utf-8")
    print(f"wrote {DATA} ({len(captures)} releases)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
