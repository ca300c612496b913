"""The AuthorizedOperations fields (KIP-430): what a client may do to a topic, the cluster or a
group, as a bit field of ACL operation codes, set when the request asks for it (Metadata v8 on,
DescribeCluster, DescribeGroups v3 on) and always in DescribeTopicPartitions.

A served node has no authorizer, or Kafka's StandardAuthorizer with every client a super user
(storage.server_config): either way Kafka answers every operation the resource type supports
(AclEntry.supportedOperations). Groups support DESCRIBE_CONFIGS and ALTER_CONFIGS from 4.0
(KIP-848's group configs). Compared with live 3.3.2, 3.7.2, 4.0.2 and 4.4.0 nodes.
"""

from __future__ import annotations

import functools

from kraftsim.controller import acl_codes
from kraftsim.versions import release_name_key

#: What a field holds when the request did not ask (Integer.MIN_VALUE).
NOT_ASKED = -2**31
#: AclEntry.supportedOperations by resource type.
_SUPPORTED = {
    "TOPIC": ("READ", "WRITE", "CREATE", "DESCRIBE", "DELETE", "ALTER", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"),
    "CLUSTER": ("CREATE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "ALTER",
                "DESCRIBE"),
    "GROUP": ("READ", "DESCRIBE", "DELETE"),
}
_GROUP_CONFIGS_FROM = (4, 0, 0)


@functools.cache
def authorized_operations(resource_type: str, release: str) -> int:
    """The bit field a node of `release` answers for a resource of `resource_type` (TOPIC,
    CLUSTER or GROUP)."""
    names = _SUPPORTED[resource_type]
    if resource_type == "GROUP" and release_name_key(release) >= _GROUP_CONFIGS_FROM:
        names += ("DESCRIBE_CONFIGS", "ALTER_CONFIGS")
    codes = {name: number for number, name in acl_codes()["operation"].items()}
    return sum(1 << codes[name] for name in names)
