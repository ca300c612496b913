"""Shared helpers for controller tests: records, images and contexts built from real records.

Everything a rule sees is built by replaying real record payloads (RegisterBrokerRecord,
FeatureLevelRecord, ...) through MetadataDelta, the way a controller gets its state, so
tests never hand-craft image internals. A `ManualClock` gives deterministic time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

import pytest

from kraftsim.controller.context import ControllerConfig, ControllerContext, Range
from kraftsim.controller.quorum_controller import QuorumController
from kraftsim.controller.result import ControllerResult, accepted
from kraftsim.image import MetadataImage, image_from_records
from kraftsim.protocol.entries import LogEntry, Payload
from kraftsim.protocol.primitives import Uuid
from kraftsim.protocol.registry import default_registry
from kraftsim.storage import BootstrapMetadata, MetadataLog, bootstrap_from_records
from kraftsim.versions import Catalog, default_catalog


def line(release: str) -> Catalog:
    """The shipped catalog as a node of `release` sees it."""
    return default_catalog().at_release(release)


def payload(record_type: str, version: int = 0, **fields: Any) -> Payload:
    rt = default_registry()[record_type]
    return Payload(rt, version, rt.new(**fields))


def feature_level(name: str, level: int) -> Payload:
    return payload("FeatureLevelRecord", name=name, feature_level=level)


def features(levels: Mapping[str, int]) -> list[Payload]:
    """FeatureLevelRecords, metadata.version first."""
    ordered = sorted(levels.items(), key=lambda kv: (kv[0] != "metadata.version", kv[0]))
    return [feature_level(n, l) for n, l in ordered]


def bootstrap(levels: Mapping[str, int], source: str = "test") -> BootstrapMetadata:
    """Bootstrap metadata holding FeatureLevelRecords (metadata.version first, then by name,
    as the storage tool writes them)."""
    entries = [LogEntry(i, 0, 0, False, p.record_type, p.version, p.message) for i, p in enumerate(features(levels))]
    return bootstrap_from_records(entries, source)


def _uuid(n: int) -> Uuid:
    return Uuid(n.to_bytes(16, "big"))


def broker(broker_id: int, supported: Mapping[str, Range], *, fenced: bool = True, epoch: int = 10,
           version: int = 3) -> Payload:
    """A RegisterBrokerRecord advertising `supported`."""
    rt = default_registry()["RegisterBrokerRecord"]
    feature = rt.nested["BrokerFeature"]
    endpoint = rt.nested["BrokerEndpoint"]
    return Payload(rt, version, rt.new(
        broker_id=broker_id, incarnation_id=_uuid(1000 + broker_id), broker_epoch=epoch,
        end_points=[endpoint(name="PLAINTEXT", host=f"b{broker_id}", port=9092, security_protocol=0)],
        features=[feature(name=n, min_supported_version=lo, max_supported_version=hi) for n, (lo, hi) in supported.items()],
        rack=None, fenced=fenced, in_controlled_shutdown=False,
        log_dirs=[_uuid(5000 + broker_id)] if version >= 3 else []))


def controller(controller_id: int, supported: Mapping[str, Range]) -> Payload:
    """A RegisterControllerRecord advertising `supported`."""
    rt = default_registry()["RegisterControllerRecord"]
    feature = rt.nested["ControllerFeature"]
    endpoint = rt.nested["ControllerEndpoint"]
    return Payload(rt, 0, rt.new(
        controller_id=controller_id, incarnation_id=_uuid(2000 + controller_id), zk_migration_ready=False,
        end_points=[endpoint(name="CONTROLLER", host=f"c{controller_id}", port=9093, security_protocol=0)],
        features=[feature(name=n, min_supported_version=lo, max_supported_version=hi) for n, (lo, hi) in supported.items()]))


def config(resource_name: str, name: str, value: str | None, resource_type: int = 4) -> Payload:
    return payload("ConfigRecord", resource_type=resource_type, resource_name=resource_name, name=name, value=value)


def image_of(records: Iterable[Payload], catalog: Catalog | None = None) -> MetadataImage:
    return image_from_records(list(records), catalog=catalog)


def make_ctx(release: str | Catalog = "4.1", *, levels: Mapping[str, int] | None = None, records: Iterable[Payload] = (),
             supported: Mapping[str, Range] | None = None, node_id: int = 1, unstable: bool = False,
             **kwargs: Any) -> ControllerContext:
    """A context on `release`'s line (a name or a catalog) whose image holds `levels` then `records`."""
    cat = line(release) if isinstance(release, str) else release
    levels = dict(levels) if levels is not None else {"metadata.version": cat.latest_production.level}
    image = image_of([*features(levels), *records], cat)
    return ControllerContext(node_id=node_id, supported=dict(supported or cat.supported_features(unstable)),
                             image=image, catalog=cat, **kwargs)


def commit(*records: Payload, atomic: bool = True):
    """A rule that commits `records` as they are (to put brokers, controllers, configs in a log)."""
    def rule(ctx: ControllerContext) -> ControllerResult:
        return accepted(records, atomic=atomic)
    return rule


class ManualClock:
    """A virtual clock: returns `now` until told to advance."""

    def __init__(self, now: int = 1_700_000_000_000):
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> int:
        self.now += ms
        return self.now


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / "__cluster_metadata-0"


def open_controller(log_dir: Path, clock: ManualClock, release: str | Catalog = "4.1",
                    **kwargs: Any) -> QuorumController:
    """A QuorumController of `release` (a release name or a catalog line) on the log in `log_dir`."""
    log = MetadataLog.open(log_dir, fsync=False)
    cat = line(release) if isinstance(release, str) else release
    return QuorumController(kwargs.pop("node_id", 1), log, clock=clock, catalog=cat,
                            config=kwargs.pop("config", ControllerConfig()), **kwargs)
