"""ListClientMetricsResources (api key 74, KIP-714; ListConfigResources from 4.1, KIP-1142):
the config resources a broker knows, as `kafka-client-metrics --list`, `kafka-configs --describe
--entity-type groups` and `--entity-type client-metrics` without a name ask for them.

v0 lists client-metrics subscriptions. v1 (4.1 on) asks for resource types, none meaning every
type it supports (groups, client-metrics subscriptions, brokers' loggers, brokers, topics); a
type it does not support fails the request with UNSUPPORTED_VERSION. The answer comes in
KafkaApis' order of types, each type's names in the order of the map that holds them:

- groups: those with dynamic configs, the keys of the GroupConfigManager's ConcurrentHashMap;
- client-metrics subscriptions: the keys of the ClientMetricsManager's ConcurrentHashMap;
- brokers' loggers, then brokers: every registered broker (fenced too), in the order of
  ClusterImage's map of brokers;
- topics: the names of the image's persistent map of topics by name.

The two ConcurrentHashMaps' orders depend on the order the broker learnt their keys in when
two share a bin or when more were held than a map's first 16 bins take: such a request is not
carried out (`concurrent_hash_map_known_order`). A map that once held more keys than it does
now has more bins than kraftsim assumes: not reproduced.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kraftsim.image import BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP, TOPIC, node_id_order
from kraftsim.javacompat import concurrent_hash_map_known_order, hash_pmap_order, string_hash
from kraftsim.wire.handlers import Body, Handler, NotCarriedOut, code
from kraftsim.wire.served import Listener, ServedCluster

LIST_CONFIG_RESOURCES_KEY = 74
#: The resource types each version lists (ListConfigResourcesRequest.supportedResourceTypes).
SUPPORTED_TYPES = {0: (CLIENT_METRICS,), 1: (GROUP, CLIENT_METRICS, BROKER_LOGGER, BROKER, TOPIC)}
#: What a type's entry is called where its order cannot be told.
_MAP_NAMES = {GROUP: "groups with dynamic configs", CLIENT_METRICS: "client-metrics subscriptions"}


def list_config_resources(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, Any]) -> Body:
    supported = SUPPORTED_TYPES[min(version, 1)]
    asked = [int(t) for t in body.get("ResourceTypes") or []] or list(supported)
    if any(t not in supported for t in asked):
        return {"ErrorCode": code("UNSUPPORTED_VERSION"), "ConfigResources": []}
    image = served.sim.image(listener.node_id)
    if image is None:
        return {"ErrorCode": 0, "ConfigResources": []}
    configured: dict[int, list[str]] = {GROUP: [], CLIENT_METRICS: []}
    for (rtype, name), _ in image.configs.sorted_resources():
        if rtype in configured:
            configured[rtype].append(name)
    brokers = [str(b) for b in node_id_order(image.cluster.brokers)]
    resources: list[Body] = []
    for rtype in supported:  # (KafkaApis' order, whatever the request's)
        if rtype not in asked:
            continue
        if rtype in configured:
            names = concurrent_hash_map_known_order(configured[rtype])
            if names is None:
                raise NotCarriedOut(f"ListConfigResources of {_MAP_NAMES[rtype]} whose order depends on the order the "
                                    "broker learnt them in")
        elif rtype == TOPIC:
            names = hash_pmap_order([t.name for t in image.topics.sorted_topics()], string_hash)
        else:
            names = brokers
        resources += [{"ResourceName": n, "ResourceType": rtype} for n in names]
    return {"ErrorCode": 0, "ConfigResources": resources}


HANDLERS: dict[int, Handler] = {LIST_CONFIG_RESOURCES_KEY: list_config_resources}
