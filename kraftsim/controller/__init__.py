"""kraftsim.controller: Kafka's controller rules as pure decisions, and the QuorumController
that commits them to a metadata log.

Each rule module decides one family of requests from a `ControllerContext` and returns a
`ControllerResult` (records + response, or a Kafka error); it changes nothing itself.

Topics and partitions follow Kafka's files: `topics` (CreateTopics, DeleteTopics),
`partition_create` (CreatePartitions),
`replica_placement` (StripedReplicaPlacer), `partition_change` (PartitionChangeBuilder),
`replication` (ISR/ELR changes driven by brokers, AlterPartition), `reassignments`
(AlterPartitionReassignments), `leader_election` (ElectLeaders). Names other packages use are exported here.
"""

from typing import TYPE_CHECKING

from kraftsim.lazy import exports

if TYPE_CHECKING:  # the same names as mypy sees them (`as` marks a re-export); at run time each loads on first use
    from kraftsim.controller.acls import (
        AclCreation as AclCreation, CreateAclsRequest as CreateAclsRequest, DeleteAclsFilter as DeleteAclsFilter,
        DeleteAclsRequest as DeleteAclsRequest, acl_codes as acl_codes, acl_matches as acl_matches,
        code_name as code_name, create_acls as create_acls, delete_acls as delete_acls,
        tool_principal as tool_principal,
    )
    from kraftsim.controller.activation import ActivationError as ActivationError
    from kraftsim.controller.broker_config_definitions import broker_config_docs as broker_config_docs
    from kraftsim.controller.broker_config_listing import (
        STATIC_BROKER_CONFIG as STATIC_BROKER_CONFIG, describe_node_broker_configs as describe_node_broker_configs,
    )
    from kraftsim.controller.broker_dynamic_configs import (
        BrokerCheck as BrokerCheck, HeldBrokerConfigs as HeldBrokerConfigs, broker_change_check as broker_change_check,
    )
    from kraftsim.controller.topic_configs import topic_configs as topic_config_definitions
    from kraftsim.controller.config_descriptions import (
        DESCRIBE_ORDERS as DESCRIBE_ORDERS, MULTI_NAME_SYNONYMS as MULTI_NAME_SYNONYMS,
        DescribedConfig as DescribedConfig, created_topic_configs as created_topic_configs,
        describe_topic_configs as describe_topic_configs, described_order as described_order,
        describe_broker_configs as describe_broker_configs,
    )
    from kraftsim.controller.scram import (
        MECHANISM_IDS as MECHANISM_IDS, AlterUserScramCredentialsRequest as AlterUserScramCredentialsRequest,
        ScramCredentialDeletion as ScramCredentialDeletion, ScramCredentialUpsertion as ScramCredentialUpsertion,
        alter_user_scram_credentials as alter_user_scram_credentials, minimum_iterations as minimum_iterations,
        salted_password as salted_password, scram_keys_of_password as scram_keys_of_password,
    )
    from kraftsim.controller.client_quotas import (
        AlterClientQuotasRequest as AlterClientQuotasRequest, EntityData as EntityData, EntryData as EntryData,
        QuotaOp as QuotaOp, alter_client_quotas as alter_client_quotas,
    )
    from kraftsim.controller.api_errors import (
        ApiError as ApiError, code_text as code_text, default_error as default_error, error_codes as error_codes,
        exception_text as exception_text,
    )
    from kraftsim.controller.cluster_control import (
        BrokerHeartbeatReply as BrokerHeartbeatReply, BrokerHeartbeatRequest as BrokerHeartbeatRequest,
        BrokerHeartbeats as BrokerHeartbeats, BrokerRegistrationRequest as BrokerRegistrationRequest,
        ControllerRegistrationRequest as ControllerRegistrationRequest, Listener as Listener,
        SupportedFeature as SupportedFeature, broker_heartbeat as broker_heartbeat,
        expire_sessions as expire_sessions, register_broker as register_broker,
        register_controller as register_controller, unregister_broker as unregister_broker,
        unregister_controller as unregister_controller,
    )
    from kraftsim.controller.client_metrics import (
        client_metrics_check as client_metrics_check,
        describe_client_metrics_configs as describe_client_metrics_configs, has_client_metrics as has_client_metrics,
    )
    from kraftsim.controller.group_configs import (
        group_config_check as group_config_check, has_group_configs as has_group_configs,
        describe_group_configs as describe_group_configs, describes_group_configs as describes_group_configs,
    )
    from kraftsim.controller.configs import (
        OP_APPEND as OP_APPEND, OP_SUBTRACT as OP_SUBTRACT,
        incremental_configs_after as incremental_configs_after, configs_after as configs_after,
        OP_DELETE as OP_DELETE, OP_SET as OP_SET, RESOURCE_TYPE_NAMES as RESOURCE_TYPE_NAMES,
        AlterConfigsResource as AlterConfigsResource,
        AlterableConfig as AlterableConfig, IncrementalAlterConfigsRequest as IncrementalAlterConfigsRequest,
        LegacyAlterConfigsRequest as LegacyAlterConfigsRequest, incremental_alter_configs as incremental_alter_configs,
        legacy_alter_configs as legacy_alter_configs,
    )
    from kraftsim.controller.context import (
        ControllerConfig as ControllerConfig, ControllerContext as ControllerContext, Range as Range,
    )
    from kraftsim.controller.cordon import (
        configured_cordoned_dirs as configured_cordoned_dirs, cordoned_by_config as cordoned_by_config,
    )
    from kraftsim.controller.downgrade_report import downgrade_report as report_downgrade
    from kraftsim.controller.features import (
        KIP_778 as KIP_778, FeatureUpdate as FeatureUpdate, UpdateFeaturesRequest as UpdateFeaturesRequest,
        UpdateFeaturesResponse as UpdateFeaturesResponse, UpgradeType as UpgradeType,
    )
    from kraftsim.controller.leader_election import (
        ELECTION_TYPES as ELECTION_TYPES, MAX_ELECTION_PARTITIONS as MAX_ELECTION_PARTITIONS,
        ElectLeadersRequest as ElectLeadersRequest, balance_partition_leaders as balance_partition_leaders,
        ElectLeadersResponse as ElectLeadersResponse, TopicPartitions as TopicPartitions, elect_leaders as elect_leaders,
        elect_unclean_leaders as elect_unclean_leaders,
    )
    from kraftsim.controller.partition_change import (
        NO_LEADER_CHANGE as NO_LEADER_CHANGE, PartitionChangeBuilder as PartitionChangeBuilder, is_active as is_active,
        leader_acceptor as leader_acceptor,
    )
    from kraftsim.controller.partition_create import (
        CreatePartitionsRequest as CreatePartitionsRequest, CreatePartitionsTopic as CreatePartitionsTopic,
        create_partitions as create_partitions,
    )
    from kraftsim.controller.quorum_controller import QuorumController as QuorumController, ReplayState as ReplayState
    from kraftsim.controller.quorum_features import (
        DISABLED as DISABLED, brokers_reason_not_supported as brokers_reason_not_supported,
    )
    from kraftsim.controller.reassignments import (
        AlterPartitionReassignmentsRequest as AlterPartitionReassignmentsRequest,
        AlterPartitionReassignmentsResponse as AlterPartitionReassignmentsResponse,
        ReassignablePartition as ReassignablePartition, ReassignableTopic as ReassignableTopic,
        alter_partition_reassignments as alter_partition_reassignments,
    )
    from kraftsim.controller.replica_index import (
        Changes as Changes, Masks as Masks, ReplicaIndex as ReplicaIndex, mask_ids as mask_ids,
    )
    from kraftsim.controller.replica_placement import UsableBroker as UsableBroker, place_replicas as place_replicas
    from kraftsim.controller.replication import (
        AlterPartitionData as AlterPartitionData, AlterPartitionRequest as AlterPartitionRequest,
        AlterPartitionTopic as AlterPartitionTopic, BrokerState as BrokerState, alter_partition as alter_partition,
    )
    from kraftsim.controller.result import ControllerResult as ControllerResult
    from kraftsim.controller.topics import (
        CreatableReplicaAssignment as CreatableReplicaAssignment, CreatableTopic as CreatableTopic,
        CreatableTopicConfig as CreatableTopicConfig, CreateTopicsRequest as CreateTopicsRequest,
        DeleteTopicState as DeleteTopicState, DeleteTopicsRequest as DeleteTopicsRequest,
        create_topics as create_topics, delete_topics as delete_topics,
    )
    from kraftsim.javacompat import int_set_order as java_int_set_order

# Loaded on first use: importing one rule (or the package, for one name) must not load every
# rule, the QuorumController and the versions catalog; `kraftsim serve` and the CLI start faster.
_NAMES_IN = {  # module -> the names it exports here
    "acls": "AclCreation CreateAclsRequest DeleteAclsFilter DeleteAclsRequest acl_codes acl_matches code_name "
            "create_acls delete_acls tool_principal",
    "activation": "ActivationError",
    "broker_config_definitions": "broker_config_docs",
    "broker_config_listing": "STATIC_BROKER_CONFIG describe_node_broker_configs",
    "broker_dynamic_configs": "BrokerCheck HeldBrokerConfigs broker_change_check",
    "config_descriptions": (
        "DESCRIBE_ORDERS MULTI_NAME_SYNONYMS DescribedConfig created_topic_configs describe_topic_configs "
        "described_order describe_broker_configs"
    ),
    "client_metrics": "client_metrics_check describe_client_metrics_configs has_client_metrics",
    "group_configs": "group_config_check has_group_configs describe_group_configs describes_group_configs",
    "client_quotas": "AlterClientQuotasRequest EntityData EntryData QuotaOp alter_client_quotas",
    "scram": (
        "MECHANISM_IDS AlterUserScramCredentialsRequest ScramCredentialDeletion ScramCredentialUpsertion "
        "alter_user_scram_credentials minimum_iterations salted_password scram_keys_of_password"
    ),
    "api_errors": "ApiError code_text default_error error_codes exception_text",
    "cluster_control": (
        "BrokerHeartbeatReply BrokerHeartbeatRequest BrokerHeartbeats BrokerRegistrationRequest "
        "ControllerRegistrationRequest Listener SupportedFeature broker_heartbeat expire_sessions "
        "register_broker register_controller unregister_broker unregister_controller"
    ),
    "configs": (
        "OP_APPEND OP_DELETE OP_SET OP_SUBTRACT configs_after RESOURCE_TYPE_NAMES AlterConfigsResource AlterableConfig IncrementalAlterConfigsRequest "
        "LegacyAlterConfigsRequest incremental_alter_configs incremental_configs_after legacy_alter_configs"
    ),
    "context": "ControllerConfig ControllerContext Range",
    "cordon": "configured_cordoned_dirs cordoned_by_config",
    "features": "KIP_778 FeatureUpdate UpdateFeaturesRequest UpdateFeaturesResponse UpgradeType",
    "leader_election": (
        "balance_partition_leaders ELECTION_TYPES MAX_ELECTION_PARTITIONS ElectLeadersRequest ElectLeadersResponse "
        "TopicPartitions elect_leaders elect_unclean_leaders"
    ),
    "partition_change": "NO_LEADER_CHANGE PartitionChangeBuilder is_active leader_acceptor",
    "partition_create": "CreatePartitionsRequest CreatePartitionsTopic create_partitions",
    "quorum_controller": "QuorumController ReplayState",
    "quorum_features": "DISABLED brokers_reason_not_supported",
    "reassignments": (
        "AlterPartitionReassignmentsRequest AlterPartitionReassignmentsResponse ReassignablePartition ReassignableTopic "
        "alter_partition_reassignments"
    ),
    "replica_index": "Changes Masks ReplicaIndex mask_ids",
    "replica_placement": "UsableBroker place_replicas",
    "replication": "AlterPartitionData AlterPartitionRequest AlterPartitionTopic BrokerState alter_partition",
    "result": "ControllerResult",
    "topics": (
        "CreatableReplicaAssignment CreatableTopic CreatableTopicConfig CreateTopicsRequest DeleteTopicState "
        "DeleteTopicsRequest create_topics delete_topics"
    ),
}
_MODULE_OF = {
    **{name: (f"kraftsim.controller.{module}", name) for module, names in _NAMES_IN.items() for name in names.split()},
    "report_downgrade": ("kraftsim.controller.downgrade_report", "downgrade_report"),  # not the module's own name,
    # which `import kraftsim.controller.downgrade_report` would bind on the package in its place
    "java_int_set_order": ("kraftsim.javacompat", "int_set_order"),
    "topic_config_definitions": ("kraftsim.controller.topic_configs", "topic_configs"),  # (likewise)
}
__all__ = [
    "brokers_reason_not_supported", "client_metrics_check", "describe_client_metrics_configs", "has_client_metrics",
    "incremental_configs_after", "configs_after", "group_config_check", "has_group_configs", "describe_group_configs",
    "describes_group_configs", "OP_APPEND", "OP_SUBTRACT",
    "AclCreation", "ActivationError", "AlterClientQuotasRequest", "AlterConfigsResource",
    "AlterPartitionReassignmentsRequest", "AlterPartitionReassignmentsResponse", "ReassignablePartition",
    "ReassignableTopic", "alter_partition_reassignments",
    "AlterUserScramCredentialsRequest", "MECHANISM_IDS", "ScramCredentialDeletion", "ScramCredentialUpsertion",
    "AlterPartitionData", "AlterPartitionRequest",
    "AlterPartitionTopic", "AlterableConfig", "ApiError", "BrokerHeartbeatReply", "BrokerHeartbeatRequest",
    "BrokerHeartbeats", "BrokerRegistrationRequest", "BrokerState", "ControllerConfig", "ControllerContext",
    "ControllerRegistrationRequest", "ControllerResult", "CreatableReplicaAssignment", "CreatableTopic",
    "CreatableTopicConfig", "CreateAclsRequest", "CreatePartitionsRequest", "CreatePartitionsTopic", "CreateTopicsRequest", "DISABLED", "DeleteTopicState",
    "DeleteTopicsRequest", "ELECTION_TYPES", "EntityData", "EntryData", "MAX_ELECTION_PARTITIONS", "ElectLeadersRequest", "ElectLeadersResponse", "FeatureUpdate", "IncrementalAlterConfigsRequest", "KIP_778", "LegacyAlterConfigsRequest", "NO_LEADER_CHANGE",
    "Listener", "OP_DELETE", "OP_SET", "RESOURCE_TYPE_NAMES", "PartitionChangeBuilder", "QuorumController", "QuotaOp", "Range", "ReplayState",
    "SupportedFeature", "TopicPartitions", "UpdateFeaturesRequest", "UpdateFeaturesResponse", "UpgradeType",
    "UsableBroker", "DeleteAclsFilter", "DeleteAclsRequest", "acl_codes", "acl_matches", "delete_acls", "tool_principal", "alter_client_quotas", "alter_partition", "alter_user_scram_credentials",
    "minimum_iterations", "salted_password", "scram_keys_of_password", "balance_partition_leaders", "broker_heartbeat", "code_name", "configured_cordoned_dirs",
    "code_text", "cordoned_by_config", "create_acls", "create_partitions", "create_topics", "delete_topics", "elect_leaders",
    "elect_unclean_leaders", "default_error", "error_codes", "exception_text",
    "expire_sessions", "incremental_alter_configs", "is_active", "legacy_alter_configs", "java_int_set_order", "leader_acceptor",
    "place_replicas", "register_broker", "register_controller", "report_downgrade", "unregister_broker",
    "unregister_controller", "BrokerCheck", "HeldBrokerConfigs", "broker_change_check", "topic_config_definitions",
    "DESCRIBE_ORDERS", "MULTI_NAME_SYNONYMS", "DescribedConfig", "created_topic_configs", "describe_topic_configs",
    "described_order", "describe_broker_configs", "STATIC_BROKER_CONFIG", "describe_node_broker_configs",
    "broker_config_docs", "Changes", "Masks", "ReplicaIndex", "mask_ids",
]
__getattr__ = exports(__name__, _MODULE_OF)
