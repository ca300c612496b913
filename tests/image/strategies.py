"""Hypothesis strategies: record lists that build valid images, and commuting groups."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from kraftsim.image.intern import MIGRATING, UNASSIGNED
from kraftsim.protocol.primitives import Uuid
from tests.image.helpers import REGISTRY, rec

EP = REGISTRY["RegisterBrokerRecord"].nested["BrokerEndpoint"]
BF = REGISTRY["RegisterBrokerRecord"].nested["BrokerFeature"]
CEP = REGISTRY["RegisterControllerRecord"].nested["ControllerEndpoint"]
ED = REGISTRY["ClientQuotaRecord"].nested["EntityData"]

uuids = st.binary(min_size=16, max_size=16).map(Uuid).filter(lambda u: u.msb != 0)
names = st.text(alphabet="abcdefghij-._", min_size=1, max_size=8)


@st.composite
def broker_group(draw: Any, bid: int, *, dirs: bool, shutdown: bool, zk: bool) -> list:
    listeners = draw(st.lists(st.sampled_from(["PLAINTEXT", "SSL", "INTERNAL", "EXTERNAL"]), min_size=1, max_size=3,
                              unique=True))
    log_dirs = draw(st.lists(uuids, min_size=1, max_size=3, unique=True)) if dirs else []
    return [rec("RegisterBrokerRecord", broker_id=bid, broker_epoch=draw(st.integers(0, 10**6)),
                incarnation_id=draw(uuids),
                end_points=[EP(name=n, host=f"h{bid}", port=9092 + i, security_protocol=0)
                            for i, n in enumerate(listeners)],
                features=[BF(name="metadata.version", min_supported_version=7, max_supported_version=29)],
                rack=draw(st.none() | st.sampled_from(["a", "b"])), fenced=draw(st.booleans()),
                in_controlled_shutdown=shutdown and draw(st.booleans()),
                is_migrating_zk_broker=zk and draw(st.booleans()), log_dirs=log_dirs)]


@st.composite
def topic_group(draw: Any, brokers: list[int], *, dirs: bool, elr: bool) -> list:
    tid = draw(uuids)
    name = draw(names)
    out = [rec("TopicRecord", name=name, topic_id=tid)]
    for pid in range(draw(st.integers(1, 4))):
        replicas = draw(st.lists(st.sampled_from(brokers), min_size=1, max_size=3, unique=True))
        isr = draw(st.lists(st.sampled_from(replicas), max_size=len(replicas), unique=True))
        fields: dict[str, Any] = {}
        if dirs:
            fields["directories"] = [draw(st.sampled_from([MIGRATING, UNASSIGNED]) | uuids) for _ in replicas]
        if elr:
            fields["eligible_leader_replicas"] = draw(st.none() | st.lists(st.sampled_from(brokers), max_size=2,
                                                                             unique=True))
            fields["last_known_elr"] = draw(st.none() | st.lists(st.sampled_from(brokers), max_size=1))
        out.append(rec("PartitionRecord", partition_id=pid, topic_id=tid, replicas=replicas, isr=isr,
                       leader=isr[0] if isr else -1, leader_epoch=draw(st.integers(0, 5)),
                       partition_epoch=draw(st.integers(0, 5)), leader_recovery_state=draw(st.sampled_from([0, 1])),
                       **fields))
    return out


@st.composite
def image_groups(draw: Any, *, dirs: bool = True, elr: bool = True, scram: bool = True, tokens: bool = True,
                 controllers: bool = True, shutdown: bool = True, zk: bool = True) -> list[list]:
    """Groups of records; groups commute with each other (distinct entities), records within
    a group do not. The MV record comes first and is not part of any group."""
    groups: list[list] = []
    if elr:
        groups.append([rec("FeatureLevelRecord", name="eligible.leader.replicas.version", feature_level=1)])
    for name in draw(st.lists(st.sampled_from(["group.version", "transaction.version", "share.version"]),
                              unique=True)):
        groups.append([rec("FeatureLevelRecord", name=name, feature_level=draw(st.integers(1, 2)))])
    brokers = draw(st.lists(st.integers(0, 20), min_size=1, max_size=4, unique=True))
    for b in brokers:
        groups.append(draw(broker_group(b, dirs=dirs, shutdown=shutdown, zk=zk)))
    if controllers:
        for c in draw(st.lists(st.integers(3000, 3005), max_size=2, unique=True)):
            groups.append([rec("RegisterControllerRecord", controller_id=c, incarnation_id=draw(uuids),
                               end_points=[CEP(name="CONTROLLER", host="c", port=9093, security_protocol=0)])])
    for _ in range(draw(st.integers(0, 3))):
        groups.append(draw(topic_group(brokers, dirs=dirs, elr=elr)))
    # topics with the same name or id would not commute (by-name map, TopicRecord resets): keep the first
    kept, seen_names, seen_ids = [], set(), set()
    for g in groups:
        if g[0].record_type.name == "TopicRecord":
            m = g[0].message
            if m.name in seen_names or bytes(m.topic_id) in seen_ids:
                continue
            seen_names.add(m.name)
            seen_ids.add(bytes(m.topic_id))
        kept.append(g)
    groups = kept
    for (rtype, rname, key) in draw(st.lists(st.tuples(st.sampled_from([2, 4]), names, names), max_size=4,
                                             unique=True)):
        groups.append([rec("ConfigRecord", resource_type=rtype, resource_name=rname, name=key,
                           value=draw(st.text(max_size=5)))])
    for (user, key) in draw(st.lists(st.tuples(st.none() | names, st.sampled_from(["a_rate", "b_rate"])),
                                     max_size=3, unique=True)):
        groups.append([rec("ClientQuotaRecord", entity=[ED(entity_type="user", entity_name=user)], key=key,
                           value=draw(st.floats(0, 1e9)))])
    if draw(st.booleans()):
        groups.append([rec("ProducerIdsRecord", broker_id=1, broker_epoch=1,
                           next_producer_id=draw(st.integers(0, 10**9)))])
    for acl_id in draw(st.lists(uuids, max_size=2, unique=True)):
        groups.append([rec("AccessControlEntryRecord", id=acl_id, resource_type=2, resource_name=draw(names),
                           pattern_type=3, principal="User:" + draw(names), host="*", operation=draw(st.integers(2, 8)),
                           permission_type=3)])
    if scram:
        for (mech, user) in draw(st.lists(st.tuples(st.sampled_from([1, 2]), names), max_size=3, unique=True)):
            groups.append([rec("UserScramCredentialRecord", name=user, mechanism=mech, salt=draw(st.binary(max_size=8)),
                               stored_key=b"k", server_key=b"s", iterations=4096)])
    if tokens:
        for tok in draw(st.lists(names, max_size=2, unique=True)):
            groups.append([rec("DelegationTokenRecord", token_id=tok, owner="User:o", requester="User:r",
                               renewers=draw(st.lists(names, max_size=2)), issue_timestamp=1, max_timestamp=9,
                               expiration_timestamp=5)])
    return groups


def mv_record(level: int):
    return rec("FeatureLevelRecord", name="metadata.version", feature_level=level)
