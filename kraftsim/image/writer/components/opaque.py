"""Records of types the image does not model: carried as read when the catalog has no gate
for their type, else written at the metadata.version's record version or lost below it."""

from __future__ import annotations

from typing import Iterator

from kraftsim.image.components.opaque import OpaqueImage, key_text
from kraftsim.image.writer.loss import unwritable_record_type
from kraftsim.image.writer.target import WriteTarget
from kraftsim.protocol.entries import Payload


def write(opaque: OpaqueImage, target: WriteTarget) -> Iterator[Payload]:
    if not opaque.records:
        return
    cat = target.catalog
    known = set(cat.record_types(cat.latest_testing))
    writable = set(cat.record_types(target.mv))
    for key, rec in opaque.sorted_records():
        name = rec.record_type.name
        if name not in known:  # no gate in the catalog: carried as read
            yield Payload(rec.record_type, rec.version, rec.message)
        elif name in writable:
            yield Payload(rec.record_type, cat.record_version(name, target.mv), rec.message)
        else:
            target.lose(unwritable_record_type(name), key_text(key, rec), ("opaque", key))
