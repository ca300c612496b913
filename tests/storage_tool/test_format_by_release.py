"""`kafka-storage format` acting as each release: the lines and refusals of that release's tool.

Expected texts are what the released jars printed (`kraftsim conformance run`, and the
three-directory runs quoted below, made with Kafka 3.7.2 and 3.8.1 on these exact paths:
the order of the lines follows the paths' Java hash codes, so the paths are part of the fact).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.storage.formatter import _copier_write_order, _Ensemble, _formatting_lines
from kraftsim.versions import default_catalog
from tests.storage_tool.conftest import CLUSTER_ID, SDE, config_for, run_format

CAT = default_catalog()
A, B, C = "/tmp/cexp/n1/a", "/tmp/cexp/n1/b", "/tmp/cexp/n1/c"
M, X, Y = "/tmp/cexp/n1/m", "/tmp/cexp/n1/x", "/tmp/cexp/n1/y"


def _lines(release: str, dirs: list[str], metadata_dir: str) -> list[str]:
    catalog = CAT.at_release(release)
    ens = _Ensemble(empty=sorted(dirs), error=[], props={})
    types = {d: "metadata directory" if d == metadata_dir else "data directory" for d in dirs}
    return _formatting_lines(catalog.policy("format_text"), ens, _copier_write_order([], ens.empty), types,
                             catalog.latest_production)


def test_3_7_prints_every_new_directory_so_far_after_each_one() -> None:
    assert _lines("3.7", [A, B, C], A) == [f"Formatting {d} with metadata.version 3.7-IV4." for d in (A, B, A, C, B, A)]
    assert _lines("3.7", [M, X, Y], M) == [f"Formatting {d} with metadata.version 3.7-IV4." for d in (M, M, X, M, Y, X)]


def test_3_8_prints_each_directory_once_in_hash_order() -> None:
    assert _lines("3.8", [A, B, C], A) == [f"Formatting {d} with metadata.version 3.8-IV0." for d in (C, B, A)]
    assert _lines("3.8", [M, X, Y], M) == [f"Formatting {d} with metadata.version 3.8-IV0." for d in (M, Y, X)]


def test_3_9_names_the_kind_and_4_2_adds_the_bootstrap_line(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(SDE))
    code, out, _ = run_format(capsys, config_for(tmp_path / "a"), "--release", "4.1")
    assert code == 0 and out.splitlines() == [
        f"Formatting metadata directory {tmp_path / 'a' / 'data'} with metadata.version 4.1-IV1."]
    code, out, _ = run_format(capsys, config_for(tmp_path / "b"), "--release", "4.2")
    assert code == 0 and out.startswith("Bootstrap metadata: BootstrapMetadata(") and len(out.splitlines()) == 2


@pytest.mark.parametrize("release,text", [
    ("3.7", "Version 9.9-IV9 is not a valid version"),
    ("3.9", "Version 9.9-IV9 is not a valid version"),
    ("4.0", "Version 9.9-IV9 is not a valid version. The minimum version is 3.3-IV3 and the maximum version is "),
    ("4.2", "Unknown metadata.version '9.9-IV9'. Supported metadata.version are: 3.3-IV3, "),
])
def test_an_unknown_release_version(tmp_path: Path, capsys, release: str, text: str) -> None:
    code, out, err = run_format(capsys, config_for(tmp_path), "--release", release, "-r", "9.9-IV9")
    assert code == 1 and out == "" and err.startswith(text)
    assert not (tmp_path / "data").exists()


def test_3_7_and_3_8_refuse_jbod_below_3_7_iv2_and_3_8_refuses_pre_3_3(tmp_path: Path, capsys) -> None:
    broker = config_for(tmp_path / "b", dirs=("x", "y"), process_roles="broker", node_id="2",
                        listeners="PLAINTEXT://:9092")
    code, _, err = run_format(capsys, broker, "--release", "3.7", "-r", "3.6-IV2")
    assert code == 1 and err == ("Invalid configuration for metadata version: requirement failed: Multiple log "
                                 "directories (aka JBOD) are not supported in the current MetadataVersion 3.6-IV2. "
                                 "Need 3.7-IV2 or higher\n")
    code, _, _ = run_format(capsys, broker, "--release", "3.9", "-r", "3.6-IV2")
    assert code == 0  # the check left with the Scala StorageTool
    code, _, err = run_format(capsys, config_for(tmp_path / "c"), "--release", "3.8", "-r", "3.0-IV1")
    assert code == 1 and err == ("Bootstrap metadata.version before 3.3-IV0 are not supported. "
                                 "Can't load metadata from format command\n")


def test_3_7_0_formats_jbod_below_3_7_iv2_as_3_7_1_does_not(tmp_path: Path, capsys) -> None:
    """KAFKA-16606 brought the JBOD check in 3.7.1 (live 3.7.0 formatted two directories at
    3.6-IV2, 3.7.1 and 3.7.2 refuse)."""
    broker = config_for(tmp_path / "b", dirs=("x", "y"), process_roles="broker", node_id="2",
                        listeners="PLAINTEXT://:9092")
    code, _, err = run_format(capsys, broker, "--release", "3.7.1", "-r", "3.6-IV2")
    assert code == 1 and "Multiple log directories (aka JBOD)" in err
    code, out, _ = run_format(capsys, broker, "--release", "3.7.0", "-r", "3.6-IV2")
    assert code == 0 and out.count("with metadata.version 3.6-IV2.") == 3


def test_3_7_0_and_3_7_1_print_the_directories_they_found_first(tmp_path: Path, capsys) -> None:
    """As live 3.7.1 printed on two directories: before formatting, before 'All of the log
    directories are already formatted.', and before the already-formatted refusal; 3.7.2 not."""
    a, b = tmp_path / "d" / "a", tmp_path / "d" / "b"
    cfg = config_for(tmp_path / "d", dirs=("b", "a"))
    code, out, _ = run_format(capsys, cfg, "--release", "3.7.1")
    assert code == 0 and out.splitlines()[0] == (
        f"metaPropertiesEnsemble=MetaPropertiesEnsemble(metadataLogDir=Optional.empty, dirs={{{a}: EMPTY, {b}: EMPTY}})")
    assert out.splitlines()[1:] and all(line.startswith("Formatting ") for line in out.splitlines()[1:])
    ids = {d: (d / "meta.properties").read_text().split("directory.id=")[1].split()[0] for d in (a, b)}
    found = ", ".join(f"{d}: MetaProperties(version=1, clusterId={CLUSTER_ID}, nodeId=1, directoryId={ids[d]})"
                      for d in (a, b))
    code, out, _ = run_format(capsys, cfg, "--release", "3.7.0", "--ignore-formatted")
    assert code == 0 and out.splitlines() == [
        f"metaPropertiesEnsemble=MetaPropertiesEnsemble(metadataLogDir=Optional.empty, dirs={{{found}}})",
        "All of the log directories are already formatted."]
    code, out, err = run_format(capsys, cfg, "--release", "3.7.1")
    assert code == 1 and out.startswith("metaPropertiesEnsemble=") and "is already formatted" in err
    code, out, err = run_format(capsys, cfg, "--release", "3.7.2")
    assert code == 1 and out == "" and "is already formatted" in err


def test_3_7_has_no_feature_flag_and_names_the_scram_version_by_its_enum(tmp_path: Path, capsys) -> None:
    code, out, err = run_format(capsys, config_for(tmp_path / "a"), "--release", "3.7", "-f", "group.version=1")
    assert code == 1 and out == "" and err.splitlines()[0] == (
        "usage: kafka-storage format [-h] --config CONFIG --cluster-id CLUSTER_ID")
    assert err.splitlines()[-1] == "kafka-storage: error: unrecognized arguments: '-f'"
    code, _, err = run_format(capsys, config_for(tmp_path / "b"), "--release", "3.7", "-r", "3.4-IV0",
                              "-S", "SCRAM-SHA-256=[name=alice,password=alice-secret]")
    assert code == 1 and err == "SCRAM is only supported in metadataVersion IBP_3_5_IV2 or later.\n"


@pytest.mark.parametrize("release", ["3.3", "3.4"])
def test_3_3_and_3_4_have_no_add_scram_flag(tmp_path: Path, capsys, release: str) -> None:
    # kafka-storage 3.3.2 and 3.4.1: --add-scram came with 3.5; their usage has no such line
    code, out, err = run_format(capsys, config_for(tmp_path / "a"), "--release", release,
                                "-S", "SCRAM-SHA-256=[name=alice,password=alice-secret]")
    assert code == 1 and out == "" and err == (
        "usage: kafka-storage format [-h] --config CONFIG --cluster-id CLUSTER_ID\n"
        "                     [--ignore-formatted]\n"
        "                     [--release-version RELEASE_VERSION]\n"
        "kafka-storage: error: unrecognized arguments: '-S'\n")
    assert not (tmp_path / "a" / "data").exists()  # nothing formatted


def test_scram_refused_by_a_release_without_any_scram_version_names_it() -> None:
    from kraftsim.storage.bootstrap_builder import bootstrap_records
    from kraftsim.storage.formatter import FormatterError
    catalog = CAT.at_release("3.4")
    with pytest.raises(FormatterError) as e:
        bootstrap_records(catalog, catalog.latest_production, {}, ["SCRAM-SHA-256=[name=a,password=b]"])
    assert "None" not in str(e.value) and "3.5-IV2" in str(e.value)


def test_3_8_feature_flag_rules(tmp_path: Path, capsys) -> None:
    code, _, err = run_format(capsys, config_for(tmp_path / "a"), "--release", "3.8", "-r", "3.8-IV0",
                              "-f", "group.version=1")
    assert code == 1 and err == "Both --release-version and --feature were set. Only one of the two flags can be set.\n"
    code, out, _ = run_format(capsys, config_for(tmp_path / "b"), "--release", "3.8", "-f", "no.such.feature=1")
    assert code == 0 and out.endswith("with metadata.version 3.8-IV0.\n")  # 3.8 ignores what it does not know


def test_3_9_kip_853_rules(tmp_path: Path, capsys) -> None:
    code, _, err = run_format(capsys, config_for(tmp_path / "a"), "--release", "3.9", "-f", "kraft.version=1")
    assert code == 1 and err == ("Cannot set kraft.version to 1 unless KIP-853 configuration is present. "
                                 "Try removing the --feature flag for kraft.version.\n")
    # 3.9 formats --standalone even beside controller.quorum.voters (4.0 refuses it).
    code, out, _ = run_format(capsys, config_for(tmp_path / "b"), "--release", "3.9", "--standalone")
    assert code == 0 and out.startswith("Formatting dynamic metadata voter directory ")
    assert (tmp_path / "b" / "data" / "__cluster_metadata-0" / "00000000000000000000-0000000000.checkpoint").exists()
    code, _, err = run_format(capsys, config_for(tmp_path / "c"), "--release", "4.0", "--standalone")
    assert code == 1 and err.startswith("You cannot specify controller.quorum.voters and format the node with ")
