"""KIP-778 metadata.version changes: the image rewritten at the new metadata.version.

KIP-778 designs an MV change as "snapshot the state before the change, then carry on from
the state written at the new MV": an upgrade or a lossless downgrade changes nothing but
the version, a downgrade across a level whose didMetadataChange flag is set drops what
the lower level cannot represent. Kafka 4.x does none of this (it refuses lossy downgrades
and forces no snapshot); kraftsim offers it as the loader's `MvChangeHandling.KIP_778`.

The rewrite costs what the change touches, not the size of the image. A component is
rewritten only when the change opens or closes a gate that component's part of the writer
uses (`writer_components.toml`): one of its record types becomes writable at another
version or not at all, or one of its capabilities switches. Everything else is carried
over as the very same objects; a lossless change rewrites only the features. Inside a
rewritten component, entities that come out equal are kept as the old objects, so the
new image still shares structure with the old one.

The rewrite of a component *is* the image writer's output replayed (`write_image` of the
component at the new MV, with a LossReport), so it drops exactly what a full snapshot at
that MV would drop; tests check both against each other.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

import msgspec

from kraftsim.image.delta import MetadataDelta
from kraftsim.image.image import COMPONENTS, EMPTY_IMAGE, MetadataImage
from kraftsim.image.writer.loss import LossHandler, LossReport
from kraftsim.image.pmap import DELETE, MISSING, PMap
from kraftsim.image.writer.image_writer import WriterLine, iter_image_records
from kraftsim.protocol.registry import Registry
from kraftsim.versions import Catalog, MetadataVersion, MVLike, VersionsError, default_catalog


@dataclass(frozen=True)
class ComponentGates:
    """The writer's gates for one image component."""

    records: tuple[str, ...] = ()
    capabilities: tuple[str, ...] = ()
    any_record: bool = False


@lru_cache(maxsize=1)
def writer_components() -> dict[str, ComponentGates]:
    """The component table shipped in `writer_components.toml`, in image component order."""
    text = resources.files("kraftsim.image.writer").joinpath("writer_components.toml").read_text(encoding="utf-8")
    table = tomllib.loads(text)["components"]
    unknown = set(table) - set(COMPONENTS)
    missing = set(COMPONENTS) - set(table)
    if unknown or missing:
        raise AssertionError(f"writer_components.toml: unknown {sorted(unknown)}, missing {sorted(missing)}")
    return {name: ComponentGates(tuple(table[name].get("records", ())), tuple(table[name].get("capabilities", ())),
                                 bool(table[name].get("any_record", False))) for name in COMPONENTS}


@dataclass
class MetadataVersionChange:
    """One metadata.version change as the KIP-778 loader carried it out.

    `via` is the lowest level passed on the way when it is below both ends (a downgrade
    and an upgrade inside one metadata transaction): the loss happened there.
    """

    old_level: int
    new_level: int
    losses: LossReport = field(default_factory=LossReport)
    components: tuple[str, ...] = ()  # components the rewrite touched
    via: int | None = None
    elapsed_ns: int = 0

    def is_upgrade(self) -> bool:
        return self.old_level < self.new_level

    def is_downgrade(self) -> bool:
        return self.new_level < self.old_level

    @property
    def lossless(self) -> bool:
        return self.losses.lossless

    def text(self, catalog: Catalog | None = None) -> str:
        """Kafka's MetadataVersionChangeException message, with version strings when a catalog is given."""
        def name(level: int) -> str:
            return str(catalog.mv_from_level(level)) if catalog is not None else str(level)
        return f"The metadata.version is changing from {name(self.old_level)} to {name(self.new_level)}"


def _record_version(catalog: Catalog, record: str, mv: MetadataVersion) -> int | None:
    try:
        return catalog.record_version(record, mv)
    except VersionsError:
        return None


def affected_components(catalog: Catalog, source: MVLike, target: MVLike,
                        image: MetadataImage | None = None) -> tuple[str, ...]:
    """Components whose written form can differ between `source` and `target` (writer order).

    The features always change (they hold the version). Going up, nothing else can: gates
    only open with higher levels, so whatever `source` represents, `target` does too. With
    an image, empty components are left out: nothing in them can change.
    """
    src, tgt = catalog.metadata_version(source), catalog.metadata_version(target)
    if tgt.level >= src.level:
        return ("features",)
    out = []
    for name, gates in writer_components().items():
        if image is not None and name != "features" and getattr(image, name).is_empty():
            continue
        if name == "features" or gates.any_record:
            out.append(name)
            continue
        if any(_record_version(catalog, r, src) != _record_version(catalog, r, tgt) for r in gates.records) or any(
                catalog.supports(c, src) != catalog.supports(c, tgt) for c in gates.capabilities):
            out.append(name)
    return tuple(out)


def _merge(old: object, new: object) -> object:
    """`new`, but sharing every entity of `old` that came out equal (persistent maps are updated, not replaced)."""
    if old == new:
        return old
    if not isinstance(old, msgspec.Struct):
        return new
    fields: dict[str, object] = {}
    for f in old.__struct_fields__:
        a, b = getattr(old, f), getattr(new, f)
        if isinstance(a, PMap) and isinstance(b, PMap):
            changes = {k: (DELETE if w is MISSING else w) for k, _, w in a.diff(b)}
            fields[f] = a.update(changes)
        else:
            fields[f] = a if a == b else b
    return msgspec.structs.replace(old, **fields)


def rewrite_at_metadata_version(image: MetadataImage, target: MVLike, catalog: Catalog | None = None, *,
                                source: MVLike | None = None, loss_handler: LossHandler | None = None,
                                writer_line: WriterLine | str | None = None,
                                registry: Registry | None = None) -> tuple[MetadataImage, tuple[str, ...]]:
    """`image` as it reads back after being written at `target`; returns (image, components rewritten).

    `source` is the level the image is representable at (default: its own MV), which
    decides what can change. Every dropped item goes to `loss_handler` (default: a
    LossReport that is thrown away; pass your own to keep it, or `raise_on_loss` for
    Kafka's writer behaviour). The provenance is kept.
    """
    cat = catalog if catalog is not None else default_catalog()
    tgt = cat.metadata_version(target)
    src_level = image.metadata_version if source is None else cat.metadata_version(source).level
    handler = loss_handler if loss_handler is not None else LossReport()
    if src_level is None:
        comps = tuple(c for c in COMPONENTS if c == "features" or not getattr(image, c).is_empty())
    else:
        comps = affected_components(cat, src_level, tgt, image)
    partial = MetadataImage(features=image.features, **{c: getattr(image, c) for c in comps if c != "features"})
    delta = MetadataDelta(EMPTY_IMAGE, cat)
    delta.replay_all(iter_image_records(partial, tgt, cat, loss_handler=handler, writer_line=writer_line,
                                        registry=registry))
    rebuilt = delta.apply()
    replaced = {c: _merge(getattr(image, c), getattr(rebuilt, c)) for c in comps}
    return msgspec.structs.replace(image, **replaced), comps
