"""Log directory ids across a 3.6 to 3.7 upgrade, as a live Kafka 3.6.2 node rolled to 3.7.2 showed.

- 3.3 to 3.6 format a directory without a directory.id (policy meta_properties_directory_id);
- a 3.7 node draws one as it starts and writes meta.properties again;
- once metadata.version 3.7-IV2 or later is finalized, each broker whose registration has no
  directories registers again with the same incarnation (BrokerRegistrationTracker): 3.7
  amends the registration, keeping its fencing, with a new broker epoch (the record's offset;
  policy same_incarnation_registration), and the record carries the broker's directory;
  3.7.0 alone (live 3.7.0 rolled from 3.6.2) fences the broker with that registration, and
  unfences it at its next heartbeat.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.storage import read_meta_properties
from tests.cluster.conftest import create, data, ok


def _ids(d: Path) -> dict[int, str | None]:
    return {int(n.name.split("-")[1]): read_meta_properties(n / "meta.properties").meta.directory_id
            for n in sorted(d.glob("node-*"))}


def _upgraded_from_3_6(capsys, d: Path, engine: str = "events", release: str = "3.7") -> None:
    create(capsys, d, "--controllers", "1", "--brokers", "2", "--release", "3.6", "--seed", "3", "--engine", engine)
    assert set(_ids(d).values()) == {None}
    assert "directory.id" not in (d / "node-2" / "meta.properties").read_text()
    ok(capsys, "cluster", "roll", str(d), "--release", release)
    ok(capsys, "features", "--cluster", str(d), "upgrade", "--metadata", "3.7")


@pytest.mark.parametrize("release,fenced", [("3.7", False), ("3.7.0", True)])
@pytest.mark.parametrize("engine", ["events", "ticks"])
def test_3_7_draws_ids_at_start_and_brokers_register_them_after_the_upgrade(tmp_path: Path, capsys, engine: str,
                                                                            release: str, fenced: bool) -> None:
    d = tmp_path / "c"
    _upgraded_from_3_6(capsys, d, engine, release)
    ids = _ids(d)
    assert None not in ids.values() and len(set(ids.values())) == 3
    last = {}
    for e in data(d / "node-1", "RegisterBrokerRecord"):
        last[e.message.broker_id] = e
    for broker in (2, 3):
        e = last[broker]
        assert e.version == 3 and [str(u) for u in e.message.log_dirs] == [ids[broker]]
        assert e.message.broker_epoch == e.offset and e.message.fenced is fenced
        unfenced = [c for c in data(d / "node-1", "BrokerRegistrationChangeRecord")
                    if c.offset > e.offset and c.message.broker_id == broker and c.message.fenced == -1]
        assert bool(unfenced) is fenced  # (an amended registration stays unfenced: nothing to undo)
    # the same seed draws the same ids
    d2 = tmp_path / "c2"
    _upgraded_from_3_6(capsys, d2, engine, release)
    assert _ids(d2) == ids


def test_3_7_formats_one_and_keeps_it(tmp_path: Path, capsys) -> None:
    d = tmp_path / "c"
    create(capsys, d, "--controllers", "1", "--brokers", "1", "--release", "3.7", "--seed", "3")
    before = _ids(d)
    assert None not in before.values()
    ok(capsys, "cluster", "roll", str(d), "--release", "3.8")
    assert _ids(d) == before
