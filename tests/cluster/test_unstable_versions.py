"""Nodes with unstable versions enabled (issue 27 class 7's enabled path): `cluster create
--config`, read per release as Kafka reads it (policy format_unstable). What the nodes
answer is the live Kafka answer of conformance group live-unstable/* (4.4.0, 4.3.1, 4.0.2,
3.9.1, 3.8.1, 3.7.2 agree): the placeholder is in the supported range, kafka-features
finalizes it; without the config it is refused (live-node/*)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kraftsim.errors import KraftsimError
from kraftsim.sim.simulation import Simulation
from tests.cluster.conftest import FAILED, MV, create, data, describe, feature_records, ok, run

FEATURE_CONFIG = "unstable.feature.versions.enable"
METADATA_CONFIG = "unstable.metadata.versions.enable"


def test_a_4_4_cluster_with_the_config_finalizes_its_placeholder(tmp_path: Path, capsys) -> None:
    d = tmp_path / "c"
    create(capsys, d, "--controllers", "1", "--brokers", "1", "--release", "4.4.0", "-r", "4.4-IV0",
           "--config", f"{FEATURE_CONFIG}=true")
    assert describe(capsys, d)[MV]["SupportedMaxVersion"] == "4.5-IV0"
    out = ok(capsys, "features", "--cluster", d, "upgrade", "--metadata", "4.5-IV0")
    assert out.splitlines()[-1] == "metadata.version was upgraded to 34."
    assert describe(capsys, d)[MV]["FinalizedVersionLevel"] == "4.5-IV0"
    assert (MV, 34) in feature_records(d / "node-1")
    # Both nodes registered advertising the placeholder (registrations are what import reads).
    regs = [e.message for e in data(d / "node-1", "RegisterBrokerRecord")]
    assert regs and all(f.max_supported_version == 34 for r in regs for f in r.features if f.name == MV)
    assert [n["supported"][MV] for n in json.loads(ok(capsys, "cluster", "status", d, "--json"))["nodes"]] == [[7, 34]] * 2
    saved = json.loads((d / "cluster.json").read_text())
    assert all(n["configs"] == {FEATURE_CONFIG: "true"} for n in saved["nodes"])
    # It survives a restart: every node starts again from cluster.json with its config.
    with Simulation.open(d) as sim:
        assert sim.engine.member(1).node.unstable_versions  # type: ignore[union-attr]


def test_without_the_config_the_placeholder_is_refused_and_nothing_is_saved(tmp_path: Path, capsys) -> None:
    d = tmp_path / "c"
    create(capsys, d, "--controllers", "1", "--release", "4.4.0")
    assert describe(capsys, d)[MV]["SupportedMaxVersion"] == "4.4-IV2"
    code, out, _ = run(capsys, "features", "--cluster", d, "upgrade", "--feature", "metadata.version=34")
    assert code == 1
    assert out.startswith(f"Could not upgrade metadata.version to 34. {FAILED}Invalid update version 34 for feature "
                          "metadata.version. Local controller 1 only supports versions 7-33")
    assert "configs" not in (d / "cluster.json").read_text()  # cluster.json as before the option existed


@pytest.mark.parametrize("release,config,unstable", [
    ("3.7.2", METADATA_CONFIG, True), ("3.7.2", FEATURE_CONFIG, False),  # 3.7 reads only its own name
    ("3.8.1", FEATURE_CONFIG, True), ("3.8.1", METADATA_CONFIG, False),
    ("3.6.2", FEATURE_CONFIG, False), ("3.6.2", METADATA_CONFIG, False),  # 3.6 reads neither
])
def test_each_release_reads_its_own_name(tmp_path: Path, release: str, config: str, unstable: bool) -> None:
    with Simulation.create(tmp_path / "c", controllers=1, release=release, configs={config: "true"}) as sim:
        node = sim.engine.member(1).node
        assert node is not None and node.unstable_versions is unstable
        top = node.catalog.latest_testing if unstable else node.catalog.latest_production
        assert node.supported[MV][1] == top.level
        advertised = {name: hi for name, _, hi in node.api_versions(3).supported_features}
        assert advertised[MV] == top.level


def test_a_roll_from_3_7_to_3_8_turns_the_old_name_off(tmp_path: Path) -> None:
    """The node keeps its server.properties across the roll; 3.8 no longer reads 3.7's name."""
    with Simulation.create(tmp_path / "c", controllers=1, release="3.7.2", configs={METADATA_CONFIG: True}) as sim:
        sim.roll("3.8.1", "all")
        node = sim.engine.member(1).node
        assert node is not None and not node.unstable_versions
        assert node.supported[MV][1] == node.catalog.latest_production.level


def test_the_tick_engine_takes_the_config_too(tmp_path: Path, capsys) -> None:
    d = tmp_path / "c"
    create(capsys, d, "--engine", "ticks", "--controllers", "1", "--release", "4.4.0", "-r", "4.4-IV0",
           "--config", f"{FEATURE_CONFIG}=true")
    out = ok(capsys, "features", "--cluster", d, "upgrade", "--feature", "metadata.version=34")
    assert out.splitlines()[-1] == "metadata.version was upgraded to 34."


@pytest.mark.parametrize("arg,message", [
    ("no.such.config=true", "node config 'no.such.config' is not one kraftsim simulates"),
    (f"{FEATURE_CONFIG}=maybe", f"Invalid value maybe for configuration {FEATURE_CONFIG}: Expected value to be "
                                "either true or false"),
    (FEATURE_CONFIG, "expected NAME=VALUE"),
])
def test_a_bad_config_is_a_usage_error(tmp_path: Path, capsys, arg: str, message: str) -> None:
    with pytest.raises(SystemExit) as exc:
        run(capsys, "cluster", "create", tmp_path / "c", "--controllers", "1", "--release", "4.4.0", "--config", arg)
    assert exc.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "c").exists()


def test_a_rolled_back_controller_stops_on_the_first_record_it_cannot_replay(tmp_path: Path) -> None:
    """Live 4.3.1 (unstable versions on: 7-31) started on a 4.4.0 log formatted at 33 and upgraded
    to 34 dies on the bootstrap record, naming 33, not the finalized 34."""
    with Simulation.create(tmp_path / "c", controllers=1, brokers=1, release="4.4.0", release_version="4.4-IV2",
                           configs={FEATURE_CONFIG: True}) as sim:
        assert sim.features("upgrade", metadata="4.5-IV0")[-1] == "metadata.version was upgraded to 34."
        with pytest.raises(KraftsimError) as info:
            sim.roll("4.3.1", [1])
        assert ("Tried to apply FeatureLevelRecord FeatureLevelRecord(name='metadata.version', featureLevel=33), "
                "but this controller only supports versions 7-31") in str(info.value)


def test_a_served_cluster_answers_api_versions_with_the_placeholder_and_records_its_configs(tmp_path: Path) -> None:
    from kraftsim.conformance.wire_client import api_versions
    from kraftsim.scenario import load_scenario
    from kraftsim.wire.api import serve

    d = tmp_path / "c"
    Simulation.create(d, combined=1, release="4.4.0", release_version="4.4-IV2",
                      configs={FEATURE_CONFIG: "true"}).close()
    record = tmp_path / "session.toml"
    with serve(d, record=record) as kafka:
        host, port = kafka.address(1).rsplit(":", 1)
        answer = api_versions(host, int(port))
    supported = {f["Name"]: f["MaxVersion"] for f in answer["SupportedFeatures"]}
    assert supported[MV] == 34
    assert load_scenario(record).cluster.configs == {FEATURE_CONFIG: "true"}


def test_serve_makes_a_new_cluster_with_the_config() -> None:
    from kraftsim.conformance.wire_client import api_versions
    from kraftsim.wire.api import serve

    with serve(combined=1, release="4.3.1", configs={FEATURE_CONFIG: True}) as kafka:
        host, port = kafka.address(1).rsplit(":", 1)
        answer = api_versions(host, int(port))
    assert {f["Name"]: f["MaxVersion"] for f in answer["SupportedFeatures"]}[MV] == 31  # 4.3's placeholder 4.4-IV0
