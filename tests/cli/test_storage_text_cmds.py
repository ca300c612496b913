"""`kraftsim storage version-mapping` and `feature-dependencies` through the command line:
Kafka's lines on stdout, Kafka's text alone on stderr and exit 1 on bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.cli.main import main
from tests.versions.versions_facts import MV_TABLE, PRODUCTION_FEATURES, default_row


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str], str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


@pytest.mark.parametrize("level,version", [(lvl, v) for lvl, v, _ in MV_TABLE if lvl >= 7])
def test_version_mapping_of_every_mv(capsys: pytest.CaptureFixture[str], level: int, version: str) -> None:
    code, lines, _ = run(capsys, "storage", "version-mapping", "--release-version", version)
    assert code == 0
    defaults = default_row(level)
    assert lines == [f"metadata.version={level} ({version})"] + [f"{f}={defaults[f]}" for f in PRODUCTION_FEATURES]


def test_release_version_by_release_name(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines, _ = run(capsys, "storage", "version-mapping", "-r", "3.8.1")
    assert code == 0 and lines[0] == "metadata.version=20 (3.8.1)"


def test_unknown_version_gives_kafkas_text(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines, err = run(capsys, "storage", "version-mapping", "-r", "2.8")
    assert code == 1 and lines == []
    assert err.startswith("Unknown metadata.version '2.8'. Supported metadata.version are: 3.3-IV3, 3.4-IV0, ")
    assert err.rstrip().endswith(", 4.3-IV0, 4.4-IV0, 4.4-IV1, 4.4-IV2, 4.5-IV0")  # 4.4.0 lists its placeholder


def test_acting_as_an_older_release_knows_fewer_versions(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "storage", "version-mapping", "-r", "4.2-IV1", "--release", "4.0")
    assert code == 1 and "4.0-IV3" in err and "4.2-IV1." not in err and "4.3" not in err


@pytest.mark.parametrize("command,args", [("version-mapping", []), ("feature-dependencies", ["-f", "group.version=1"])])
def test_acting_as_3_x_the_subcommands_do_not_exist(capsys: pytest.CaptureFixture[str], command: str,
                                                    args: list[str]) -> None:
    """3.x's kafka-storage has info, format and random-uuid only: argparse4j's refusal, exit 1."""
    code, lines, err = run(capsys, "storage", command, "--release", "3.9", *args)
    assert code == 1 and lines == []
    assert err.splitlines()[0] == "usage: kafka-storage [-h] {info,format,random-uuid} ..."
    assert " ".join(err.split()).endswith(
        f"kafka-storage: error: invalid choice: '{command}' (choose from 'info', 'format', 'random-uuid')")


def test_feature_dependencies(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines, _ = run(capsys, "storage", "feature-dependencies",
                         "--feature", "eligible.leader.replicas.version=1", "--feature", "group.version=1",
                         "--feature", "metadata.version=25")
    assert code == 0
    assert lines == [
        "eligible.leader.replicas.version=1 requires:",
        "    metadata.version=23 (4.0-IV1)",
        "group.version=1 has no dependencies.",
        "metadata.version=25 (4.0-IV3) has no dependencies.",
    ]


@pytest.mark.parametrize("arg,text", [
    ("nosuch.version=1", "Unknown feature: nosuch.version"),
    ("group.version=7", "Feature level 7 is not supported for feature group.version"),
    ("metadata.version=99", "Unknown metadata.version 99"),
    ("group.version", "Invalid feature format: group.version. Expected format: 'feature=version' (e.g. 'group.version=1')"),
    ("group.version=x", "Invalid version format: x for feature group.version"),
])
def test_feature_dependencies_errors(capsys: pytest.CaptureFixture[str], arg: str, text: str) -> None:
    code, lines, err = run(capsys, "storage", "feature-dependencies", "--feature", arg)
    assert code == 1 and lines == []
    assert err.strip() == text


KIP778 = Path(__file__).resolve().parents[2] / "kraftsim" / "versions" / "data" / "examples" / "kip778.toml"


def test_a_user_catalog_reaches_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines, _ = run(capsys, "storage", "feature-dependencies", "--catalog", str(KIP778), "--feature", "bar.version=1")
    assert code == 0 and lines == ["bar.version=1 requires:", "    metadata.version=38 (4.9-IV3)"]
    code, lines, _ = run(capsys, "storage", "version-mapping", "--catalog", str(KIP778), "-r", "4.9-IV4")
    assert code == 0 and "bar.version=1" in lines and lines[0] == "metadata.version=39 (4.9-IV4)"


def test_a_broken_catalog_is_refused_naming_the_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.versions.test_versions_catalogs import FOO, MV_NEXT, RELEASE_NEXT

    broken = tmp_path / "broken.toml"
    broken.write_text(MV_NEXT + FOO.format(boot='"4.9-IV0"', deps='"metadata.version" = "4.9-IV0"') + RELEASE_NEXT
                      + 'features = { "foo.version" = 1 }\n')
    code, lines, err = run(capsys, "storage", "version-mapping", "--catalog", str(broken))
    assert code == 2 and lines == []  # (the catalog is the user's input: invalid, not Kafka's refusal)
    assert "rule kafka-2.5.4 broken" in err and "with MV dependency 4.9-IV0 that is not production ready" in err
