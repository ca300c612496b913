"""Configs, client quotas, producer ids, ACLs, SCRAM and delegation tokens: Kafka's checks
and texts, the records written, their gates by metadata.version, and their effect once
replayed into an image."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from kraftsim.controller.acls import (
    AclCreation,
    CreateAclsRequest,
    DeleteAclsFilter,
    DeleteAclsRequest,
    create_acls,
    delete_acls,
)
from kraftsim.controller.client_quotas import (
    AlterClientQuotasRequest,
    EntityData,
    EntryData,
    QuotaOp,
    alter_client_quotas,
)
from kraftsim.controller.configs import (
    OP_APPEND,
    OP_DELETE,
    OP_SET,
    OP_SUBTRACT,
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
    incremental_alter_configs,
)
from kraftsim.controller.delegation_tokens import (
    CreatableRenewer,
    CreateDelegationTokenRequest,
    DelegationTokenSettings,
    ExpireDelegationTokenRequest,
    RenewDelegationTokenRequest,
    create_delegation_token,
    expire_delegation_token,
    renew_delegation_token,
    sweep_expired_delegation_tokens,
    token_hmac,
)
from kraftsim.controller import CreatableTopicConfig
from kraftsim.versions import default_catalog
from kraftsim.javacompat import string_hash_order
from kraftsim.controller.producer_ids import AllocateProducerIdsRequest, allocate_producer_ids
from kraftsim.controller.scram import (
    AlterUserScramCredentialsRequest,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
    alter_user_scram_credentials,
)
from tests.controller.cluster_support import RuleCluster, to_json, types

TOPIC, BROKER = 2, 4


@pytest.fixture
def cluster() -> RuleCluster:
    c = RuleCluster("4.1-IV1", elr=False)
    c.start_brokers([1, 2])
    c.create("t", 1, 2)
    return c


# --------------------------------------------------------------------------- configs


def alter(c: RuleCluster, *resources: tuple[int, str, tuple], validate_only: bool = False):
    req = IncrementalAlterConfigsRequest(
        tuple(AlterConfigsResource(t, n, tuple(AlterableConfig(*op) for op in ops)) for t, n, ops in resources),
        validate_only)
    return c.run(incremental_alter_configs, req)


def outcome(r, i: int = 0) -> tuple[int, str | None]:
    x = r.response.responses[i]
    return x.error_code, x.error_message


def test_set_and_delete_write_config_records_only_for_changes(cluster):
    r = alter(cluster, (TOPIC, "t", (("retention.ms", OP_SET, "100"), ("segment.ms", OP_SET, "7"))))
    assert outcome(r) == (0, None) and r.atomic and types(r) == [("ConfigRecord", 0)] * 2
    assert cluster.image.configs.config(TOPIC, "t") == {"retention.ms": "100", "segment.ms": "7"}
    r = alter(cluster, (TOPIC, "t", (("retention.ms", OP_SET, "100"), ("segment.ms", OP_DELETE, None),
                                     ("absent", OP_DELETE, None))))
    assert [to_json(p)["data"] for p in r.records] == [
        {"resourceType": 2, "resourceName": "t", "name": "segment.ms", "value": None}]
    assert cluster.image.configs.config(TOPIC, "t") == {"retention.ms": "100"}


def test_the_records_of_one_change_go_in_the_order_of_kafkas_hash_map_of_names(cluster):
    """ControllerApis puts a resource's changes into a java.util.HashMap by name: the records
    follow its order, whatever the request's, and a name given twice keeps its first place
    and its last change."""
    given = ("log.flush.interval.ms", "log.retention.ms", "log.cleaner.threads")
    assert string_hash_order(list(given)) == ["log.retention.ms", "log.flush.interval.ms", "log.cleaner.threads"]
    r = alter(cluster, (BROKER, "", tuple((k, OP_SET, str(i)) for i, k in enumerate(given))
                        + (("log.flush.interval.ms", OP_SET, "9"),)))
    assert [(d["name"], d["value"]) for d in (to_json(p)["data"] for p in r.records)] == [
        ("log.retention.ms", "1"), ("log.flush.interval.ms", "9"), ("log.cleaner.threads", "2")]


def test_a_new_topics_config_records_go_in_the_order_of_kafkas_hash_map_of_names(cluster):
    """CreateTopics' configs go through the same HashMap by name on the controller."""
    made = cluster.create("u", 1, 1, configs=(CreatableTopicConfig("retention.bytes", "7"),
                                             CreatableTopicConfig("retention.ms", "100")))
    written = [to_json(p)["data"]["name"] for p in made.records if p.record_type.name == "ConfigRecord"]
    assert written == string_hash_order(["retention.bytes", "retention.ms"]) == ["retention.ms", "retention.bytes"]


def test_broker_resources_always_get_a_record(cluster):
    alter(cluster, (BROKER, "1", (("log.cleaner.threads", OP_SET, "2"),)))
    r = alter(cluster, (BROKER, "1", (("log.cleaner.threads", OP_SET, "2"),)))
    assert types(r) == [("ConfigRecord", 0)]  # KAFKA-14136: brokers reload on every record


@pytest.mark.parametrize("rtype, name, code, text", [
    (TOPIC, "nope", 3, "The topic 'nope' does not exist."),
    (TOPIC, "", 42, "Default topic resources are not allowed."),
    (TOPIC, "a b", 17, "Topic name is invalid: 'a b' contains one or more characters other than ASCII "
                       "alphanumerics, '.', '_' and '-'"),
    (BROKER, "x", 42, "Unable to parse broker name as a base 10 number."),
    (BROKER, "-1", 42, "Invalid negative broker ID."),
    (BROKER, "9", 102, "No node with id 9 found."),
    (8, "1", 42, "Unknown resource type BROKER_LOGGER"),
])
def test_resource_checks(cluster, rtype, name, code, text):
    r = alter(cluster, (rtype, name, (("retention.ms", OP_SET, "1000"),)))
    assert outcome(r) == (code, text) and r.records == ()


def test_a_topics_configs_are_checked_before_its_existence(cluster):
    """Kafka's validator (the topic's name, then LogConfig.validate) runs before the existence check."""
    r = alter(cluster, (TOPIC, "nope", (("k", OP_SET, "v"),)))
    assert outcome(r) == (40, "Unknown topic config name: k") and r.records == ()
    r = alter(cluster, (TOPIC, "nope", (("retention.ms", OP_SET, "soon"),)))
    assert outcome(r) == (40, "Invalid value soon for configuration retention.ms: Not a number of type LONG")


def test_one_bad_resource_does_not_stop_the_others(cluster):
    r = alter(cluster, (TOPIC, "nope", (("retention.ms", OP_SET, "1"),)), (BROKER, "", (("k", OP_SET, "v"),)))
    assert [x.error_code for x in r.response.responses] == [3, 0] and types(r) == [("ConfigRecord", 0)]


def test_append_and_subtract_on_list_configs(cluster):
    r = alter(cluster, (TOPIC, "t", (("cleanup.policy", OP_APPEND, "compact"),)))
    assert cluster.image.configs.config(TOPIC, "t")["cleanup.policy"] == "delete,compact"  # from the default
    alter(cluster, (TOPIC, "t", (("cleanup.policy", OP_SUBTRACT, "delete"),)))
    assert cluster.image.configs.config(TOPIC, "t")["cleanup.policy"] == "compact"
    r = alter(cluster, (TOPIC, "t", (("retention.ms", OP_APPEND, "1"),)))
    assert outcome(r) == (40, "Can't APPEND to key retention.ms because its type is not LIST.")


def test_validate_only_writes_nothing(cluster):
    r = alter(cluster, (TOPIC, "t", (("retention.ms", OP_SET, "1"),)), validate_only=True)
    assert outcome(r) == (0, None) and r.records == ()


def test_elr_guards_min_insync_replicas_and_clears_elrs():
    c = RuleCluster("4.1-IV1", elr=True, min_insync_replicas=1)
    c.start_brokers([1])
    c.create("t", 1, 1)
    assert outcome(alter(c, (BROKER, "1", (("min.insync.replicas", OP_SET, "2"),)))) == (
        40, "Broker-level min.insync.replicas cannot be altered while ELR is enabled.")
    assert outcome(alter(c, (BROKER, "", (("min.insync.replicas", OP_DELETE, None),)))) == (
        40, "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.")
    r = alter(c, (BROKER, "", (("min.insync.replicas", OP_SET, "2"),)), (TOPIC, "t", (("min.insync.replicas",
                                                                                        OP_SET, "1"),)))
    assert types(r) == [("ConfigRecord", 0), ("ConfigRecord", 0), ("ClearElrRecord", 0), ("ClearElrRecord", 0)]
    assert [to_json(p)["data"]["topicName"] for p in r.records[2:]] == ["", "t"]
    no_elr = RuleCluster("4.1-IV1", elr=False)
    no_elr.start_brokers([1])
    assert types(alter(no_elr, (BROKER, "1", (("min.insync.replicas", OP_SET, "2"),)))) == [("ConfigRecord", 0)]


# --------------------------------------------------------------------------- client quotas


def quotas(c: RuleCluster, *entries, validate_only: bool = False):
    req = AlterClientQuotasRequest(tuple(EntryData(tuple(EntityData(t, n) for t, n in ent), tuple(ops))
                                         for ent, ops in entries), validate_only)
    return c.run(alter_client_quotas, req)


def quota_results(r) -> list[tuple[int, str | None]]:
    return [(e.error_code, e.error_message) for e in r.response.entries]


def test_quotas_are_written_once_and_removed(cluster):
    ent = (("user", "alice"), ("client-id", "app"))
    r = quotas(cluster, (ent, [QuotaOp("producer_byte_rate", 1024.0), QuotaOp("request_percentage", 12.5)]))
    assert quota_results(r) == [(0, None)] and types(r) == [("ClientQuotaRecord", 0)] * 2 and r.atomic
    # Kafka lists the entity from a Java HashMap: client-id before user
    assert to_json(r.records[0])["data"]["entity"] == [{"entityType": "client-id", "entityName": "app"},
                                                       {"entityType": "user", "entityName": "alice"}]
    key = (("client-id", "app"), ("user", "alice"))
    assert cluster.image.client_quotas.quotas(key) == {"producer_byte_rate": 1024.0, "request_percentage": 12.5}
    r = quotas(cluster, (ent, [QuotaOp("producer_byte_rate", 1024.0), QuotaOp("consumer_byte_rate", remove=True),
                               QuotaOp("request_percentage", remove=True)]))
    assert [to_json(p)["data"]["key"] for p in r.records] == ["request_percentage"] and r.records[0].message.remove
    assert cluster.image.client_quotas.quotas(key) == {"producer_byte_rate": 1024.0}


def test_default_entities_use_null_names(cluster):
    r = quotas(cluster, ((("user", None),), [QuotaOp("consumer_byte_rate", 5.0)]))
    assert to_json(r.records[0])["data"]["entity"] == [{"entityType": "user", "entityName": None}]


@pytest.mark.parametrize("entity, ops, text", [
    ((), [QuotaOp("producer_byte_rate", 1.0)], "Invalid empty client quota entity"),
    ((("group", "g"),), [QuotaOp("producer_byte_rate", 1.0)], "Unhandled client quota entity type: group"),
    ((("user", ""),), [QuotaOp("producer_byte_rate", 1.0)], "Empty user not supported"),
    ((("user", "a"), ("ip", "1.2.3.4")), [QuotaOp("connection_creation_rate", 1.0)],
     "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"),
    ((("ip", "not-an-ip"),), [QuotaOp("connection_creation_rate", 1.0)], "not-an-ip is not a valid IP or resolvable host."),
    ((("user", "a"),), [QuotaOp("bogus", 1.0)], "Invalid configuration key bogus"),
    ((("user", "a"),), [QuotaOp("producer_byte_rate", 0.0)], "Quota producer_byte_rate must be greater than 0"),
    ((("user", "a"),), [QuotaOp("producer_byte_rate", 1.5)], "producer_byte_rate cannot be a fractional value."),
    ((("ip", "::1"),), [QuotaOp("connection_creation_rate", 3e9)],
     "Proposed value for connection_creation_rate is too large for an INT."),
    ((("user", "a"),), [QuotaOp("producer_byte_rate", 1.0), QuotaOp("producer_byte_rate", 2.0)],
     "Ignoring duplicate entity ClientQuotaEntity(entries={user=a})"),
])
def test_quota_checks(cluster, entity, ops, text):
    r = quotas(cluster, (entity, ops))
    assert quota_results(r) == [(42, text)] and r.records == ()


@pytest.mark.parametrize("release, key, value, text", [
    # 3.3 and 3.4 (read from the jars, and live 3.3.2/3.4.1 through serve-tools): only whole numbers are
    # asked of LONG, INT and SHORT quotas, within 1e-6, with no lower or upper bound
    ("3.4", "producer_byte_rate", 1.5, "Configuration producer_byte_rate must be a Long value"),
    ("3.3", "connection_creation_rate", 2.25, "Configuration connection_creation_rate must be a Long value"),
    ("3.4", "producer_byte_rate", 1.0000001, None),
    ("3.4", "producer_byte_rate", 0.0, None),
    ("3.4", "connection_creation_rate", 3e9, None),
    ("3.4", "request_percentage", 0.5, None),
    ("3.5", "producer_byte_rate", 1.5, "producer_byte_rate cannot be a fractional value."),
    ("3.5", "producer_byte_rate", 0.0, "Quota producer_byte_rate must be greater than 0"),
])
def test_quota_values_as_each_release_checks_them(release, key, value, text):
    catalog = default_catalog().at_release(release)
    c = RuleCluster(catalog.latest_production.version, catalog=catalog)
    c.start_brokers([1])
    entity = (("ip", "10.0.0.1"),) if key == "connection_creation_rate" else (("user", "a"),)
    r = quotas(c, (entity, [QuotaOp(key, value)]))
    assert quota_results(r) == [(42, text) if text else (0, None)]
    assert len(r.records) == (0 if text else 1)


def test_ip_quotas_and_validate_only(cluster):
    r = quotas(cluster, ((("ip", "10.0.0.1"),), [QuotaOp("connection_creation_rate", 10.0)]), validate_only=True)
    assert quota_results(r) == [(0, None)] and r.records == ()


# --------------------------------------------------------------------------- producer ids


def test_producer_id_blocks_of_1000(cluster):
    epoch = cluster.image.cluster.broker(2).epoch
    r = cluster.run(allocate_producer_ids, AllocateProducerIdsRequest(2, epoch))
    assert (r.response.producer_id_start, r.response.producer_id_len) == (0, 1000)
    assert to_json(r.records[0])["data"] == {"brokerId": 2, "brokerEpoch": epoch, "nextProducerId": 1000}
    r = cluster.run(allocate_producer_ids, AllocateProducerIdsRequest(2, epoch))
    assert r.response.producer_id_start == 1000 and cluster.image.producer_ids.next_producer_id == 2000
    r = allocate_producer_ids(cluster.ctx(), AllocateProducerIdsRequest(2, epoch + 100))
    assert r.error.name == "STALE_BROKER_EPOCH" and r.records == ()


# --------------------------------------------------------------------------- ACLs

READ, WRITE, ALLOW, DENY, LITERAL, PREFIXED, TOPIC_RES = 3, 4, 3, 2, 3, 4, 2


def acl(name="t", op=READ, principal="User:alice", pattern=LITERAL, rtype=TOPIC_RES, perm=ALLOW, host="*"):
    return AclCreation(rtype, name, pattern, principal, host, op, perm)


def test_acls_get_reproducible_ids_and_are_created_once(cluster):
    req = CreateAclsRequest((acl(), acl(op=WRITE), acl()), seed=7)
    again = create_acls(cluster.ctx(), req)
    r = cluster.run(create_acls, req)
    assert types(r) == [("AccessControlEntryRecord", 0)] * 2 and r.atomic
    assert [p.message.id for p in r.records] == [p.message.id for p in again.records]
    assert [x.error_code for x in r.response.results] == [0, 0, 0]
    assert len(cluster.image.acls.acls) == 2
    r = cluster.run(create_acls, CreateAclsRequest((acl(),), seed=7))
    assert r.records == () and r.response.results[0].error_code == 0  # already there


@pytest.mark.parametrize("creation, text", [
    (acl(rtype=1), "Invalid resourceType ANY"),
    (acl(rtype=0), "Invalid resourceType UNKNOWN"),
    (acl(pattern=2), "Invalid patternType MATCH"),
    (acl(op=1), "Invalid operation ANY"),
    (acl(perm=1), "Invalid permissionType ANY"),
    (acl(name=""), "Resource name should not be empty"),
])
def test_acl_checks(cluster, creation, text):
    r = create_acls(cluster.ctx(), CreateAclsRequest((creation,)))
    assert (r.response.results[0].error_code, r.response.results[0].error_message) == (42, text) and r.records == ()


def test_delete_acls_by_filter(cluster):
    cluster.run(create_acls, CreateAclsRequest((acl("orders"), acl("ord", pattern=PREFIXED), acl("*"),
                                                acl("orders", principal="User:bob", perm=DENY))))
    r = cluster.run(delete_acls, DeleteAclsRequest((
        DeleteAclsFilter(TOPIC_RES, "orders", 2, "User:alice"),  # MATCH: literal, wildcard and prefix
        DeleteAclsFilter(permission_type=DENY),
        DeleteAclsFilter(operation=0),
    )))
    first, second, third = r.response.filter_results
    assert sorted(a.resource_name for a in first.matching_acls) == ["*", "ord", "orders"]
    assert [a.principal for a in second.matching_acls] == ["User:bob"]
    assert (third.error_code, third.error_message) == (42, "Unknown entryFilter.")
    assert types(r) == [("RemoveAccessControlEntryRecord", 0)] * 4 and len(cluster.image.acls.acls) == 0


# --------------------------------------------------------------------------- SCRAM

RFC7677_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")


def upsert(name="user", mechanism=1, iterations=4096, password=b"pencil"):
    salted = hashlib.pbkdf2_hmac("sha256" if mechanism == 1 else "sha512", password, RFC7677_SALT, iterations)
    return ScramCredentialUpsertion(name, mechanism, iterations, RFC7677_SALT, salted)


def test_scram_keys_follow_rfc_7677(cluster):
    """The derived keys verify RFC 7677's SCRAM-SHA-256 example exchange."""
    r = cluster.run(alter_user_scram_credentials, AlterUserScramCredentialsRequest(upsertions=(upsert(),)))
    assert types(r) == [("UserScramCredentialRecord", 0)] and r.response.results[0].error_code == 0
    cred = cluster.image.scram.credential(1, "user")
    auth = (b"n=user,r=rOprNGfwEbeRWgbNEkqO,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
            b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    assert hmac.new(cred.server_key, auth, "sha256").digest() == base64.b64decode(
        "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
    proof = base64.b64decode("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    client_key = bytes(a ^ b for a, b in zip(proof, hmac.new(cred.stored_key, auth, "sha256").digest()))
    assert hashlib.sha256(client_key).digest() == cred.stored_key and cred.iterations == 4096


@pytest.mark.parametrize("release, text", [("3.7.2", "The current metadata version does not support SCRAM"),
                                           ("3.8.1", "The current metadata.version does not support SCRAM"),
                                           ("4.4.0", "The current metadata.version does not support SCRAM")])
def test_scram_needs_3_5_iv2(release, text):
    """Refused below 3.5-IV2, in the words of the controller's release (read from its jar)."""
    old = RuleCluster("3.5-IV1", catalog=default_catalog().at_release(release))
    r = old.run(alter_user_scram_credentials, AlterUserScramCredentialsRequest(upsertions=(upsert(),)))
    assert r.records == () and [(x.error_code, x.error_message) for x in r.response.results] == [(35, text)]
    assert RuleCluster("3.5-IV2").run(alter_user_scram_credentials,
                                     AlterUserScramCredentialsRequest(upsertions=(upsert(),))).records


def test_scram_checks_and_deletion(cluster):
    cluster.run(alter_user_scram_credentials, AlterUserScramCredentialsRequest(upsertions=(upsert("bob", 2),)))
    req = AlterUserScramCredentialsRequest(
        deletions=(ScramCredentialDeletion("bob", 2), ScramCredentialDeletion("ghost", 1),
                   ScramCredentialDeletion("", 1), ScramCredentialDeletion("x", 9)),
        upsertions=(upsert("few", iterations=4095), upsert("many", iterations=16385), upsert("ghost")))
    r = cluster.run(alter_user_scram_credentials, req)
    assert [(x.user, x.error_code, x.error_message) for x in r.response.results] == [
        ("bob", 0, None),
        ("ghost", 91, "Attempt to delete a user credential that does not exist"),
        ("", 93, "Username must not be empty"),
        ("x", 33, "Unknown SCRAM mechanism"),
        ("few", 93, "Too few iterations"),
        ("many", 93, "Too many iterations"),
    ]
    assert types(r) == [("RemoveUserScramCredentialRecord", 0)] and cluster.image.scram.credential(2, "bob") is None
    twice = AlterUserScramCredentialsRequest(deletions=(), upsertions=(upsert("a"), upsert("a", 2)))
    r = alter_user_scram_credentials(cluster.ctx(), twice)
    assert [(x.error_code, x.error_message) for x in r.response.results] == [
        (92, "A user credential cannot be altered twice in the same request")]


# --------------------------------------------------------------------------- delegation tokens

SETTINGS = DelegationTokenSettings(secret_key="s3cr3t", max_lifetime_ms=100_000, expiry_time_ms=10_000)


def test_delegation_tokens_need_3_6_iv2_and_a_secret():
    req = CreateDelegationTokenRequest("User:alice")
    old = RuleCluster("3.6-IV1")
    assert create_delegation_token(old.ctx(), req, SETTINGS).response.error_code == 35
    new = RuleCluster("3.6-IV2")
    assert create_delegation_token(new.ctx(), req, DelegationTokenSettings()).response.error_code == 61
    r = new.run(create_delegation_token, req, SETTINGS)
    assert r.response.error_code == 0 and types(r) == [("DelegationTokenRecord", 0)]


def test_token_lifecycle(cluster):
    cluster.now_ms = 1_000
    req = CreateDelegationTokenRequest("User:alice", renewers=(CreatableRenewer("User", "bob"),), seed=3)
    r = cluster.run(create_delegation_token, req, SETTINGS)
    res = r.response
    assert (res.issue_timestamp_ms, res.expiry_timestamp_ms, res.max_timestamp_ms) == (1_000, 11_000, 101_000)
    assert res.hmac == hmac.new(b"s3cr3t", res.token_id.encode(), hashlib.sha512).digest() == token_hmac(
        "s3cr3t", res.token_id)
    assert to_json(r.records[0])["data"] == {"owner": "User:alice", "requester": "User:alice", "renewers": ["User:bob"],
                                             "issueTimestamp": 1_000, "maxTimestamp": 101_000,
                                             "expirationTimestamp": 11_000, "tokenId": res.token_id}
    bad = CreateDelegationTokenRequest("User:alice", renewers=(CreatableRenewer("Group", "g"),))
    assert create_delegation_token(cluster.ctx(), bad, SETTINGS).response.error_code == 67

    cluster.now_ms = 5_000
    r = cluster.run(renew_delegation_token, RenewDelegationTokenRequest("User:bob", res.hmac, 3_000), SETTINGS)
    assert (r.response.error_code, r.response.expiry_timestamp_ms) == (0, 8_000)
    stranger = expire_delegation_token(cluster.ctx(), ExpireDelegationTokenRequest("User:eve", res.hmac, 1), SETTINGS)
    assert stranger.response.error_code == 63 and stranger.records == ()
    unknown = expire_delegation_token(cluster.ctx(), ExpireDelegationTokenRequest("User:bob", b"x", 1), SETTINGS)
    assert unknown.response.error_code == 62
    r = cluster.run(expire_delegation_token, ExpireDelegationTokenRequest("User:alice", res.hmac, -1), SETTINGS)
    assert types(r) == [("RemoveDelegationTokenRecord", 0)] and not cluster.image.delegation_tokens.tokens


@pytest.mark.parametrize("release, removes_expired", [("3.7.2", False), ("3.8.0", False), ("3.8.1", True),
                                                     ("3.9.0", True), ("4.2.0", True)])
def test_expiring_a_token_now_follows_the_release(release, removes_expired):
    """KAFKA-17315 (3.8.1): before it, a token that had expired could not be removed (EXPIRED, even
    for a stranger) and expiring now answered the negative period as the expiry timestamp; from
    it, the owner is checked first, expiring now always removes and answers the controller's time."""
    cluster = RuleCluster("3.6-IV2", catalog=default_catalog().at_release(release))
    cluster.now_ms = 0
    made = [cluster.run(create_delegation_token, CreateDelegationTokenRequest("User:alice", seed=s), SETTINGS).response
            for s in (1, 2)]
    cluster.now_ms = 5_000
    fresh = cluster.run(expire_delegation_token, ExpireDelegationTokenRequest("User:alice", made[0].hmac, -1), SETTINGS)
    assert (fresh.response.error_code, fresh.response.expiry_timestamp_ms) == (0, 5_000 if removes_expired else -1)
    assert types(fresh) == [("RemoveDelegationTokenRecord", 0)]
    cluster.now_ms = 10_001  # (the second token expired at 10,000)
    stranger = expire_delegation_token(cluster.ctx(), ExpireDelegationTokenRequest("User:eve", made[1].hmac, -1),
                                       SETTINGS)
    assert (stranger.response.error_code, stranger.records) == (63 if removes_expired else 66, ())
    moved = expire_delegation_token(cluster.ctx(), ExpireDelegationTokenRequest("User:alice", made[1].hmac, 5),
                                    SETTINGS)
    assert (moved.response.error_code, moved.records) == (66, ())
    late = expire_delegation_token(cluster.ctx(), ExpireDelegationTokenRequest("User:alice", made[1].hmac, -1),
                                   SETTINGS)
    assert late.response.error_code == (0 if removes_expired else 66)
    assert types(late) == ([("RemoveDelegationTokenRecord", 0)] if removes_expired else [])
    if removes_expired:
        assert late.response.expiry_timestamp_ms == 10_001


def test_expired_tokens_are_refused_and_swept(cluster):
    cluster.now_ms = 0
    r = cluster.run(create_delegation_token, CreateDelegationTokenRequest("User:alice"), SETTINGS)
    cluster.now_ms = 10_001
    late = expire_delegation_token(cluster.ctx(), ExpireDelegationTokenRequest("User:alice", r.response.hmac, 5),
                                   SETTINGS)
    assert late.response.error_code == 66
    swept = cluster.run(sweep_expired_delegation_tokens)
    assert [to_json(p)["data"] for p in swept.records] == [{"tokenId": r.response.token_id}]
