"""`kraftsim features` prints as the release it runs as (kafka-facts §11.4, §11.6): 4.3's
fixed-width `describe` and the tab layout before it, version-mapping / feature-dependencies
without a cluster from 4.3, and the newest release running in the cluster as the
default tool."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.cli_support import run
from tests.cluster.conftest import create, ok

COLUMNS = re.compile(r"^Feature: (.{40})  SupportedMinVersion: (.{15})  SupportedMaxVersion: (.{15})  "
                     r"FinalizedVersionLevel: (.{15})  Epoch: (\S+)$")


@pytest.fixture(scope="module")
def cluster_43(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("c43") / "c"
    from tests.cluster.conftest import cli
    cli("cluster", "create", d, "--controllers", "1", "--brokers", "1", "--release", "4.3.1")
    return d


def test_4_3_describe_is_fixed_width_and_4_2_tab_separated(cluster_43: Path, capsys) -> None:
    out = ok(capsys, "features", "--cluster", cluster_43, "describe")  # the cluster's 4.3.1 tool
    lines = out.splitlines()
    assert lines and all(COLUMNS.match(line) for line in lines), out
    mv = next(COLUMNS.match(line) for line in lines if line.startswith("Feature: metadata.version "))
    assert [g.rstrip() for g in mv.groups()[1:4]] == ["3.3-IV3", "4.3-IV0", "4.3-IV0"]
    assert lines[0] == ("Feature: " + "eligible.leader.replicas.version".ljust(40) + "  SupportedMinVersion: "
                        + "0".ljust(15) + "  SupportedMaxVersion: " + "1".ljust(15) + "  FinalizedVersionLevel: "
                        + "1".ljust(15) + "  Epoch: " + mv.group(5))
    old = ok(capsys, "features", "--cluster", cluster_43, "--release", "4.2", "describe").splitlines()
    assert all(line.count("\t") == 4 and "  " not in line for line in old)
    # 4.2.0's code already lists 4.3-IV0 (its testing placeholder); 4.1 does not know level 30
    assert f"Feature: metadata.version\tSupportedMinVersion: 3.3-IV3\tSupportedMaxVersion: 4.3-IV0\t" \
           f"FinalizedVersionLevel: 4.3-IV0\tEpoch: {mv.group(5)}" in old
    older = ok(capsys, "features", "--cluster", cluster_43, "--release", "4.1", "describe")
    assert "SupportedMaxVersion: UNKNOWN 30\tFinalizedVersionLevel: UNKNOWN 30\t" in older


def test_offline_commands_run_without_a_cluster(capsys) -> None:
    # Kafka before 4.3 wants a --bootstrap-server here (the policy's text below); kraftsim has no
    # such flag and answers as Kafka does with one given.
    from kraftsim.versions import default_catalog
    assert default_catalog().at_release("4.2").policy_text("features_offline_commands", "missing") == \
        "one of the arguments --bootstrap-server --bootstrap-controller is required"
    assert default_catalog().at_release("4.3").policy("features_offline_commands") == "standalone"
    assert ok(capsys, "features", "--release", "4.2", "version-mapping").splitlines()[0] == "metadata.version=29 (4.2-IV1)"
    assert ok(capsys, "features", "--release", "4.3", "version-mapping").splitlines()[0] == "metadata.version=30 (4.3-IV0)"
    assert ok(capsys, "features", "version-mapping", "--release-version", "4.4-IV2").splitlines() == [
        "metadata.version=33 (4.4-IV2)", "kraft.version=1", "transaction.version=2", "group.version=1",
        "eligible.leader.replicas.version=1", "share.version=2", "streams.version=1"]
    assert ok(capsys, "features", "--release", "4.4.0", "feature-dependencies", "--feature",
              "share.version=2").splitlines() == ["share.version=2 has no dependencies."]


def test_offline_commands_of_an_old_tool_run_with_a_cluster(cluster_43: Path, capsys) -> None:
    out = ok(capsys, "features", "--cluster", cluster_43, "--release", "4.2", "version-mapping")
    assert out.splitlines()[0] == "metadata.version=29 (4.2-IV1)"
    # without --release: the cluster's own 4.3.1 tool
    assert ok(capsys, "features", "--cluster", cluster_43, "version-mapping").splitlines()[0] == \
        "metadata.version=30 (4.3-IV0)"


def test_the_default_tool_is_the_newest_release_running(tmp_path: Path, capsys) -> None:
    d = tmp_path / "c"
    create(capsys, d, "--controllers", "1", "--brokers", "1", "--release", "3.9.1")
    out = ok(capsys, "features", "--cluster", d, "describe")
    assert "Feature: metadata.version\tSupportedMinVersion: 3.0-IV1\tSupportedMaxVersion: 3.9-IV0\t" in out
    # the newest tool prints the 3.9 node's minimum 1 as UNKNOWN 1 (it knows no level below 7)
    new = ok(capsys, "features", "--cluster", d, "--release", "4.4", "describe")
    assert "Feature: metadata.version".ljust(49) + "  SupportedMinVersion: " + "UNKNOWN 1".ljust(15) in new
    # mid-roll (the broker on 4.0, the active controller still on 3.9) the 4.0 tool answers
    ok(capsys, "cluster", "roll", d, "--release", "4.0", "--nodes", "2")
    assert ok(capsys, "features", "--cluster", d, "describe") == \
        ok(capsys, "features", "--cluster", d, "--release", "4.0", "describe")


@pytest.mark.parametrize(("release", "done", "refused"), [
    ("3.5.2", "metadata.version was upgraded to 11.", "Could not disable no.such.feature."),
    ("3.6.2", "metadata.version can be upgraded to 11.", "Can not disable no.such.feature."),
])
def test_a_dry_run_is_worded_as_a_run_before_3_6(tmp_path: Path, capsys, release: str, done: str,
                                                 refused: str) -> None:
    """3.3 to 3.5's kafka-features (Scala) says "was" and "Could not" with --dry-run too; 3.6 on
    "can be" and "Can not" (live 3.5.2 and 3.6.2). 3.3 to 3.6 also refuse disabling a feature a
    broker does not list (level 0 included)."""
    d = tmp_path / "c"
    create(capsys, d, "--controllers", "1", "--brokers", "1", "--release", release, "--release-version", "3.5-IV1")
    code, out, _ = run(capsys, "features", "--cluster", str(d), "upgrade", "--metadata", "3.5-IV2", "--dry-run")
    assert (code, out) == (0, done + "\n")
    code, out, err = run(capsys, "features", "--cluster", str(d), "disable", "--feature", "no.such.feature",
                         "--dry-run")
    assert code == 1 and out == (f"{refused} Invalid update version 0 for feature no.such.feature. Broker 2 does "
                                 "not support this feature.\n")
    assert err == "1 out of 1 operation(s) failed.\n"
