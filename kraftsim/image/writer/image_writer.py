"""The image writer: an image as the records of a snapshot at a given metadata.version.

Order (Kafka's MetadataImage.write, kafka-facts §6.4): features (the metadata.version
FeatureLevelRecord first, at version 0, then the other finalized features); on the 3.x
writer line a ZkMigrationStateRecord when the MV supports migration; brokers, then
controllers; each topic's TopicRecord followed by its PartitionRecords; configs; client
quotas; producer ids; ACLs; SCRAM credentials; delegation tokens; then records of types the
image does not model. Where Kafka iterates a hash map (features, registrations and their
lists, topics, config keys, quotas) the order is Kafka's (kafka_order.py); elsewhere entities
are sorted by key. Record versions come from the catalog.

Every case where the target MV cannot represent something goes through the loss handler
(loss.py) with Kafka's loss string. Version rules all come from the catalog's
capabilities and record gates; which release line's writer to imitate comes from the
catalog's policies (`snapshot_zk_migration_state`, `elr_fields_gate`) or `writer_line`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Iterator, Mapping

from kraftsim.versions import FEATURE_NAME as FEATURE_NAME_MV
from kraftsim.errors import KraftsimError
from kraftsim.image.image import MetadataImage
from kraftsim.image.intern import MIGRATING
from kraftsim.image.components.partition import MIGRATING_BY_COUNT
from kraftsim.image.writer.loss import Loss, LossHandler, raise_on_loss
from kraftsim.image.writer.kafka_order import (
    HASH_MAP, PERSISTENT, broker_feature_order, broker_listener_order, config_key_order, config_resource_order,
    controller_list_order,
    feature_order, node_id_order, quota_entity_data_order, quota_entity_order, topic_order,
)
from kraftsim.image.components.opaque import key_text
from kraftsim.image.components.topics import TopicImage
from kraftsim.image.components.scram import mechanism_enum_name, mechanism_name
from kraftsim.protocol.entries import Payload
from kraftsim.protocol.primitives import Uuid
from kraftsim.protocol.registry import Registry
from kraftsim.versions import Catalog, MVLike, default_catalog


@dataclass(frozen=True)
class WriterLine:
    """Which Kafka line's image writer to imitate where the lines differ (kafka-facts §9)."""

    name: str
    zk_migration_state_record: bool  # 3.x: ZkMigrationStateRecord after the features
    elr_gate: str  # "metadata.version" (3.x/C0) or "feature" (4.x)
    topics_map: str = PERSISTENT  # "persistent" (3.6+) or "hash_map" (3.3-3.5): the topics' order
    broker_features_rehashed: bool = False  # 3.x: a broker's features in HashMap order, not the record's

    @classmethod
    def from_catalog(cls, catalog: Catalog) -> "WriterLine":
        """The line the catalog's release follows, read from its policies."""
        return cls(
            name=f"release {catalog.release.name}",
            zk_migration_state_record=catalog.policy("snapshot_zk_migration_state") == "write",
            elr_gate=catalog.policy("elr_fields_gate"),
            topics_map=catalog.policy("image_topics_map"),
            broker_features_rehashed=catalog.policy("broker_features_order") == HASH_MAP,
        )


WRITER_3X = WriterLine("3.x", zk_migration_state_record=True, elr_gate="metadata.version",
                       broker_features_rehashed=True)
WRITER_4X = WriterLine("4.x", zk_migration_state_record=False, elr_gate="feature")


def resolve_writer_line(writer_line: WriterLine | str | None, catalog: Catalog) -> WriterLine:
    """None: the catalog's release line; "3.x"/"4.x"; or a release name such as "3.6"."""
    if writer_line is None:
        return WriterLine.from_catalog(catalog)
    if isinstance(writer_line, WriterLine):
        return writer_line
    if writer_line == "3.x":
        return WRITER_3X
    if writer_line == "4.x":
        return WRITER_4X
    return WriterLine.from_catalog(catalog.at_release(writer_line))


#: Leading fields of TopicRecord and PartitionRecord, in schema order (see positional_constructor).
TOPIC_RECORD_FIELDS = ("name", "topic_id")
PARTITION_RECORD_FIELDS = ("partition_id", "topic_id", "replicas", "isr", "removing_replicas", "adding_replicas",
                           "leader", "leader_recovery_state", "leader_epoch", "partition_epoch", "directories")


def positional_constructor(cls: Any, fields: tuple[str, ...]) -> Callable[..., Any]:
    """A function building `cls` from values of `fields`, in that order.

    It is `cls` itself when its fields begin with `fields`: a msgspec Struct is built about
    twice as fast from positional arguments as from keywords, which matters once per
    partition. A record class laid out otherwise (a user catalog's schema) gets keywords.
    """
    if tuple(getattr(cls, "__struct_fields__", ())[:len(fields)]) == fields:
        return cls

    def by_name(*values: Any) -> Any:
        return cls(**dict(zip(fields, values)))

    return by_name


class _SharedLists(dict):
    """tuple -> one list equal to it, made on first use (iter_image_records' read_only mode)."""

    def __missing__(self, key: tuple) -> list:
        value = self[key] = list(key)
        return value


def _all_migrating(directories: tuple) -> bool:
    """Every directory is MIGRATING (what a record without directories says).

    The interned MIGRATING tuples are recognised by identity, without a loop."""
    n = len(directories)
    if n < len(MIGRATING_BY_COUNT) and directories is MIGRATING_BY_COUNT[n]:
        return True
    return all(d == MIGRATING for d in directories)


def registry_for(catalog: Catalog) -> Registry:
    """Kept for callers not yet moved to `catalog.record_registry()`, which it calls."""
    return catalog.record_registry()


def iter_image_records(image: MetadataImage, metadata_version: MVLike, catalog: Catalog | None = None, *,
                       elr_enabled: bool | None = None, loss_handler: LossHandler | None = None,
                       writer_line: WriterLine | str | None = None,
                       registry: Registry | None = None, read_only: bool = False,
                       config_type_hashes: Mapping[int, int] | None = None,
                       config_entry_ranks: Mapping[tuple[int, str], int] | None = None) -> Iterator[Payload]:
    """The records of `image` written at `metadata_version`, as a generator (see write_image).

    `read_only=True` is for callers that only read the records (encode them into a
    snapshot, replay them): the replica, ISR and directory lists of the PartitionRecords
    are then shared, one list per distinct value, instead of fresh for every partition.
    A snapshot writer holds a whole batch of records (8 MiB, ~75,000 of them) before it
    encodes them; without fresh lists to allocate, keep and free, writing a
    1,000,000-partition snapshot takes about a quarter less time. Never modify such records.
    """
    cat = catalog if catalog is not None else default_catalog()
    mv = cat.metadata_version(metadata_version)
    line = resolve_writer_line(writer_line, cat)
    handle = loss_handler if loss_handler is not None else raise_on_loss
    reg = registry if registry is not None else cat.record_registry()
    mvs = mv.version

    def supports(capability: str) -> bool:
        return cat.supports(capability, mv)

    def lose(kind: str, entity: str, summary: str, path: tuple, kafka: bool = True) -> None:
        handle(Loss(kind, entity, summary, mvs, path, kafka))

    # 1. features
    fl = reg["FeatureLevelRecord"]
    flv = cat.record_version("FeatureLevelRecord", mv)
    finalized = [(name, dict(image.features.finalized)[name])
                 for name in feature_order([n for n, _ in image.features.finalized], image.features.order)]
    if supports("metadata_version_record"):
        yield Payload(fl, 0, fl.cls(name=FEATURE_NAME_MV, feature_level=mv.level))
        for name, level in finalized:
            yield Payload(fl, flv, fl.cls(name=name, feature_level=level))
    elif finalized:
        summary = "feature flag(s): " + ", ".join(sorted(n for n, _ in finalized))
        for name, _ in finalized:
            lose("feature level", f"feature {name}", summary, ("features", name))
    if line.zk_migration_state_record and supports("migration"):
        zk = reg["ZkMigrationStateRecord"]
        yield Payload(zk, cat.record_version("ZkMigrationStateRecord", mv), zk.cls(zk_migration_state=0))

    # 2. cluster: brokers, then controllers
    cluster = image.cluster
    if cluster.brokers:
        rb = reg["RegisterBrokerRecord"]
        rbv = cat.record_version("RegisterBrokerRecord", mv)
        ep_cls, feat_cls = rb.nested["BrokerEndpoint"], rb.nested["BrokerFeature"]
        broker_features = partial(broker_feature_order, rehashed=line.broker_features_rehashed)
        # the optional fields: (image attribute, record field, capability, loss kind, Kafka's loss text)
        optional = [(attr, field, supports(cap), kind, text) for attr, field, cap, kind, text in _BROKER_OPTIONAL]
        cordon_ok = supports("cordoned_log_dirs")
        for b in (cluster.brokers[i] for i in node_id_order(cluster.brokers.keys())):
            fields: dict[str, Any] = {}
            for attr, field, ok, kind, text in optional:
                value = getattr(b, attr)
                if not value:
                    continue
                if ok:
                    fields[field] = list(value) if field == "log_dirs" else True
                else:
                    lose(kind, f"broker {b.id}", text, ("cluster", "brokers", b.id, attr))
            # CordonedLogDirs (4.3-IV0): null and [] are kept apart so Kafka's records read back byte
            # for byte; an empty list says nothing a reader would miss at an older metadata.version
            if b.cordoned_directories is not None:
                if cordon_ok:
                    fields["cordoned_log_dirs"] = list(b.cordoned_directories)
                elif b.cordoned_directories:
                    lose("broker cordoned log dirs", f"broker {b.id}", "the cordoned log directories of one or more brokers",
                         ("cluster", "brokers", b.id, "cordoned_directories"))
            yield Payload(rb, rbv, rb.cls(
                broker_id=b.id, incarnation_id=b.incarnation_id, broker_epoch=b.epoch, rack=b.rack, fenced=b.fenced,
                **_registration_lists(b, ep_cls, feat_cls, broker_listener_order, broker_features), **fields))
    if cluster.controllers:
        if supports("controller_registration"):
            rc = reg["RegisterControllerRecord"]
            rcv = cat.record_version("RegisterControllerRecord", mv)
            cep, cfeat = rc.nested["ControllerEndpoint"], rc.nested["ControllerFeature"]
            for c in (cluster.controllers[i] for i in node_id_order(cluster.controllers.keys())):
                yield Payload(rc, rcv, rc.cls(
                    controller_id=c.id, incarnation_id=c.incarnation_id, zk_migration_ready=c.zk_migration_ready,
                    **_registration_lists(c, cep, cfeat, controller_list_order, controller_list_order)))
        else:
            for c in cluster.sorted_controllers():
                lose("controller registration", f"controller {c.id}", "controller registration data",
                     ("cluster", "controllers", c.id))

    # 3. topics and partitions
    if image.topics.by_id:
        tr, pr = reg["TopicRecord"], reg["PartitionRecord"]
        trv, prv = cat.record_version("TopicRecord", mv), cat.record_version("PartitionRecord", mv)
        dirs_ok, elr_fits = supports("directory_assignment"), supports("elr")
        if elr_enabled is None:
            elr_on = image.features.is_elr_enabled() if line.elr_gate == "feature" else elr_fits
        else:
            elr_on = elr_enabled
        topic_record = positional_constructor(tr.cls, TOPIC_RECORD_FIELDS)
        partition_record = positional_constructor(pr.cls, PARTITION_RECORD_FIELDS)
        new_tuple = tuple.__new__  # Payload(...) without its Python-level __new__: one call less per record
        as_list = _SharedLists().__getitem__ if read_only else list  # a record's list of a registration's tuple
        for t in topic_order(list(image.topics.sorted_topics()), _topic_id, line.topics_map):
            tid = t.id
            yield new_tuple(Payload, (tr, trv, topic_record(t.name, tid)))
            for pid, p in t.sorted_partitions():
                if dirs_ok:
                    directories = as_list(p.directories)
                else:
                    directories = []
                    if not _all_migrating(p.directories):
                        lose("replica directory assignment", f"topic {t.name} partition {pid}",
                             "the directory assignment state of one or more replicas",
                             ("topics", tid, pid, "directories"))
                m = partition_record(pid, tid, as_list(p.replicas), as_list(p.isr), as_list(p.removing_replicas),
                                     as_list(p.adding_replicas), p.leader, p.leader_recovery_state, p.leader_epoch,
                                     p.partition_epoch, directories)
                if p.elr or p.last_known_elr:
                    where = f"topic {t.name} partition {pid}"
                    if not elr_on:
                        lose("partition ELR (ELR disabled)", where,
                             "the eligible leader replicas of one or more partitions", ("topics", tid, pid, "elr"),
                             kafka=False)
                    elif not elr_fits:
                        lose("partition ELR", where, "the eligible leader replicas of one or more partitions",
                             ("topics", tid, pid, "elr"))
                    else:  # written only when non-empty
                        if p.elr:
                            m.eligible_leader_replicas = list(p.elr)
                        if p.last_known_elr:
                            m.last_known_elr = list(p.last_known_elr)
                yield new_tuple(Payload, (pr, prv, m))

    # 4. configs
    if image.configs.resources:
        cr = reg["ConfigRecord"]
        crv = cat.record_version("ConfigRecord", mv)
        resources = dict(image.configs.sorted_resources())
        arrival = list(resources)
        if config_type_hashes and config_entry_ranks is not None:
            arrival = _in_entry_order(arrival, config_entry_ranks)
        for rtype, rname in config_resource_order(arrival, config_type_hashes):
            data = resources[rtype, rname]
            for key in config_key_order(list(data)):
                yield Payload(cr, crv, cr.cls(resource_type=rtype, resource_name=rname, name=key, value=data[key]))

    # 5. client quotas
    if image.client_quotas.entities:
        cq = reg["ClientQuotaRecord"]
        cqv = cat.record_version("ClientQuotaRecord", mv)
        ed = cq.nested["EntityData"]
        entities = dict(image.client_quotas.sorted_entities())
        for entity in quota_entity_order(list(entities)):
            data = entities[entity]
            names = dict(entity)
            entity_data = [ed(entity_type=t, entity_name=names[t]) for t in quota_entity_data_order(list(names))]
            for key in config_key_order(list(data)):
                yield Payload(cq, cqv, cq.cls(entity=list(entity_data),
                                              key=key, value=data[key], remove=False))

    # 6. producer ids
    if image.producer_ids.next_producer_id >= 0:
        pi = reg["ProducerIdsRecord"]
        yield Payload(pi, cat.record_version("ProducerIdsRecord", mv),
                      pi.cls(broker_id=-1, broker_epoch=-1, next_producer_id=image.producer_ids.next_producer_id))

    # 7. ACLs
    if image.acls.acls:
        ac = reg["AccessControlEntryRecord"]
        acv = cat.record_version("AccessControlEntryRecord", mv)
        for aid, a in image.acls.sorted_acls():
            yield Payload(ac, acv, ac.cls(id=aid, resource_type=a.resource_type, resource_name=a.resource_name,
                                          pattern_type=a.pattern_type, principal=a.principal, host=a.host,
                                          operation=a.operation, permission_type=a.permission_type))

    # 8. SCRAM
    if image.scram.credentials:
        creds = list(image.scram.sorted_credentials())
        if supports("scram"):
            sc = reg["UserScramCredentialRecord"]
            scv = cat.record_version("UserScramCredentialRecord", mv)
            for (mech, user), c in creds:
                yield Payload(sc, scv, sc.cls(name=user, mechanism=mech, salt=c.salt, stored_key=c.stored_key,
                                              server_key=c.server_key, iterations=c.iterations))
        else:
            summary = _scram_loss_text(creds)
            for (mech, user), _ in creds:
                lose("SCRAM credential", f"{mechanism_name(mech)} user {user}", summary, ("scram", mech, user))

    # 9. delegation tokens
    if image.delegation_tokens.tokens:
        tokens = list(image.delegation_tokens.sorted_tokens())
        if supports("delegation_tokens"):
            dt = reg["DelegationTokenRecord"]
            dtv = cat.record_version("DelegationTokenRecord", mv)
            for token_id, t in tokens:
                yield Payload(dt, dtv, dt.cls(owner=t.owner, requester=t.requester, renewers=list(t.renewers),
                                              issue_timestamp=t.issue_timestamp, max_timestamp=t.max_timestamp,
                                              expiration_timestamp=t.expiration_timestamp, token_id=token_id))
        else:
            summary = "DelegationTokenImage(" + ", ".join(tid for tid, _ in tokens) + ")"
            for token_id, _ in tokens:
                lose("delegation token", f"delegation token {token_id}", summary, ("delegation_tokens", token_id))

    # 10. records of types the image does not model
    if image.opaque.records:
        known = set(cat.record_types(cat.latest_testing))
        writable = set(cat.record_types(mv))
        for key, rec in image.opaque.sorted_records():
            name = rec.record_type.name
            if name not in known:  # no gate in the catalog: carried as read
                yield Payload(rec.record_type, rec.version, rec.message)
            elif name in writable:
                yield Payload(rec.record_type, cat.record_version(name, mv), rec.message)
            else:
                lose(f"{name} record", key_text(key, rec), f"records of type {name}", ("opaque", key))


#: A broker registration's fields that only some metadata.versions can write.
_BROKER_OPTIONAL = (
    ("in_controlled_shutdown", "in_controlled_shutdown", "in_controlled_shutdown",
     "broker in-controlled-shutdown state", "the inControlledShutdown state of one or more brokers"),
    ("is_migrating_zk_broker", "is_migrating_zk_broker", "migration",
     "broker isMigratingZkBroker state", "the isMigratingZkBroker state of one or more brokers"),
    ("directories", "log_dirs", "directory_assignment",
     "broker log dirs", "the online log directories of one or more brokers"),
)


def _in_entry_order(resources: list[tuple[int, str]],
                    ranks: Mapping[tuple[int, str], int]) -> list[tuple[int, str]]:
    """Config resources in the order they entered the JVM's map (write_image's config_entry_ranks)."""
    missing = [r for r in resources if r not in ranks]
    if missing:
        raise KraftsimError(f"config_entry_ranks has no rank for config resource {missing[0]} of the image")
    return sorted(resources, key=lambda r: ranks[r])


def _topic_id(t: TopicImage) -> Uuid:
    return t.id


def _in_order(items: tuple[Any, ...], order: Callable[[list[str]], list[str]]) -> list[Any]:
    """A registration's listeners or features (record order) in the order Kafka writes them."""
    by_name = {x.name: x for x in items}
    return [by_name[n] for n in order([x.name for x in items])]


def _registration_lists(reg: Any, endpoint: type, feature: type, listener_order: Callable[[list[str]], list[str]],
                        feature_order: Callable[[list[str]], list[str]]) -> dict[str, list[Any]]:
    """A registration record's `end_points` and `features`, in the order Kafka writes them."""
    return {
        "end_points": [endpoint(name=e.name, host=e.host, port=e.port, security_protocol=e.security_protocol)
                       for e in _in_order(reg.listeners, listener_order)],
        "features": [feature(name=f.name, min_supported_version=f.min_version, max_supported_version=f.max_version)
                     for f in _in_order(reg.supported_features, feature_order)],
    }


def _scram_loss_text(creds: list) -> str:
    """Kafka's ScramImage loss string: `ScramImage({MECH:user, user},{...})`."""
    users: dict[int, list[str]] = {}
    for (mech, user), _ in creds:
        users.setdefault(mech, []).append(user)
    text = "ScramImage({"
    for mech in sorted(users):
        text += f"{mechanism_enum_name(mech)}:" + ", ".join(users[mech]) + "},{"
    return text + "})"


def write_image(image: MetadataImage, metadata_version: MVLike, catalog: Catalog | None = None, *,
                elr_enabled: bool | None = None, loss_handler: LossHandler | None = None,
                writer_line: WriterLine | str | None = None, registry: Registry | None = None,
                config_type_hashes: Mapping[int, int] | None = None,
                config_entry_ranks: Mapping[tuple[int, str], int] | None = None) -> list[Payload]:
    """The records of `image` at `metadata_version`, in Kafka's order, as Payloads.

    `metadata_version`: a level, a version string or a MetadataVersion of `catalog`.
    `elr_enabled`: write ELR fields (when non-empty); None derives it as the writer line
    does (4.x: finalized eligible.leader.replicas.version >= 1; 3.x: the MV's elr gate).
    `loss_handler`: called with a Loss for every dropped item; the default raises
    UnwritableMetadataException with Kafka's text; pass a LossReport to collect instead.
    `writer_line`: "3.x", "4.x", a release name, a WriterLine, or None for the catalog's.
    `config_type_hashes`: {resource type: identity hash of its ConfigResource.Type constant}
    in the JVM whose snapshot to reproduce; they decide Kafka's order of config resources,
    which are otherwise written sorted by (type, name) (see kafka_order.py).
    `config_entry_ranks`: with `config_type_hashes`, {(type, name): when the resource entered
    that JVM's map} (kafka_order.config_entry_ranks of the records the process replayed):
    resources that share a HashMap bucket are then written in that order, as Kafka's map
    keeps them, instead of by name. Every resource of the image needs a rank.
    """
    return list(iter_image_records(image, metadata_version, catalog, elr_enabled=elr_enabled,
                                   loss_handler=loss_handler, writer_line=writer_line, registry=registry,
                                   config_type_hashes=config_type_hashes, config_entry_ranks=config_entry_ranks))
