"""`kafka-topics --describe` against a simulated cluster: the lines Kafka's tool prints.

The tool (TopicCommand) lists the topics, keeps those its `--topic` pattern matches whole
(commas read as `|`), describes them, their configs and the cluster, and asks the controller
for the reassignments in progress. Everything here is read from the active controller's
image, and the configs as the lowest-id unfenced broker describes them (the node's dynamic
configs are part of the answer). The tool is of the cluster's newest release, as an
operator's would be (`Simulation.tool_release`); from 3.8 it prints each partition's ELR,
or "N/A" when the broker it asks is older and answers without them.

Orders come from Java's hash tables: the topics are in the order of the admin client's
HashMap of descriptions (see `described_order`), a topic's configs in that of the admin
client's Config (a HashMap filled in the order of the DescribeConfigs answer).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kraftsim.controller import describe_topic_configs
from kraftsim.image import BROKER, TOPIC
from kraftsim.javacompat import copy_capacity, hash_map_order, parse_int, sized_capacity, string_hash
from kraftsim.protocol.primitives import Uuid
from kraftsim.sim.node.api_versions import broker_serves
from kraftsim.sim.tools.tool_view import tool_view
from kraftsim.storage import internal_topics
from kraftsim.versions import ToolFailure, release_line, release_name_key

if TYPE_CHECKING:
    from kraftsim.image import MetadataImage, PartitionRegistration
    from kraftsim.sim.simulation import Simulation

#: DescribeTopicPartitions (KIP-966): the request that answers a partition's ELR.
_DESCRIBE_TOPIC_PARTITIONS = 75
#: DescribeConfigsResponse's ConfigSource of a value nobody set (ConfigEntry.isDefault).
_DEFAULT_CONFIG = 5
#: The first release whose tool prints each partition's ELR and last known ELR (KIP-966's
#: DescribeTopicPartitions answers them).
_ELR_COLUMNS = (3, 8, 0)
#: The release lines whose admin client hands the tool its map of descriptions as it filled
#: it, not a copy (3.8's DescribeTopicPartitions path).
_UNCOPIED_DESCRIPTIONS = frozenset({"3.8"})
#: The first release whose tool is written in Java (the older one, in Scala, dies on an option
#: it does not know with the exception's text).
_WRITTEN_IN_JAVA = (3, 7, 0)
#: The first release whose tool takes several of the partition reports at once (the Java one);
#: the older one refuses a second.
_REPORTS_COMBINED = _WRITTEN_IN_JAVA
#: --partition-size-limit-per-response (3.8 on, KIP-966): the most partitions a
#: DescribeTopicPartitions answer may carry. Paging changes nothing the tool prints.
_PARTITION_SIZE_LIMIT = "partition-size-limit-per-response"
_PARTITION_SIZE_LIMIT_FROM = (3, 8, 0)
#: The release lines whose tool names a missing --topic by the Optional holding it.
_OPTIONAL_IN_TEXT = frozenset({"3.8", "3.9", "4.0"})


@dataclass(frozen=True)
class DescribeOptions:
    """kafka-topics --describe's options."""

    #: --topic: a pattern matched against whole names (commas for |), read by Python's re, which
    #: reads the patterns people give as Java's Pattern does.
    topic: str | None = None
    #: --topic-id: the one topic to describe, by id (the zero id is no id: --topic counts then).
    #: The admin client describes by id through Metadata, which carries no ELR: from 3.8 the
    #: tool prints "N/A" for it.
    topic_id: Uuid | None = None
    exclude_internal: bool = False
    if_exists: bool = False
    under_replicated: bool = False  # --under-replicated-partitions
    unavailable: bool = False  # --unavailable-partitions
    under_min_isr: bool = False  # --under-min-isr-partitions
    at_min_isr: bool = False  # --at-min-isr-partitions
    with_overrides: bool = False  # --topics-with-overrides
    #: --partition-size-limit-per-response as given: the tool reads it as an Integer only
    #: when it describes topics by name.
    partition_size_limit: str | None = None

    @property
    def reports(self) -> bool:
        """Only partitions in trouble are listed (and no topic lines)."""
        return bool(self.given_reports)

    @property
    def given_reports(self) -> list[str]:
        """The partition reports asked for, by the tool's names, in the order it checks them."""
        flags = (("under-replicated-partitions", self.under_replicated), ("under-min-isr-partitions", self.under_min_isr),
                 ("at-min-isr-partitions", self.at_min_isr), ("unavailable-partitions", self.unavailable))
        return [name for name, given in flags if given]


def topic_pattern(raw: str) -> re.Pattern[str]:
    """The tool's topic filter (TopicFilter): spaces and surrounding quotes dropped, commas
    read as alternatives; a pattern that does not compile fails as the tool does."""
    text = re.sub(r"[\"']+$", "", re.sub(r"^[\"']+", "", raw.strip().replace(",", "|").replace(" ", "")))
    try:
        return re.compile(text)
    except re.error:
        raise ToolFailure(f"{text} is an invalid regex.") from None


@dataclass(frozen=True)
class _Partition:
    index: int
    registration: PartitionRegistration
    min_isr: int

    @property
    def leader(self) -> int | None:
        return self.registration.leader if self.registration.leader >= 0 else None

    @property
    def replication_factor(self) -> int:
        """Replicas not counting those a reassignment adds (TopicCommand.getReplicationFactor)."""
        p = self.registration
        changing = set(p.adding_replicas) | set(p.removing_replicas)
        if any(r in changing for r in p.replicas):
            return len(p.replicas) - len(p.adding_replicas)
        return len(p.replicas)

    def listed(self, options: DescribeOptions, live: set[int]) -> bool:
        """Whether the tool prints this partition's line."""
        isr = len(self.registration.isr)
        return not options.reports or \
            (options.under_replicated and self.replication_factor > isr) or \
            (options.unavailable and (self.leader is None or self.leader not in live)) or \
            (options.under_min_isr and (self.leader is None or isr < self.min_isr)) or \
            (options.at_min_isr and isr == self.min_isr)

    def line(self, topic: str, elr: bool | None) -> str:
        """The partition's line; `elr`: its ELR columns (True), the tool's "N/A" for a broker
        that does not answer them (False), none (None: a tool without them)."""
        p = self.registration
        out = [f"\tTopic: {topic}", f"Partition: {self.index}",
               f"Leader: {'none' if self.leader is None else self.leader}",
               f"Replicas: {_ids(p.replicas)}", f"Isr: {_ids(p.isr)}"]
        if p.adding_replicas or p.removing_replicas:  # (a reassignment the controller lists)
            out += [f"Adding Replicas: {_ids(p.adding_replicas)}", f"Removing Replicas: {_ids(p.removing_replicas)}"]
        if elr:
            out += [f"Elr: {_ids(p.elr)}", f"LastKnownElr: {_ids(p.last_known_elr)}"]
        elif elr is not None:
            out += ["Elr: N/A", "LastKnownElr: N/A"]
        return "\t".join(out)


def _ids(ids: Sequence[int]) -> str:
    return ",".join(str(i) for i in ids)


def described_order(names: list[str], release: str) -> list[str]:
    """The order of the topics `names` (sorted) in the descriptions the admin client of
    `release` gives the tool: its HashMap sized for them and filled in name order, copied
    (except on 3.8) into a HashMap copy, then put into the result's HashMap sized for them."""
    size = sized_capacity(len(names))
    filled = hash_map_order(names, string_hash, initial=size)
    if release_line(release) not in _UNCOPIED_DESCRIPTIONS:
        filled = hash_map_order(filled, string_hash, initial=copy_capacity(len(names)))
    return hash_map_order(filled, string_hash, initial=size)


def describe_image(image: MetadataImage, options: DescribeOptions, *, tool: str, broker: int,
                   broker_release: str) -> list[str]:
    """The lines of kafka-topics --describe of release `tool` for the topics of `image`, with
    the configs as broker `broker` of `broker_release` describes them."""
    if options.partition_size_limit is not None and release_name_key(tool) < _PARTITION_SIZE_LIMIT_FROM:
        unknown = f"{_PARTITION_SIZE_LIMIT} is not a recognized option"  # (joptsimple's, before anything else)
        raise ToolFailure(unknown if release_name_key(tool) >= _WRITTEN_IN_JAVA else
                          f'Exception in thread "main" joptsimple.UnrecognizedOptionException: {unknown}')
    elr = None if release_name_key(tool) < _ELR_COLUMNS else broker_serves(broker_release, _DESCRIBE_TOPIC_PARTITIONS)
    reports = options.given_reports
    if len(reports) > 1 and release_name_key(tool) < _REPORTS_COMBINED:
        raise ToolFailure(f'Option "[{reports[0]}]" can\'t be used with option "[{reports[1]}]"')
    names = sorted(t.name for t in image.topics.sorted_topics())
    if options.exclude_internal:
        internal = internal_topics(tool) | internal_topics(broker_release)  # (the tool's own and the broker's)
        names = [n for n in names if n not in internal]
    if options.topic_id is not None and options.topic_id != Uuid.ZERO:
        by_id = image.topics.get_topic(options.topic_id)
        names = [by_id.name] if by_id is not None and by_id.name in names else []  # (--exclude-internal counts)
        if not names and not options.if_exists:
            raise ToolFailure(f"TopicId '{options.topic_id}' does not exist as expected")
        if elr is not None:  # (described through Metadata: "N/A")
            elr = False
    elif options.topic is not None:
        pattern = topic_pattern(options.topic)
        names = [n for n in names if pattern.fullmatch(n)]
        if not names and options.topic and not options.if_exists:
            named = f"Optional[{options.topic}]" if release_line(tool) in _OPTIONAL_IN_TEXT else options.topic
            raise ToolFailure(f"Topic '{named}' does not exist as expected")
    if names and options.partition_size_limit is not None and (options.topic_id in (None, Uuid.ZERO)) \
            and parse_int(options.partition_size_limit) is None:  # (read when topics are described by name)
        raise ToolFailure(f"Cannot parse argument '{options.partition_size_limit}' of option {_PARTITION_SIZE_LIMIT}")
    live = {b.id for b in image.cluster.brokers.values() if not b.fenced}
    node_dynamic, cluster_dynamic = image.configs.config(BROKER, str(broker)), image.configs.config(BROKER, "")
    lines: list[str] = []
    for name in described_order(names, tool):
        topic = image.topics.get_topic_by_name(name)
        assert topic is not None  # (listed from the same image)
        described = describe_topic_configs(broker_release, image.configs.config(TOPIC, name), node_dynamic,
                                           cluster_dynamic)
        by_name = {c.name: c for c in described}
        overridden = [c for c in (by_name[n] for n in hash_map_order(list(by_name), string_hash))
                      if c.source != _DEFAULT_CONFIG]
        min_isr = int(by_name["min.insync.replicas"].value or 1)
        partitions = [_Partition(i, p, min_isr) for i, p in topic.sorted_partitions()]
        if not options.reports and (overridden or not options.with_overrides) and partitions:
            configs = ",".join(f"{c.name}={c.value if c.value is not None else 'null'}" for c in overridden)
            lines.append(f"Topic: {name}\tTopicId: {topic.id}\tPartitionCount: {len(partitions)}\t"
                         f"ReplicationFactor: {partitions[0].replication_factor}\tConfigs: {configs}")
        if not options.with_overrides:
            lines += [p.line(name, elr) for p in partitions if p.listed(options, live)]
    return lines


def describe_topics(sim: Simulation, options: DescribeOptions) -> list[str]:
    """kafka-topics --describe against the simulated cluster `sim` (see the module's text)."""
    view = tool_view(sim, "kafka-topics")
    return describe_image(view.image, options, tool=view.tool, broker=view.broker, broker_release=view.broker_release)
