"""ListClientMetricsResources (api key 74, KIP-714; ListConfigResources from 4.1, KIP-1142):
the client-metrics subscriptions a broker knows, as `kafka-client-metrics --list` and
`--describe` without `--name` ask for them.

A broker lists the subscriptions of its ClientMetricsManager: those its metadata holds configs
for, in the order of its ConcurrentHashMap of them (kraftsim.controller.client_metrics_list_order;
where that order depends on the order the broker learnt them in, the request is not carried
out). v1 (4.1 on) asks for resource types; kraftsim answers a request for client-metrics
subscriptions only, and leaves the rest (topics, brokers, loggers, groups, or every type when
none is named) not carried out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kraftsim.controller import client_metrics_list_order
from kraftsim.image import CLIENT_METRICS
from kraftsim.wire.handlers import Body, Handler, NotCarriedOut
from kraftsim.wire.served import Listener, ServedCluster

LIST_CONFIG_RESOURCES_KEY = 74


def list_config_resources(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, Any]) -> Body:
    types = [int(t) for t in body.get("ResourceTypes") or []]
    if version >= 1 and types != [CLIENT_METRICS]:
        raise NotCarriedOut("ListConfigResources of resource types other than CLIENT_METRICS alone")
    image = served.sim.image(listener.node_id)
    names = [name for (rtype, name), _ in image.configs.sorted_resources() if rtype == CLIENT_METRICS] \
        if image is not None else []
    ordered = client_metrics_list_order(names)
    if ordered is None:
        raise NotCarriedOut("ListClientMetricsResources of subscriptions whose order depends on the order the broker "
                            "learnt them in")
    return {"ErrorCode": 0, "ConfigResources": [{"ResourceName": n, "ResourceType": CLIENT_METRICS} for n in ordered]}


HANDLERS: dict[int, Handler] = {LIST_CONFIG_RESOURCES_KEY: list_config_resources}
