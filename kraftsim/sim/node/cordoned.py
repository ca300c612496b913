"""What a broker's heartbeat reports as cordoned (KIP-1066, Kafka 4.3): the log directories
its dynamic `cordoned.log.dirs` names, read from the broker's own metadata image (a
kafka-configs change reaches the broker as a ConfigRecord, and its next heartbeat tells
the controller, which writes a BrokerRegistrationChangeRecord)."""

from __future__ import annotations

from kraftsim.controller import configured_cordoned_dirs, cordoned_by_config
from kraftsim.protocol.primitives import Uuid
from kraftsim.sim.node.simnode import SimNode


def cordoned_report(node: SimNode) -> tuple[Uuid, ...] | None:
    """The directories to report; None from software without cordoning (before 4.3)."""
    if not node.catalog.supports("cordoned_log_dirs", node.catalog.latest_testing):
        return None
    image, directory_id = node.image, node.directory_id()
    if image is None or directory_id is None:
        return ()
    value = configured_cordoned_dirs(image.configs, node.id)
    return cordoned_by_config(value, [(str(node.directory), directory_id)])
