"""Every error of `kafka-storage format` (facts §7.1), its exact text, and which one wins.

Each row is a node config (static quorum unless `dynamic`), the flags, and the one line
Kafka prints on stderr (exit 1). Rows marked "precedence" combine several faults: the
expected text is the one Kafka reports first (StorageTool.runFormatCommand, then the
Formatter: node id, cluster id, directories, controller listener, release version,
feature levels, bootstrap records, directories on disk).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.storage import FormatOptions, format_directories
from kraftsim.storage import FormatterError
from kraftsim.versions import default_catalog
from tests.storage_tool.conftest import CLUSTER_ID, config_for, run, run_format

ALL_MVS = ", ".join(mv.version for mv in default_catalog().metadata_versions if mv.production)
FEATURES = "eligible.leader.replicas.version, group.version, kraft.version, share.version, streams.version, transaction.version"
KRAFT0 = ("Cannot set kraft.version to 0 if controller.quorum.voters is empty and one of the flags --standalone, "
          "--initial-controllers, or --no-initial-controllers is used. For dynamic controllers support, try "
          "removing the --feature flag for kraft.version.")
KRAFT1 = ("Cannot set kraft.version to 1 unless controller.quorum.voters is empty and one of the flags --standalone, "
          "--initial-controllers, or --no-initial-controllers is used. For dynamic controllers support, try using "
          "one of --standalone, --initial-controllers, or --no-initial-controllers and removing "
          "controller.quorum.voters.")
LEGACY = ("The kafka configuration file appears to be for a legacy cluster. Formatting is only supported for "
          "clusters in KRaft mode.")
VOTERS_AND_FLAGS = ("You cannot specify controller.quorum.voters and format the node with --initial-controllers or "
                    "--standalone. If you want to use dynamic quorum, please remove controller.quorum.voters and "
                    "specify controller.quorum.bootstrap.servers instead.")
NEED_FLAG = ("Because controller.quorum.voters is not set on this controller, you must specify one of the following: "
             "--standalone, --initial-controllers, or --no-initial-controllers.")
ELR_39 = "eligible.leader.replicas.version could not be set to 1 because it depends on metadata.version level 23"
SCRAM = "SCRAM-SHA-256=[name=alice,password=alice-secret]"
VOTER = "1@localhost:9093:4znU-ou9Taa06bmEJxsjnw"
KIP778 = str(Path(__file__).resolve().parents[2] / "kraftsim" / "versions" / "data" / "examples" / "kip778.toml")

# (id, config overrides, dynamic quorum, flags, expected stderr line)
CASES = [
    # StorageTool.runFormatCommand
    ("legacy-config", {"process.roles": None}, False, [], LEGACY),
    ("precedence: legacy before release version", {"process.roles": None}, False, ["-r", "2.8"], LEGACY),
    ("unknown release version", {}, False, ["-r", "2.8"],
     f"Unknown metadata.version '2.8'. Supported metadata.version are: {ALL_MVS}"),
    ("precedence: release version before --feature parsing", {}, False, ["-r", "2.8", "-f", "x"],
     f"Unknown metadata.version '2.8'. Supported metadata.version are: {ALL_MVS}"),
    ("feature without equals", {}, False, ["-f", "group.version"],
     "Can't parse feature=level string group.version: equals sign not found."),
    ("feature level not a short", {}, False, ["-f", "group.version=x"],
     "Can't parse feature=level string group.version=x: unable to parse x as a short."),
    ("feature level out of short range", {}, False, ["-f", "group.version=40000"],
     "Can't parse feature=level string group.version=40000: unable to parse 40000 as a short."),
    ("precedence: --feature parsing before the quorum flags", {}, False, ["-f", "x", "-s"],
     "Can't parse feature=level string x: equals sign not found."),
    ("static voters with --standalone", {}, False, ["-s"], VOTERS_AND_FLAGS),
    ("static voters with --initial-controllers", {}, False, ["-I", VOTER], VOTERS_AND_FLAGS),
    ("precedence: voters check before parsing --initial-controllers", {}, False, ["-I", "garbage"], VOTERS_AND_FLAGS),
    ("initial controllers without @", {}, True, ["-I", "1localhost:9093:x"], "No @ found in dynamic voter string."),
    ("initial controllers bad port", {}, True, ["-I", "1@localhost:99999:4znU-ou9Taa06bmEJxsjnw"],
     "Invalid port 99999 in dynamic voter string."),
    ("initial controllers no directory id colon", {}, True, ["-I", "1@localhost:9093"],
     "No colon following port could be found."),
    ("initial controllers bad directory id", {}, True, ["-I", "1@localhost:9093:nope"],
     "Failed to parse directory ID in dynamic voter string."),
    ("initial controllers twice the same id", {}, True, ["-I", f"{VOTER},1@otherhost:9093:MvDxzVmcRsaTz33bUuRU6A"],
     "Node id 1 was specified more than once."),
    ("standalone on a broker", {"process.roles": "broker"}, True, ["-s"], "You can only use --standalone on a controller."),
    ("standalone without a controller listener", {"listeners": "PLAINTEXT://:9092"}, True, ["-s"],
     "No controller listeners found."),
    ("controller without voters needs a flag", {}, True, [], NEED_FLAG),
    ("precedence: quorum flag check before the Formatter", {"node.id": "-1"}, True, [], NEED_FLAG),
    # Formatter.run preconditions
    ("negative node id", {"node.id": "-1"}, False, [], "You must specify a valid non-negative node ID."),
    ("no directories", {"log.dirs": ""}, False, [], "You must specify at least one directory to format"),
    ("precedence: node id before directories", {"node.id": "-1", "log.dirs": ""}, False, [],
     "You must specify a valid non-negative node ID."),
    ("no controller listener name", {"controller.listener.names": None}, False, [],
     "You must specify the name of the initial controller listener."),
    # effective release version
    ("--feature metadata.version with --release-version", {}, False, ["-r", "3.9", "-f", "metadata.version=21"],
     "Use --release-version instead of --feature metadata.version=X to avoid ambiguity."),
    ("precedence: ambiguity before unknown features", {}, False,
     ["-r", "3.9", "-f", "metadata.version=21", "-f", "foo.version=1"],
     "Use --release-version instead of --feature metadata.version=X to avoid ambiguity."),
    ("unknown metadata.version level", {}, False, ["-f", "metadata.version=99"],
     "No MetadataVersion with feature level 99. Valid feature levels are from 7 to 34."),
    # feature levels
    ("unknown feature", {}, False, ["-f", "foo.version=1"],
     f"Unsupported feature: foo.version. Supported features are: {FEATURES}"),
    ("test feature is not a production feature", {}, False, ["-f", "test.feature.version=1"],
     f"Unsupported feature: test.feature.version. Supported features are: {FEATURES}"),
    ("unknown feature level", {}, False, ["-f", "group.version=5"], "No feature:group.version with feature level 5"),
    ("ELR needs metadata.version 23: 3.9", {}, False, ["-r", "3.9", "-f", "eligible.leader.replicas.version=1"], ELR_39),
    ("ELR needs metadata.version 23: 4.0-IV0", {}, False,
     ["-r", "4.0-IV0", "-f", "eligible.leader.replicas.version=1"], ELR_39),
    ("kraft.version 1 on a static quorum", {}, False, ["-f", "kraft.version=1"], KRAFT1),
    ("kraft.version 0 on a dynamic quorum (-s)", {}, True, ["-s", "-f", "kraft.version=0"], KRAFT0),
    ("kraft.version 0 on a dynamic quorum (-N)", {}, True, ["-N", "-f", "kraft.version=0"], KRAFT0),
    ("kraft.version 0 on a dynamic broker", {"process.roles": "broker"}, True, ["-f", "kraft.version=0"], KRAFT0),
    ("precedence: kraft.version before dependency checks", {}, False,
     ["-r", "3.9", "-f", "kraft.version=1", "-f", "eligible.leader.replicas.version=1"], KRAFT1),
    ("precedence: unknown level before dependencies (sorted by name)", {}, False,
     ["-r", "3.9", "-f", "eligible.leader.replicas.version=1", "-f", "group.version=9"], ELR_39),
    ("precedence: names checked in sorted order", {}, False,
     ["-r", "3.9", "-f", "transaction.version=7", "-f", "group.version=9"], "No feature:group.version with feature level 9"),
    # bootstrap records
    ("SCRAM below 3.5-IV2", {}, False, ["-r", "3.5-IV1", "-S", SCRAM],
     "SCRAM is only supported in metadata.version 3.5-IV2 or later."),
    ("precedence: feature dependencies before SCRAM", {}, False,
     ["-r", "3.4", "-f", "eligible.leader.replicas.version=1", "-S", SCRAM], ELR_39),
    ("SCRAM without equals", {}, False, ["-S", "SCRAM-SHA-256"],
     "Failed to find equals sign in SCRAM argument 'SCRAM-SHA-256'"),
    ("SCRAM unknown mechanism", {}, False, ["-S", "SCRAM-SHA-1=[name=a,password=b]"],
     "The add-scram mechanism SCRAM-SHA-1 is not supported."),
    ("SCRAM no [", {}, False, ["-S", "SCRAM-SHA-256=name=a,password=b]"], "Expected configuration string to start with ["),
    ("SCRAM no ]", {}, False, ["-S", "SCRAM-SHA-256=[name=a,password=b"], "Expected configuration string to end with ]"),
    ("SCRAM component without equals", {}, False, ["-S", "SCRAM-SHA-256=[name=a,password]"],
     "No equals sign found in SCRAM component: password"),
    ("SCRAM without name", {}, False, ["-S", "SCRAM-SHA-256=[password=b]"], "You must supply 'name' to add-scram"),
    ("SCRAM bad salt", {}, False, ["-S", "SCRAM-SHA-256=[name=a,salt=%%,password=b]"], "Failed to decode given salt: %%"),
    ("SCRAM bad iterations", {}, False, ["-S", "SCRAM-SHA-256=[name=a,iterations=x,password=b]"],
     "Failed to parse iterations count: x"),
    ("SCRAM no password", {}, False, ["-S", "SCRAM-SHA-256=[name=a]"],
     "You must supply one of 'password' or 'saltedpassword' to add-scram"),
    ("SCRAM salted password without salt", {}, False, ["-S", "SCRAM-SHA-256=[name=a,saltedpassword=YCE=]"],
     "You must supply 'salt' with 'saltedpassword' to add-scram"),
    ("SCRAM bad salted password", {}, False, ["-S", 'SCRAM-SHA-256=[name=a,salt="N3E=",saltedpassword="Y"]'],
     "Failed to decode given saltedPassword: Y"),
    ("SCRAM unknown keys", {}, False, ["-S", "SCRAM-SHA-256=[name=a,password=b,zeta=1,alpha=2]"],
     "Unknown SCRAM configurations: alpha, zeta"),
    ("SCRAM too few iterations", {}, False, ["-S", "SCRAM-SHA-256=[name=a,password=b,iterations=4095]"],
     "The 'iterations' value must be >= 4096 for add-scram using SCRAM_SHA_256"),
    ("SCRAM too many iterations", {}, False, ["-S", "SCRAM-SHA-512=[name=a,password=b,iterations=16385]"],
     "The 'iterations' value must be <= 16384 for add-scram using SCRAM_SHA_512"),
    ("precedence: SCRAM arguments in order", {}, False,
     ["-S", "SCRAM-SHA-256=[password=b]", "-S", "SCRAM-SHA-1=[name=a]"], "You must supply 'name' to add-scram"),
]


@pytest.mark.parametrize("overrides,dynamic,flags,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_format_error(overrides: dict, dynamic: bool, flags: list[str], expected: str, tmp_path: Path,
                      capsys: pytest.CaptureFixture[str]) -> None:
    config = config_for(tmp_path, dynamic=dynamic, **overrides)
    code, out, err = run_format(capsys, config, *flags)
    assert (code, err, out) == (1, expected + "\n", "")
    assert not (tmp_path / "data").exists()  # nothing written before the checks pass


def test_unstable_metadata_version_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The KIP-778 example catalog has 4.9-IV4 (39) as a level that is not yet production ready.
    config = config_for(tmp_path)
    code, _, err = run_format(capsys, config, "--catalog", KIP778, "-f", "metadata.version=39")
    assert (code, err) == (1, "metadata.version 4.9-IV4 is not yet stable.\n")
    # --release-version does not even find it without unstable.feature.versions.enable
    code, _, err = run_format(capsys, config, "--catalog", KIP778, "-r", "4.9-IV4")
    assert code == 1 and err.startswith("Unknown metadata.version '4.9-IV4'. Supported metadata.version are: ")
    # with it, both are accepted
    unstable = config_for(tmp_path, unstable_feature_versions_enable="true")
    code, out, err = run_format(capsys, unstable, "--catalog", KIP778, "-r", "4.9-IV4")
    assert (code, err) == (0, "")
    assert out.splitlines()[-1].endswith("with metadata.version 4.9-IV4.")
    # Kafka 4.3 itself: 4.4-IV0 (31) is its testing placeholder.
    code, _, err = run_format(capsys, config_for(tmp_path / "p"), "--release", "4.3", "-f", "metadata.version=31")
    assert (code, err) == (1, "metadata.version 4.4-IV0 is not yet stable.\n")


def test_quorum_flags_are_mutually_exclusive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = config_for(tmp_path, dynamic=True)
    with pytest.raises(SystemExit) as exc:
        run_format(capsys, config, "-s", "-N")
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        run(capsys, "storage", "format", "-c", str(config))  # --cluster-id is required
    assert exc.value.code == 2


def test_formatter_api_preconditions(tmp_path: Path) -> None:
    cat = default_catalog()
    base = dict(node_id=1, cluster_id=CLUSTER_ID, directories=[str(tmp_path / "a")], controller_listener_name="C")
    with pytest.raises(FormatterError, match=r"^You must specify the cluster id\.$"):
        format_directories(cat, FormatOptions(**{**base, "cluster_id": None}), out=lambda _: None)
    other = str(tmp_path / "elsewhere")
    with pytest.raises(FormatterError) as exc:
        format_directories(cat, FormatOptions(**base, metadata_log_directory=other), out=lambda _: None)
    assert str(exc.value) == (f"The specified metadata log directory, {other} was not one of the given "
                              f"directories: [{tmp_path / 'a'}]")


def test_an_empty_dir_is_refused_and_nothing_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """`--dir ''` names no directory: kraftsim refuses it (exit 2) rather than format the current folder."""
    from kraftsim.cli.main import main

    monkeypatch.chdir(tmp_path)
    assert main(["storage", "format", "--dir", "", "-t", CLUSTER_ID, "--node-id", "1"]) == 2
    assert "--dir: an empty path names no directory" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
