"""The metadata shell's node tree over a MetadataImage: `/image/...` and `/local/...`.

Kafka's shell (org.apache.kafka.image.node, org.apache.kafka.shell.node) shows an image as
directories and files; a file prints one line, the `toString()` of what it holds
(BrokerRegistration, PartitionRegistration, StandardAcl, ...). Children are built when
visited, so a shell over a million partitions costs only what is looked at.
"""

from __future__ import annotations

import datetime as _dt
import functools
from typing import Callable, Iterable, Sequence, TypeVar

from kraftsim.image import (
    BrokerRegistration, ControllerRegistration, DelegationToken, Endpoint, FeatureRange, MetadataImage,
    MetadataProvenance, PartitionRegistration, ScramCredential, StandardAcl, TopicImage, resource_type_name,
)
from kraftsim.javacompat import double_to_string, parse_int
from kraftsim.protocol.primitives import Uuid
from kraftsim.shell.style import ShellStyle
from kraftsim.versions import Catalog, VersionsError

#: SecurityProtocol ids as Kafka names them; an unknown id prints as Java's null.
SECURITY_PROTOCOLS = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}
LEADER_RECOVERY = {0: "RECOVERED", 1: "RECOVERING"}
#: ScramMechanism ids and names, UNKNOWN left out as Kafka's ScramImageNode leaves it out.
SCRAM_MECHANISMS = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
#: ClientQuotaEntity types in the order ClientQuotasImageNode names them.
QUOTA_TYPES = (("client-id", "clientId"), ("ip", "ip"), ("user", "user"))


class ShellFault(Exception):
    """What Kafka's shell throws out of a command (e.g. a listed child that is not there)."""


#: Java's message when a 3.x shell prints a listed child that is not there.
_NULL_CHILD = ('Cannot invoke "org.apache.kafka.image.node.MetadataNode.print(org.apache.kafka.image.node.printer.'
               'MetadataNodePrinter)" because "child" is null')


class Node:
    """A directory (children by name) or a file (one text). `java_class`: the class of Kafka's
    node, which Kafka's messages about a listed child that is not there name."""

    java_class = "MetadataNode"

    def is_dir(self) -> bool:
        return True

    def child_names(self) -> list[str]:
        return []

    def child(self, name: str) -> "Node | None":
        return None

    def print_to(self, out: "NodePrinter") -> None:
        """MetadataNode.print: every child in name order, a directory as `name:` then its content."""
        for name in sorted(self.child_names()):
            child = self.child(name)
            out.enter(name)
            if child is not None:
                child.print_to(out)
            elif not out.skips_missing:
                raise ShellFault(_NULL_CHILD)
            out.leave()


class Leaf(Node):
    def __init__(self, text: str):
        self.text = text

    def is_dir(self) -> bool:
        return False

    def print_to(self, out: "NodePrinter") -> None:
        out.output(self.text)


class Dir(Node):
    """A directory whose child names and children come from functions (built on visit)."""

    def __init__(self, names: Callable[[], Iterable[str]], lookup: Callable[[str], Node | None],
                 java_class: str = "MetadataNode"):
        self._names = names
        self._lookup = lookup
        self.java_class = java_class

    def child_names(self) -> list[str]:
        return list(self._names())

    def child(self, name: str) -> Node | None:
        return self._lookup(name)


def fixed(children: dict[str, Callable[[], Node | None]]) -> Dir:
    """A directory with a fixed set of named children."""
    return Dir(lambda: children, lambda name: children[name]() if name in children else None)


class NodePrinter:
    """ShellNodePrinter: two spaces of indentation per level, a directory as `name:`.
    `skips_missing`: a listed child that is not there prints as its name alone (4.0 on)."""

    def __init__(self, skips_missing: bool = True) -> None:
        self.lines: list[str] = []
        self.skips_missing = skips_missing
        self._level = 0

    def enter(self, name: str) -> None:
        self.lines.append(f"{'  ' * self._level}{name}:")
        self._level += 1

    def leave(self) -> None:
        self._level -= 1

    def output(self, text: str) -> None:
        self.lines.append(f"{'  ' * self._level}{text}")


# ------------------------------------------------------------------------- toString forms


def java_list(items: Iterable[object]) -> str:
    """List.toString / Arrays.toString."""
    return "[" + ", ".join(str(i) for i in items) + "]"


def version_range(f: FeatureRange) -> str:
    """VersionRange.toString: `min`, `min+` (open-ended), or `min-max`."""
    if f.min_version == f.max_version:
        return str(f.min_version)
    if f.max_version == 32767:
        return f"{f.min_version}+"
    return f"{f.min_version}-{f.max_version}"


def endpoint_text(e: Endpoint) -> str:
    protocol = SECURITY_PROTOCOLS.get(e.security_protocol, "null")
    return f"Endpoint(listenerName='{e.name}', securityProtocol={protocol}, host='{e.host}', port={e.port})"


def _listeners_and_features(listeners: Sequence[Endpoint], features: Sequence[FeatureRange]) -> str:
    by_name = {e.name: e for e in listeners}
    ranges = {f.name: f for f in features}
    return (f"listeners=[{', '.join(endpoint_text(by_name[n]) for n in sorted(by_name))}], supportedFeatures={{"
            + ", ".join(f"{n}: {version_range(ranges[n])}" for n in sorted(ranges)) + "}")


def broker_text(b: BrokerRegistration, style: ShellStyle) -> str:
    rack = "Optional.empty" if b.rack is None else f"Optional[{b.rack}]"
    text = (f"BrokerRegistration(id={b.id}, epoch={b.epoch}, incarnationId={b.incarnation_id}, "
            f"{_listeners_and_features(b.listeners, b.supported_features)}, rack={rack}, "
            f"fenced={_bool(b.fenced)}, inControlledShutdown={_bool(b.in_controlled_shutdown)}")
    if style.broker_zk_migration:
        text += f", isMigratingZkBroker={_bool(b.is_migrating_zk_broker)}"
    if style.jbod_and_elr:
        text += f", directories={java_list(b.directories)}"
    if style.cordoned:
        cordoned = "null" if b.cordoned_directories is None else java_list(b.cordoned_directories)
        text += f", cordonedDirectories={cordoned}"
    return text + ")"


def controller_text(c: ControllerRegistration) -> str:
    return (f"ControllerRegistration(id={c.id}, incarnationId={c.incarnation_id}, "
            f"zkMigrationReady={_bool(c.zk_migration_ready)}, "
            f"{_listeners_and_features(c.listeners, c.supported_features)})")


def partition_text(p: PartitionRegistration, style: ShellStyle) -> str:
    jbod = style.jbod_and_elr
    return (f"PartitionRegistration(replicas={java_list(p.replicas)}, "
            + (f"directories={java_list(p.directories)}, " if jbod else "")
            + f"isr={java_list(p.isr)}, removingReplicas={java_list(p.removing_replicas)}, "
            f"addingReplicas={java_list(p.adding_replicas)}, "
            + (f"elr={java_list(p.elr)}, lastKnownElr={java_list(p.last_known_elr)}, " if jbod else "")
            + f"leader={p.leader}, leaderRecoveryState={LEADER_RECOVERY.get(p.leader_recovery_state, 'null')}, "
            f"leaderEpoch={p.leader_epoch}, partitionEpoch={p.partition_epoch})")


def acl_text(a: StandardAcl, style: ShellStyle) -> str:
    """StandardAcl's toString: a class's `(...)` before 4.2, a record's `[...]` from 4.2."""
    from kraftsim.controller import code_name

    opening, closing = "[]" if style.acl_record else "()"
    return (f"StandardAcl{opening}resourceType={code_name('resource_type', a.resource_type)}, "
            f"resourceName={a.resource_name}, patternType={code_name('pattern_type', a.pattern_type)}, "
            f"principal={a.principal}, host={a.host}, operation={code_name('operation', a.operation)}, "
            f"permissionType={code_name('permission_type', a.permission_type)}{closing}")


def scram_text(c: ScramCredential) -> str:
    return (f"ScramCredentialData(salt={c.salt.hex()}, storedKey={c.stored_key.hex()}, "
            f"serverKey={c.server_key.hex()}, iterations={c.iterations})")


def token_text(t: DelegationToken) -> str:
    """DelegationTokenDataNode's line, its unbalanced parentheses included."""
    return (f"DelegationTokenDatatokenId={t.token_id}(owner={t.owner}(tokenRequester={t.requester}"
            f"(renewers={' '.join(t.renewers)}, issueTimestamp={t.issue_timestamp}, "
            f"maxTimestamp={t.max_timestamp}), expiryTimestamp={t.expiration_timestamp}")


def provenance_text(p: MetadataProvenance) -> str:
    """ProvenanceNode: offset, epoch and the log time as ISO_ZONED_DATE_TIME in UTC."""
    return (f"offset {p.last_contained_offset}, epoch {p.last_contained_epoch}, "
            f"time {iso_zoned_utc(p.last_contained_log_time_ms)}")


def iso_zoned_utc(ms: int) -> str:
    """DateTimeFormatter.ISO_ZONED_DATE_TIME of an epoch-millisecond instant at zone UTC:
    seconds always shown, the fraction only as long as it needs to be."""
    when = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(milliseconds=ms)
    frac = f"{ms % 1000:03d}".rstrip("0")
    return when.strftime("%Y-%m-%dT%H:%M:%S") + (f".{frac}" if frac else "") + "Z[UTC]"


def _bool(b: bool) -> str:
    return "true" if b else "false"


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def quota_entity_name(entity: tuple[tuple[str, str | None], ...]) -> str:
    """ClientQuotasImageNode's name of an entity: `clientId(a)_ip(b)_user(c)`, in that order.
    A default part (no name) is left out, as Kafka leaves out its nulls: `user(<default>)`
    is named "", and no name leads back to such an entity."""
    parts = dict(entity)
    return "_".join(f"{label}({_escape(parts[t] or '')})" for t, label in QUOTA_TYPES if parts.get(t) is not None)


#: ConfigResource.Type in Java's enum order (BROKER_LOGGER before BROKER: names are matched by prefix).
CONFIG_TYPES = (("BROKER_LOGGER", 8), ("BROKER", 4), ("TOPIC", 2), ("UNKNOWN", 0), ("CLIENT_METRICS", 16),
                ("GROUP", 32))


def config_resource_name(resource_type: int, name: str) -> str:
    """ConfigurationsImageNode's child name: `TYPE` for a default resource, else `TYPE:name`."""
    tname = resource_type_name(resource_type)
    tname = tname if not tname.startswith("UNKNOWN") else "UNKNOWN"
    return f"{tname}:{name}" if name else tname


def config_resource_of(child: str) -> tuple[int, str] | None:
    """ConfigurationsImageNode.resourceFromName: the first type the name starts with, then
    nothing (the default resource) or `:name` (`BROKER:` is the default too)."""
    for tname, code in CONFIG_TYPES:
        if child.startswith(tname):
            rest = child[len(tname):]
            if not rest:
                return code, ""
            return (code, rest[1:]) if rest.startswith(":") else None
    return None


def decode_quota_entity(name: str) -> tuple[tuple[str, str | None], ...] | None:
    """ClientQuotasImageNode.decodeEntity: `type(value)` parts joined by `_`, in any order,
    `\\` escaping the next character; None when the name is not one."""
    labels = {label: t for t, label in QUOTA_TYPES}
    parts: dict[str, str | None] = {}
    i = 0
    while i < len(name):
        label = next((lb for lb in labels if name.startswith(lb + "(", i)), None)
        if label is None:
            return None
        i += len(label) + 1
        value: list[str] = []
        while True:
            if i >= len(name):
                return None
            ch = name[i]
            i += 1
            if ch == "\\":
                if i >= len(name):
                    return None
                value.append(name[i])
                i += 1
            elif ch == ")":
                break
            else:
                value.append(ch)
        parts[labels[label]] = "".join(value)
        if i < len(name):
            if name[i] != "_":
                return None
            i += 1
            if i >= len(name):
                return None
    return tuple(sorted(parts.items())) if parts else None


def _uuid_of(name: str) -> Uuid | None:
    try:
        return Uuid.from_string(name)
    except ValueError:
        return None


# ---------------------------------------------------------------------------- the tree


class ShellTree:
    """The root node of Kafka's shell over one image, printed in one release's style."""

    def __init__(self, image: MetadataImage, style: ShellStyle, catalog: Catalog):
        self.image = image
        self.style = style
        self.catalog = catalog

    def root(self) -> Node:
        return fixed({"local": self._local, "image": self._image})

    def _local(self) -> Node:
        return fixed({"version": lambda: Leaf(self.style.release), "commitId": lambda: Leaf(self.style.commit_id)})

    def _image(self) -> Node:
        acls = self._acls_by_id
        return fixed({
            "provenance": lambda: Leaf(provenance_text(self.image.provenance)),
            "features": self._features,
            "cluster": self._cluster,
            "topics": self._topics,
            "configs": self._configs,
            "clientQuotas": self._quotas,
            "producerIds": lambda: fixed({"nextProducerId": lambda: Leaf(str(self.image.producer_ids.next_producer_id))}),
            "acls": (lambda: fixed({"byId": acls})) if self.style.acls_by_id else acls,
            "scram": self._scram,
            "delegationToken": self._tokens,
        })

    # features --------------------------------------------------------------------------

    def _mv_text(self) -> str:
        level = self.image.features.metadata_version
        name = None
        if level is not None:
            try:
                name = self.catalog.mv_from_level(level).version
            except VersionsError:
                name = f"level {level}"
        if self.style.mv_optional:
            return "Optional.empty" if name is None else f"Optional[{name}]"
        return name if name is not None else "3.0-IV1"  # 3.x: MINIMUM_KRAFT_VERSION when none is finalized

    def _features(self) -> Node:
        finalized = self.image.features.finalized_map()
        names = ["metadataVersion"] + (["zkMigrationState"] if self.style.zk_migration != "absent" else [])
        names += [f"finalized_{n}" for n in finalized]

        def lookup(name: str) -> Node | None:
            if name == "metadataVersion":
                return Leaf(self._mv_text())
            if name == "zkMigrationState" and self.style.zk_migration == "leaf":
                return Leaf("NONE")
            if name.startswith("finalized_"):
                return Leaf(str(finalized.get(name[len("finalized_"):], 0)))
            return None

        return Dir(lambda: names, lookup, "FeaturesImageNode")

    # cluster ---------------------------------------------------------------------------

    def _cluster(self) -> Node:
        cluster = self.image.cluster

        def brokers() -> Node:
            return Dir(lambda: [str(i) for i in cluster.brokers],
                       lambda n: _by_int(n, lambda i: cluster.broker(i),
                                         lambda b: Leaf(broker_text(b, self.style))))

        def controllers() -> Node:
            return Dir(lambda: [str(i) for i in cluster.controllers],
                       lambda n: _by_int(n, lambda i: cluster.controller(i), lambda c: Leaf(controller_text(c))))

        if not self.style.cluster_by_role:  # (3.3 to 3.6: the brokers' ids right under /image/cluster)
            return brokers()
        return fixed({"brokers": brokers, "controllers": controllers})

    # topics ----------------------------------------------------------------------------

    def _topics(self) -> Node:
        topics = self.image.topics

        def by_name() -> Node:
            return Dir(lambda: list(topics.by_name), lambda n: _topic_node(topics.get_topic_by_name(n), self.style))

        def by_id() -> Node:
            def lookup(name: str) -> Node | None:
                uuid = _uuid_of(name)
                return None if uuid is None else _topic_node(topics.get_topic(uuid), self.style)

            return Dir(lambda: [str(u) for u in topics.by_id], lookup)

        return fixed({"byName": by_name, "byId": by_id})

    # configs, quotas, ACLs, SCRAM, tokens ----------------------------------------------

    def _configs(self) -> Node:
        resources = self.image.configs.resources
        names = [config_resource_name(t, name) for t, name in resources]

        def lookup(name: str) -> Node | None:
            key = config_resource_of(name)
            values = None if key is None else resources.get(key)
            if values is None:
                return None
            return Dir(lambda: list(values), lambda k: Leaf(values[k]) if values.get(k) is not None else None)

        return Dir(lambda: names, lookup)

    def _quotas(self) -> Node:
        entities = self.image.client_quotas.entities
        names = [quota_entity_name(e) for e in entities]

        def lookup(name: str) -> Node | None:
            entity = decode_quota_entity(name)
            quotas = None if entity is None else entities.get(entity)
            if quotas is None:
                return None
            return Dir(lambda: list(quotas), lambda k: Leaf(double_to_string(quotas[k])) if k in quotas else None)

        return Dir(lambda: names, lookup, "ClientQuotasImageNode")

    def _acls_by_id(self) -> Node:
        acls = self.image.acls.acls

        def lookup(name: str) -> Node | None:
            uuid = _uuid_of(name)
            acl = None if uuid is None else acls.get(uuid)
            return None if acl is None else Leaf(acl_text(acl, self.style))

        return Dir(lambda: [str(u) for u in acls], lookup)

    def _scram(self) -> Node:
        creds = self.image.scram.credentials

        def mechanism(mech: int) -> Node:
            users = {user: c for (m, user), c in creds.items() if m == mech}
            return Dir(lambda: list(users), lambda u: Leaf(scram_text(users[u])) if u in users else None)

        return fixed({name: functools.partial(mechanism, m) for name, m in SCRAM_MECHANISMS.items()})

    def _tokens(self) -> Node:
        tokens = self.image.delegation_tokens.tokens
        return Dir(lambda: list(tokens), lambda t: Leaf(token_text(tokens[t])) if tokens.get(t) is not None else None)


T = TypeVar("T")


def _by_int(name: str, get: Callable[[int], T | None], make: Callable[[T], Node]) -> Node | None:
    """A child keyed by an int id, looked up as Integer.valueOf reads the name."""
    i = parse_int(name)
    found = None if i is None else get(i)
    return None if found is None else make(found)


def _topic_node(topic: TopicImage | None, style: ShellStyle) -> Node | None:
    """TopicImageNode: `name`, `id` and one file per partition."""
    if topic is None:
        return None
    t = topic
    names = ["name", "id"] + [str(p) for p in t.partitions]

    def lookup(name: str) -> Node | None:
        if name == "name":
            return Leaf(t.name)
        if name == "id":
            return Leaf(str(t.id))
        pid = parse_int(name)
        p = None if pid is None else t.partitions.get(pid)
        return None if p is None else Leaf(partition_text(p, style))

    return Dir(lambda: names, lookup)
