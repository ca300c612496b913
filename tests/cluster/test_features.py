"""`kraftsim features` against simulated clusters: kafka-features' lines, texts and exit codes
(facts §7.2) for Kafka's controller outcomes (facts §5): upgrades by feature and by release
version, safe downgrades with and without loss, unsafe downgrades, disabling, features a
node does not support, and dependencies in both directions."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.versions import default_catalog
from kraftsim.versions.tool_text import version_mapping
from tests.cluster.conftest import (
    FAILED, MV, cli, copy_of, describe, feature_records, ok, run, status,
)

ELR = "eligible.leader.replicas.version"


def build_41_at_40(d: Path) -> None:
    """Kafka 4.1 software on every node, formatted at metadata.version 4.0-IV3 (25)."""
    cli("cluster", "create", d, "--controllers", "1", "--brokers", "1", "--release", "4.1",
        "--release-version", "4.0-IV3")


def build_41(d: Path) -> None:
    cli("cluster", "create", d, "--controllers", "1", "--brokers", "1", "--release", "4.1")


@pytest.fixture
def at_40(prototypes, tmp_path) -> Path:
    return copy_of(prototypes("at_40", build_41_at_40), tmp_path)


@pytest.fixture
def at_41(prototypes, tmp_path) -> Path:
    return copy_of(prototypes("at_41", build_41), tmp_path)


def features(capsys, d: Path, *args: str) -> tuple[int, list[str], str]:
    code, out, err = run(capsys, "features", "--cluster", d, *args)
    return code, out.splitlines(), err


# ------------------------------------------------------------------------------ upgrades


def test_upgrade_by_feature_and_dry_run(at_40: Path, capsys) -> None:
    before = feature_records(at_40 / "node-1")
    code, out, _ = features(capsys, at_40, "upgrade", "--feature", "metadata.version=27", "--dry-run")
    assert (code, out) == (0, ["metadata.version can be upgraded to 27."])
    assert feature_records(at_40 / "node-1") == before  # validate-only writes nothing
    code, out, _ = features(capsys, at_40, "upgrade", "--feature", "metadata.version=27")
    assert (code, out) == (0, ["metadata.version was upgraded to 27."])
    for node in ("node-1", "node-2"):  # committed and replicated
        assert feature_records(at_40 / node)[-1] == (MV, 27)
    assert describe(capsys, at_40)[MV]["FinalizedVersionLevel"] == "4.1-IV1"

    code, out, _ = features(capsys, at_40, "upgrade", "--metadata", "4.1-IV1")
    assert out == [" `metadata` flag is deprecated and may be removed in a future release.",
                   "metadata.version was upgraded to 27."]  # the same level passes and is written again


def test_upgrade_by_release_version_sets_every_default(at_40: Path, capsys) -> None:
    code, out, _ = features(capsys, at_40, "upgrade", "--release-version", "4.1")
    assert code == 0
    assert out == [f"{ELR} was upgraded to 1.", "group.version was upgraded to 1.", "kraft.version was upgraded to 1.",
                   "metadata.version was upgraded to 27.", "transaction.version was upgraded to 2."]
    table = describe(capsys, at_40)
    mapping = dict(line.split("=", 1) for line in version_mapping(default_catalog(), "4.1"))
    assert table[MV]["FinalizedVersionLevel"] == "4.1-IV1" and mapping[MV] == "27 (4.1)"
    for name in ("kraft.version", "transaction.version", "group.version", ELR, "share.version"):
        assert table[name]["FinalizedVersionLevel"] == mapping[name], name
    # Enabling ELR first writes the cluster-level min.insync.replicas (facts §5.1 step 4).
    cfg = [e for e in _entries(at_40) if e.record_type.name == "ConfigRecord"]
    assert (cfg[-1].message.name, cfg[-1].message.value) == ("min.insync.replicas", "1")


def _entries(d: Path) -> list:
    from tests.cluster.conftest import records
    return records(d / "node-1")


def test_a_level_below_the_current_one_needs_a_downgrade(at_41: Path, capsys) -> None:
    code, out, err = features(capsys, at_41, "upgrade", "--feature", "metadata.version=26")
    assert code == 1
    assert out == [f"Could not upgrade metadata.version to 26. {FAILED}Invalid update version 26 for feature "
                   "metadata.version. Can't downgrade the version of this feature without setting the upgrade type "
                   "to either safe or unsafe downgrade."]
    assert err == "1 out of 1 operation(s) failed.\n"
    code, out, _ = features(capsys, at_41, "downgrade", "--feature", "group.version=2")
    assert out == [f"Could not downgrade group.version to 2. {FAILED}Invalid update version 2 for feature "
                   "group.version. Local controller 1 only supports versions 0-1"]


# ------------------------------------------------------------------------------ downgrades


def test_safe_downgrades_lossless_and_lossy(at_41: Path, capsys) -> None:
    code, out, _ = features(capsys, at_41, "downgrade", "--metadata", "4.0-IV3")
    assert (code, out[-1]) == (0, "metadata.version was downgraded to 25.")  # 27 -> 25 changes no metadata
    assert status(capsys, at_41)["finalized"][MV] == 25
    code, out, err = features(capsys, at_41, "downgrade", "--feature", "metadata.version=22")
    assert code == 1
    # A 4.1 controller words it as Kafka 4.1 does (facts §9).
    assert out == [f"Could not downgrade metadata.version to 22. {FAILED}Invalid metadata.version 22. Refusing to "
                   "perform the requested downgrade because it might delete metadata information."]
    code, out, _ = features(capsys, at_41, "downgrade", "--feature", "metadata.version=22", "--dry-run")
    assert out[0].startswith("Can not downgrade metadata.version to 22. ")
    assert status(capsys, at_41)["finalized"][MV] == 25


def test_unsafe_downgrade_is_refused_by_default(at_41: Path, capsys) -> None:
    code, out, err = features(capsys, at_41, "downgrade", "--feature", "metadata.version=22", "--unsafe")
    assert code == 1
    assert out == [f"Could not downgrade metadata.version to 22. {FAILED}Invalid metadata.version 22. Unsafe "
                   "metadata downgrade is not supported in this version."]


def test_a_4_2_controller_uses_the_newer_wording(tmp_path: Path, capsys) -> None:
    d = tmp_path / "c"
    cli("cluster", "create", d, "--controllers", "1", "--release", "4.2")
    _, out, _ = features(capsys, d, "downgrade", "--feature", "metadata.version=22", "--unsafe")
    assert out == [f"Could not downgrade metadata.version to 22. {FAILED}Unsupported metadata.version downgrade "
                   "from 29 to 22. Unsafe metadata downgrade is not supported in this version."]


def test_disable(at_41: Path, capsys) -> None:
    code, out, _ = features(capsys, at_41, "disable", "--feature", "metadata.version")
    assert code == 1
    assert out == [f"Could not disable metadata.version. {FAILED}Invalid update version 0 for feature "
                   "metadata.version. Local controller 1 only supports versions 7-27"]
    code, out, _ = features(capsys, at_41, "disable", "--feature", "group.version", "--feature", "transaction.version")
    assert (code, out) == (0, ["group.version was disabled.", "transaction.version was disabled."])
    table = describe(capsys, at_41)
    assert table["group.version"]["FinalizedVersionLevel"] == "0"
    assert feature_records(at_41 / "node-2")[-2:] == [("group.version", 0), ("transaction.version", 0)]


# ------------------------------------------------------------------------------ the tool's own checks


@pytest.mark.parametrize(("args", "message"), [
    (["upgrade"], "You must specify at least one feature to upgrade"),
    (["disable"], "You must specify at least one feature to disable"),
    (["upgrade", "--release-version", "4.1", "--feature", "group.version=1"],
     "Can not specify `release-version` with other feature flags."),
    (["upgrade", "--feature", "group.version=1", "--feature", "group.version=1"],
     "Feature group.version was specified more than once."),
    (["upgrade", "--metadata", "4.1", "--feature", "metadata.version=27"],
     "Feature metadata.version was specified more than once."),
    (["upgrade", "--feature", "group.version=0"],
     "The upgradeType flag should be set to SAFE_DOWNGRADE or UNSAFE_DOWNGRADE when the provided "
     "maxVersionLevel:0 is < 1."),
    (["downgrade", "--feature", "group.version=-1"], "Cannot specify a negative version level."),
    (["upgrade", "--feature", "group.version"], "Can't parse feature=level string group.version: equals sign not "
                                                 "found."),
    (["upgrade", "--feature", "group.version=x"], "Can't parse feature=level string group.version=x: unable to "
                                                   "parse x as a short."),
    (["upgrade", "--release-version", "9.9"], "Unknown metadata.version '9.9'."),
])
def test_flag_errors_are_kafkas(at_41: Path, capsys, args: list[str], message: str) -> None:
    before = (at_41 / "node-1" / "__cluster_metadata-0" / "00000000000000000000.log").read_bytes()
    code, out, err = features(capsys, at_41, *args)
    assert code == 1
    assert err.startswith(message)
    assert [l for l in out if not l.startswith(" `metadata`")] == []
    # Nothing reached the cluster.
    assert (at_41 / "node-1" / "__cluster_metadata-0" / "00000000000000000000.log").read_bytes() == before


def test_version_mapping_and_feature_dependencies_need_no_cluster(capsys) -> None:
    code, out, _ = run(capsys, "features", "version-mapping", "--release-version", "4.0-IV1")
    assert out.splitlines() == ["metadata.version=23 (4.0-IV1)", "kraft.version=1", "transaction.version=0",
                                "group.version=1", f"{ELR}=0", "share.version=0", "streams.version=0"]
    code, out, _ = run(capsys, "features", "feature-dependencies", "--feature", f"{ELR}=1",
                       "--feature", "metadata.version=27")
    assert out.splitlines() == [f"{ELR}=1 requires:", "    metadata.version=23 (4.0-IV1)",
                                "metadata.version=27 (4.1-IV1) has no dependencies."]
    code, _, err = run(capsys, "features", "feature-dependencies", "--feature", "group.version=7")
    assert (code, err) == (1, "No feature:group.version with feature level 7\n")


# ------------------------------------------------------------------------------ dependencies


def test_dependencies_are_checked_against_the_whole_request(tmp_path: Path, capsys) -> None:
    d = tmp_path / "c"
    cli("cluster", "create", d, "--controllers", "1", "--brokers", "1", "--release", "4.1",
        "--release-version", "4.0-IV0")
    code, out, _ = features(capsys, d, "upgrade", "--feature", f"{ELR}=1")
    assert code == 1
    assert out == [f"Could not upgrade {ELR} to 1. {FAILED}Invalid update version 1 for feature {ELR}. {ELR} could "
                   "not be set to 1 because it depends on metadata.version level 23"]
    # The same level with the metadata.version it needs, in one request: accepted.
    code, out, _ = features(capsys, d, "upgrade", "--feature", f"{ELR}=1", "--feature", "metadata.version=23")
    assert (code, out) == (0, [f"{ELR} was upgraded to 1.", "metadata.version was upgraded to 23."])
    assert feature_records(d / "node-2")[-2:] == [(ELR, 1), (MV, 23)]


# ------------------------------------------------------------------------------ support by every node


def test_features_a_broker_or_controller_does_not_support(tmp_path: Path, capsys) -> None:
    """Controllers 1, 2 and broker 3 on 4.1 at 4.0-IV3; then broker 3 and controller 2 run 4.0."""
    d = tmp_path / "c"
    cli("cluster", "create", d, "--controllers", "2", "--brokers", "1", "--release", "4.1",
        "--release-version", "4.0-IV3")
    ok(capsys, "cluster", "roll", d, "--release", "4.0", "--nodes", "3")
    _, out, _ = features(capsys, d, "upgrade", "--feature", "share.version=1")
    assert out == [f"Could not upgrade share.version to 1. {FAILED}Invalid update version 1 for feature "
                   "share.version. Broker 3 does not support this feature."]
    _, out, _ = features(capsys, d, "upgrade", "--feature", "metadata.version=27")
    assert out[0].endswith("Invalid update version 27 for feature metadata.version. Broker 3 only supports "
                           "versions 7-25")
    ok(capsys, "cluster", "roll", d, "--release", "4.1", "--nodes", "3")
    ok(capsys, "cluster", "roll", d, "--release", "4.0", "--nodes", "2")
    _, out, _ = features(capsys, d, "upgrade", "--feature", "metadata.version=27")
    assert out[0].endswith("Invalid update version 27 for feature metadata.version. Controller 2 only supports "
                           "versions 7-25")
    # With node 1 on 4.0 too, the leader refuses what its own software lacks. (Two voters: while
    # node 1 restarts there is no quorum; it leads again in the next epoch.)
    out = ok(capsys, "cluster", "roll", d, "--release", "4.0", "--nodes", "1")
    assert "No leader: 1 of 2 voter(s) running, 2 needed." in out
    st = status(capsys, d)
    assert st["leader"] in (1, 2) and st["epoch"] == 2  # the leader's restart cost the quorum an epoch
    _, out, _ = features(capsys, d, "upgrade", "--feature", "share.version=1")
    assert out[0].endswith(f"Invalid update version 1 for feature share.version. Local controller {st['leader']} "
                           "does not support this feature.")


def test_a_static_voter_that_never_registered_blocks_updates(tmp_path: Path, capsys) -> None:
    """A 3.6 controller joins a 3.7 quorum (3.7-IV4): it cannot replay the log and never registers."""
    d = tmp_path / "c"
    cli("cluster", "create", d, "--controllers", "2", "--release", "3.7")
    code, out, _ = run(capsys, "cluster", "add", d, "--controller", "--release", "3.6")
    assert code == 1
    assert ("Tried to apply FeatureLevelRecord FeatureLevelRecord(name='metadata.version', featureLevel=19), but "
            "this controller only supports versions 1-14") in out
    assert status(capsys, d)["voters"] == [1, 2, 3]
    _, out, _ = features(capsys, d, "upgrade", "--feature", "metadata.version=19")
    assert out == ["Could not upgrade metadata.version to 19. Invalid update version 19 for feature "  # 3.x: no prefix
                   "metadata.version. controller 3 has not registered, and may not support this feature"]
