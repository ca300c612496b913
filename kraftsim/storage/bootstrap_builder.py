"""The bootstrap records a format writes (metadata.version and feature levels) and Kafka's
toString of them (BootstrapMetadata, ApiMessageAndVersion), which the tool prints."""

from __future__ import annotations

import random
from typing import Any, Mapping, Sequence

from kraftsim.protocol.entries import Payload
from kraftsim.protocol.primitives import Uuid
from kraftsim.protocol.registry import Registry, default_registry
from kraftsim.protocol.schema import FieldSpec, StructSpec
from kraftsim.storage.format_common import (
    KRAFT_VERSION,
    FormatterError,
    release_text,
)
from kraftsim.storage.scram_parser import scram_record
from kraftsim.versions import Catalog, MetadataVersion
from kraftsim.versions import FEATURE_NAME as MV_NAME

# ------------------------------------------------------------------------------ Kafka's toString


def _java_value(f: FieldSpec, value: Any, elem: bool = False) -> str:
    """One field value as Kafka's generated message toString prints it."""
    if f.is_array and not elem:
        if value is None:
            return "null"
        return "[" + ", ".join(_java_value(f, v, elem=True) for v in value) + "]"  # MessageUtil.deepToString
    if value is None:
        return "null"
    if f.struct is not None:
        return java_struct_string(f.struct, value)
    t = f.element_type
    if t == "string":
        return value if elem else f"'{value}'"
    if t == "bool":
        return "true" if value else "false"
    if t == "bytes":
        return "[" + ", ".join(str(b - 256 if b > 127 else b) for b in value) + "]"  # Arrays.toString(byte[])
    if t == "uuid":
        return str(Uuid(value))
    return str(value)


def java_struct_string(spec: StructSpec, message: Any) -> str:
    """Kafka's generated toString: `Name(field=value, ...)`, every field, camelCase names."""
    parts = [f"{f.json_name}={_java_value(f, getattr(message, f.py_name))}" for f in spec.fields]
    return f"{spec.name}(" + ", ".join(parts) + ")"


def api_message_and_version_string(p: Payload) -> str:
    """`ApiMessageAndVersion(<message> at version <n>)`."""
    return f"ApiMessageAndVersion({java_struct_string(p.record_type.schema.body, p.message)} at version {p.version})"


def bootstrap_metadata_string(records: Sequence[Payload], metadata_version_level: int, source: str) -> str:
    """BootstrapMetadata.toString, as `kafka-storage format` prints it after "Bootstrap metadata: "."""
    recs = "[" + ", ".join(api_message_and_version_string(p) for p in records) + "]"
    return f"BootstrapMetadata(records={recs}, metadataVersionLevel={metadata_version_level}, source={source})"


# ------------------------------------------------------------------------------ bootstrap records


def feature_level_payload(name: str, level: int, registry: Registry | None = None) -> Payload:
    rt = (registry or default_registry())["FeatureLevelRecord"]
    return Payload(rt, 0, rt.new(name=name, feature_level=level))


def bootstrap_records(catalog: Catalog, release_version: MetadataVersion, levels: Mapping[str, int],
                      scram_arguments: Sequence[str] = (), *, rng: random.Random | None = None,
                      registry: Registry | None = None) -> list[Payload]:
    """Formatter.calculateBootstrapMetadata: FeatureLevelRecord(metadata.version), the other
    non-zero features but kraft.version sorted by name, then one UserScramCredentialRecord
    per --add-scram (which needs the "scram" capability, 3.5-IV2)."""
    records = [feature_level_payload(MV_NAME, release_version.level, registry)]
    for name in sorted(n for n in levels if n not in (MV_NAME, KRAFT_VERSION)):
        if levels[name] > 0:
            records.append(feature_level_payload(name, levels[name], registry))
    if scram_arguments:
        if not catalog.supports("scram", release_version):
            first = next((mv for mv in catalog.metadata_versions if catalog.supports("scram", mv)), None)
            by_enum = release_text(catalog, "format_flag_checks", "scram")  # 3.7 names the enum constant
            if by_enum is not None and first is not None:
                raise FormatterError(by_enum.format(enum="IBP_" + first.version.replace(".", "_").replace("-", "_")))
            if first is None:  # (kafka-storage of such a release has no --add-scram: kraftsim's words)
                raise FormatterError(f"SCRAM is not supported by Kafka {catalog.release}: no {MV_NAME} of it "
                                     "supports SCRAM (3.5-IV2 is the first that does).")
            raise FormatterError(f"SCRAM is only supported in {MV_NAME} {first} or later.")
        rng = rng or random.SystemRandom()
        records.extend(scram_record(a, rng, registry) for a in scram_arguments)
    return records
