"""The server.properties a served node presents: what a broker describes as its
STATIC_BROKER_CONFIG values when asked for its every config (DescribeConfigs of its own id).

A simulated node has no server.properties file; it presents the configs any KRaft node of its
shape necessarily runs with, written as they are served, and the server configs kraftsim
simulates for it (`Simulation.node_configs`, storage.server_config.NODE_CONFIGS):

- `process.roles` (`broker`, `controller`, or `broker,controller` for a combined node) and
  `node.id`;
- `controller.quorum.voters` (`id@host:port` of every controller, by id) or, for a dynamic
  quorum (KIP-853), `controller.quorum.bootstrap.servers` (their host:port);
- `listeners` (`PLAINTEXT://host:port` and `CONTROLLER://host:port`, the served ports, the
  broker's first), for a broker `advertised.listeners` (its PLAINTEXT one) and
  `inter.broker.listener.name=PLAINTEXT`, `controller.listener.names=CONTROLLER` and
  `listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT`;
- `log.dirs`: the node's directory in the cluster directory;
- for a broker served with `--no-auto-create-topics`, `auto.create.topics.enable=false`.
"""

from __future__ import annotations

from kraftsim.wire.served import BROKER, CONTROLLER, LISTENER_NAMES, Listener, ServedCluster


def node_properties(served: ServedCluster, node_id: int) -> dict[str, str]:
    """What node `node_id` of `served` presents as its server.properties (see the module
    docstring), in the order a server.properties would list them."""
    roles = next(n.roles for n in served.sim.nodes() if n.id == node_id)
    controllers = [n.id for n in served.sim.nodes() if CONTROLLER in n.roles]
    props = {"process.roles": ",".join(r for r in (BROKER, CONTROLLER) if r in roles), "node.id": str(node_id)}
    if served.sim.kraft_version >= 1:
        props["controller.quorum.bootstrap.servers"] = ",".join(
            served.address(Listener(c, CONTROLLER)) for c in controllers if Listener(c, CONTROLLER) in served.ports)
    else:
        props["controller.quorum.voters"] = ",".join(
            f"{c}@{served.address(Listener(c, CONTROLLER))}" for c in controllers if Listener(c, CONTROLLER) in served.ports)
    own = [Listener(node_id, r) for r in (BROKER, CONTROLLER) if r in roles and Listener(node_id, r) in served.ports]
    props["listeners"] = ",".join(f"{LISTENER_NAMES[x.role]}://{served.address(x)}" for x in own)
    if BROKER in roles:
        props["advertised.listeners"] = f"{LISTENER_NAMES[BROKER]}://{served.address(Listener(node_id, BROKER))}"
    props["controller.listener.names"] = LISTENER_NAMES[CONTROLLER]
    if BROKER in roles:
        props["inter.broker.listener.name"] = LISTENER_NAMES[BROKER]
    props["listener.security.protocol.map"] = ",".join(f"{name}:PLAINTEXT" for name in LISTENER_NAMES.values())
    props["log.dirs"] = str(served.sim.log_dir(node_id).parent)
    props.update(served.sim.node_configs(node_id))
    if BROKER in roles and not served.auto_create_topics:
        props["auto.create.topics.enable"] = "false"
    return props
