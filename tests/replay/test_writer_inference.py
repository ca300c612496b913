"""One inference of the release that wrote a log, for every reader of it: `snapshot create`'s
writer, `downgrade-report`'s controller and `cluster import`'s nodes all name the release
whose nodes advertise what the registrations in the log do (Catalog.release_advertising),
and releases that advertise the same cannot be told apart: the newest stands for them (a
4.2 cluster is 4.2.2, whichever 4.2 patch wrote it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.cli.downgrade_cmd import controller_release
from kraftsim.image import snapshot_contents
from kraftsim.sim.importing.plan import advertised, infer_release
from kraftsim.sim.simulation import Simulation
from kraftsim.storage import MetadataLog
from kraftsim.versions import load_catalog

CATALOG = load_catalog(None)


@pytest.mark.parametrize("release,inferred", [("4.2.0", "4.2.2"), ("4.2.2", "4.2.2"), ("3.9.1", "3.9.2"),
                                              ("4.4.0", "4.4.0")])
def test_snapshot_writer_controller_and_import_name_the_same_release(tmp_path: Path, release: str,
                                                                     inferred: str) -> None:
    d = tmp_path / "cluster"
    Simulation.create(d, controllers=1, brokers=1, release=release).close()
    log_dir = d / "node-1" / "__cluster_metadata-0"
    with MetadataLog.open(log_dir, read_only=True) as log:
        end = int(log.log_end_offset)
    contents = snapshot_contents(log_dir, end, catalog=CATALOG)
    assert contents.release == inferred
    assert controller_release(contents.image, CATALOG, 1)[0] == inferred
    for reg in [*contents.image.cluster.controllers.values(), *contents.image.cluster.brokers.values()]:
        assert infer_release(CATALOG, advertised(reg.supported_features)) == (inferred, False)


def test_a_node_with_unstable_versions_is_inferred_as_such(tmp_path: Path) -> None:
    d = tmp_path / "cluster"
    Simulation.create(d, combined=1, release="4.4.0", release_version="4.4-IV0",
                      configs={"unstable.feature.versions.enable": True}).close()
    log_dir = d / "node-1" / "__cluster_metadata-0"
    with MetadataLog.open(log_dir, read_only=True) as log:
        end = int(log.log_end_offset)
    contents = snapshot_contents(log_dir, end, catalog=CATALOG)
    reg = contents.image.cluster.controllers[1]
    assert infer_release(CATALOG, advertised(reg.supported_features)) == ("4.4.0", True)
    assert contents.release == "4.4.0"  # the oldest release that knows 4.5-IV0
    name, why = controller_release(contents.image, CATALOG, 1)
    assert name == "4.4.0" and "with unstable versions enabled" in why
