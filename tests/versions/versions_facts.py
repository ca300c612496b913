"""Fact tables transcribed from ../shared/kafka-facts.md (and the issue's 4.2 release facts).

Tests compare the catalog against these tables, never against the catalog's own data,
so a wrong row in the shipped TOML makes a test fail.
"""

# §1.1: (level, version string, didMetadataChange), levels 1-6 from C0.
MV_TABLE = [
    (1, "3.0-IV1", True),
    (2, "3.1-IV0", False),
    (3, "3.2-IV0", True),
    (4, "3.3-IV0", False),
    (5, "3.3-IV1", True),
    (6, "3.3-IV2", True),
    (7, "3.3-IV3", True),
    (8, "3.4-IV0", True),
    (9, "3.5-IV0", False),
    (10, "3.5-IV1", False),
    (11, "3.5-IV2", True),
    (12, "3.6-IV0", False),
    (13, "3.6-IV1", True),
    (14, "3.6-IV2", True),
    (15, "3.7-IV0", True),
    (16, "3.7-IV1", False),
    (17, "3.7-IV2", True),
    (18, "3.7-IV3", False),
    (19, "3.7-IV4", False),
    (20, "3.8-IV0", False),
    (21, "3.9-IV0", False),
    (22, "4.0-IV0", False),
    (23, "4.0-IV1", True),
    (24, "4.0-IV2", False),
    (25, "4.0-IV3", False),
    (26, "4.1-IV0", False),
    (27, "4.1-IV1", False),
    (28, "4.2-IV0", False),
    (29, "4.2-IV1", False),
    # §11.1: the 4.3 and 4.4 lines (flags as the newest code has them).
    (30, "4.3-IV0", True),
    (31, "4.4-IV0", False),
    (32, "4.4-IV1", True),
    (33, "4.4-IV2", True),
    # Released 4.4.0's jar: the 4.5 line's placeholder.
    (34, "4.5-IV0", False),
]
CHANGED = {level: changed for level, _, changed in MV_TABLE}
VERSION = {level: version for level, version, _ in MV_TABLE}

# The issue: LATEST_PRODUCTION level of each release line; §11.1 for 4.3 and 4.4 (4.4.0's
# read from its released jar: 4.4-IV2).
LATEST_PRODUCTION = {"3.3": 7, "3.4": 8, "3.5": 11, "3.6": 14, "3.7": 19, "3.8": 20, "3.9": 21, "4.0": 25, "4.1": 27, "4.2": 29,
                     "4.3": 30, "4.4": 33}
# The highest level each line's code lists: the next line's first level(s) as placeholders
# from 3.7 on (read from the released jars' MetadataVersion enums: 3.7.2, 3.8.1, 3.9.1, 4.0.2,
# 4.1.2, 4.2.0, 4.3.1, 4.4.0), and the didMetadataChange flags each gave its placeholders.
LATEST_TESTING = {**LATEST_PRODUCTION, "3.7": 20, "3.8": 21, "3.9": 23, "4.0": 26, "4.1": 29, "4.2": 30, "4.3": 31,
                  "4.4": 34}
PLACEHOLDER_FLAGS = {"3.7": {20: True}, "3.8": {21: True}, "3.9": {22: True, 23: False}, "4.0": {26: False},
                     "4.1": {28: False, 29: False}, "4.2": {30: False}, "4.3": {30: True, 31: False},
                     "4.4": {30: True, 34: False}}

# Every release as Kafka names it, oldest first (patch releases published per line).
RELEASES = [
    "3.3.0", "3.3.1", "3.3.2", "3.4.0", "3.4.1", "3.5.0", "3.5.1", "3.5.2", "3.6.0", "3.6.1", "3.6.2",
    "3.7.0", "3.7.1", "3.7.2", "3.8.0", "3.8.1", "3.9.0", "3.9.1", "3.9.2", "4.0.0", "4.0.1", "4.0.2", "4.1.0", "4.1.1",
    "4.1.2", "4.2.0", "4.2.1", "4.2.2", "4.3.0", "4.3.1", "4.4.0",
]

# §1.4 derived safe-downgrade floor.
FLOOR = {7: 7, 8: 8, 9: 8, 10: 8, 11: 11, 12: 11, 13: 13, 14: 14, 15: 15, 16: 15, 17: 17}
FLOOR.update({lvl: 17 for lvl in range(18, 23)})
FLOOR[23] = 23
FLOOR.update({lvl: 23 for lvl in range(24, 30)})
FLOOR.update({30: 30, 31: 30, 32: 32, 33: 33})  # §11.1 (derived)

# §1.3 capability gates (C1): name -> first level.
CAPABILITIES = {
    "migration": 8,
    "scram": 11,
    "metadata_transactions": 13,
    "delegation_tokens": 14,
    "controller_registration": 15,
    "directory_assignment": 17,
    "elr": 23,
    "cordoned_log_dirs": 30,  # §11.1
    "cidr_acl_hosts": 32,
    "controller_unregistration": 33,
}


def register_broker_record_version(level: int) -> int:
    return 4 if level >= 30 else 3 if level >= 17 else 2 if level >= 8 else 1


def partition_record_version(level: int) -> int:
    return 2 if level >= 23 else 1 if level >= 17 else 0


def fetch_request_version(level: int) -> int:
    for since, v in ((27, 18), (21, 17), (19, 16), (10, 15), (9, 14)):
        if level >= since:
            return v
    return 13


def list_offsets_request_version(level: int) -> int:
    for since, v in ((29, 11), (25, 10), (21, 9), (9, 8)):
        if level >= since:
            return v
    return 7


# §3.1: record types gated by an MV (name -> first level). All others have no gate.
RECORD_TYPE_GATES = {
    "DelegationTokenRecord": 14,
    "UserScramCredentialRecord": 11,
    "NoOpRecord": 5,
    "ZkMigrationStateRecord": 8,
    "RemoveUserScramCredentialRecord": 11,
    "BeginTransactionRecord": 13,
    "EndTransactionRecord": 13,
    "AbortTransactionRecord": 13,
    "RemoveDelegationTokenRecord": 14,
    "RegisterControllerRecord": 15,
    "ClearElrRecord": 23,
    "BrokerRegistrationChangeRecord": 6,
    "UnregisterControllerRecord": 33,  # §11.3
}
ALL_RECORD_TYPES = [
    "RegisterBrokerRecord", "UnregisterBrokerRecord", "TopicRecord", "PartitionRecord", "ConfigRecord",
    "PartitionChangeRecord", "FenceBrokerRecord", "UnfenceBrokerRecord", "RemoveTopicRecord",
    "DelegationTokenRecord", "UserScramCredentialRecord", "FeatureLevelRecord", "ClientQuotaRecord",
    "ProducerIdsRecord", "BrokerRegistrationChangeRecord", "AccessControlEntryRecord",
    "RemoveAccessControlEntryRecord", "NoOpRecord", "ZkMigrationStateRecord",
    "RemoveUserScramCredentialRecord", "BeginTransactionRecord", "EndTransactionRecord",
    "AbortTransactionRecord", "RemoveDelegationTokenRecord", "RegisterControllerRecord", "ClearElrRecord",
    "UnregisterControllerRecord",
]

# §2.2 features, as the 4.4 release has them (§11.2: share.version 2): levels {level:
# (bootstrap version, deps)}, LP, LT, min.
FEATURES = {
    "kraft.version": ({0: ("3.3-IV3", {}), 1: ("3.9-IV0", {})}, 1, 1, 0),
    "transaction.version": ({0: ("3.3-IV3", {}), 1: ("4.0-IV2", {}), 2: ("4.0-IV2", {})}, 2, 2, 0),
    "group.version": ({0: ("3.3-IV3", {}), 1: ("4.0-IV0", {})}, 1, 1, 0),
    "eligible.leader.replicas.version": ({0: ("3.3-IV3", {}), 1: ("4.1-IV0", {"metadata.version": 23})}, 1, 1, 0),
    "share.version": ({0: ("3.3-IV3", {}), 1: ("4.2-IV0", {}), 2: ("4.4-IV0", {})}, 2, 2, 0),
    "streams.version": ({0: ("3.3-IV3", {}), 1: ("4.2-IV1", {})}, 1, 1, 0),
    # TEST_2 follows latestTesting: 4.4.0's placeholder 4.5-IV0 (34), so it is not production.
    "test.feature.version": ({0: ("3.3-IV3", {}), 1: ("3.7-IV0", {}), 2: ("4.5-IV0", {"metadata.version": 34})}, 1, 2, 0),
}
PRODUCTION_FEATURES = [
    "kraft.version",
    "transaction.version",
    "group.version",
    "eligible.leader.replicas.version",
    "share.version",
    "streams.version",
]

# §2.3 default levels at the 4.4 release: (first level, last level) -> (kraft, transaction, group,
# ELR, share, streams, test). TEST_2 follows the line's latest testing level (34 on 4.4, 29 in §2.3).
DEFAULTS = [
    ((7, 14), (0, 0, 0, 0, 0, 0, 0)),
    ((15, 20), (0, 0, 0, 0, 0, 0, 1)),
    ((21, 21), (1, 0, 0, 0, 0, 0, 1)),
    ((22, 23), (1, 0, 1, 0, 0, 0, 1)),
    ((24, 25), (1, 2, 1, 0, 0, 0, 1)),
    ((26, 27), (1, 2, 1, 1, 0, 0, 1)),
    ((28, 28), (1, 2, 1, 1, 1, 0, 1)),
    ((29, 30), (1, 2, 1, 1, 1, 1, 1)),
    ((31, 33), (1, 2, 1, 1, 2, 1, 1)),
    ((34, 34), (1, 2, 1, 1, 2, 1, 2)),
]
DEFAULT_FEATURE_ORDER = [*PRODUCTION_FEATURES, "test.feature.version"]


def default_row(level: int) -> dict[str, int]:
    for (lo, hi), row in DEFAULTS:
        if lo <= level <= hi:
            return dict(zip(DEFAULT_FEATURE_ORDER, row))
    raise KeyError(level)


# Observed in ../shared/oracle: the Features of RegisterBrokerRecord / RegisterControllerRecord
# written by each release (decoded by hand from the logs; 3.3 has no oracle set).
ORACLE_ADVERTISED = {
    "3.4": {"metadata.version": (1, 8)},
    "3.5": {"metadata.version": (1, 11)},
    "3.6": {"metadata.version": (1, 14)},
    "3.7": {"metadata.version": (1, 19)},
    "3.8": {"metadata.version": (1, 20)},
    "3.9": {"metadata.version": (1, 21), "kraft.version": (0, 1)},
    "4.0": {
        "metadata.version": (7, 25),
        "kraft.version": (0, 1),
        "transaction.version": (0, 2),
        "group.version": (0, 1),
        "eligible.leader.replicas.version": (0, 1),
    },
    "4.1": {
        "metadata.version": (7, 27),
        "kraft.version": (0, 1),
        "transaction.version": (0, 2),
        "group.version": (0, 1),
        "eligible.leader.replicas.version": (0, 1),
        "share.version": (0, 1),
    },
    "4.2": {
        "metadata.version": (7, 29),
        "kraft.version": (0, 1),
        "transaction.version": (0, 2),
        "group.version": (0, 1),
        "eligible.leader.replicas.version": (0, 1),
        "share.version": (0, 1),
        "streams.version": (0, 1),
    },
}

# §9: which line of behaviour each release follows.
POLICIES = {  # (3.3-3.6's refusal text: live 3.6.2, serve-tools, where §9 gives C0)
    **{r: {"mv_downgrade_error": "B0", "snapshot_zk_migration_state": "write", "elr_fields_gate": "metadata.version"}
       for r in ("3.3", "3.4", "3.5", "3.6")},
    **{r: {"mv_downgrade_error": "C0", "snapshot_zk_migration_state": "write", "elr_fields_gate": "metadata.version"}
       for r in ("3.7", "3.8", "3.9")},
    "4.0": {"mv_downgrade_error": "C0", "snapshot_zk_migration_state": "omit", "elr_fields_gate": "feature"},
    "4.1": {"mv_downgrade_error": "C0", "snapshot_zk_migration_state": "omit", "elr_fields_gate": "feature"},
    **{r: {"mv_downgrade_error": "C1", "snapshot_zk_migration_state": "omit", "elr_fields_gate": "feature"}
       for r in ("4.2", "4.3", "4.4")},
}
