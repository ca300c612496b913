"""Requests that change the cluster, answered by the active controller: UpdateFeatures,
CreateTopics, CreatePartitions, DeleteTopics, ElectLeaders, UnregisterBroker. A broker forwards them to the active controller (KIP-590) and a
controller that is not the active one refuses them with NOT_CONTROLLER, as Kafka's
QuorumController does; a broker cut off from the active controller cannot forward and the
client gets REQUEST_TIMED_OUT. Each accepted change is recorded as a scenario step.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kraftsim.controller import CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig, CreatePartitionsTopic
from kraftsim.controller import ELECTION_TYPES, MAX_ELECTION_PARTITIONS, ElectLeadersRequest, FeatureUpdate
from kraftsim.controller import TopicPartitions, UpgradeType, created_topic_configs
from kraftsim.wire.handlers import BROKER_RESOURCE, METADATA_KEY, Body, Handler, NotCarriedOut, code, release_of
from kraftsim.wire.handlers import metadata as metadata_of_image
from kraftsim.wire.served import CONTROLLER, Listener, ServedCluster

if TYPE_CHECKING:
    from kraftsim.controller import ControllerResult

UPDATE_FEATURES_KEY, CREATE_TOPICS_KEY, DELETE_TOPICS_KEY, UNREGISTER_BROKER_KEY = 57, 19, 20, 64
CREATE_PARTITIONS_KEY, ELECT_LEADERS_KEY = 37, 43
#: ElectionType's names by number, as a recorded `elect-leaders` step writes them.
ELECTION_TYPE_NAMES = {number: name for name, number in ELECTION_TYPES.items()}


def refusal(served: ServedCluster, listener: Listener) -> tuple[str, str | None] | None:
    """(error name, message) when the node cannot get the request to the active controller."""
    leader = served.sim.leader()
    if listener.role == CONTROLLER:
        if leader == listener.node_id:
            return None
        known = served.sim.known_leader(listener.node_id)
        text = ("No controller appears to be active." if known is None
                else f"The active controller appears to be node {known}.")
        return "NOT_CONTROLLER", text
    if leader is None or not served.sim.reachable(listener.node_id, leader):
        return "REQUEST_TIMED_OUT", None
    return None


def ask_controller(served: ServedCluster, listener: Listener,
                   send: Callable[[], ControllerResult | None]) -> ControllerResult | tuple[str, str | None]:
    """A request sent on to the active controller as the listener's node sends it (a broker
    forwards it, KIP-590): the controller's result, or (error name, message) for every part of
    the request when it could not be asked, timed out or was refused whole."""
    refused = refusal(served, listener)
    if refused is not None:
        return refused
    result = send()
    served.anchor()
    if result is not None and result.response is not None:
        return result
    if result is not None and not result.ok:
        return result.error.name, result.error.message
    return "REQUEST_TIMED_OUT", None


def _upgrade_type(version: int, u: Mapping[str, Any]) -> int:
    if version == 0:
        return int(UpgradeType.SAFE_DOWNGRADE if u.get("AllowDowngrade") else UpgradeType.UPGRADE)
    return int(u.get("UpgradeType", int(UpgradeType.UPGRADE)))


def update_features(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, Any]) -> Body:
    updates = {u["Feature"]: FeatureUpdate(u["Feature"], int(u["MaxVersionLevel"]), _upgrade_type(version, u))
               for u in body.get("FeatureUpdates", [])}
    validate_only = bool(body.get("ValidateOnly", False)) if version >= 1 else False
    refused = refusal(served, listener)
    if refused is not None:
        err, text = code(refused[0]), refused[1]
        return {"ErrorCode": err, "ErrorMessage": text,
                "Results": [{"Feature": n, "ErrorCode": err, "ErrorMessage": text} for n in sorted(updates)]}
    at = served.sim.now_ms
    response, _ = served.sim.update_features(updates, validate_only)
    served.anchor()
    if response is None:
        text = "Timed out waiting for the controller to commit the update"
        return {"ErrorCode": code("REQUEST_TIMED_OUT"), "ErrorMessage": text}
    results = [{"Feature": r.feature, "ErrorCode": r.error_code, "ErrorMessage": r.error_message}
               for r in response.results]
    ok = response.error_code == 0 and all(r.error_code == 0 for r in response.results)
    if ok and not validate_only and updates:
        _record_features(served, updates, at)
    return {"ErrorCode": response.error_code, "ErrorMessage": response.error_message, "Results": results}


def _record_features(served: ServedCluster, updates: Mapping[str, FeatureUpdate], at: int) -> None:
    """The update as the kafka-features step that makes it (upgrade, downgrade or disable)."""
    types = {u.upgrade_type for u in updates.values()}
    unsafe = int(UpgradeType.UNSAFE_DOWNGRADE) in types
    levels = {n: u.max_version_level for n, u in sorted(updates.items())}
    if types == {int(UpgradeType.UPGRADE)}:
        served.record("features-upgrade", {"features": levels}, at)
    elif all(v == 0 for v in levels.values()):
        served.record("features-disable", {"features": sorted(levels)}, at)
    else:
        served.record("features-downgrade", {"features": levels, "unsafe": unsafe or None}, at)


def _creatable(t: Mapping[str, Any]) -> CreatableTopic:
    return CreatableTopic(
        name=t["Name"], num_partitions=int(t.get("NumPartitions", -1)), replication_factor=int(t.get("ReplicationFactor", -1)),
        assignments=tuple(CreatableReplicaAssignment(a["PartitionIndex"], tuple(a["BrokerIds"]))
                          for a in t.get("Assignments", [])),
        configs=tuple(CreatableTopicConfig(c["Name"], c.get("Value")) for c in t.get("Configs", [])))


def create_topics(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, Any]) -> Body:
    topics = [_creatable(t) for t in body.get("Topics", [])]
    validate_only = bool(body.get("validateOnly", False))
    if not topics:
        return {"Topics": []}
    at = served.sim.now_ms
    result = ask_controller(served, listener, lambda: served.sim.send_create_topics(topics, validate_only))
    if isinstance(result, tuple):
        return {"Topics": [{"Name": t.name, "ErrorCode": code(result[0]), "ErrorMessage": result[1]} for t in topics]}
    answers = []
    made: dict[tuple[int, int, tuple[tuple[str, str], ...], tuple[tuple[int, ...], ...]], list[str]] = {}
    asked = {t.name: t for t in topics}
    for r in result.response.topics:
        answers.append({"Name": r.name, "TopicId": r.topic_id, "ErrorCode": r.error_code, "ErrorMessage": r.error_message,
                        "NumPartitions": r.num_partitions, "ReplicationFactor": r.replication_factor})
        if version >= 5 and r.error_code == 0:
            answers[-1]["Configs"] = _created_configs(served, listener, asked[r.name])
        if r.error_code == 0 and not validate_only:
            own = tuple((c.name, c.value or "") for c in asked[r.name].configs)
            placed = tuple(a.broker_ids for a in sorted(asked[r.name].assignments, key=lambda a: a.partition_index))
            made.setdefault((r.num_partitions, r.replication_factor, own, placed), []).append(r.name)
    steps = list(made.items())
    if len(steps) > 1:  # (steps of their own would each draw the placement afresh: recorded as placed)
        steps = [((partitions, rf, own, placed or _placement(served, name)), [name])
                 for (partitions, rf, own, placed), names in steps for name in names]
    for (partitions, rf, own, placed), names in steps:
        record_created(served, names, partitions, rf, dict(own), at, placed)
    return {"Topics": answers}


def _placement(served: ServedCluster, topic: str) -> tuple[tuple[int, ...], ...]:
    """The replicas by partition the active controller gave a topic it just created."""
    leader = served.sim.leader()
    image = served.sim.image(leader) if leader is not None else None
    found = image.topics.get_topic_by_name(topic) if image is not None else None
    return () if found is None else tuple(tuple(p.replicas) for _, p in found.sorted_partitions())


def record_created(served: ServedCluster, names: list[str], partitions: int, replication_factor: int,
                   configs: Mapping[str, str], at: int, assignments: tuple[tuple[int, ...], ...] = ()) -> None:
    """The `create-topics` step of topics the controller created (with their own configs and
    replica assignments: a replay makes the same records)."""
    served.record("create-topics", {"names": names, "partitions": partitions, "replication_factor": replication_factor,
                                    "configs": dict(configs) or None,
                                    "assignments": [list(a) for a in assignments] or None}, at)


def _created_configs(served: ServedCluster, listener: Listener, topic: CreatableTopic) -> list[Body]:
    """A created topic's configs as the active controller answers them (CreateTopics v5 on):
    every config of its release, by name, with the topic's own values as given and the others
    from the controller's dynamic broker configs or the release's defaults."""
    leader = served.sim.known_leader(listener.node_id)
    node = served.sim.running_node(leader) if leader is not None else None
    controller = leader if leader is not None and node is not None else listener.node_id
    release = node.state.release if node is not None else release_of(served, listener)
    image = served.sim.image(controller) or served.sim.image(listener.node_id)
    held = image.configs if image is not None else None
    configs = created_topic_configs(release, {c.name: c.value or "" for c in topic.configs},
                                    held.config(BROKER_RESOURCE, str(controller)) if held is not None else {},
                                    held.config(BROKER_RESOURCE, "") if held is not None else {})
    return [{"Name": name, "Value": value, "ReadOnly": False, "ConfigSource": source, "IsSensitive": False}
            for name, value, source in configs]


def create_partitions(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, Any]) -> Body:
    """CreatePartitions (`kafka-topics --alter --partitions`): one answer per topic of the request."""
    topics = [CreatePartitionsTopic(t["Name"], int(t["Count"]),
                                    None if t.get("Assignments") is None
                                    else tuple(tuple(a["BrokerIds"]) for a in t["Assignments"]))
              for t in body.get("Topics") or []]
    validate_only = bool(body.get("ValidateOnly", False))
    if not topics:
        return {"Results": []}
    at = served.sim.now_ms
    result = ask_controller(served, listener, lambda: served.sim.send_create_partitions(topics, validate_only))
    if isinstance(result, tuple):
        return {"Results": [{"Name": t.name, "ErrorCode": code(result[0]), "ErrorMessage": result[1]} for t in topics]}
    grown: dict[tuple[int, tuple[tuple[int, ...], ...] | None], list[str]] = {}
    asked = {t.name: t for t in topics}
    for r in result.response.results:
        if r.error_code == 0 and not validate_only:
            t = asked[r.name]
            grown.setdefault((t.count, t.assignments), []).append(r.name)
    for (count, assignments), names in grown.items():
        served.record("create-partitions", {"names": names, "count": count,
                                            "assignments": None if assignments is None else [list(a) for a in assignments]},
                      at)
    return {"Results": [{"Name": r.name, "ErrorCode": r.error_code, "ErrorMessage": r.error_message}
                        for r in result.response.results]}


def delete_topics(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, Any]) -> Body:
    names = list(body.get("TopicNames") or []) + [t["Name"] for t in body.get("Topics") or [] if t.get("Name")]
    if not names:
        return {"Responses": []}
    at = served.sim.now_ms
    result = ask_controller(served, listener, lambda: served.sim.send_delete_topics(names))
    if isinstance(result, tuple):
        return {"Responses": [{"Name": n, "ErrorCode": code(result[0]), "ErrorMessage": result[1]} for n in names]}
    answers = [{"Name": r.name, "TopicId": r.topic_id, "ErrorCode": r.error_code, "ErrorMessage": r.error_message}
               for r in result.response.responses]
    gone = [r.name for r in result.response.responses if r.error_code == 0 and r.name]
    if gone:
        served.record("delete-topics", {"names": gone}, at)
    return {"Responses": answers}


def elect_leaders(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, Any]) -> Body:
    """ElectLeaders (`kafka-leader-election`): the controller's answer per partition. A request
    the controller could not be asked, or refused whole, is answered as Kafka's error response
    is: the error at the top (from v1) and for every partition asked for. One that names more
    than MAX_ELECTION_PARTITIONS is not carried out (kraftsim's bound on a hostile request)."""
    asked = body.get("TopicPartitions")
    if asked is not None and sum(len(t["Partitions"]) for t in asked) > MAX_ELECTION_PARTITIONS:
        raise NotCarriedOut(f"ElectLeaders naming more than {MAX_ELECTION_PARTITIONS:,} partitions")
    wanted = None if asked is None else tuple(TopicPartitions(t["Topic"], tuple(t["Partitions"])) for t in asked)
    request = ElectLeadersRequest(int(body.get("ElectionType", 0)) if version >= 1 else 0, wanted)
    at = served.sim.now_ms
    result = ask_controller(served, listener, lambda: served.sim.send_elect_leaders(request))
    if isinstance(result, tuple):
        err, text = code(result[0]), result[1]
        answer: Body = {"ReplicaElectionResults": [
            {"Topic": t.topic, "PartitionResult": [{"PartitionId": p, "ErrorCode": err, "ErrorMessage": text}
                                                   for p in t.partitions]} for t in wanted or ()]}
        return {**answer, "ErrorCode": err} if version >= 1 else answer
    elected: dict[str, list[int]] = {}
    results = []
    for t in result.response.replica_election_results:
        results.append({"Topic": t.topic, "PartitionResult": [
            {"PartitionId": p.partition_id, "ErrorCode": p.error_code, "ErrorMessage": p.error_message}
            for p in t.partition_result]})
        done = [p.partition_id for p in t.partition_result if p.error_code == 0]
        if done:
            elected.setdefault(t.topic, []).extend(done)
    if elected:  # (what was elected, named: the step elects the same partitions again on replay)
        served.record("elect-leaders", {"election_type": ELECTION_TYPE_NAMES[request.election_type],
                                        "partitions": elected}, at)
    return {"ErrorCode": 0, "ReplicaElectionResults": results}


def unregister_broker(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, Any]) -> Body:
    """UnregisterBroker (`kafka-cluster unregister`): the controller's answer, or why it could not be asked."""
    broker_id = int(body.get("BrokerId", -1))
    refused = refusal(served, listener)
    if refused is not None:
        return {"ErrorCode": code(refused[0]), "ErrorMessage": refused[1]}
    at = served.sim.now_ms
    result = served.sim.send_unregister_broker(broker_id)
    served.anchor()
    if result is None:
        return {"ErrorCode": code("REQUEST_TIMED_OUT")}
    if not result.ok:
        return {"ErrorCode": code(result.error.name), "ErrorMessage": _unregister_text(served, result.error.message)}
    served.record("unregister-broker", {"id": broker_id}, at)
    return {"ErrorCode": 0}


#: Kafka's broker defaults for an auto-created topic (num.partitions, default.replication.factor).
AUTO_CREATE_PARTITIONS, AUTO_CREATE_REPLICATION_FACTOR = 1, 1


def metadata(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, object]) -> Body:
    """Metadata with Kafka's automatic topic creation: a broker asked for topics it does not
    know, by a request that allows it (always before v4, AllowAutoTopicCreation from v4) and
    with auto.create.topics.enable (true by default; `ServedCluster.auto_create_topics`),
    forwards CreateTopics for the legal names to the active controller (num.partitions 1,
    default.replication.factor 1) and answers this request without them: the topic is
    UNKNOWN_TOPIC_OR_PARTITION now and there on the next request, as measured on live 3.7.2 and
    4.4.0 nodes; an illegal name is INVALID_TOPIC_EXCEPTION."""
    allowed = version < 4 or bool(body.get("AllowAutoTopicCreation", True))
    creating = allowed and served.auto_create_topics and listener.role != CONTROLLER and body.get("Topics") is not None
    answer = metadata_of_image(served, listener, version, body, auto_creating=creating)
    if not creating:
        return answer
    # (an illegal name is INVALID_TOPIC_EXCEPTION already: the unknown names are legal)
    legal = [t["Name"] for t in answer["Topics"] if t["ErrorCode"] == code("UNKNOWN_TOPIC_OR_PARTITION") and t["Name"]]
    if legal and refusal(served, listener) is None:
        at = served.sim.now_ms
        result = served.sim.send_create_topics([CreatableTopic(name=n, num_partitions=AUTO_CREATE_PARTITIONS,
                                                               replication_factor=AUTO_CREATE_REPLICATION_FACTOR)
                                                for n in legal])
        served.anchor()
        made = [r.name for r in result.response.topics if r.error_code == 0] if result and result.response else []
        if made:
            record_created(served, made, AUTO_CREATE_PARTITIONS, AUTO_CREATE_REPLICATION_FACTOR, {}, at)
    return answer


def _unregister_text(served: ServedCluster, text: str | None) -> str | None:
    """The ErrorMessage of a refused UnregisterBroker as the active controller's release writes
    it: up to 4.0 its ControllerApis sets only the error code (the message stays "", its
    default: measured on a live 3.7.2 node, and seen in the 3.9.1 and 4.0.2 jars); from 4.1 the
    controller's text goes with it (live 4.4.0: "Broker ID 42 is not currently registered")."""
    leader = served.sim.leader()
    node = served.sim.running_node(leader) if leader is not None else None
    found = re.match(r"(\d+)\.(\d+)", node.state.release) if node is not None else None
    if found is not None and (int(found.group(1)), int(found.group(2))) < (4, 1):
        return ""
    return text


HANDLERS: dict[int, Handler] = {METADATA_KEY: metadata, UPDATE_FEATURES_KEY: update_features, CREATE_TOPICS_KEY: create_topics,
                                DELETE_TOPICS_KEY: delete_topics, UNREGISTER_BROKER_KEY: unregister_broker,
                                CREATE_PARTITIONS_KEY: create_partitions, ELECT_LEADERS_KEY: elect_leaders}
