"""Controller operations of Kafka 4.3/4.4 against a simulated cluster, as an admin client
sends them (the scenario ops and the CLI share these):

- a broker's dynamic config, as `kafka-configs --alter --entity-type brokers` sets it
  (IncrementalAlterConfigs): `cordoned.log.dirs` is how Kafka cordons log directories
  (KIP-1066); the broker then reports them in its heartbeats;
- controller unregistration (KIP-1312, 4.4): UnregisterControllerRecord;
- ACL bindings, as `kafka-acls --add` creates them (CreateAcls), CIDR hosts included
  (KIP-1276, 4.4).

Each is answered by the active controller once its records are committed (or refused with
Kafka's text, raised as a SimError). The lines returned are what the tools print.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kraftsim.controller.acls import AclCreation, CreateAclsRequest, acl_codes, create_acls
from kraftsim.controller.cluster_control import unregister_controller as unregister_rule
from kraftsim.controller.configs import (
    OP_DELETE,
    OP_SET,
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
    incremental_alter_configs,
)
from kraftsim.image import BROKER
from kraftsim.sim.types import SimError

if TYPE_CHECKING:
    from kraftsim.sim.simulation import Simulation


def alter_broker_config(sim: Simulation, broker: int | None, set_configs: dict[str, str],
                        delete_configs: Sequence[str] = ()) -> list[str]:
    """`kafka-configs --alter --entity-type brokers [--entity-name N | --entity-default]`:
    set and delete dynamic broker configs; None: the cluster-wide default."""
    name = "" if broker is None else str(broker)
    ops = [AlterableConfig(k, OP_SET, v) for k, v in sorted(set_configs.items())]
    ops += [AlterableConfig(k, OP_DELETE) for k in sorted(delete_configs)]
    request = IncrementalAlterConfigsRequest((AlterConfigsResource(BROKER, name, tuple(ops)),))
    result = sim._controller_call(lambda ctx: incremental_alter_configs(ctx, request))
    sim._finish_op("alter-configs")
    answer = result.response.responses[0]
    if answer.error_code != 0:
        raise SimError(answer.error_message or f"IncrementalAlterConfigs failed with error code {answer.error_code}")
    entity = "default broker" if broker is None else f"broker {broker}"
    return [f"Completed updating config for {entity}."]


def unregister_controller(sim: Simulation, controller_id: int) -> list[str]:
    """Controller unregistration (KIP-1312): refused below 4.4-IV2 and for an unknown id."""
    sim._controller_call(lambda ctx: unregister_rule(ctx, controller_id))
    sim._finish_op("unregister-controller")
    return [f"Unregistered controller {controller_id}."]


def unregister_broker(sim: Simulation, broker_id: int) -> list[str]:
    """`kafka-cluster unregister --id N`: the broker's registration is removed (it registers
    again if it still runs); refused with the controller's text for an unknown id."""
    result = sim.send_unregister_broker(broker_id)
    if result is None:
        raise SimError("Timed out waiting for a node assignment: no active controller committed the request")
    if not result.ok:
        raise SimError(result.error.message or result.error.name)
    return [f"Broker {broker_id} is no longer registered."]


def _code(table: str, name: str, what: str) -> int:
    codes = {v: k for k, v in acl_codes()[table].items()}
    key = name.upper().replace("-", "_")
    if key not in codes:
        raise SimError(f"unknown {what} {name!r}; one of {', '.join(sorted(codes))}")
    return codes[key]


def create_acl(sim: Simulation, *, principal: str, host: str, operation: str, resource_type: str,
               resource_name: str, pattern_type: str = "literal", permission: str = "allow") -> list[str]:
    """`kafka-acls --add`: one ACL binding (CreateAcls), refused with the controller's text."""
    creation = AclCreation(resource_type=_code("resource_type", resource_type, "resource type"),
                           resource_name=resource_name,
                           resource_pattern_type=_code("pattern_type", pattern_type, "pattern type"),
                           principal=principal, host=host,
                           operation=_code("operation", operation, "operation"),
                           permission_type=_code("permission_type", permission, "permission type"))
    image = sim.engine.controller.image if sim.engine.controller is not None else None
    seed = sim.seed * 1_000_003 + (0 if image is None else len(image.acls.acls))
    result = sim._controller_call(lambda ctx: create_acls(ctx, CreateAclsRequest((creation,), seed=seed)))
    sim._finish_op("create-acls")
    answer = result.response.results[0]
    if answer.error_code != 0:
        raise SimError(answer.error_message or f"CreateAcls failed with error code {answer.error_code}")
    return [f"Added ACL: {permission.upper()} {principal} from host {host} {operation.upper()} on "
            f"{resource_type.upper()}:{pattern_type.upper()}:{resource_name}"]
