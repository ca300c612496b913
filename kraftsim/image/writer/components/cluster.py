"""ClusterImage.write: brokers, then controllers, in Kafka's order, each registration's
listeners and features in the order Kafka's maps hold them."""

from __future__ import annotations

from functools import partial
from typing import Callable, Iterator, Protocol, TypeVar

from kraftsim.image.components.cluster import BrokerRegistration, ClusterImage, ControllerRegistration
from kraftsim.image.writer.kafka_order import (
    broker_feature_order, broker_listener_order, controller_list_order, node_id_order,
)
from kraftsim.image.writer.loss import (
    BROKER_CORDONED_LOG_DIRS, BROKER_IN_CONTROLLED_SHUTDOWN, BROKER_LOG_DIRS, BROKER_MIGRATING_ZK,
    CONTROLLER_REGISTRATION, LossRule,
)
from kraftsim.image.writer.target import WriteTarget
from kraftsim.protocol.entries import Payload

#: A broker registration's fields that only some metadata.versions can write:
#: (image attribute, record field, what losing it is).
BROKER_OPTIONAL: tuple[tuple[str, str, LossRule], ...] = (
    ("in_controlled_shutdown", "in_controlled_shutdown", BROKER_IN_CONTROLLED_SHUTDOWN),
    ("is_migrating_zk_broker", "is_migrating_zk_broker", BROKER_MIGRATING_ZK),
    ("directories", "log_dirs", BROKER_LOG_DIRS),
)


def write(cluster: ClusterImage, target: WriteTarget) -> Iterator[Payload]:
    if cluster.brokers:
        yield from _brokers(cluster, target)
    if cluster.controllers:
        yield from _controllers(cluster, target)


def _brokers(cluster: ClusterImage, target: WriteTarget) -> Iterator[Payload]:
    rb, rbv = target.record("RegisterBrokerRecord")
    ep_cls, feat_cls = rb.nested["BrokerEndpoint"], rb.nested["BrokerFeature"]
    broker_features = partial(broker_feature_order, rehashed=target.line.broker_features_rehashed)
    optional = [(attr, field, target.holds(rule), rule) for attr, field, rule in BROKER_OPTIONAL]
    cordon_ok = target.holds(BROKER_CORDONED_LOG_DIRS)
    for b in (cluster.brokers[i] for i in node_id_order(cluster.brokers.keys())):
        fields: dict[str, object] = {}
        for attr, field, ok, rule in optional:
            value = getattr(b, attr)
            if not value:
                continue
            if ok:
                fields[field] = list(value) if field == "log_dirs" else True
            else:
                target.lose(rule, f"broker {b.id}", ("cluster", "brokers", b.id, attr))
        # CordonedLogDirs (4.3-IV0): null and [] are kept apart so Kafka's records read back byte
        # for byte; an empty list says nothing a reader would miss at an older metadata.version
        if b.cordoned_directories is not None:
            if cordon_ok:
                fields["cordoned_log_dirs"] = list(b.cordoned_directories)
            elif b.cordoned_directories:
                target.lose(BROKER_CORDONED_LOG_DIRS, f"broker {b.id}",
                            ("cluster", "brokers", b.id, "cordoned_directories"))
        yield Payload(rb, rbv, rb.cls(
            broker_id=b.id, incarnation_id=b.incarnation_id, broker_epoch=b.epoch, rack=b.rack, fenced=b.fenced,
            **_registration_lists(b, ep_cls, feat_cls, broker_listener_order, broker_features), **fields))


def _controllers(cluster: ClusterImage, target: WriteTarget) -> Iterator[Payload]:
    if not target.holds(CONTROLLER_REGISTRATION):
        for c in cluster.sorted_controllers():
            target.lose(CONTROLLER_REGISTRATION, f"controller {c.id}", ("cluster", "controllers", c.id))
        return
    rc, rcv = target.record("RegisterControllerRecord")
    cep, cfeat = rc.nested["ControllerEndpoint"], rc.nested["ControllerFeature"]
    for c in (cluster.controllers[i] for i in node_id_order(cluster.controllers.keys())):
        yield Payload(rc, rcv, rc.cls(
            controller_id=c.id, incarnation_id=c.incarnation_id, zk_migration_ready=c.zk_migration_ready,
            **_registration_lists(c, cep, cfeat, controller_list_order, controller_list_order)))



class _Named(Protocol):
    @property
    def name(self) -> str: ...


_N = TypeVar("_N", bound=_Named)

def _in_order(items: tuple[_N, ...], order: Callable[[list[str]], list[str]]) -> list[_N]:
    """A registration's listeners or features (record order) in the order Kafka writes them."""
    by_name = {x.name: x for x in items}
    return [by_name[n] for n in order([x.name for x in items])]


def _registration_lists(reg: BrokerRegistration | ControllerRegistration, endpoint: type, feature: type, listener_order: Callable[[list[str]], list[str]],
                        feature_order: Callable[[list[str]], list[str]]) -> dict[str, list[object]]:
    """A registration record's `end_points` and `features`, in the order Kafka writes them."""
    return {
        "end_points": [endpoint(name=e.name, host=e.host, port=e.port, security_protocol=e.security_protocol)
                       for e in _in_order(reg.listeners, listener_order)],
        "features": [feature(name=f.name, min_supported_version=f.min_version, max_supported_version=f.max_version)
                     for f in _in_order(reg.supported_features, feature_order)],
    }
