"""Acting as a release whose tool lacks a subcommand or flag, kraftsim refuses with that
tool's argparse4j text (usage, then the error justified to 75 columns), or its Scala tool's one
line, exit 1. The expected texts are Kafka 3.3.2-3.9.1's own (`kraftsim conformance run`, and the
3.3.2-3.6.2 tools run by hand)."""

from __future__ import annotations

import pytest

from kraftsim.cli.kafka_usage import wrap
from kraftsim.cli.main import main

FEATURES_USAGE = """usage: kafka-features [-h] [--command-config COMMAND_CONFIG]
                      (--bootstrap-server BOOTSTRAP_SERVER |
                      --bootstrap-controller BOOTSTRAP_CONTROLLER)
                      {describe,upgrade,downgrade,disable} ...
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("argv,err", [
    (["storage", "version-mapping", "--release", "3.7"],
     "usage: kafka-storage [-h] {info,format,random-uuid} ...\n"
     "kafka-storage:  error:  invalid  choice:   'version-mapping'  (choose  from\n"
     "'info', 'format', 'random-uuid')\n"),
    (["storage", "feature-dependencies", "--release", "3.8", "-f", "metadata.version=0"],
     "usage: kafka-storage [-h] {info,format,random-uuid} ...\n"
     "kafka-storage: error: invalid  choice:  'feature-dependencies' (choose from\n"
     "'info', 'format', 'random-uuid')\n"),
    (["features", "--release", "3.9", "version-mapping"],
     FEATURES_USAGE + "kafka-features:  error:  invalid  choice:  'version-mapping'  (choose  from\n"
                      "'describe', 'upgrade', 'downgrade', 'disable')\n"),
    (["features", "--release", "3.7", "feature-dependencies", "--feature", "metadata.version=0"],
     FEATURES_USAGE + "kafka-features: error: invalid choice:  'feature-dependencies' (choose from\n"
                      "'describe', 'upgrade', 'downgrade', 'disable')\n"),
    (["features", "--release", "3.9", "downgrade", "--release-version", "3.3-IV3"],
     "usage: kafka-features (--bootstrap-server BOOTSTRAP_SERVER |\n"
     "                      --bootstrap-controller BOOTSTRAP_CONTROLLER)\n"
     "                      downgrade [-h] [--metadata METADATA]\n"
     "                      [--feature FEATURE] [--unsafe] [--dry-run]\n"
     "kafka-features: error: unrecognized arguments: '--release-version'\n"),
    # 3.6.2's Java tool, then 3.3.2-3.5.2's Scala one (kafka.admin.FeatureCommand: one line), run as they are
    (["features", "--release", "3.6", "version-mapping"],
     "usage: kafka-features [-h] --bootstrap-server BOOTSTRAP_SERVER\n"
     "                      [--command-config COMMAND_CONFIG]\n"
     "                      {describe,upgrade,downgrade,disable} ...\n"
     "kafka-features:  error:  invalid  choice:  'version-mapping'  (choose  from\n"
     "'describe', 'upgrade', 'downgrade', 'disable')\n"),
    (["features", "--release", "3.6", "upgrade", "--release-version", "3.6-IV2"],
     "usage: kafka-features --bootstrap-server BOOTSTRAP_SERVER upgrade [-h]\n"
     "                      [--metadata METADATA] [--feature FEATURE] [--dry-run]\n"
     "kafka-features: error: unrecognized arguments: '--release-version'\n"),
    (["features", "--release", "3.5", "version-mapping"],
     "Command line error: invalid choice: 'version-mapping' (choose from 'describe', 'upgrade', 'downgrade', "
     "'disable'). Type --help for help.\n"),
    (["features", "--release", "3.3", "downgrade", "--release-version", "3.3-IV3"],
     "Command line error: unrecognized arguments: '--release-version'. Type --help for help.\n"),
])
def test_3_x_tools_refuse_what_they_lack(capsys: pytest.CaptureFixture[str], argv: list[str], err: str) -> None:
    assert run(capsys, *argv) == (1, "", err)


def test_4_0_tools_have_them(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "features", "--release", "4.0", "version-mapping")
    assert code == 0 and out.startswith("metadata.version=25 (4.0-IV3)\n") and err == ""


def test_wrap_justifies_full_lines_and_leaves_the_last() -> None:
    lines = wrap("aa bb cc dd ee ff gg hh", width=10)
    assert lines == ["aa  bb  cc", "dd  ee  ff", "gg hh"]
    assert all(len(line) == 10 for line in lines[:-1])
    assert wrap("short", width=10) == ["short"]
