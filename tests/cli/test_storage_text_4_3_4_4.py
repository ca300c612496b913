"""`kraftsim storage version-mapping / feature-dependencies` as Kafka 4.3.1 and 4.4.0 print
them (kafka-facts §7.1, §11.1, §11.6)."""

from __future__ import annotations

import pytest

from tests.storage_tool.conftest import run

ALL_4_4 = ["metadata.version=33 (4.4-IV2)", "kraft.version=1", "transaction.version=2", "group.version=1",
           "eligible.leader.replicas.version=1", "share.version=2", "streams.version=1"]


@pytest.mark.parametrize("release", [None, "4.4", "4.4.0"])
def test_version_mapping_4_4_iv2_on_4_4(capsys, release) -> None:
    extra = [] if release is None else ["--release", release]
    code, out, _ = run(capsys, "storage", "version-mapping", *extra, "--release-version", "4.4-IV2")
    assert code == 0 and out.splitlines() == ALL_4_4


def test_4_3_1_knows_4_4_iv0_as_its_placeholder_only(capsys) -> None:
    code, out, err = run(capsys, "storage", "version-mapping", "--release", "4.3.1", "--release-version", "4.4-IV2")
    assert (code, out) == (1, "")
    assert err.rstrip().endswith("4.2-IV1, 4.3-IV0, 4.4-IV0")  # unstable accepted: up to its latest testing level
    code, out, _ = run(capsys, "storage", "version-mapping", "--release", "4.3.1", "--release-version", "4.4-IV0")
    assert code == 0 and out.splitlines()[0] == "metadata.version=31 (4.4-IV0)" and "share.version=1" in out.splitlines()
    code, out, _ = run(capsys, "storage", "version-mapping", "--release", "4.3.1")
    assert out.splitlines()[0] == "metadata.version=30 (4.3-IV0)"


def test_feature_dependencies_of_share_version_2(capsys) -> None:
    assert run(capsys, "storage", "feature-dependencies", "--feature", "share.version=2")[1].splitlines() == [
        "share.version=2 has no dependencies."]
    code, out, err = run(capsys, "storage", "feature-dependencies", "--release", "4.3.1", "--feature", "share.version=2")
    assert (code, out, err) == (1, "", "Feature level 2 is not supported for feature share.version\n")
    assert run(capsys, "storage", "feature-dependencies", "--feature", "metadata.version=33")[1] == \
        "metadata.version=33 (4.4-IV2) has no dependencies.\n"
