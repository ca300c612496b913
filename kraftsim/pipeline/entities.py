"""A metadata image as rows of the `image_entities` schema: one row per entity.

Entities are named as image diffs name them, so a row can be matched with a line of
`diff_text`; their fields go into a JSON column (uuids as Kafka prints them, bytes as
base64) and the usual keys into typed columns shared with the `records` schema.
"""

from __future__ import annotations

import base64
import json
from typing import Any, Iterator

import msgspec

from kraftsim.image import MetadataImage
from kraftsim.image import resource_type_name
from kraftsim.image import key_text
from kraftsim.image import entity_text
from kraftsim.image import mechanism_name
from kraftsim.pipeline.records import KEY_COLUMNS
from kraftsim.protocol.primitives import Uuid
from kraftsim.versions import FEATURE_NAME as MV_NAME

IMAGE_ENTITIES = "image_entities"

_KEYS = tuple(column for column, _, _ in KEY_COLUMNS)  # the key columns shared with `records`


def _plain(v: Any) -> Any:
    """A value as JSON-ready builtins: Structs as objects, Uuids as Kafka prints them."""
    if isinstance(v, Uuid):
        return str(v)
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(bytes(v)).decode()
    if isinstance(v, msgspec.Struct):
        return {f: _plain(getattr(v, f)) for f in v.__struct_fields__}
    if isinstance(v, (tuple, list)):
        return [_plain(x) for x in v]
    if hasattr(v, "items"):
        return {str(k): _plain(x) for k, x in sorted(v.items(), key=lambda kv: str(kv[0]))}
    return v


def _row(source: str, end_offset: int, mv: int | None, kind: str, entity: str, attributes: object,
         **keys: object) -> dict[str, object]:
    row = {"source": source, "end_offset": end_offset, "metadata_version": mv, "kind": kind, "entity": entity}
    row.update({k: keys.get(k) for k in _KEYS})
    row["attributes"] = json.dumps(_plain(attributes), ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return row


def entity_rows(image: MetadataImage, source: str, end_offset: int) -> Iterator[dict[str, object]]:
    """Every entity of `image`, component by component, each in a deterministic order."""
    mv = image.metadata_version

    def row(kind: str, entity: str, attrs: object, **keys: object) -> dict[str, object]:
        return _row(source, end_offset, mv, kind, entity, attrs, **keys)

    if mv is not None:
        yield row("feature", f"feature {MV_NAME}", {"level": mv}, feature_name=MV_NAME, feature_level=mv)
    for name, level in image.features.finalized:
        yield row("feature", f"feature {name}", {"level": level}, feature_name=name, feature_level=level)
    for b in image.cluster.sorted_brokers():
        yield row("broker", f"broker {b.id}", b, broker_id=b.id)
    for c in image.cluster.sorted_controllers():
        yield row("controller", f"controller {c.id}", c, broker_id=c.id)
    for t in image.topics.sorted_topics():
        tid = str(t.id)
        yield row("topic", f"topic {t.name}", {"name": t.name, "id": tid, "partitions": len(t.partitions)},
                  topic_id=tid, topic_name=t.name)
        for pid, p in t.sorted_partitions():
            yield row("partition", f"topic {t.name} partition {pid}", p, topic_id=tid, topic_name=t.name,
                      partition_id=pid)
    for (rtype, rname), data in image.configs.sorted_resources():
        yield row("config", f"config {resource_type_name(rtype)} {rname}", dict(data),
                  config_resource_type=rtype, config_resource_name=rname)
    for entity, quotas in image.client_quotas.sorted_entities():
        yield row("client_quota", f"client quota {entity_text(entity)}",
                  {"entity": [[t, n] for t, n in entity], "quotas": dict(quotas)})
    if not image.producer_ids.is_empty():
        yield row("producer_ids", "producer ids", {"next_producer_id": image.producer_ids.next_producer_id})
    for aid, acl in image.acls.sorted_acls():
        yield row("acl", f"acl {aid}", {"id": str(aid), **_plain(acl)})
    for (mech, user), cred in image.scram.sorted_credentials():
        yield row("scram_credential", f"scram {mechanism_name(mech)} user {user}",
                  {"mechanism": mech, "user": user, **_plain(cred)})
    for token_id, token in image.delegation_tokens.sorted_tokens():
        yield row("delegation_token", f"delegation token {token_id}", {"token_id": token_id, **_plain(token)})
    for key, rec in image.opaque.sorted_records():
        yield row("record", f"record {key_text(key, rec)}",
                  {"type": rec.type_name, "version": rec.version, "message": _plain(rec.message)})
