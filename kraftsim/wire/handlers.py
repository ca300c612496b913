"""Requests answered as the node's own release answers them: which API keys and versions a
listener serves (the release's ApiVersions table), and the answers that only read the node's
state (ApiVersions, Metadata, DescribeCluster). Bodies are dicts keyed by Kafka's field names
(the codec's form); fields left out take their schema defaults.

A request the listener does not serve (a key it does not advertise, or a version outside its
range) is not answered: Kafka's SocketServer cannot parse it and closes the connection
("Received request api key ... which is not enabled" / "... unsupported version"). ApiVersions
is the exception (KIP-511): an unknown version gets UNSUPPORTED_VERSION, written at v0, with the
node's ApiVersions range, so the client can retry at a version both know.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kraftsim.controller import (
    DescribedConfig, broker_config_docs, describe_broker_configs, describe_node_broker_configs, describe_topic_configs,
    error_codes,
)
from kraftsim.controller import default_error, describe_client_metrics_configs, has_client_metrics
from kraftsim.controller import describe_group_configs, describes_group_configs
from kraftsim.javacompat import parse_int
from kraftsim.protocol.primitives import Uuid
from kraftsim.sim import API_VERSIONS_KEY, api_version_table, api_versions_response
from kraftsim.storage import internal_topics, topic_name_error
from kraftsim.versions import FEATURE_NAME as MV_NAME
from kraftsim.wire.authorized_operations import authorized_operations
from kraftsim.wire.metadata_order import (
    all_topics_order, cluster_map_order, named_topics_order, partitions_order, topic_ids_order,
)
from kraftsim.wire.node_properties import node_properties
from kraftsim.wire.served import BROKER, CONTROLLER, Listener, ServedCluster

if TYPE_CHECKING:
    from kraftsim.image import BrokerRegistration, MetadataImage

Body = dict[str, Any]
Handler = Callable[[ServedCluster, Listener, int, Mapping[str, object]], Body]
METADATA_KEY, DESCRIBE_CLUSTER_KEY, DESCRIBE_CONFIGS_KEY = 3, 60, 32
#: DescribeCluster's EndpointType (KIP-919): what the request asks to be described.
ENDPOINT_TYPES = {1: "BROKER", 2: "CONTROLLER"}


class NotCarriedOut(Exception):
    """Raised by a handler for a request kraftsim does not carry out (the part it names): the
    server closes the connection, as for an API it does not serve, and says so once."""


class UnparsableRequest(Exception):
    """Raised by a handler for a request Kafka refuses while it parses it (the request's own
    checks, in its constructor): the server closes the connection, as Kafka does, and says
    nothing."""


def code(name: str) -> int:
    return error_codes()[name]


def release_of(served: ServedCluster, listener: Listener) -> str:
    node = served.sim.running_node(listener.node_id)
    assert node is not None  # a listener is open only while its node runs
    return node.state.release


def serves(served: ServedCluster, listener: Listener, api_key: int, version: int) -> bool:
    """Whether the listener's node advertises `api_key` at `version`."""
    r = api_version_table().ranges(release_of(served, listener), listener.role).get(api_key)
    return r is not None and r[0] <= version <= r[1]


def api_versions(served: ServedCluster, listener: Listener, version: int) -> tuple[int, Body]:
    """(the version to write the answer at, the answer): the node's own image gives the
    finalized levels and epoch, so a lagging node reports what it has applied."""
    node = served.sim.running_node(listener.node_id)
    assert node is not None
    r = node.api_versions(version, listener.role)
    body: Body = {"ErrorCode": r.error_code, "ThrottleTimeMs": r.throttle_time_ms,
                  "ApiKeys": [{"ApiKey": k, "MinVersion": lo, "MaxVersion": hi} for k, lo, hi in r.api_keys]}
    if r.error_code != 0:
        return 0, body
    body["SupportedFeatures"] = [{"Name": n, "MinVersion": lo, "MaxVersion": hi} for n, lo, hi in r.supported_features]
    body["FinalizedFeaturesEpoch"] = r.finalized_features_epoch
    body["FinalizedFeatures"] = [{"Name": n, "MaxVersionLevel": hi, "MinVersionLevel": lo}
                                 for n, lo, hi in r.finalized_features]
    return version, body


def unsupported_api_versions(served: ServedCluster, listener: Listener) -> Body:
    """The answer to an ApiVersions request of a version the codec cannot read, above or below
    every range (KIP-511): asked as one version past the node's own highest."""
    release = release_of(served, listener)
    highest = api_version_table().ranges(release, listener.role)[API_VERSIONS_KEY][1]
    r = api_versions_response(release, listener.role, highest + 1, None)
    return {"ErrorCode": r.error_code, "ApiKeys": [{"ApiKey": k, "MinVersion": lo, "MaxVersion": hi}
                                                   for k, lo, hi in r.api_keys]}


def alive_brokers(served: ServedCluster, listener: Listener) -> list[BrokerRegistration]:
    """Unfenced registered brokers in the node's own image (Kafka's alive brokers), in the
    order Kafka lists them (`registered_brokers`)."""
    return [b for b in registered_brokers(served.sim.image(listener.node_id)) if not b.fenced]


def registered_brokers(image: MetadataImage | None) -> list[BrokerRegistration]:
    """The brokers of `image` in the order a broker lists them (Metadata, DescribeCluster):
    its broker map's (`cluster_map_order`)."""
    return [] if image is None else cluster_map_order(image.cluster.brokers.values())


def _broker_entry(served: ServedCluster, b: BrokerRegistration, id_key: str) -> Body:
    port = served.port_of(b.id, BROKER)
    return {id_key: b.id, "Host": served.host, "Port": port if port is not None else -1, "Rack": b.rack}


def metadata(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, Any], *,
             auto_creating: bool = False) -> Body:
    """Brokers with their served ports, the cluster id, a controller id as KRaft brokers give it
    (an alive broker's: clients cannot reach controllers; Kafka picks one at random, kraftsim the
    lowest id), and topics and partitions from the node's own image. Topics are asked for by
    name or, from v12 (KIP-516), by id: an id the broker does not know is UNKNOWN_TOPIC_ID with
    no name, a name it does not know UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION when
    no topic could have it); in v0 a partition lists only its replicas on alive brokers, and
    REPLICA_NOT_AVAILABLE when that leaves one out. Topics (with `auto_creating`, as the broker
    creating the unknown legal names lists them) and each topic's partitions come in the
    release's order (`metadata_order`)."""
    brokers = alive_brokers(served, listener)
    alive = {b.id for b in brokers}
    image = served.sim.image(listener.node_id)
    release = release_of(served, listener)
    internal = internal_topics(release)
    wanted = body.get("Topics")
    topics = [] if image is None else list(image.topics.sorted_topics())
    by_name = {t.name: t for t in topics}
    first: list[Body] = []  # the entries before the known topics'
    last: list[Body] = []  # and after them
    if wanted is None or (version == 0 and not wanted):  # (in v0 no name asks for every topic)
        chosen = [by_name[n] for n in all_topics_order(list(by_name))]
    elif ids := [w["TopicId"] for w in wanted if w.get("TopicId", Uuid.ZERO) != Uuid.ZERO]:
        name_of = {t.id: t.name for t in topics}.get
        names, unknown_ids = topic_ids_order(ids, name_of)
        chosen = [by_name[n] for n in names]
        first = [{"ErrorCode": code("UNKNOWN_TOPIC_ID"), "Name": None, "TopicId": i, "IsInternal": False,
                  "Partitions": []} for i in unknown_ids]
    else:
        def legal(name: str | None) -> bool:
            return name is None or topic_name_error(name) is None

        creatable = (lambda n: n is not None and legal(n)) if auto_creating else None
        found, missing = named_topics_order(release, [w.get("Name") for w in wanted], by_name, creatable)
        chosen = [by_name[n] for n in found if n is not None]
        last = [{"ErrorCode": code("UNKNOWN_TOPIC_OR_PARTITION" if legal(name) else "INVALID_TOPIC_EXCEPTION"),
                 "Name": name, "TopicId": Uuid.ZERO, "IsInternal": name in internal, "Partitions": []}
                for name in missing]  # (a v12 entry with neither name nor id: no name)
    known_topics: list[Body] = []
    for t in chosen:
        parts = []
        for index, p in t.sorted_partitions():
            leader_alive = p.leader in alive
            replicas, isr = list(p.replicas), list(p.isr)
            error = 0 if leader_alive else code("LEADER_NOT_AVAILABLE")
            if version == 0:  # v0 clients are given only the replicas they can reach (Kafka's errorUnavailableEndpoints)
                replicas, isr = [r for r in replicas if r in alive], [r for r in isr if r in alive]
                if leader_alive and (len(replicas) < len(p.replicas) or len(isr) < len(p.isr)):
                    error = code("REPLICA_NOT_AVAILABLE")
            parts.append({"ErrorCode": error, "PartitionIndex": index,
                          "LeaderId": p.leader if leader_alive else -1, "LeaderEpoch": p.leader_epoch,
                          "ReplicaNodes": replicas, "IsrNodes": isr,
                          "OfflineReplicas": [r for r in p.replicas if r not in alive]})
        known_topics.append({"ErrorCode": 0, "Name": t.name, "TopicId": t.id, "IsInternal": t.name in internal,
                             "Partitions": partitions_order(release, parts)})
    out_topics = first + known_topics + last
    answer: Body = {"Brokers": [_broker_entry(served, b, "NodeId") for b in brokers],
                    "ClusterId": served.sim.cluster_id, "ControllerId": min((b.id for b in brokers), default=-1),
                    "Topics": out_topics}
    if version >= 8 and body.get("IncludeTopicAuthorizedOperations"):  # (every topic answered, known or not)
        operations = authorized_operations("TOPIC", release)
        for entry in out_topics:
            entry["TopicAuthorizedOperations"] = operations
    if 8 <= version <= 10 and body.get("IncludeClusterAuthorizedOperations"):  # (from v11: DescribeCluster's)
        answer["ClusterAuthorizedOperations"] = authorized_operations("CLUSTER", release)
    return answer


def describe_cluster(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, Any]) -> Body:
    """DescribeCluster (KIP-919's EndpointType from v1): a broker describes the alive brokers,
    a controller the registered controllers and the raft leader it knows."""
    wanted = int(body.get("EndpointType", 1)) if version >= 1 else 1
    expected = 1 if listener.role == BROKER else 2
    if wanted not in ENDPOINT_TYPES or wanted != expected:
        err = "INVALID_REQUEST" if version == 0 else (
            "UNSUPPORTED_ENDPOINT_TYPE" if wanted not in ENDPOINT_TYPES else "MISMATCHED_ENDPOINT_TYPE")
        text = (f"Unsupported endpoint type {wanted}" if wanted not in ENDPOINT_TYPES else
                f"The request was sent to an endpoint of type {ENDPOINT_TYPES[expected]}, but we wanted an endpoint "
                f"of type {ENDPOINT_TYPES[wanted]}")
        return {"ErrorCode": code(err), "ErrorMessage": text, "ClusterId": ""}
    if listener.role == BROKER:
        brokers = alive_brokers(served, listener)
        controller = min((b.id for b in brokers), default=-1)
        if version >= 2 and body.get("IncludeFencedBrokers"):  # KIP-1073: fenced ones too, marked
            brokers = registered_brokers(served.sim.image(listener.node_id))
        nodes = [{**_broker_entry(served, b, "BrokerId"), **({"IsFenced": b.fenced} if version >= 2 else {})}
                 for b in brokers]
    else:
        image = served.sim.image(listener.node_id)
        level = served.sim.finalized_on(listener.node_id).get(MV_NAME, 0)
        if not level or not served.sim.catalog.supports("controller_registration", level):
            # ControllerApis consults registrations that exist only from 3.7-IV0 on
            return {"ErrorCode": code("UNSUPPORTED_VERSION"), "ClusterId": "",
                    "ErrorMessage": "Direct-to-controller communication is not supported with the current "
                                    "MetadataVersion."}
        # (as its ControllerRegistrationsPublisher lists them: the ClusterImage map's order)
        regs = [] if image is None else cluster_map_order(image.cluster.controllers.values())
        nodes = []
        for c in regs:
            port = served.port_of(c.id, CONTROLLER)
            nodes.append({"BrokerId": c.id, "Host": served.host, "Port": port if port is not None else -1,
                          "Rack": None})
        leader = served.sim.known_leader(listener.node_id)
        controller = leader if leader is not None else -1
    if controller not in {n["BrokerId"] for n in nodes}:
        controller = -1
    answer: Body = {"ClusterId": served.sim.cluster_id, "ControllerId": controller, "EndpointType": wanted,
                    "Brokers": nodes}
    if body.get("IncludeClusterAuthorizedOperations"):
        answer["ClusterAuthorizedOperations"] = authorized_operations("CLUSTER", release_of(served, listener))
    return answer


#: DescribeConfigs' resource types.
TOPIC_RESOURCE, BROKER_RESOURCE, BROKER_LOGGER_RESOURCE, CLIENT_METRICS_RESOURCE = 2, 4, 8, 16
GROUP_RESOURCE = 32


def _entries(described: list[DescribedConfig], with_synonyms: bool) -> list[Body]:
    """Described configs as DescribeConfigs' entries (a secret marked sensitive)."""
    return [{"Name": c.name, "Value": c.value, "ReadOnly": c.read_only, "ConfigSource": c.source,
             "IsSensitive": c.sensitive,
             "Synonyms": [{"Name": s.name, "Value": s.value, "Source": s.source} for s in c.synonyms] if with_synonyms else [],
             "ConfigType": c.config_type, "Documentation": c.documentation} for c in described]


def _topic_configs(release: str, image: MetadataImage, topic: str, broker: str, with_synonyms: bool,
                   documentation: bool) -> list[Body]:
    """Every config of the topic as a node of `release` describes it (its own values, what it
    inherits from the node's dynamic broker configs, the release's defaults; see
    kraftsim.controller.config_descriptions)."""
    return _entries(describe_topic_configs(release, image.configs.config(TOPIC_RESOURCE, topic),
                                           image.configs.config(BROKER_RESOURCE, broker),
                                           image.configs.config(BROKER_RESOURCE, ""), documentation=documentation),
                    with_synonyms)


def _broker_configs(served: ServedCluster, listener: Listener, release: str, image: MetadataImage, own_id: bool,
                    with_synonyms: bool, documentation: bool) -> list[Body]:
    """The node's every config (`own_id`: its own id named; kraftsim.controller.
    broker_config_listing, its server.properties as wire.node_properties presents it), or the
    cluster's default resource's dynamic configs (`--entity-default`; kraftsim.controller.
    config_descriptions); with `documentation`, each defined config's text."""
    cluster_dynamic = image.configs.config(BROKER_RESOURCE, "")
    if not own_id:
        docs = broker_config_docs(release) if documentation else {}
        return _entries([c._replace(documentation=docs.get(c.name))
                         for c in describe_broker_configs(release, None, cluster_dynamic)], with_synonyms)
    node = listener.node_id
    return _entries(describe_node_broker_configs(release, node_properties(served, node),
                                                 image.configs.config(BROKER_RESOURCE, str(node)), cluster_dynamic,
                                                 documentation=documentation), with_synonyms)


def describe_configs(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, Any]) -> Body:
    """A topic's configs, every one with its value, source and synonyms, as the node's release
    describes them; a broker's every config (its own id: the server.properties it presents,
    wire.node_properties, its dynamic configs, the release's defaults) and the cluster default
    resource's dynamic configs (the configs set with kafka-configs, and what the controller
    set itself, such as the cluster-wide min.insync.replicas that enabling ELR writes) that
    its release applies, with Kafka's sources, synonyms and types; a client-metrics
    subscription's configs as its release describes them (kraftsim.controller.client_metrics);
    a group's configs as 4.0 to 4.2 describe them (kraftsim.controller.group_configs). A name
    Kafka's ConfigHelper refuses is answered with its text (`_described_name_error`). A
    broker's loggers, and a group's configs on other releases, are not carried out."""
    image = served.sim.image(listener.node_id)
    release = release_of(served, listener)
    with_synonyms = bool(body.get("IncludeSynonyms", False))
    documentation = bool(body.get("IncludeDocumentation", False))
    asked = body.get("Resources", [])
    if not has_client_metrics(release) and any(int(r["ResourceType"]) == CLIENT_METRICS_RESOURCE for r in asked):
        # (a broker before 3.7 cannot read the type, and answers the whole request as malformed: live 3.6.2)
        malformed = default_error("INVALID_REQUEST")
        return {"Results": [{"ResourceType": int(r["ResourceType"]), "ResourceName": r["ResourceName"],
                             "ErrorCode": code(malformed.name), "ErrorMessage": malformed.message, "Configs": []}
                            for r in asked]}
    results = []
    for r in asked:
        rtype, name, keys = int(r["ResourceType"]), r["ResourceName"], r.get("ConfigurationKeys")
        if rtype == GROUP_RESOURCE and not describes_group_configs(release):
            raise NotCarriedOut(f"DescribeConfigs of a group on {release} (before 4.0, or with broker synonyms, 4.3 on)")
        out: Body = {"ResourceType": rtype, "ResourceName": name, "ErrorCode": 0, "ErrorMessage": "", "Configs": []}
        refused = _described_name_error(rtype, name, listener.node_id)
        if refused is not None:
            out.update(ErrorCode=code(refused[0]), ErrorMessage=refused[1])
        elif rtype == CLIENT_METRICS_RESOURCE:  # (one no change named holds nothing, and is described so)
            held = image.configs.config(rtype, name) if image is not None else {}
            out["Configs"] = _entries(describe_client_metrics_configs(release, held, keys, documentation=documentation),
                                      with_synonyms)
        elif rtype == GROUP_RESOURCE:  # (kraftsim.controller.group_configs)
            held = image.configs.config(rtype, name) if image is not None else {}
            out["Configs"] = _entries(describe_group_configs(release, held, keys, documentation=documentation),
                                      with_synonyms)
        elif rtype == TOPIC_RESOURCE and (image is None or image.topics.get_topic_by_name(name) is None):
            out.update(ErrorCode=code("UNKNOWN_TOPIC_OR_PARTITION"))  # (Kafka sets no message)
        elif image is not None:
            configs = (_topic_configs(release, image, name, str(listener.node_id), with_synonyms, documentation)
                       if rtype == TOPIC_RESOURCE
                       else _broker_configs(served, listener, release, image, bool(name), with_synonyms, documentation))
            out["Configs"] = [c for c in configs if not keys or c["Name"] in keys]  # (none or no keys: all)
        results.append(out)
    return {"Results": results}


def _described_name_error(rtype: int, name: str, node_id: int) -> tuple[str, str] | None:
    """ConfigHelper's refusal of resource (`rtype`, `name`) on node `node_id`: (error, text), or
    None for a topic, broker or subscription it describes; NotCarriedOut for the other types."""
    if rtype == TOPIC_RESOURCE:
        text = topic_name_error(name)
        return None if text is None else ("INVALID_TOPIC_EXCEPTION", text)
    if rtype == BROKER_RESOURCE and not name:
        return None
    if rtype in (BROKER_RESOURCE, BROKER_LOGGER_RESOURCE):
        if not name:
            return "INVALID_REQUEST", "Broker id must not be empty"
        named = parse_int(name)
        if named is None:
            return "INVALID_REQUEST", f"Broker id must be an integer, but it is: {name}"
        if named != node_id:
            expected = f"{node_id} or empty string," if rtype == BROKER_RESOURCE else f"{node_id}"
            return "INVALID_REQUEST", f"Unexpected broker id, expected {expected} but received {name}"
        if rtype == BROKER_RESOURCE:
            return None
        raise NotCarriedOut("DescribeConfigs of a broker's loggers")
    if rtype == CLIENT_METRICS_RESOURCE:
        return None if name else ("INVALID_REQUEST", "Client metrics subscription name must not be empty")
    if rtype == GROUP_RESOURCE:
        return None if name else ("INVALID_REQUEST", "Group name must not be empty")
    raise NotCarriedOut(f"DescribeConfigs of resource type {rtype} (other than topics, brokers and "
                        "client-metrics subscriptions)")


__all__ = ["API_VERSIONS_KEY", "Body", "Handler", "api_versions", "code", "describe_cluster",
           "describe_configs",
           "metadata", "serves", "UnparsableRequest",
           "unsupported_api_versions"]
