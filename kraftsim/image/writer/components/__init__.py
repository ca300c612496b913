"""One writer per image component, as each of Kafka's images writes itself
(FeaturesImage.write, ClusterImage.write, TopicsImage.write, ...).

Each module's `write(component, target)` yields the component's records in Kafka's order
at `target`'s metadata.version and reports through `target` what it cannot hold (the rules
are in writer/loss.py). `WRITERS` names them as `writer_components.toml` and
MetadataImage's fields do; image_writer calls them in MetadataImage's order.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

from kraftsim.image.writer.components import (
    acls, client_quotas, cluster, configs, delegation_tokens, features, opaque, producer_ids, scram, topics,
)
from kraftsim.image.writer.target import WriteTarget
from kraftsim.protocol.entries import Payload

#: component name -> its writer, in Kafka's writing order (MetadataImage.write).
WRITERS: dict[str, Callable[[Any, WriteTarget], Iterator[Payload]]] = {
    "features": features.write,
    "cluster": cluster.write,
    "topics": topics.write,
    "configs": configs.write,
    "client_quotas": client_quotas.write,
    "producer_ids": producer_ids.write,
    "acls": acls.write,
    "scram": scram.write,
    "delegation_tokens": delegation_tokens.write,
    "opaque": opaque.write,
}
