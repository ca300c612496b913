"""`kraftsim log dump --json` shows Kafka 4.3/4.4's records as Kafka's JSON converters do
(DESIGN.md contract 2): CordonedLogDirs only when not null, UnregisterControllerRecord by its type name."""

from __future__ import annotations

import json
from pathlib import Path

from kraftsim.cli.main import main
from kraftsim.storage import MetadataLog
from tests.image.helpers import rec, uid


def test_log_dump_json_of_4_4_records(tmp_path: Path, capsys) -> None:
    d = tmp_path / "__cluster_metadata-0"
    with MetadataLog.open(d, fsync=False) as log:
        log.append_records([
            rec("FeatureLevelRecord", name="metadata.version", feature_level=33),
            rec("RegisterBrokerRecord", 4, broker_id=1, incarnation_id=uid(9), broker_epoch=5,
                log_dirs=[uid(1)], cordoned_log_dirs=[uid(1)]),
            rec("BrokerRegistrationChangeRecord", 3, broker_id=1, broker_epoch=5, fenced=-1),
            rec("UnregisterControllerRecord", controller_id=3000),
        ], epoch=1, timestamp=1)
    assert main(["log", "dump", "--json", str(d)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["type"], r["version"]) for r in rows] == [
        ("FEATURE_LEVEL_RECORD", 0), ("REGISTER_BROKER_RECORD", 4), ("BROKER_REGISTRATION_CHANGE_RECORD", 3),
        ("UNREGISTER_CONTROLLER_RECORD", 0)]
    assert rows[1]["data"]["cordonedLogDirs"] == [str(uid(1))] and list(rows[1]["data"])[-1] == "cordonedLogDirs"
    assert "cordonedLogDirs" not in rows[2]["data"]  # null: no change, left out
    assert rows[3]["data"] == {"controllerId": 3000}
