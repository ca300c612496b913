"""ConfigurationsImage.write: every resource's configs, resources and keys in the order
Kafka's maps hold them (given the JVM's hash codes; else resources sorted)."""

from __future__ import annotations

from typing import Iterator, Mapping

from kraftsim.errors import KraftsimError
from kraftsim.image.components.configs import ConfigurationsImage
from kraftsim.image.writer.kafka_order import config_key_order, config_resource_order
from kraftsim.image.writer.target import WriteTarget
from kraftsim.protocol.entries import Payload


def write(configs: ConfigurationsImage, target: WriteTarget) -> Iterator[Payload]:
    if not configs.resources:
        return
    cr, crv = target.record("ConfigRecord")
    resources = dict(configs.sorted_resources())
    arrival = list(resources)
    if target.config_type_hashes and target.config_entry_ranks is not None:
        arrival = _in_entry_order(arrival, target.config_entry_ranks)
    for rtype, rname in config_resource_order(arrival, target.config_type_hashes):
        data = resources[rtype, rname]
        for key in config_key_order(list(data)):
            yield Payload(cr, crv, cr.cls(resource_type=rtype, resource_name=rname, name=key, value=data[key]))


def _in_entry_order(resources: list[tuple[int, str]],
                    ranks: Mapping[tuple[int, str], int]) -> list[tuple[int, str]]:
    """Config resources in the order they entered the JVM's map (write_image's config_entry_ranks)."""
    missing = [r for r in resources if r not in ranks]
    if missing:
        raise KraftsimError(f"config_entry_ranks has no rank for config resource {missing[0]} of the image")
    return sorted(resources, key=lambda r: ranks[r])
