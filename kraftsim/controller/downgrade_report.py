"""Would lowering metadata.version lose anything, and what would Kafka's controller say?

Two answers, kept apart because they differ:

- **What the data needs.** The image is written at the target metadata.version with the
  image writer and a loss report, so every item that version cannot represent is listed
  by kind and entity (broker log directories, controller registrations, replica directory
  assignments, ELR fields, SCRAM credentials, delegation tokens, ...), with the summary
  strings Kafka's writer would throw. Also listed:
  what the versions in between change (the catalog's gates), and finalized features whose
  levels need a higher metadata.version.
- **What Kafka says.** The UpdateFeatures request `kafka-features downgrade --metadata MV`
  (and `--unsafe`) sends, decided (validate only) by the feature rules as the active
  controller of the catalog's release would decide it. Kafka refuses any downgrade across
  a metadata.version that changed metadata, whatever the data holds.

It lives here, not in kraftsim.image, because the verdicts need the controller's rules;
`kraftsim downgrade-report` and the demo both call it.
"""

from __future__ import annotations

import msgspec

from kraftsim.controller.context import ControllerContext
from kraftsim.controller.features import (
    KIP_778, FeatureUpdate, UpdateFeaturesRequest, UpgradeType, update_features,
)
from kraftsim.errors import KraftsimError
from kraftsim.image import MetadataImage
from kraftsim.image import LossReport
from kraftsim.image import WriterLine, write_image
from kraftsim.versions import FEATURE_NAME as MV_NAME, Catalog, IllegalArgument, MetadataVersion, MVLike


class LostItem(msgspec.Struct, kw_only=True):
    kind: str
    entity: str
    kafka_summary: str
    kafka_reported: bool  # False: Kafka drops it silently (ELR with the feature off)


class Verdict(msgspec.Struct, kw_only=True):
    """The controller's answer to one UpdateFeatures request (validate only)."""

    upgrade_type: str
    accepted: bool
    error: str | None  # the API error name
    message: str | None  # the controller's message
    tool_line: str  # what `kafka-features ... --dry-run` prints for it


class DowngradeReport(msgspec.Struct, kw_only=True):
    path: str | None
    offset: int  # the image's end offset
    current: str | None
    current_level: int | None
    target: str
    target_level: int
    #: "downgrade", "upgrade", "unchanged", or "none" when no metadata.version is finalized
    #: at `offset` (current is null): there is nothing to change from
    direction: str
    writer: str
    lossless: bool  # nothing in this image would be dropped
    catalog_lossy: bool  # some version in between changed metadata (Kafka's checkIfMetadataChanged)
    lost: list[LostItem] = []
    kafka_loss_summaries: list[str] = []
    kafka_loss_texts: list[str] = []  # each summary in the writer's whole message
    version_changes: list[str] = []
    feature_notes: list[str] = []
    #: who answers: "node N running Kafka R"; "a controller running Kafka R, no node known"
    #: when the input names no controller (a bootstrap file; no registration or static voter);
    #: "" with no verdicts (no metadata.version finalized)
    controller: str = ""
    verdicts: list[Verdict] = []  # Kafka's answer (policy "kafka")
    kip778_verdicts: list[Verdict] = []  # the answer under kraftsim's named policy "kip-778"


def _verdict(ctx: ControllerContext, level: int, upgrade_type: UpgradeType, op: str) -> Verdict:
    request = UpdateFeaturesRequest(updates=(FeatureUpdate(MV_NAME, level, int(upgrade_type)),), validate_only=True)
    result = update_features(ctx, request)
    if result.ok:
        return Verdict(upgrade_type=upgrade_type.name, accepted=True, error=None, message=None,
                       tool_line=f"{MV_NAME} can be {op}d to {level}.")
    # The tool prints what the controller's release answers: 4.x the whole request's error, 3.x the feature's.
    answer = result.response.error_message if result.response.error_code else result.error.message
    return Verdict(upgrade_type=upgrade_type.name, accepted=False, error=result.error.name,
                   message=result.error.message, tool_line=f"Can not {op} {MV_NAME} to {level}. {answer}")


def _feature_notes(image: MetadataImage, catalog: Catalog, target: MetadataVersion) -> list[str]:
    notes = []
    for name, level in image.features.finalized:
        try:
            deps = catalog.dependencies(name, level)
        except (IllegalArgument, KraftsimError):
            continue
        need = deps.get(MV_NAME)
        if need is not None and need > target.level:
            notes.append(f"{name}={level} needs {MV_NAME} {catalog.metadata_version(need).version} or higher "
                         "(Kafka checks no dependencies when metadata.version changes)")
    return notes


def downgrade_report(image: MetadataImage, target: MVLike, catalog: Catalog, *, path: str | None = None,
                     node_id: int | None = None, static_voters: tuple[int, ...] = (),
                     writer_line: WriterLine | str | None = None) -> DowngradeReport:
    """What writing `image` at `target` drops, and what the active controller of `catalog`'s
    release answers to the metadata.version change (default controller: the lowest
    registered one, else the lowest static voter, else no node: the release's rules alone,
    never a node id the input does not name)."""
    mv = catalog.metadata_version(target)
    current_level = image.metadata_version
    current = None if current_level is None else catalog.metadata_version(current_level)
    report = LossReport()
    write_image(image, mv, catalog, loss_handler=report, writer_line=writer_line)
    line = writer_line or WriterLine.from_catalog(catalog)
    out = DowngradeReport(
        path=path, offset=image.provenance.last_contained_offset + 1,
        current=None if current is None else current.version, current_level=current_level,
        target=mv.version, target_level=mv.level,
        direction=("none" if current is None else "unchanged" if mv.level == current.level
                   else "downgrade" if mv.level < current.level else "upgrade"),
        writer=line if isinstance(line, str) else line.name,
        lossless=report.lossless,
        catalog_lossy=current is not None and mv.level < current.level and catalog.is_lossy(current, mv),
        lost=[LostItem(kind=x.kind, entity=x.entity, kafka_summary=x.summary, kafka_reported=x.kafka_reported)
              for x in report],
        kafka_loss_summaries=report.summaries(),
        kafka_loss_texts=report.kafka_texts(),
        feature_notes=_feature_notes(image, catalog, mv),
    )
    if current is not None and mv.level < current.level:
        out.version_changes = catalog.downgrade_losses(current, mv).lines()
    if current is not None:
        if node_id is None:
            node_id = min(image.cluster.controllers, default=min(static_voters, default=None))
        # (no node: Kafka's -1, which only a kraft.version change would compare, never this one)
        ctx = ControllerContext(node_id=-1 if node_id is None else node_id, supported=catalog.supported_features(),
                                image=image, catalog=catalog, static_voters=tuple(static_voters))
        running = f"running Kafka {catalog.release.name}"
        out.controller = f"a controller {running}, no node known" if node_id is None else f"node {node_id} {running}"
        kip778 = msgspec.structs.replace(ctx, config=msgspec.structs.replace(ctx.config, policies=frozenset({KIP_778})))
        out.verdicts, out.kip778_verdicts = (_verdicts(c, mv.level, current.level) for c in (ctx, kip778))
    return out


def _verdicts(ctx: ControllerContext, level: int, current: int) -> list[Verdict]:
    if level >= current:
        return [_verdict(ctx, level, UpgradeType.UPGRADE, "upgrade")]
    return [_verdict(ctx, level, UpgradeType.SAFE_DOWNGRADE, "downgrade"),
            _verdict(ctx, level, UpgradeType.UNSAFE_DOWNGRADE, "downgrade")]
