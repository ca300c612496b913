"""kraftsim.controller: Kafka's controller rules as pure decisions, and the QuorumController
that commits them to a metadata log.

Each rule module decides one family of requests from a `ControllerContext` and returns a
`ControllerResult` (records + response, or a Kafka error); it changes nothing itself.

Topics and partitions follow Kafka's files: `topics` (CreateTopics, DeleteTopics),
`replica_placement` (StripedReplicaPlacer), `partition_change` (PartitionChangeBuilder),
`replication` (ISR/ELR changes driven by brokers, AlterPartition), `leader_election`
(ElectLeaders). Names other packages use are exported here.
"""

from kraftsim.controller.api_errors import ApiError, error_codes
from kraftsim.controller.context import ControllerContext
from kraftsim.controller.result import ControllerResult
from kraftsim.controller.partition_change import (
    PartitionChangeBuilder, is_active, leader_acceptor,
)
from kraftsim.javacompat import int_set_order as java_int_set_order
from kraftsim.controller.replica_placement import UsableBroker, place_replicas
from kraftsim.controller.replication import (
    AlterPartitionData, AlterPartitionRequest, AlterPartitionTopic, BrokerState, alter_partition,
)
from kraftsim.controller.leader_election import ElectLeadersRequest, TopicPartitions, elect_leaders
from kraftsim.controller.topics import (
    CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig, CreateTopicsRequest, DeleteTopicState,
    DeleteTopicsRequest, create_topics, delete_topics,
)

__all__ = [
    "AlterPartitionData",
    "AlterPartitionRequest",
    "AlterPartitionTopic",
    "ApiError",
    "BrokerState",
    "ControllerContext",
    "ControllerResult",
    "CreatableReplicaAssignment",
    "CreatableTopic",
    "CreatableTopicConfig",
    "CreateTopicsRequest",
    "DeleteTopicState",
    "DeleteTopicsRequest",
    "ElectLeadersRequest",
    "PartitionChangeBuilder",
    "TopicPartitions",
    "UsableBroker",
    "alter_partition",
    "create_topics",
    "delete_topics",
    "elect_leaders",
    "error_codes",
    "is_active",
    "java_int_set_order",
    "leader_acceptor",
    "place_replicas",
]
