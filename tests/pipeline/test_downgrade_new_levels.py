"""The downgrade-matrix job over a Kafka 4.4 state: its rows reach down through the 4.3/4.4
levels, and no downgrade from 30 or above to 29 or below is lossless (kafka-facts §11.1)."""

from __future__ import annotations

from pathlib import Path

from kraftsim.image import image_from_records, write_image
from kraftsim.pipeline.downgrade import downgrade_inputs, downgrade_rows
from kraftsim.storage import SnapshotId, write_snapshot
from kraftsim.versions import default_catalog
from tests.image.helpers import rec, uid

CAT = default_catalog()


def _state(tmp_path: Path) -> Path:
    records = [rec("FeatureLevelRecord", name="metadata.version", feature_level=33),
               rec("RegisterBrokerRecord", 4, broker_id=1, incarnation_id=uid(9), broker_epoch=5,
                   log_dirs=[uid(1), uid(2)], cordoned_log_dirs=[uid(2)]),
               rec("RegisterControllerRecord", controller_id=3000, incarnation_id=uid(7))]
    image = image_from_records(records, catalog=CAT)
    d = tmp_path / "c" / "__cluster_metadata-0"
    d.mkdir(parents=True)
    write_snapshot(d, SnapshotId(3, 1), write_image(image, 33, CAT), last_contained_log_timestamp=0, time_ms=0,
                   fsync=False)
    return tmp_path / "c"


def test_a_4_4_state_meets_every_lower_level(tmp_path: Path) -> None:
    items = downgrade_inputs([_state(tmp_path)])
    rows = [r for item in items for r in downgrade_rows(item)]
    assert rows and {r["source_mv"] for r in rows} == {33}
    # two states: the log directory (its end) and the snapshot in it; the same image
    assert {r["state_kind"] for r in rows} == {"log", "snapshot"} and len({r["digest"] for r in rows}) == 1
    by_target = {r["target_mv"]: r for r in rows if r["state_kind"] == "snapshot"}
    assert sorted(by_target) == list(range(7, 33))
    # Kafka's judgement: every target below 33 crosses a level that changed metadata
    assert all(r["metadata_changed"] for r in by_target.values())
    # What this state really loses: the cordoned directories below 30, nothing at 30..32
    for level in (30, 31, 32):
        assert by_target[level]["verdict"] == "lossless", level
    for level in range(7, 30):
        r = by_target[level]
        assert r["verdict"] == "lossy" and "the cordoned log directories of one or more brokers" in \
            {x["summary"] for x in r["losses"]}, level
    assert "record type UnregisterControllerRecord cannot be written: controller unregistrations (KIP-1312)" in \
        by_target[32]["catalog_losses"]
    assert by_target[31]["catalog_losses"] == [
        "record type UnregisterControllerRecord cannot be written: controller unregistrations (KIP-1312)",
        "capability cidr_acl_hosts: ACL bindings whose host is a CIDR range (KIP-1276)",
        "capability controller_unregistration: controller unregistrations (KIP-1312)",
    ]
    assert "capability cordoned_log_dirs: the cordoned log directories of brokers (KIP-1066)" in \
        by_target[29]["catalog_losses"]
    # behaviour gates (share.version's dead-letter queue) lose nothing and are not listed as losses
    assert not any("share_group_dlq" in x for x in by_target[29]["catalog_losses"])
